"""What each evaluation metric is called and means, for every place that shows one.

`METRICS` maps a metric id (a key of `EvalReport.metrics` and of `ItemResult.scores`) to its
readable label, a one-line description, which way is better, and the rule by which the
Evaluate page's per-question table marks a question passed or failed on it. The CLI's table,
``report.md``, the plots and the app all name metrics through it, so a metric reads the same
everywhere; `rag.evaluation.evaluate` defines how each is computed.

Pass rules, per question: a gold paper in the top 5 (the answer sees the top k, 5 by default);
every sentence supported and every citation needed (citations, faithfulness); every cited or
listed paper gold and every gold paper cited or listed; a gold answering sentence quoted; the
question decided right (declined if unanswerable, not refused if answerable). The other
metrics have no rule: the ranking metrics restate Recall@5's question at other depths, answer
relevance is graded with no calibrated bar, and the refusal rates are what Decline accuracy
checks per question.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    label: str
    description: str
    lower_is_better: bool = False
    # The per-question check, in words ("every citation is needed") and as a test of the item's
    # score; empty and None for a metric no question passes or fails on alone.
    rule: str = ""
    passes: Callable[[float], bool] | None = None

    @property
    def check_help(self) -> str:
        """The description and the pass rule, one line."""
        return f"{self.description} A question passes when {self.rule}." if self.rule else self.description


def _some(value: float) -> bool:
    return value > 0


def _all(value: float) -> bool:
    return value >= 1.0


# In the order reports list them: retrieval, citations, answer quality, gold papers, answer
# forms, refusals.
METRICS: dict[str, Metric] = {
    "recall@1": Metric("Recall@1", "Share of the gold papers ranked first."),
    "recall@5": Metric(
        "Recall@5", "Share of the gold papers in the top 5 retrieved.", rule="a gold paper is in the top 5", passes=_some
    ),
    "recall@10": Metric("Recall@10", "Share of the gold papers in the top 10 retrieved."),
    "recall@100": Metric("Recall@100", "Share of the gold papers in the top 100 retrieved."),
    "mrr@10": Metric("MRR@10", "1 / the rank of the first gold paper in the top 10 (0 when none is)."),
    "ndcg@10": Metric("nDCG@10", "How near the top 10 comes to the ideal order of the gold papers, by relevance grade."),
    "citation_recall": Metric(
        "Citation recall",
        "Share of the answer's sentences that their citations, read together, support.",
        rule="every sentence is supported by what it cites",
        passes=_all,
    ),
    "citation_precision": Metric(
        "Citation precision",
        "Share of the answer's citations that their sentence needs.",
        rule="every citation is needed",
        passes=_all,
    ),
    "faithfulness": Metric(
        "Faithfulness",
        "Share of the answer's sentences that the retrieved abstracts support.",
        rule="every sentence is supported by the retrieved abstracts",
        passes=_all,
    ),
    "answer_relevance": Metric(
        "Answer relevance", "How closely the answer addresses the question (0 to 1), as the judge measures it."
    ),
    "gold_citation_precision": Metric(
        "Gold citation precision",
        "Share of the papers the answer cites that are gold.",
        rule="every cited paper is gold",
        passes=_all,
    ),
    "gold_citation_recall": Metric(
        "Gold citation recall",
        "Share of the gold papers the answer cites (a refusal scores 0).",
        rule="every gold paper is cited",
        passes=_all,
    ),
    "collection_precision": Metric(
        "Collection precision",
        "Share of the papers a collection answer lists that are gold.",
        rule="every listed paper is gold",
        passes=_all,
    ),
    "collection_recall": Metric(
        "Collection recall",
        "Share of the gold papers a collection answer lists.",
        rule="every gold paper is listed",
        passes=_all,
    ),
    "gold_sentence_quoted": Metric(
        "Answering sentence quoted",
        "Share of how and result answers that cite one of the gold answering sentences.",
        rule="the answer cites a gold answering sentence",
        passes=_all,
    ),
    "premise_corrected": Metric(
        "Premise corrected",
        "Share of false-premise questions answered by first quoting a sentence that contradicts the premise, the premise named.",
        rule="the answer opens by naming the premise and quoting a gold contradicting sentence",
        passes=_all,
    ),
    "premise_invented": Metric(
        "Premise invented",
        "Share of questions without a false premise answered by correcting one (Not so ...); lower is better.",
        lower_is_better=True,
    ),
    "gold_found": Metric(
        "Gold found",
        "Share of answerable questions whose answer cites a gold paper, graded answers or best match.",
        rule="the answer cites a gold paper and does not grade it not found",
        passes=_all,
    ),
    "gold_not_found": Metric(
        "Not found, gold in top 3",
        "Share of answerable questions graded not found while a gold paper ranks in the top 3; lower is better.",
        lower_is_better=True,
    ),
    "answers_grade_right": Metric(
        "Answers grade right",
        "Share of the answers graded answers that cite a gold paper or correct a false presupposition.",
    ),
    "answerable_graded_answers": Metric(
        "Answerable graded answers", "Share of answerable questions graded answers, rather than best match or not found."
    ),
    "unanswerable_graded_answers": Metric(
        "Unanswerable graded answers",
        "Share of unanswerable questions graded answers (a false presupposition corrected is not); lower is better.",
        lower_is_better=True,
    ),
    "unanswerable_declined": Metric(
        "Unanswerable declined", "Share of unanswerable questions declined: refused, or answered in part naming what is missing."
    ),
    "unanswerable_refused": Metric("Unanswerable refused", "Share of unanswerable questions refused outright."),
    "answerable_refused": Metric(
        "Answerable refused", "Share of answerable questions refused; lower is better.", lower_is_better=True
    ),
    "answerable_partial": Metric(
        "Answerable partly answered",
        "Share of answerable questions answered only in part; lower is better.",
        lower_is_better=True,
    ),
    "decline_accuracy": Metric(
        "Decline accuracy",
        "Share of questions decided right: unanswerable ones declined, answerable ones not refused.",
        rule="it is decided right: declined if unanswerable, not refused if answerable",
        passes=_all,
    ),
}

LOWER_IS_BETTER = frozenset(m for m, metric in METRICS.items() if metric.lower_is_better)

# What a report's reader asks first, per group: is it good? Each group is judged by its headline
# metric (the first of its list the report has) against two bars: at or above the first it is
# good, at or above the second fair, else weak; a lower-is-better headline is judged by 1 - value.
# The bars are the targets the project holds itself to (docs/benchmarks.md): Recall@5 0.9 for
# finding the paper, every citation supported for the quotes, 0.9 of questions decided right.
GROUPS: dict[str, tuple[str, ...]] = {
    "Retrieval": ("recall@5", "mrr@10", "ndcg@10"),
    "Citations": ("citation_precision", "faithfulness", "citation_recall"),
    "Declines": ("decline_accuracy", "unanswerable_graded_answers", "answerable_refused"),
}
VERDICT_BARS = (0.9, 0.7)


def verdicts(metrics: dict[str, float]) -> list[str]:
    """A line per group the report measures: "Retrieval: good (Recall@5 0.950, MRR@10 0.870, ...)"."""
    lines = []
    for group, names in GROUPS.items():
        present = [n for n in names if n in metrics]
        if not present:
            continue
        headline = metrics[present[0]]
        score = 1.0 - headline if present[0] in LOWER_IS_BETTER else headline
        word = "good" if score >= VERDICT_BARS[0] else "fair" if score >= VERDICT_BARS[1] else "weak"
        shown = ", ".join(f"{label(n)} {metrics[n]:.3f}{' (lower is better)' if n in LOWER_IS_BETTER else ''}" for n in present)
        lines.append(f"{group}: {word} ({shown})")
    return lines


def label(metric: str) -> str:
    """The metric's readable name; a name this table does not know (a latency row) as it is."""
    known = METRICS.get(metric)
    return known.label if known else metric


def description(metric: str) -> str:
    """The metric's one-line description; empty for a name this table does not know."""
    known = METRICS.get(metric)
    return known.description if known else ""
