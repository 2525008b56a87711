"""Hybrid retrieval: dense (Chroma, cosine) and BM25, fused by weighted reciprocal rank fusion.

Results are papers, not chunks: a paper's chunks count once (its best chunk stands for it), so
the top-k is k distinct papers. Measured on SciFact (nDCG@10): bm25s 0.686, MiniLM dense 0.650,
their RRF 0.716. The weights are settings because on known-item (title) queries BM25 alone wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rag.records import Filters, Source
from rag.settings import Settings
from rag.store import Index
from rag.answering.question import question_focus


@dataclass(frozen=True)
class Ranked:
    """One paper's standing in each ranking (ranks start at 1)."""

    paper_id: str
    dense_rank: int | None = None
    dense_similarity: float | None = None
    bm25_rank: int | None = None
    bm25_score: float | None = None
    passage: str = ""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], *, k: int = 60
) -> list[tuple[str, float]]:
    """Weighted RRF (Cormack et al. 2009): score = sum of w / (k + rank); ties by first ranking."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(dict.fromkeys(i for r in rankings for i in r))}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def search(
    index: Index,
    query: str,
    settings: Settings,
    *,
    k: int | None = None,
    filters: Filters | None = None,
    query_vector: Sequence[float] | None = None,
    focus: str | None = None,
) -> list[Source]:
    """The top-k papers for a query, numbered 1..k as they will be shown to the model.

    The dense side embeds `focus` (the question without its framing words), by default derived
    from the query; BM25 reads the query itself."""
    k = k or settings.k
    allowed = None
    if filters is not None and filters.active:
        allowed = index.matching(filters)
        if not allowed:
            return []
    ranked: dict[str, Ranked] = {}
    dense_order: list[str] = []
    if settings.dense_weight > 0:
        vector = query_vector if query_vector is not None else index.embeddings.embed_query(focus or question_focus(query))
        # More chunks than papers wanted, since several chunks of one paper collapse into one.
        for hit in index.dense_search(vector, settings.candidates * 2, allowed):
            if hit.paper_id not in ranked:
                dense_order.append(hit.paper_id)
                ranked[hit.paper_id] = Ranked(
                    hit.paper_id, len(dense_order), hit.similarity, passage=hit.text
                )
    lexical_order: list[str] = []
    if settings.bm25_weight > 0:
        for rank, hit in enumerate(index.lexical.search(query, settings.candidates, allowed), start=1):
            lexical_order.append(hit.paper_id)
            prior = ranked.get(hit.paper_id, Ranked(hit.paper_id))
            ranked[hit.paper_id] = Ranked(
                hit.paper_id, prior.dense_rank, prior.dense_similarity, rank, hit.score, prior.passage
            )
    fused = reciprocal_rank_fusion(
        [dense_order, lexical_order],
        [settings.dense_weight, settings.bm25_weight],
        k=settings.rrf_k,
    )
    sources = []
    papers = index.fetch([paper_id for paper_id, _ in fused[:k]])
    for paper_id, score in fused[:k]:
        r = ranked.get(paper_id, Ranked(paper_id))
        paper = papers.get(paper_id)
        if paper is None:  # removed by another client since the rankings were read
            continue
        sources.append(
            Source(
                number=len(sources) + 1,
                paper=paper,
                score=score,
                dense_similarity=r.dense_similarity,
                bm25_score=r.bm25_score,
                dense_rank=r.dense_rank,
                bm25_rank=r.bm25_rank,
                passage=r.passage or paper.abstract,
            )
        )
    return sources


RETRIEVERS = ("hybrid", "dense", "bm25")
_WEIGHTS = {"dense": "dense_weight", "bm25": "bm25_weight"}


def with_retriever(settings: Settings, name: str) -> Settings:
    """Settings that rank by one signal alone (`dense`, `bm25`) or by the configured fusion."""
    if name not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}")
    if name == "hybrid":
        return settings
    return settings.model_copy(update={w: (1.0 if n == name else 0.0) for n, w in _WEIGHTS.items()})


class PaperRetriever(BaseRetriever):
    """The hybrid search as a LangChain retriever: one Document per paper, best first."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Index
    settings: Settings
    k: int | None = None
    filters: Filters | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [
            Document(
                page_content=s.paper.abstract,
                id=s.paper.id,
                metadata={"source": s, "title": s.paper.display_title, "score": s.score},
            )
            for s in search(self.index, query, self.settings, k=self.k, filters=self.filters)
        ]
