"""Hybrid retrieval: dense (Chroma, cosine) and BM25, fused by a weighted sum of their scores.

Results are papers, not chunks: a paper's chunks count once (its best chunk stands for it), so
the top-k is k distinct papers. Scores, not ranks, are fused: reciprocal rank fusion gives a
confident BM25 top hit (a title's rare words) the same lead as a near tie, and fell below BM25
alone on known-item queries; the score sum stays above both sides on every set measured
(`docs/benchmarks.md`, "Fusion").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rag.index.store import Index
from rag.question.kind import question_focus
from rag.records import Filters, Source
from rag.settings import Settings


@dataclass(frozen=True)
class Ranked:
    """One paper's standing in each ranking (ranks start at 1)."""

    paper_id: str
    dense_rank: int | None = None
    dense_similarity: float | None = None
    bm25_rank: int | None = None
    bm25_score: float | None = None


def score_fusion(lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[tuple[str, float]]:
    """A weighted sum of each list's scores, each divided by its list's top score; best first.

    The floor is 0, not the list's lowest score (Bruch et al. 2023's "theoretical" min-max), so a
    list whose scores are all close keeps them close instead of being stretched over [0, 1]. A
    paper a list did not return gets that list's lowest scaled score: it ranked below all of them.
    Ties keep the order of first appearance."""
    scaled: list[tuple[dict[str, float], float, float]] = []
    for items, weight in zip(lists, weights, strict=True):
        if weight <= 0 or not items:
            continue
        top = max(score for _, score in items)
        # Papers a list holds are kept even when none scored above 0 (a few papers left by a
        # filter, all far from the question): behind any that did score, in the list's order.
        scores = {item: max(score, 0.0) / top if top > 0 else 0.0 for item, score in items}
        scaled.append((scores, min(scores.values()), weight))
    order = dict.fromkeys(item for scores, _, _ in scaled for item in scores)
    fused = {item: sum(weight * scores.get(item, floor) for scores, floor, weight in scaled) for item in order}
    return sorted(fused.items(), key=lambda kv: -kv[1])


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
    dense_order: list[tuple[str, float]] = []
    if settings.dense_weight > 0:
        vector = query_vector if query_vector is not None else index.embeddings.embed_query(focus or question_focus(query))
        # More chunks than papers wanted, since several chunks of one paper collapse into one.
        for hit in index.dense_search(vector, settings.candidates * 2, allowed):
            if hit.paper_id not in ranked:
                dense_order.append((hit.paper_id, hit.similarity))
                ranked[hit.paper_id] = Ranked(hit.paper_id, len(dense_order), hit.similarity)
    lexical_order: list[tuple[str, float]] = []
    if settings.bm25_weight > 0:
        for rank, hit in enumerate(index.lexical.search(query, settings.candidates, allowed), start=1):
            lexical_order.append((hit.paper_id, hit.score))
            prior = ranked.get(hit.paper_id, Ranked(hit.paper_id))
            ranked[hit.paper_id] = Ranked(hit.paper_id, prior.dense_rank, prior.dense_similarity, rank, hit.score)
    fused = score_fusion([dense_order, lexical_order], [settings.dense_weight, settings.bm25_weight])
    sources: list[Source] = []
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
            )
        )
    return sources


# hybrid: as configured (the fusion, its top reordered by the verifier when rerank_depth is set,
# rag.search.rerank); fused: the fusion alone.
RETRIEVERS = ("hybrid", "fused", "dense", "bm25")
_WEIGHTS = {"dense": "dense_weight", "bm25": "bm25_weight"}


def with_retriever(settings: Settings, name: str) -> Settings:
    """Settings that rank as configured (`hybrid`), by the fusion without any reranking by the
    verifier (`fused`), or by one signal alone (`dense`, `bm25`)."""
    if name not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}")
    if name == "hybrid":
        return settings
    if name == "fused":
        return settings.model_copy(update={"rerank_depth": 0})
    return settings.model_copy(update={"rerank_depth": 0, **{w: (1.0 if n == name else 0.0) for n, w in _WEIGHTS.items()}})


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
