"""Which answer form a question gets, and what it is built from: the plan the backend writes to.

- a comparison ("compare X and Y", "a table of ...") over two papers or more: a table;
- a collection ("which papers ...") or a question about the papers the filters leave ("what do
  these papers propose?"): every paper that clears the relevance bar, numbered first; when none
  does, the corpus does not cover the question after all;
- a best match (the abstracts use other words): quotes from the paper or two the ranking
  clearly puts first, numbered first, and from no other of the top k;
- anything else: quotes from the top k papers.

The papers an answer rests on are renumbered to come first, so the text cites [1]..[n] and the
near misses follow them.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.answering.evidence import Evidence
from rag.answering.forms.collection import find_matches
from rag.answering.forms.comparison import build_table, compared_papers
from rag.answering.request import Task
from rag.records import Answerability, CollectionMatch, ComparisonTable, Coverage, QuestionAnalysis, QuestionType

__all__ = ["Plan", "plan"]

# Near misses kept after a collection's or comparison's papers ("also retrieved").
NEAR_MISSES = 3


@dataclass(frozen=True)
class Plan:
    task: Task
    evidence: Evidence
    answerability: Answerability
    matches: tuple[CollectionMatch, ...] = ()
    table: ComparisonTable | None = None


def _task(analysis: QuestionAnalysis) -> Task:
    if analysis.type == QuestionType.COMPARISON:
        return Task.COMPARISON
    if analysis.type == QuestionType.COLLECTION:
        return Task.COLLECTION
    return Task.ANSWER


def plan(evidence: Evidence, answerability: Answerability, *, k: int, selection: bool) -> Plan:
    """The form, and the evidence renumbered for it (see the module docstring)."""
    task = _task(evidence.analysis)
    if not answerability.answers:
        return Plan(task, evidence, answerability)
    if answerability.coverage == Coverage.BEST_MATCH:
        # The best first, quoted; the rest of the top k kept beside them, uncited.
        best = [p.number for p in evidence.papers if p.paper.id in answerability.best]
        return Plan(Task.ANSWER, evidence.renumbered(best).truncated(k), answerability)
    if task == Task.ANSWER and not selection:
        return Plan(task, evidence.truncated(k), answerability)
    matches = find_matches(evidence, selection=selection)
    if task == Task.COMPARISON:
        compared = compared_papers(evidence, matches)
        if len(compared) < 2:
            # One paper is no comparison: answer about it.
            return Plan(Task.ANSWER, evidence.renumbered([p.number for p in compared]).truncated(k), answerability)
        evidence = evidence.renumbered([p.number for p in compared])
        table = build_table(evidence.papers[: len(compared)])
        return Plan(task, evidence.truncated(len(compared) + NEAR_MISSES), answerability, table=table)
    if not matches:
        return Plan(
            task,
            evidence,
            answerability.model_copy(update={"coverage": Coverage.NOT_COVERED, "reason": "no paper clears the relevance bar"}),
        )
    order = [m.number for m in matches]
    renumber = {old: new for new, old in enumerate(order, 1)}
    evidence = evidence.renumbered(order).truncated(len(order) + NEAR_MISSES)
    matches = [m.model_copy(update={"number": renumber[m.number]}) for m in matches]
    return Plan(Task.COLLECTION, evidence, answerability, matches=tuple(matches))
