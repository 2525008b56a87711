"""Per question, what an evaluation run got right and wrong: the drill-down of a report.

`outcomes` checks each question of an `EvalReport` by the pass rules of `rag.evaluation.metrics`, from what
the report stores per item, and lists the papers the question names (gold, cited, listed, the top
retrieved) with where each ranked. `reasons` says why a question failed, in sentences, in the
language asked for. A report written before items kept paper titles still reads: those papers
have no title.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.evaluation.metrics import METRICS
from rag.evaluation.records import EvalReport, ItemResult, MetricCheck, PaperMark, QuestionOutcome
from rag.models.prompts import say


def headline_scores(report: EvalReport, item: ItemResult) -> dict[str, float]:
    """The item's scores that the report's metrics are the means of.

    When the LLM judge fell short of the calibrated one (`judge_note`), the report leads with the
    calibrated judge's figures, so each question is checked on that judge's scores too.
    """
    return item.scores | item.second_scores if report.judge_note else item.scores


def checks(scores: dict[str, float]) -> tuple[MetricCheck, ...]:
    """Each metric of `scores` that has a pass rule, checked, in the order reports list metrics."""
    return tuple(
        MetricCheck(metric=m, value=scores[m], passed=rule(scores[m]))
        for m, metric in METRICS.items()
        if m in scores and (rule := metric.passes) is not None
    )


def papers(item: ItemResult, k: int) -> tuple[PaperMark, ...]:
    """The gold papers, those the answer gives, then the rest of the top `k` retrieved."""
    cited = set(item.cited)
    cited_titles = {c.paper_id: c.title for c in item.citations}
    ranks = {pid: rank for rank, pid in enumerate(item.retrieved, 1)}
    named = dict.fromkeys([*item.gold, *item.cited, *item.listed, *item.retrieved[:k]])
    return tuple(
        PaperMark(
            id=pid,
            title=item.titles.get(pid) or cited_titles.get(pid, ""),
            gold=pid in item.gold,
            cited=pid in cited,
            listed=pid in item.listed,
            rank=ranks.get(pid),
        )
        for pid in named
    )


def outcomes(report: EvalReport) -> list[QuestionOutcome]:
    """Every question the report holds, checked, in the run's order."""
    result = []
    for item in report.items:
        scores = headline_scores(report, item)
        result.append(QuestionOutcome(item=item, scores=scores, checks=checks(scores), papers=papers(item, report.k)))
    return result


def checked_metrics(rows: Sequence[QuestionOutcome]) -> list[str]:
    """The metrics any of `rows` is checked on, in the order reports list metrics."""
    seen = {c.metric for row in rows for c in row.checks}
    return [m for m in METRICS if m in seen]


def failing(rows: Sequence[QuestionOutcome], metric: str | None = None) -> list[QuestionOutcome]:
    """The rows that failed `metric`'s check; with no metric, those that failed any check or failed to run."""
    if metric is None:
        return [r for r in rows if r.failed]
    return [r for r in rows if any(c.metric == metric for c in r.failures)]


def reasons(row: QuestionOutcome, language: str = "en") -> list[str]:
    """Why the question failed, a sentence each in `language`: the error that stopped it (as it
    was recorded), each check it failed."""
    said = [say("evaluation.failed_to_run", language, error=row.item.error)] if row.item.error else []
    for check in row.failures:
        metric = METRICS[check.metric]
        said.append(
            say(
                "evaluation.failed_check",
                language,
                metric=metric.label_in(language),
                value=f"{check.value:.2f}",
                rule=metric.rule_in(language),
            )
        )
    return said
