"""The verifier: does this passage answer the question, contradict what it assumes, or neither?

A cross-encoder (question and passage read together, not two vectors compared) fine-tuned from
the bundled MiniLM on questions written for abstracts of the scale corpus (`data/verifier/`,
`eval/train_verifier.py`). It reads a (question, sentence) pair, or a (question, paper) pair
whose passage is the paper's title and its sentences closest to the question
(`paper_passage`), and gives three probabilities: the passage answers the question, contradicts
a premise of it, or neither. It runs in onnxruntime from the model committed in
`data/verifier/model/` (float arithmetic, its weights stored as float16); nothing is fetched and
torch is not imported. Its passages are cleaned as its training cleaned them (`clean_passage`,
named in its `verifier.json`).

The model is float, not int8 (issue 35): dynamic int8 quantizes a run's activations with one
scale for the run, and moved a pair's probabilities by up to 0.24 from the float model's (mean
0.01, `eval/probe_verifier.py --float`); float costs 2.1 times the time (123 against 259 sentence
pairs a second on one thread, `data/verifier/MODEL_CARD.md`).

Each pair runs alone: in a padded batch a pair's probabilities moved by up to 0.07 (the exported
graph's attention mask is traced on unpadded pairs), and alone is faster on 2 cores (48 sentence
pairs: 167 ms alone, 237 ms batched). Pairs run side by side, one thread each (6.5 ms a pair on
one thread). Verdicts are memoised per (question, passage): a follow-up or an evaluation asks
again of the same sentences.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.errors import ModelNotFoundError
from rag.markup import to_plain

__all__ = ["LABELS", "MAX_TOKENS", "VERIFIER_DIR", "Verdict", "Verifier", "clean_passage", "load_verifier", "paper_passage"]

LABELS = ("none", "answers", "contradicts")
# Question and passage together, in word pieces: a question and a sentence fit (p99 of the
# scale corpus's sentences is ~90); a paper's passage is cut here.
MAX_TOKENS = 160
VERIFIER_DIR = Path(__file__).resolve().parents[2] / "data" / "verifier" / "model"
FILES = ("verifier.onnx", "tokenizer.json", "verifier.json")


@dataclass(frozen=True)
class Verdict:
    """The verifier's probabilities for one (question, passage) pair."""

    answers: float
    contradicts: float

    @property
    def relevant(self) -> float:
        """That the passage is about what the question asks, whether it answers or contradicts it."""
        return self.answers + self.contradicts


def paper_passage(title: str, sentences: Sequence[str]) -> str:
    """What the verifier reads of a paper: its title, then its sentences closest to the question
    (in the abstract's order). The same text at training and at run time."""
    return " ".join([f"{title.strip().rstrip('.')}.", *sentences]) if title.strip() else " ".join(sentences)


_SPACES = re.compile(r"\s+")


def _spaced_symbol(char: str) -> str:
    # The word pieces split words at punctuation but not at math symbols: "m≪n" would be one
    # unknown word, "m ≪ n" keeps the letters and loses only the symbol.
    return f" {char} " if unicodedata.category(char).startswith("S") else char


def clean_passage(text: str) -> str:
    """A passage as the model reads it, the same at training and at run time: LaTeX as plain
    text (`rag.markup.to_plain`, which leaves text without it alone), then NFKC, so mathematical
    letters ("𝐀", "𝒪", "ϵ") become the letters the word pieces know, and math symbols apart from
    the words they touch."""
    plain = to_plain(text)
    if plain.isascii():
        return plain
    normal = unicodedata.normalize("NFKC", plain)
    return _SPACES.sub(" ", "".join(_spaced_symbol(c) if ord(c) > 127 else c for c in normal)).strip()


def _as_given(text: str) -> str:
    return text


# What a model's passages went through at training, by the name its verifier.json gives
# ("passages"); a model that names none (before issue 35) was trained on `to_plain` text, which is
# what the callers pass.
_CLEANERS = {"clean_passage": clean_passage}


class Verifier:
    """The committed ONNX model, read with onnxruntime."""

    def __init__(self, model_dir: Path, *, threads: int, cache: int = 20_000) -> None:
        missing = [name for name in FILES if not (model_dir / name).is_file()]
        if missing:
            raise ModelNotFoundError(
                f"the verifier model is incomplete: {model_dir} lacks {', '.join(missing)}",
                hint="restore data/verifier/model/ from git, or rebuild it with `make train-verifier`",
            )
        import onnxruntime
        from tokenizers import Tokenizer

        self.meta = json.loads((model_dir / "verifier.json").read_text(encoding="utf-8"))
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The longer of question and passage is cut first: cutting only the passage raised on a
        # question longer than the model reads (a pasted paragraph, a 5,000-character column).
        self._tokenizer.enable_truncation(max_length=int(self.meta.get("max_tokens", MAX_TOKENS)), strategy="longest_first")
        self._tokenizer.no_padding()
        # Public so a probe can read a model's passages as written (`eval/probe_verifier.py`).
        self.clean = _CLEANERS.get(self.meta.get("passages", ""), _as_given)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(model_dir / "verifier.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="verifier")
        self._capacity = cache
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        # One process's questions (the app's sessions) share the cache.
        self._lock = threading.Lock()

    def _run(self, encoded) -> np.ndarray:
        ids = np.asarray([encoded.ids], dtype=np.int64)
        types = np.asarray([encoded.type_ids], dtype=np.int64)
        logits = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types})[0][0]
        exp = np.exp(logits - logits.max())
        return exp / exp.sum()

    def probabilities(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """A row of probabilities (none, answers, contradicts) per passage."""
        out = np.zeros((len(passages), len(LABELS)), dtype=np.float32)
        with self._lock:
            known = {p: self._cache.get((question, p)) for p in passages}
        fresh = [p for p in dict.fromkeys(passages) if known[p] is None]
        found = dict(
            zip(
                fresh,
                self._pool.map(self._run, self._tokenizer.encode_batch([(question, self.clean(p)) for p in fresh])),
                strict=True,
            )
        )
        with self._lock:
            for passage, row in found.items():
                self._cache[(question, passage)] = row
            for passage in known:
                if (question, passage) in self._cache:
                    self._cache.move_to_end((question, passage))
            while len(self._cache) > self._capacity:
                self._cache.popitem(last=False)
        for i, passage in enumerate(passages):
            cached = known[passage]
            out[i] = cached if cached is not None else found[passage]
        return out

    def judge(self, question: str, passages: Sequence[str]) -> list[Verdict]:
        """A `Verdict` per passage."""
        return [Verdict(answers=float(p[1]), contradicts=float(p[2])) for p in self.probabilities(question, passages)]


_LOADED: dict[tuple[Path, int], Verifier] = {}
_LOADING = threading.Lock()


def load_verifier(*, threads: int, model_dir: Path = VERIFIER_DIR) -> Verifier:
    """The committed verifier, loaded once per process (every `Assistant` of the app shares it)."""
    with _LOADING:
        key = (model_dir, threads)
        if key not in _LOADED:
            _LOADED[key] = Verifier(model_dir, threads=threads)
        return _LOADED[key]
