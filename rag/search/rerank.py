"""The fused ranking's top papers reordered by the verifier's paper verdicts (`rag.models.verifier`).

With `rerank_depth` set, each of the first that many papers is read by the verifier as a
(question, paper) pair: its title and the sentences closest to the question
(`rag.models.verifier.paper_passage`). Its new score is the verifier's probability that it is about what
the question asks (kept as `Source.verified`) plus `rerank_weight` times its fused retrieval
score (scaled to the top paper's). Off by default: measured on the calibration halves (`eval/calibrate_rerank.py`), the
verifier's paper verdicts rank worse than the fusion (nDCG@10 alone 0.69 / 0.54 / 0.19 on the
known-item set, SciFact train and the reworded lookups, against 0.965 / 0.727 / 0.930 fused), and
no weight beside the fused score beats the fusion on all three.

A question in Chinese is reordered another way first: e5 reads it against the first `E5_DEPTH`
papers' titles and openings in its own space (`rag.index.crosslingual`), and a paper's score is its
fused score (scaled to the top paper's) plus `E5_WEIGHT` times its e5 cosine's z-score among them.
On the calibration halves of the Chinese lookups the gold paper came first for 0.923 → 0.962 of
them over the bundled papers and 0.562 → 0.688 over the scale corpus (English: 0.885, 0.688).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag.index.crosslingual import CrossLingualEmbeddings
from rag.index.embeddings import LazyEmbeddings, SentenceVectors
from rag.index.store import Index
from rag.markup import to_plain
from rag.models.verifier import Verifier, paper_passage
from rag.records import Filters, QuestionAnalysis, Source
from rag.search.retrieval import search
from rag.settings import Settings
from rag.text import split_sentences

__all__ = ["E5_DEPTH", "E5_WEIGHT", "PASSAGE_SENTENCES", "by_e5", "rank", "rerank"]

# Sentences of a paper the verifier reads beside its title: the two closest to the question.
PASSAGE_SENTENCES = 2
# A Chinese question's papers e5 reorders, what of each it reads, and its say beside the fused
# score (calibrated on the calibration halves of eval/sets/zh-*.jsonl: 0.05 ranked as 0.1 does;
# 0.2 put the gold paper first more often over the scale corpus, 0.750, but less over the
# bundled papers, 0.885).
E5_DEPTH = 20
E5_OPENING = 300
E5_WEIGHT = 0.1


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


def by_e5(question: str, sources: Sequence[Source], reader: CrossLingualEmbeddings) -> list[Source]:
    """The first `E5_DEPTH` sources reordered by e5's reading of a Chinese question (see the
    module docstring), renumbered 1..n."""
    head, tail = list(sources[:E5_DEPTH]), list(sources[E5_DEPTH:])
    if len(head) < 2:
        return list(sources)
    read = reader.similarities(
        question, {s.paper.id: f"{s.paper.display_title}. {to_plain(s.paper.abstract)[:E5_OPENING]}" for s in head}
    )
    cosines = np.array([read[s.paper.id] for s in head])
    spread = (cosines - cosines.mean()) / (cosines.std() or 1.0)
    top = max(s.score for s in head) or 1.0
    scored = sorted(zip(head, spread, strict=True), key=lambda pair: -(pair[0].score / top + E5_WEIGHT * pair[1]))
    return [s.model_copy(update={"number": n}) for n, s in enumerate([s for s, _ in scored] + tail, 1)]


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
    reader = index.embeddings.crosslingual if analysis.in_cjk and isinstance(index.embeddings, LazyEmbeddings) else None
    depth = max(k, settings.rerank_depth, E5_DEPTH if reader is not None else 0)
    sources = search(index, analysis.search_text, settings, k=depth, filters=filters, focus=analysis.focus)
    if reader is not None:
        sources = by_e5(analysis.cleaned, sources, reader)
    if verifier is not None and settings.rerank_depth:
        sources = rerank(analysis, sources, vectors, verifier, settings)
    return sources[:k]
