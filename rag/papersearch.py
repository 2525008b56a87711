"""Paper search: the hybrid ranking as a list of papers, each with the abstract sentence that
matches the query best and the words of the paper that meet its key terms (`paperchat search`,
`Assistant.search_papers`). Pure: it reads the evidence the answering pipeline gathered."""

from __future__ import annotations

from rag.answering.evidence import Evidence, PaperEvidence, SentenceEvidence, sentence_coverage
from rag.records import PaperMatch

__all__ = ["paper_matches"]


def _best(paper: PaperEvidence, evidence: Evidence) -> SentenceEvidence | None:
    # The sentence that meets most of the query's key terms, then the closest in meaning: a
    # sentence naming the query's words is what a reader scans a result list for.
    return max(
        paper.sentences,
        key=lambda s: (round(sentence_coverage(s, evidence.analysis.terms), 3), s.similarity),
        default=None,
    )


def paper_matches(evidence: Evidence) -> list[PaperMatch]:
    """Each retrieved paper, best first, with its best sentence and the words that met the query."""
    matches = []
    for paper in evidence.papers:
        best = _best(paper, evidence)
        matches.append(
            PaperMatch(
                source=paper.source,
                sentence=best.text if best else "",
                similarity=best.similarity if best else 0.0,
                matched=tuple(dict.fromkeys(word for word in paper.met.values() if word)),
            )
        )
    return matches
