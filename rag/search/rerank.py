"""The fused ranking's top papers reordered by the verifier's paper verdicts (`rag.models.verifier`).

With `rerank_depth` set, each of the first that many papers is read by the verifier as a
(question, paper) pair: its title and the sentences closest to the question
(`rag.models.verifier.paper_passage`). Its new score is the verifier's probability that it is about what
the question asks (kept as `Source.verified`) plus `rerank_weight` times its fused retrieval
score (scaled to the top paper's). Off by default: measured on the calibration halves (`eval/calibrate_rerank.py`), the
verifier's paper verdicts rank worse than the fusion (nDCG@10 alone 0.69 / 0.54 / 0.19 on the
known-item set, SciFact train and the reworded lookups, against 0.965 / 0.727 / 0.930 fused), and
no weight beside the fused score beats the fusion on all three.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag.index.embeddings import SentenceVectors
from rag.index.store import Index
from rag.markup import to_plain
from rag.models.verifier import Verifier, paper_passage
from rag.records import Filters, QuestionAnalysis, Source
from rag.search.retrieval import search
from rag.settings import Settings
from rag.text import split_sentences

__all__ = ["PASSAGE_SENTENCES", "rank", "rerank"]

# Sentences of a paper the verifier reads beside its title: the two closest to the question.
PASSAGE_SENTENCES = 2


def passages(focus: str, sources: Sequence[Source], vectors: SentenceVectors) -> list[str]:
    """Each source's passage: its title and its sentences closest to `focus`, in abstract order."""
    vectors.read([s.paper for s in sources])
    split = [split_sentences(s.paper.abstract) for s in sources]
    texts = [t for sentences in split for t in sentences]
    similarity = iter(vectors.similarities(focus, texts) if texts else [])
    out = []
    for source, sentences in zip(sources, split, strict=True):
        scores = np.asarray([next(similarity) for _ in sentences])
        chosen = sorted(int(i) for i in np.argsort(-scores, kind="stable")[:PASSAGE_SENTENCES])
        out.append(paper_passage(to_plain(source.paper.title), [to_plain(sentences[i]) for i in chosen]))
    return out


def judged(analysis: QuestionAnalysis, sources: Sequence[Source], vectors: SentenceVectors, verifier: Verifier) -> list[Source]:
    """The sources, each with the verifier's probability that it is about the question."""
    if not sources:
        return []
    verdicts = verifier.judge(analysis.search_text, passages(analysis.focus, sources, vectors))
    return [s.model_copy(update={"verified": round(v.relevant, 4)}) for s, v in zip(sources, verdicts, strict=True)]


def rerank(
    analysis: QuestionAnalysis, sources: Sequence[Source], vectors: SentenceVectors, verifier: Verifier, settings: Settings
) -> list[Source]:
    """The sources with the first `rerank_depth` reordered by the verifier, renumbered 1..n."""
    head = judged(analysis, sources[: settings.rerank_depth], vectors, verifier)
    tail = list(sources[settings.rerank_depth :])
    if not head:
        return tail
    top = max(s.score for s in head) or 1.0
    scored = [((s.verified or 0.0) + settings.rerank_weight * s.score / top, s) for s in head]
    ordered = [s for _, s in sorted(scored, key=lambda pair: -pair[0])] + tail
    return [s.model_copy(update={"number": n}) for n, s in enumerate(ordered, 1)]


def rank(
    index: Index,
    analysis: QuestionAnalysis,
    settings: Settings,
    vectors: SentenceVectors,
    verifier: Verifier | None,
    *,
    k: int,
    filters: Filters | None = None,
) -> list[Source]:
    """The top-k papers for an analysed question: the hybrid search, reranked if `rerank_depth` is set."""
    sources = search(
        index, analysis.search_text, settings, k=max(k, settings.rerank_depth), filters=filters, focus=analysis.focus
    )
    if verifier is not None and settings.rerank_depth:
        sources = rerank(analysis, sources, vectors, verifier, settings)
    return sources[:k]
