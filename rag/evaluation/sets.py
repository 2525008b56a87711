"""Evaluation sets from disk, and the index each one is judged over.

Two layouts:

- A question set, JSON Lines (``eval/sets/seed.jsonl``): one object per line with ``id``,
  ``question``, ``gold`` (the ids of the papers a right answer rests on; empty for a question
  the corpus does not cover), optional ``reference`` (a written answer), ``type`` (lookup,
  multi, summary, how, result, collection, compare, unanswerable), ``gold_sentences`` (how and
  result: the abstract sentences that answer), ``kind`` (unanswerable: out_of_corpus,
  false_presupposition, underspecified, nonsensical, beyond_abstracts) and ``split``
  (calibration or report). Its questions are about the configured index, unless its first line
  is ``{"corpus": PATH}`` (relative to the set file), a corpus indexed once into
  ``<data_dir>/eval/<corpus name>`` and reused.
- A BEIR benchmark directory (SciFact, the generated known-item set): ``corpus.jsonl[.gz]``,
  ``queries.jsonl`` and ``qrels/<split>.tsv`` (query-id, corpus-id, graded score). It brings
  its own papers, which are indexed once into ``<data_dir>/eval/<name>`` and reused. Its
  calibration and report halves are fixed by a hash of each query id, so they do not depend on
  the order of the files.
"""

from __future__ import annotations

import csv
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from langchain_core.embeddings import Embeddings

from rag.corpus.reading import count_papers, read_corpus
from rag.corpus.upload import read_upload
from rag.errors import CorpusError, RecordError, StoreError
from rag.evaluation.records import EvalItem, EvalSet
from rag.index.store import Index
from rag.settings import Settings

_TYPES = ("lookup", "multi", "summary", "how", "result", "collection", "compare", "false_premise", "unanswerable")
_KINDS = ("out_of_corpus", "false_presupposition", "underspecified", "nonsensical", "beyond_abstracts")
_SPLITS = ("calibration", "report")

# The sets that ship with PaperChat's source (an installed package has none).
SETS = Path(__file__).resolve().parents[2] / "eval" / "sets"
# The seed questions: about the papers that ship with PaperChat (data/papers.jsonl), which the
# app offers to index when its index is empty, so a set every install can run (`make eval` runs
# it too). The scale sets need a 13,687-paper corpus that ships with nothing.
DEFAULT_SET = "seed.jsonl"


@dataclass(frozen=True)
class SetFile:
    """An evaluation set on disk, before it is read: where it is and what papers it needs."""

    name: str  # its file's name, or a BEIR folder's with "/ (BEIR)"
    path: Path
    corpus: Path | None  # the papers it is judged over; None: the configured index's

    @property
    def available(self) -> bool:
        """Its papers are at hand: the configured index's, or a corpus that is there."""
        return self.corpus is None or self.corpus.exists()


def question_sets(folder: Path = SETS) -> list[SetFile]:
    """The evaluation sets in `folder`, `DEFAULT_SET` first: each question set (a .jsonl whose
    first record is a question; the research table's cells are not) and each BEIR folder."""
    files = [_set_file(p) for p in sorted(folder.glob("*.jsonl"))]
    # A BEIR folder without its corpus is listed as needing it.
    folders = [
        SetFile(f"{q.parent.name}/ (BEIR)", q.parent, _beir_corpus(q.parent) or q.parent / "corpus.jsonl")
        for q in sorted(folder.glob("*/queries.jsonl"))
    ]
    sets = [s for s in files if s is not None] + folders
    return sorted(sets, key=lambda s: s.name != DEFAULT_SET)  # stable: the rest stay in order


def _set_file(path: Path) -> SetFile | None:
    """A question set's file, read up to its first question; None if it holds none."""
    corpus = None
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            named = _corpus_line(line) if corpus is None else None
            if named:
                corpus = (path.parent / named).resolve()
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            # A set with a bad first line is still offered: running it names the line.
            return SetFile(path.name, path, corpus) if not isinstance(record, dict) or "question" in record else None
    return None


def load_eval_set(path: str | Path, *, split: str | None = None) -> EvalSet:
    """A question set (a ``.jsonl`` file) or a BEIR benchmark (a directory).

    `split`: a BEIR qrels split, or a question set's half (calibration, report)."""
    path = Path(path)
    if path.is_dir():
        return load_beir(path, split=split)
    if not path.is_file():
        raise CorpusError(f"{path}: no such evaluation set", hint="pass a .jsonl question set or a BEIR directory")
    return load_question_set(path, split=split)


