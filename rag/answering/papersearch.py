"""How retrieved papers meet a query: each paper's abstract sentence that matches it best, the
words of the paper that meet its key terms, and whether the hit is weak. Paper search
(`paperchat search`, `Assistant.search_papers`) lists them; an answer keeps them for its evidence
panel. Pure: it reads the evidence the answering pipeline gathered."""

from __future__ import annotations

from collections.abc import Sequence

from rag.answering.answerability import Bars, missing_terms
from rag.answering.evidence import Evidence, PaperEvidence, SentenceEvidence, sentence_coverage
from rag.models.prompts import listed, load_prompt
from rag.records import PaperMatch, Relevance

__all__ = ["lacking_note", "paper_matches", "relevance", "weak"]

BARS = Bars()


def _best(paper: PaperEvidence, evidence: Evidence) -> SentenceEvidence | None:
    # The sentence that meets most of the query's key terms, then the closest in meaning: a
    # sentence naming the query's words is what a reader scans a result list for.
    return max(
        paper.sentences,
        key=lambda s: (round(sentence_coverage(s, evidence.analysis.terms), 3), s.similarity),
        default=None,
    )


def weak(paper: PaperEvidence, *, min_similarity: float, bars: Bars = BARS) -> bool:
    """Whether the paper could not carry an answer on its own: below both of answerability's bars
    for a partial answer, too little of the question's key-term weight met (`Bars.weak_coverage`)
    and no sentence near enough in meaning (`min_similarity`)."""
    return paper.coverage < bars.weak_coverage and paper.best_similarity < min_similarity


def relevance(evidence: Evidence, *, min_similarity: float) -> list[Relevance]:
    """Each retrieved paper, best first: its best sentence, the words that met the query, and
    whether it is weak (`weak`), so the reader is told to discount it."""
    found = []
    for paper in evidence.papers:
        best = _best(paper, evidence)
        found.append(
            Relevance(
                paper_id=paper.paper.id,
                sentence=best.text if best else "",
                similarity=best.similarity if best else 0.0,
                coverage=paper.coverage,
                matched=tuple(dict.fromkeys(word for word in paper.met.values() if word)),
                # Named as a best match names what no abstract says: "graph neural" met by
                # "neural" alone is not a paper about graph neural networks.
                lacks=missing_terms(evidence, BARS.best_match_missing_weight, papers=[paper]),
                weak=weak(paper, min_similarity=min_similarity),
            )
        )
    return found


def paper_matches(evidence: Evidence, *, min_similarity: float) -> list[PaperMatch]:
    """Each retrieved paper, best first, with its source and how it meets the query."""
    return [
        PaperMatch(source=paper.source, **found.model_dump())
        for paper, found in zip(evidence.papers, relevance(evidence, min_similarity=min_similarity), strict=True)
    ]


def lacking_note(matches: Sequence[Relevance], language: str = "en") -> str:
    """What a result list of partial matches says first, in plain text and in `language`: the
    query's phrases that no listed paper meets ("No paper meets “graph neural” ..."); "" when one
    meets them all."""
    if not matches:
        return ""
    lacking = [phrase for phrase in matches[0].lacks if all(phrase in m.lacks for m in matches[1:])]
    if not lacking:
        return ""
    return load_prompt("search_lacking", language=language).format(missing=listed(lacking[:3], language))
