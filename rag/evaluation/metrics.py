"""What each evaluation metric is called and means, for every place that shows one.

`METRICS` maps a metric id (a key of `EvalReport.metrics` and of `ItemResult.scores`) to which way
is better and the test by which the Evaluate page's per-question table marks a question passed or
failed on it; its readable label, one-line description and pass rule in words are in the
catalogues (prompts/ui.json, prompts/zh/ui.json) under ``metric.<id>.label``,
``metric.<id>.description`` and ``metric.<id>.rule``. The CLI's table, ``report.md``, the plots
and the app all name metrics through it, so a metric reads the same everywhere: in English in
files and the terminal, in the app's language on the Evaluate page. `rag.evaluation.evaluate`
defines how each is computed.

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

from rag.models.prompts import listing_words, say


@dataclass(frozen=True)
class Metric:
    id: str
    lower_is_better: bool = False
    # The per-question check as a test of the item's score; None for a metric no question passes
    # or fails on alone. Such a metric has a rule in words (metric.<id>.rule) in the catalogues.
    passes: Callable[[float], bool] | None = None

    def _words(self, part: str, language: str) -> str:
        key = f"metric.{self.id}.{part}"
        return say(key, language)

    def label_in(self, language: str = "en") -> str:
        """The metric's readable name: "Recall@5", "Citation precision"."""
        return self._words("label", language)

    def description_in(self, language: str = "en") -> str:
        """What it measures, one sentence."""
        return self._words("description", language)

    def rule_in(self, language: str = "en") -> str:
        """The per-question check in words ("every citation is needed"); "" for a metric without one."""
        return self._words("rule", language) if self.passes is not None else ""

    def check_help_in(self, language: str = "en") -> str:
        """The description and the pass rule, one line."""
        if self.passes is None:
            return self.description_in(language)
        return say("evaluation.check_help", language, description=self.description_in(language), rule=self.rule_in(language))

    # In English, as report.md and the terminal say them.
    label = property(label_in)
    description = property(description_in)
    rule = property(rule_in)
    check_help = property(check_help_in)


def _some(value: float) -> bool:
    return value > 0


def _all(value: float) -> bool:
    return value >= 1.0


# In the order reports list them: retrieval, citations, answer quality, gold papers, answer
# forms, refusals.
METRICS: dict[str, Metric] = {
    m.id: m
    for m in (
        Metric("recall@1"),
        Metric("recall@5", passes=_some),
        Metric("recall@10"),
        Metric("recall@100"),
        Metric("mrr@10"),
        Metric("ndcg@10"),
        Metric("citation_recall", passes=_all),
        Metric("citation_precision", passes=_all),
        Metric("faithfulness", passes=_all),
        Metric("answer_relevance"),
        Metric("gold_citation_precision", passes=_all),
        Metric("gold_citation_recall", passes=_all),
        Metric("collection_precision", passes=_all),
        Metric("collection_recall", passes=_all),
        Metric("gold_sentence_quoted", passes=_all),
        Metric("premise_corrected", passes=_all),
        Metric("premise_invented", lower_is_better=True),
        Metric("gold_found", passes=_all),
        Metric("gold_not_found", lower_is_better=True),
        Metric("answers_grade_right"),
        Metric("answerable_graded_answers"),
        Metric("unanswerable_graded_answers", lower_is_better=True),
        Metric("unanswerable_declined"),
        Metric("unanswerable_refused"),
        Metric("answerable_refused", lower_is_better=True),
        Metric("answerable_partial", lower_is_better=True),
        Metric("decline_accuracy", passes=_all),
    )
}

LOWER_IS_BETTER = frozenset(m for m, metric in METRICS.items() if metric.lower_is_better)

# What a report's reader asks first, per group: is it good? Each group is judged by its headline
# metric (the first of its list the report has) against two bars: at or above the first it is
# good, at or above the second fair, else weak; a lower-is-better headline is judged by 1 - value.
# The bars are the targets the project holds itself to (docs/benchmarks.md): Recall@5 0.9 for
# finding the paper, every citation supported for the quotes, 0.9 of questions decided right.
# A group's name is the catalogues' evaluation.group.<id>.
GROUPS: dict[str, tuple[str, ...]] = {
    "retrieval": ("recall@5", "mrr@10", "ndcg@10"),
    "citations": ("citation_precision", "faithfulness", "citation_recall"),
    "declines": ("decline_accuracy", "unanswerable_graded_answers", "answerable_refused"),
}
VERDICT_BARS = (0.9, 0.7)
VERDICT_WORDS = ("evaluation.good", "evaluation.fair", "evaluation.weak")  # at or above each bar, below both


def verdicts(metrics: dict[str, float], language: str = "en") -> list[str]:
    """A line per group the report measures: "Retrieval: good (Recall@5 0.950, MRR@10 0.870, ...)",
    in `language`."""
    lines = []
    for group, names in GROUPS.items():
        present = [n for n in names if n in metrics]
        if not present:
            continue
        headline = metrics[present[0]]
        score = 1.0 - headline if present[0] in LOWER_IS_BETTER else headline
        word = VERDICT_WORDS[sum(score < bar for bar in VERDICT_BARS)]
        name = f"evaluation.group.{group}"
        shown = listing_words(language)["between"].join(
            say(
                "evaluation.score_lower" if n in LOWER_IS_BETTER else "evaluation.score",
                language,
                metric=label(n, language),
                value=f"{metrics[n]:.3f}",
            )
            for n in present
        )
        lines.append(
            say(
                "evaluation.verdict",
                language,
                group=say(name, language),
                word=say(word, language),
                scores=shown,
            )
        )
    return lines


def label(metric: str, language: str = "en") -> str:
    """The metric's readable name; a name this table does not know (a latency row) as it is."""
    known = METRICS.get(metric)
    return known.label_in(language) if known else metric


def description(metric: str, language: str = "en") -> str:
    """The metric's one-line description; empty for a name this table does not know."""
    known = METRICS.get(metric)
    return known.description_in(language) if known else ""