def load_question_set(path: str | Path, *, split: str | None = None) -> EvalSet:
    """A JSON Lines question set; a bad line raises `RecordError` naming the file and line."""
    path = Path(path)
    items: list[EvalItem] = []
    seen: set[str] = set()
    corpus: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        named = _corpus_line(line) if not items and not seen and corpus is None else None
        if named:
            corpus = str((path.parent / named).resolve())
            continue
        item = _question(str(path), number, line)
        if item.id in seen:
            raise RecordError(str(path), number, f"duplicate id {item.id!r}", hint="give every question its own id")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise CorpusError(f"{path}: no questions", hint="one JSON object per line: id, question, gold, type")
    if split is not None:
        if split not in _SPLITS:
            raise CorpusError(f"{path}: no split {split!r}", hint=f"a question set's splits are {', '.join(_SPLITS)}")
        items = [i for i in items if i.split == split]
        if not items:
            raise CorpusError(f"{path}: no question is in the {split} split", hint='give each question a "split"')
    name = f"{path.stem}-{split}" if split else path.stem
    return EvalSet(name=name, path=str(path), items=tuple(items), corpus=corpus, split=split)


def _corpus_line(line: str) -> str | None:
    """The corpus a set's first line names ({"corpus": PATH}), if it is such a line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if isinstance(record, dict) and set(record) == {"corpus"} and isinstance(record["corpus"], str):
        return record["corpus"]
    return None


def _question(path: str, number: int, line: str) -> EvalItem:
    hint = 'write the line as {"id": ..., "question": ..., "gold": [paper ids], "type": ...}'
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RecordError(path, number, f"invalid JSON: {exc.msg} (column {exc.colno})", hint=hint) from None
    if not isinstance(record, dict):
        raise RecordError(path, number, "expected a JSON object", hint=hint)
    for field in ("id", "question"):
        if not isinstance(record.get(field), str) or not record[field].strip():
            raise RecordError(path, number, f"missing or empty {field!r}", hint=hint)
    gold = record.get("gold", [])
    if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
        raise RecordError(path, number, "'gold' must be a list of paper ids", hint=hint)
    kind = record.get("type") or ("lookup" if gold else "unanswerable")
    if kind not in _TYPES:
        raise RecordError(path, number, f"unknown type {kind!r}; one of {', '.join(_TYPES)}", hint=hint)
    if (kind == "unanswerable") == bool(gold):
        raise RecordError(path, number, "an unanswerable question has no gold papers, and only it", hint=hint)
    sentences = record.get("gold_sentences", [])
    if not isinstance(sentences, list) or not all(isinstance(g, str) for g in sentences):
        raise RecordError(path, number, "'gold_sentences' must be a list of sentences", hint=hint)
    unanswerable_kind = record.get("kind", "")
    if unanswerable_kind and unanswerable_kind not in _KINDS:
        raise RecordError(path, number, f"unknown kind {unanswerable_kind!r}; one of {', '.join(_KINDS)}", hint=hint)
    premise = record.get("premise", "")
    if not isinstance(premise, str) or (kind == "false_premise" and not (premise.strip() and sentences)):
        raise RecordError(
            path, number, "a false_premise question needs its 'premise' and the 'gold_sentences' that contradict it", hint=hint
        )
    style = record.get("style", "")
    if not isinstance(style, str):
        raise RecordError(path, number, "'style' must be a word (lay, terse, short, ...)", hint=hint)
    split = record.get("split", "")
    if split and split not in _SPLITS:
        raise RecordError(path, number, f"unknown split {split!r}; one of {', '.join(_SPLITS)}", hint=hint)
    return EvalItem(
        id=record["id"],
        question=record["question"],
        relevance=dict.fromkeys(gold, 1),
        reference=record.get("reference", ""),
        type=kind,
        gold_sentences=tuple(sentences),
        kind=unanswerable_kind,
        premise=premise,
        split=split,
        style=style,
    )


def load_beir(directory: str | Path, *, split: str | None = None) -> EvalSet:
    """A BEIR benchmark; the split is `split`, else ``test`` if present, else the only qrels file.

    `split` may also be a half (calibration, report) of that default split."""
    directory = Path(directory)
    corpus = _beir_corpus(directory)
    queries_path = directory / "queries.jsonl"
    qrels_dir = directory / "qrels"
    if corpus is None or not queries_path.is_file() or not qrels_dir.is_dir():
        raise CorpusError(
            f"{directory} is not a BEIR benchmark",
            hint="it needs corpus.jsonl (or .jsonl.gz), queries.jsonl and a qrels/ folder of .tsv files",
        )
    half = split if split in _SPLITS else None
    qrels_path = _qrels_file(qrels_dir, None if half else split)
    relevance = _read_qrels(qrels_path)
    queries: dict[str, str] = {}
    for number, line in enumerate(queries_path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                record = json.loads(line)
                queries[str(record["_id"])] = record["text"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise RecordError(str(queries_path), number, 'expected {"_id": ..., "text": ...}') from None
    items = tuple(
        EvalItem(id=qid, question=queries[qid], relevance=grades, type=directory.name)
        for qid, grades in relevance.items()
        if qid in queries and (half is None or _SPLITS[zlib.crc32(qid.encode()) % 2] == half)
    )
    if not items:
        raise CorpusError(f"{qrels_path}: no judged query is in {queries_path}")
    name = f"{directory.name}-{half}" if half else directory.name
    return EvalSet(name=name, path=str(directory), items=items, corpus=str(corpus), split=split)


def _beir_corpus(directory: Path) -> Path | None:
    return next((directory / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (directory / n).is_file()), None)


def _qrels_file(qrels_dir: Path, split: str | None) -> Path:
    files = sorted(qrels_dir.glob("*.tsv"))
    names = {f.stem: f for f in files}
    if split is not None:
        if split not in names:
            raise CorpusError(f"{qrels_dir} has no {split}.tsv", hint=f"splits here: {', '.join(names) or 'none'}")
        return names[split]
    if "test" in names:
        return names["test"]
    if len(files) == 1:
        return files[0]
    raise CorpusError(f"{qrels_dir}: which split? {', '.join(names) or 'no .tsv files'}", hint="pass --split")


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    relevance: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), 1):
            if not row or (number == 1 and row[0] == "query-id"):
                continue
            try:
                qid, doc, score = row
                relevance.setdefault(qid, {})[doc] = int(score)
            except ValueError:
                raise RecordError(str(path), number, "expected query-id, corpus-id, score (tab-separated)") from None
    return relevance


def load_upload(filename: str, data: bytes) -> EvalSet:
    """A question set sent as bytes (the UI's upload); errors and the report name the user's file."""
    return read_upload(filename, data, load_question_set).model_copy(update={"path": filename})


def eval_index(
    eval_set: EvalSet,
    settings: Settings,
    *,
    index: Index | None = None,
    embeddings: Embeddings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Index:
    """The index a set is judged over: the configured one (`index` if already open), or the
    set's own corpus, indexed once into ``<data_dir>/eval/<name>``.

    Re-running is cheap: ingest is an upsert, so only papers not yet indexed are embedded.
    """
    if eval_set.corpus is None:
        index = index or Index.open(settings, embeddings=embeddings)
    else:
        corpus = Path(eval_set.corpus)
        if not corpus.exists():
            raise CorpusError(f"{corpus}: the corpus of {eval_set.path} is not there", hint="put it there, or pass another set")
        # A BEIR folder's corpus is its own; a question set's corpus file may serve several sets.
        name = Path(eval_set.path).name if corpus.name.startswith("corpus.") else corpus.name.split(".")[0]
        update: dict = {"data_dir": settings.data_dir / "eval" / name}
        if settings.chroma_url:
            # On a server: the set's own collection beside the team's, not the team's itself.
            update["collection"] = re.sub(r"[^A-Za-z0-9._-]", "-", f"{settings.collection}-eval-{name}")
        own = settings.model_copy(update=update)
        index = Index.open(own, embeddings=embeddings)
        limits = settings.limits
        index.ingest(read_corpus(corpus, limits=limits), total=count_papers(corpus, limits=limits), progress=progress)
    if not len(index):
        raise StoreError(f"the index at {index.location} is empty", hint="ingest the set's papers first: paperchat ingest FILE")
    return index


def missing_gold(eval_set: EvalSet, index: Index) -> set[str]:
    """Gold paper ids of the set that the index does not hold (a set run on the wrong corpus)."""
    return {g for item in eval_set.items for g in item.gold} - set(index.papers)
