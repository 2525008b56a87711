"""The abstract sentences and paper words ingest split and embedded, kept beside the index.

They live in an SQLite file, not in Chroma: a Chroma collection keeps its vectors in an HNSW
graph that is loaded into memory whole the first time it is read (about 1.6 kB a sentence, some
750,000 sentences at 100k papers), while these are only ever read by key, a few hundred per
question. SQLite reads those rows and nothing else, so memory does not grow with the corpus.

The file is this machine's, also for a collection on a team's Chroma server: papers another
client ingested are split and embedded here the first time a question reads them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.errors import StoreError
from rag.index.ingestprogress import BatchProgress
from rag.index.papertext import evidence_texts
from rag.records import Paper

# SQLite's limit on the parameters of one statement is 32,766; stay well under it.
_CHUNK = 900

_SCHEMA = """
CREATE TABLE IF NOT EXISTS model (id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS papers (paper_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sentences (
    paper_id TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (paper_id, position)
);
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, vector BLOB NOT NULL);
"""

_TABLES = ("papers", "sentences", "words")

# More is no abstract (a hostile or broken record): its questions split it when they read it.
_MAX_SENTENCES = 64

Sentences = list[tuple[str, np.ndarray]]


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def _chunks(items: Sequence) -> Iterable[Sequence]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class TextVectors:
    """Each paper's sentences in order with their vectors (under the paper's content hash, so a
    changed paper is split again) and each distinct paper word's vector, for one embedding model."""

    def __init__(self, path: Path, model_id: str) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # One connection shared by the UI's threads, guarded by a lock; other processes wait
            # for a writer rather than fail.
            self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                stored = self._db.execute("SELECT id FROM model").fetchone()
                if stored is None or stored[0] != model_id:
                    # Vectors of another model are of no use: start afresh.
                    self._empty(("model", *_TABLES))
                    self._db.execute("INSERT INTO model VALUES (?)", (model_id,))
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the sentence store at {path}: {exc}",
                hint="set PAPERCHAT_DATA_DIR to a writable folder, or delete the file to rebuild it at the next ingest",
            ) from exc
        self._lock = threading.Lock()

    def _select(self, sql: str, keys: Sequence[str]) -> list[tuple]:
        rows: list[tuple] = []
        with self._lock:
            for chunk in _chunks(list(dict.fromkeys(keys))):
                rows.extend(self._db.execute(sql.format(marks=",".join("?" * len(chunk))), chunk))
        return rows

    def hashes(self, paper_ids: Sequence[str]) -> dict[str, str]:
        """The content hash each paper's stored sentences were split from."""
        return dict(self._select("SELECT paper_id, content_hash FROM papers WHERE paper_id IN ({marks})", paper_ids))

    def sentences(self, paper_ids: Sequence[str]) -> dict[str, Sentences]:
        """Each paper's stored sentences, in order, with their vectors; papers without any are
        not in the result."""
        found: dict[str, Sentences] = {}
        sql = "SELECT paper_id, text, vector FROM sentences WHERE paper_id IN ({marks}) ORDER BY paper_id, position"
        for paper_id, text, blob in self._select(sql, paper_ids):
            found.setdefault(paper_id, []).append((text, _vector(blob)))
        return found

    def words(self, words: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these words, by word; the others are not in the result."""
        return {w: _vector(b) for w, b in self._select("SELECT word, vector FROM words WHERE word IN ({marks})", words)}

    def put(self, papers: dict[str, tuple[str, Sentences]], words: dict[str, np.ndarray]) -> None:
        """Store papers' sentences (by id: content hash and sentences, replacing what was stored)
        and words, in one transaction."""
        with self._lock, self._db:
            for chunk in _chunks(list(papers)):
                self._db.execute(f"DELETE FROM sentences WHERE paper_id IN ({','.join('?' * len(chunk))})", chunk)
            self._db.executemany(
                "INSERT INTO sentences VALUES (?, ?, ?, ?)",
                (
                    (pid, position, text, np.asarray(vector, dtype=np.float32).tobytes())
                    for pid, (_, sentences) in papers.items()
                    for position, (text, vector) in enumerate(sentences)
                ),
            )
            self._db.executemany("INSERT OR REPLACE INTO papers VALUES (?, ?)", ((pid, h) for pid, (h, _) in papers.items()))
            self._db.executemany(
                "INSERT OR IGNORE INTO words VALUES (?, ?)",
                ((w, np.asarray(v, dtype=np.float32).tobytes()) for w, v in words.items()),
            )

    def drop(self, paper_ids: Sequence[str]) -> None:
        """Forget these papers' sentences (words stay: other papers use them)."""
        with self._lock, self._db:
            for chunk in _chunks(list(paper_ids)):
                marks = ",".join("?" * len(chunk))
                self._db.execute(f"DELETE FROM sentences WHERE paper_id IN ({marks})", chunk)
                self._db.execute(f"DELETE FROM papers WHERE paper_id IN ({marks})", chunk)

    def clear(self) -> None:
        with self._lock, self._db:
            self._empty(_TABLES)

    def _empty(self, tables: Sequence[str]) -> None:
        for table in tables:
            self._db.execute(f"DELETE FROM {table}")


def write_texts(store: TextVectors, papers: Sequence[Paper], embeddings: Embeddings, work: BatchProgress) -> None:
    """Split the papers' abstracts into sentences and store them with the papers' words; only
    what is not stored yet (a sentence as it is, a word any paper has) is embedded."""
    split: dict[str, tuple[str, list[str]]] = {}
    words: dict[str, None] = {}
    for paper in papers:
        sentences, paper_words = evidence_texts(paper)
        split[paper.id] = (paper.content_hash, sentences if len(sentences) <= _MAX_SENTENCES else [])
        words.update(dict.fromkeys(paper_words))
    vectors = {t: v for stored in store.sentences(list(split)).values() for t, v in stored}
    stored_words = store.words(list(words))
    new_words = [w for w in words if w not in stored_words]
    todo = list(dict.fromkeys([t for _, sentences in split.values() for t in sentences if t not in vectors] + new_words))
    work.expect(len(todo))
    for part in work.slices(len(todo)):
        vectors.update(zip(todo[part], np.asarray(embeddings.embed_documents(todo[part]), dtype=np.float32), strict=True))
    store.put(
        {pid: (digest, [(t, vectors[t]) for t in sentences]) for pid, (digest, sentences) in split.items()},
        {w: vectors[w] for w in new_words},
    )
