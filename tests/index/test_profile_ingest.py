"""`make bench-ingest-profile` wraps the functions ingest calls by name: a function moved to
another module would leave its step untimed (or the script broken) without this run."""

from conftest import PAPERS
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from profile_ingest import profile

import rag.index.store as store
import rag.index.textvectors as textvectors
from rag.corpus.reading import load_corpus


class OwnModel(Embeddings):
    """A fake of its own, not the session's model: the profile wraps a model's methods in place
    (the real model is a plain object that allows it; langchain's fake is a pydantic model)."""

    def __init__(self) -> None:
        self.fake = DeterministicFakeEmbedding(size=384)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.fake.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.fake.embed_query(text)


def test_every_step_of_an_ingest_is_timed(tmp_path, monkeypatch):
    # The profile wraps these module functions for the rest of its process: put back after.
    monkeypatch.setattr(store, "chunk_paper", store.chunk_paper)
    monkeypatch.setattr(textvectors, "evidence_texts", textvectors.evidence_texts)
    papers = load_corpus(PAPERS).papers[:4]
    own, total = profile(papers, tmp_path / "index", OwnModel())
    for step in (
        "chunk vectors",
        "sentence and word vectors",
        "sentence splitting and words",
        "Chroma writes",
        "chunking",
        "sentence and word store writes",
        "catalog",
    ):
        assert own.get(step, 0.0) > 0.0, step
    assert sum(own.values()) <= total
