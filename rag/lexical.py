"""BM25 over whole papers (title + abstract) with bm25s, English stop words and Snowball stems.

Paper-level rather than chunk-level: BM25 length normalisation already handles long abstracts,
and one score per paper is what fusion needs. On SciFact train's report half this set-up
reaches nDCG@10 0.705 alone (dense MiniLM: 0.660; their fusion: 0.741).

An index is saved to a folder and loaded back memory-mapped, so opening a large corpus does not
tokenize every abstract again (`rag.store` decides when a saved one is still current).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from rag.records import Paper
from rag.text import stem_words


def _tokens(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", stemmer=stem_words, return_ids=False, show_progress=False)


@dataclass(frozen=True)
class LexicalHit:
    paper_id: str
    score: float


class LexicalIndex:
    def __init__(self, ids: list[str], bm25: bm25s.BM25) -> None:
        self.ids = ids
        self._row = {pid: i for i, pid in enumerate(ids)}
        self._bm25 = bm25

    @classmethod
    def build(cls, papers: Sequence[Paper]) -> LexicalIndex:
        bm25 = bm25s.BM25()
        if papers:
            bm25.index(_tokens([f"{p.title}\n{p.abstract}" for p in papers]), show_progress=False)
        return cls([p.id for p in papers], bm25)

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        bm25 = bm25s.BM25.load(str(folder), mmap=True, show_progress=False) if ids else bm25s.BM25()
        return cls(ids, bm25)

    def save(self, folder: Path) -> None:
        """Write to `folder` whole or not at all: another process may be saving the same index."""
        partial = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        if self.ids:
            self._bm25.save(str(partial), show_progress=False)
        (partial / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")
        try:
            partial.rename(folder)
        except OSError:  # saved by another process first: the same generation, the same index
            shutil.rmtree(partial, ignore_errors=True)

    def document_frequency(self) -> dict[str, int]:
        """How many papers hold each stemmed term."""
        if not self.ids:
            return {}
        counts = np.diff(self._bm25.scores["indptr"])
        return {term: int(counts[i]) for term, i in self._bm25.vocab_dict.items() if term and i < len(counts)}

    def search(self, query: str, n: int, paper_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        """Top papers by BM25; `paper_ids` restricts the search (metadata filters)."""
        if not self.ids:
            return []
        vocab = self._bm25.vocab_dict
        terms = [t for t in _tokens([query])[0] if t in vocab]
        if not terms:
            return []
        mask = None
        if paper_ids is not None:
            mask = np.zeros(len(self.ids), dtype=np.float32)
            mask[[self._row[p] for p in paper_ids if p in self._row]] = 1.0
        n = min(n, len(self.ids))
        docs, scores = self._bm25.retrieve([terms], k=n, show_progress=False, weight_mask=mask, n_threads=1)
        return [
            LexicalHit(self.ids[int(d)], float(s))
            for d, s in zip(docs[0], scores[0], strict=True)
            if s > 0
        ]
