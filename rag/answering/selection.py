"""Which sentences answer: each candidate sentence scored for the question and for its role.

A sentence's score is the verifier's probability that it answers the question (`rag.models.verifier`),
a little of its closeness to the question (MiniLM cosine) to break ties, a small prior for the
paper's rank, and a smaller bonus for the role the question asks for: the method for how/why, a
reported result for result questions, the reason (a cause, a consequence, a limitation) for why.
Outlook sentences ("We believe ...") are never chosen over an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.answering.evidence import Evidence, PaperEvidence, SentenceEvidence, group_weights, sentence_coverage, weight_met
from rag.answering.roles import Role, is_outlook
from rag.records import QuestionType
from rag.text import lexical_similarity

__all__ = ["Scored", "asked_role", "best_sentence", "role_weights", "score", "scored"]

# What motivates the work, what makes its problem hard, why it is worth doing: answered by the
# sentences that state the problem, a gap or a limitation of earlier work.
_MOTIVATION = re.compile(
    r"\b(what motivate[sd]?|motivation|what makes .{1,80}\b(hard|difficult|challenging|expensive|costly)|"
    r"why (is|are|was|were|would) .{1,80}\b(worth|needed|necessary|important|useful|matter)|"
    r"what (problem|challenge|gap|limitation|shortcoming|difficult(y|ies))s?\b)",
    re.IGNORECASE,
)
_WHY = re.compile(
    r"^\s*why\b|\bwhy (do|does|did|is|are|was|were|should|would|can)\b|\bfor what reason\b|\bwhat (causes|explains)\b", re.I
)


# The share of the question's terms a sentence meets that the paper's title does not (what the
# question asks of the paper, not which paper it is) counts this much more.
ASPECT_WEIGHT = 0.2
# How much the verifier's verdict counts beside closeness and terms. Chosen on the seed set and the
# calibration half of seed-how-result: as the whole score (1.0 and nothing else) it quoted the
# answering sentence more often but spread answers over papers the verdicts rate alike.
VERIFIED_WEIGHT = 0.3


@dataclass(frozen=True)
class Scored:
    sentence: SentenceEvidence
    paper: PaperEvidence
    score: float


def asked_role(evidence: Evidence) -> Role | None:
    """The role a sentence that answers this question plays: the problem for "what motivates",
    the reason for "why", the method for "how", the result for a result question; none for a
    lookup."""
    analysis = evidence.analysis
    if _MOTIVATION.search(analysis.cleaned):
        return Role.PROBLEM
    if _WHY.search(analysis.cleaned):
        return Role.REASON
    if analysis.type == QuestionType.RESULT:
        return Role.RESULT
    if analysis.type == QuestionType.HOW or analysis.asks_how:
        return Role.METHOD
    return None


def role_weights(evidence: Evidence) -> dict[Role, float]:
    """How much each role counts for this question's type."""
    role = asked_role(evidence)
    if role == Role.RESULT:
        return {Role.RESULT: 0.3, Role.DATA: 0.05}
    if role == Role.REASON:
        return {Role.REASON: 0.3, Role.PROBLEM: 0.1}
    if role == Role.PROBLEM:
        return {Role.PROBLEM: 0.3, Role.REASON: 0.1}
    if role == Role.METHOD:
        return {Role.METHOD: 0.3}
    return {Role.METHOD: 0.05, Role.RESULT: 0.05}


def score(evidence: Evidence, sentence: SentenceEvidence, paper: PaperEvidence, weights: dict[Role, float]) -> float:
    analysis = evidence.analysis
    value = sentence.similarity + 0.15 * lexical_similarity(analysis.search_text, sentence.text)
    # The verifier's probability that the sentence answers, where it was asked: it tells the
    # sentence that answers "how" from one that only shares the question's words.
    value += VERIFIED_WEIGHT * (sentence.answers or 0.0)
    value += 0.25 * sentence_coverage(sentence, analysis.terms)
    aspect = [i for i in range(len(analysis.terms)) if i not in paper.in_title]
    if paper.in_title and aspect:
        terms = [analysis.terms[i] for i in aspect]
        asked = {j for j, i in enumerate(aspect) if i in sentence.terms}
        value += ASPECT_WEIGHT * weight_met(terms, asked) / (sum(group_weights(terms).values()) or 1.0)
    # Retrieval already weighed dense and BM25 evidence for the whole paper; a sentence of a
    # paper ranked lower needs to match better to be chosen.
    value += 0.05 / paper.number
    value += sum(weight * sentence.roles.get(role, 0.0) for role, weight in weights.items())
    if analysis.type == QuestionType.RESULT:
        measures = {i for i, t in enumerate(analysis.terms) if t.measure}
        value += 0.1 * sentence.has_number + 0.15 * bool(measures & sentence.terms)
    if is_outlook(sentence.text) or sentence.text.rstrip().endswith("?"):
        # A belief, or the abstract's own question: neither answers.
        value -= 0.3
    return value


def scored(evidence: Evidence, papers: list[PaperEvidence] | None = None) -> list[Scored]:
    """Every quotable sentence of the papers (all, if not given), scored, in evidence order."""
    weights = role_weights(evidence)
    return [
        Scored(s, p, score(evidence, s, p, weights))
        for p in (papers if papers is not None else evidence.papers)
        for s in p.quotable()
    ]


def best_sentence(evidence: Evidence, paper: PaperEvidence, *, prefer: Role | None = None) -> SentenceEvidence | None:
    """The paper's sentence that best answers the question (favouring a role, if given)."""
    weights = role_weights(evidence)
    if prefer is not None:
        weights = {**weights, prefer: weights.get(prefer, 0.0) + 0.2}
    candidates = paper.quotable() or list(paper.sentences)
    return max(candidates, key=lambda s: score(evidence, s, paper, weights), default=None)
