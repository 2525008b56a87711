"""The metric names and the per-question drill-down of a report, on hand-made items."""

from __future__ import annotations

import pytest

from rag.evaluation.evaluate import aggregate
from rag.evaluation.metrics import LOWER_IS_BETTER, METRICS, description, label
from rag.evaluation.outcomes import checked_metrics, checks, failing, headline_scores, outcomes, papers, reasons
from rag.evaluation.records import EvalReport, ItemResult
from rag.evaluation.report import markdown
from rag.records import Citation


def item(id: str = "q1", **fields) -> ItemResult:
    defaults = {"question": f"question {id}?", "type": "lookup", "gold": ("a",), "retrieved": ("a", "b", "c")}
    return ItemResult(id=id, **(defaults | fields))


def cite(number: int, paper_id: str, title: str = "") -> Citation:
    return Citation(
        number=number,
        paper_id=paper_id,
        title=title or f"Paper {paper_id}",
        authors=(),
        citing_sentence=f"A claim [{number}].",
        support="A sentence of the abstract.",
        support_score=0.9,
    )


def report(*items: ItemResult, **fields) -> EvalReport:
    defaults = {
        "set_name": "s",
        "set_path": "s.jsonl",
        "backend": "extractive",
        "k": 2,
        "depth": 10,
        "created": "2026-12-05T00:00:00+00:00",
        "metrics": {},
        "counts": {},
        "by_type": {},
        "latency": {},
    }
    return EvalReport(items=items, **(defaults | fields))


def test_every_metric_has_a_label_and_a_one_line_description_and_a_rule_with_its_test():
    for metric in METRICS.values():
        assert metric.label and metric.description and "\n" not in metric.description
        assert bool(metric.rule) == (metric.passes is not None)
    assert {"answerable_refused", "answerable_partial", "gold_not_found", "premise_invented", "unanswerable_graded_answers"} == LOWER_IS_BETTER
    assert label("gold_citation_precision") == "Gold citation precision"
    # A name the table does not know (a latency row of a comparison) is shown as it is.
    assert label("retrieve p50 (ms)") == "retrieve p50 (ms)" and description("retrieve p50 (ms)") == ""


def test_every_metric_a_run_aggregates_is_named():
    scores = {m: 1.0 for m in METRICS if m not in {"unanswerable_refused", "answerable_refused", "answerable_partial", "unanswerable_declined"}}
    answerable = item(scores=scores | {"refused": 0.0, "declined": 0.0})
    unanswerable = item("q2", gold=(), scores={"refused": 1.0, "declined": 1.0})
    metrics, _ = aggregate([answerable, unanswerable])
    assert list(metrics) == list(METRICS)  # every one named, in the table's order


@pytest.mark.parametrize(
    ("metric", "value", "passed"),
    [
        ("recall@5", 0.0, False),
        ("recall@5", 0.5, True),  # one of two gold papers in the top 5
        ("citation_precision", 0.75, False),
        ("citation_precision", 1.0, True),
        ("gold_citation_recall", 0.5, False),
        ("collection_recall", 1.0, True),
        ("decline_accuracy", 0.0, False),
        ("decline_accuracy", 1.0, True),
    ],
)
def test_pass_rules(metric, value, passed):
    [check] = checks({metric: value})
    assert check.metric == metric and check.value == value and check.passed is passed


def test_graded_and_per_item_flags_are_not_checked():
    # Answer relevance has no calibrated bar; recall at other depths restates Recall@5's question;
    # the refused and declined flags are what Decline accuracy checks.
    assert checks({"answer_relevance": 0.1, "recall@1": 0.0, "ndcg@10": 0.0, "refused": 1.0, "declined": 1.0}) == ()


def test_checks_follow_the_order_reports_list_metrics():
    found = checks({"decline_accuracy": 1.0, "faithfulness": 0.5, "recall@5": 1.0})
    assert [c.metric for c in found] == ["recall@5", "faithfulness", "decline_accuracy"]


def test_a_question_fails_on_any_check_or_when_it_failed_to_run():
    good = item("good", scores={"recall@5": 1.0, "gold_citation_precision": 1.0})
    bad = item("bad", scores={"recall@5": 1.0, "gold_citation_precision": 0.5})
    broken = item("broken", retrieved=(), error="the server said 500 (HTTP 500)")
    rows = outcomes(report(good, bad, broken))
    assert [r.failed for r in rows] == [False, True, True]
    assert [r.item.id for r in failing(rows)] == ["bad", "broken"]
    assert [r.item.id for r in failing(rows, "gold_citation_precision")] == ["bad"]
    assert failing(rows, "recall@5") == []
    assert checked_metrics(rows) == ["recall@5", "gold_citation_precision"]
    assert reasons(rows[0]) == []
    assert reasons(rows[1]) == ["Gold citation precision is 0.50; a question passes when every cited paper is gold."]
    assert reasons(rows[2]) == ["It failed to run: the server said 500 (HTTP 500)"]
    assert rows[2].checks == ()


def test_with_a_judge_note_questions_are_checked_on_the_judge_the_report_leads_with():
    answered = item(scores={"faithfulness": 1.0, "recall@5": 1.0}, second_scores={"faithfulness": 0.5})
    assert headline_scores(report(answered), answered)["faithfulness"] == 1.0
    noted = report(answered, judge_note="The LLM judge agreed ... below the bar")
    [row] = outcomes(noted)
    assert row.scores == {"faithfulness": 0.5, "recall@5": 1.0}
    assert [c.metric for c in row.failures] == ["faithfulness"]


def test_papers_list_the_gold_then_the_given_then_the_top_k_retrieved():
    answered = item(
        gold=("g1", "g2"),
        retrieved=("x", "g1", "y", "z"),
        citations=(cite(1, "x"), cite(2, "g1")),
        listed=("x", "g1", "w"),
        titles={"g1": "Gold $\\alpha$", "g2": "Gold two", "x": "Ex"},
    )
    marks = papers(answered, k=3)
    assert [p.id for p in marks] == ["g1", "g2", "x", "w", "y"]
    g1, g2, x, w, y = marks
    assert (g1.gold, g1.cited, g1.listed, g1.rank, g1.title) == (True, True, True, 2, "Gold $\\alpha$")
    assert (g2.gold, g2.cited, g2.rank, g2.title) == (True, False, None, "Gold two")
    assert (x.gold, x.cited, x.rank) == (False, True, 1)
    assert (w.listed, w.cited, w.rank, w.title) == (True, False, None, "")
    assert (y.gold, y.cited, y.listed, y.rank) == (False, False, False, 3)


def test_an_item_stored_before_titles_were_kept_still_names_its_papers():
    old = ItemResult.model_validate_json(
        item(citations=(cite(1, "a", "The A paper"),)).model_dump_json(exclude={"titles"})
    )
    assert old.titles == {}
    a, b = papers(old, k=2)
    assert (a.id, a.title) == ("a", "The A paper")  # the citation's title
    assert (b.id, b.title) == ("b", "")  # none stored: the page shows the id


def test_the_markdown_report_names_metrics_readably():
    text = markdown(report(metrics={"recall@5": 0.5, "answerable_refused": 0.25}, counts={"recall@5": 2, "answerable_refused": 4}))
    assert "| Recall@5 | 0.500 | 2 | Share of the gold papers in the top 5 retrieved. |" in text
    assert "| Answerable refused | 0.250 | 4 | Share of answerable questions refused; lower is better. |" in text
    assert "recall@5" not in text


def test_a_report_leads_with_a_verdict_per_group_judged_by_its_headline_metric():
    from rag.evaluation.metrics import verdicts

    lines = verdicts({"recall@5": 0.95, "mrr@10": 0.8, "citation_precision": 0.75, "decline_accuracy": 0.5,
                      "answerable_refused": 0.2})
    assert lines == [
        "Retrieval: good (Recall@5 0.950, MRR@10 0.800)",
        "Citations: fair (Citation precision 0.750)",
        "Declines: weak (Decline accuracy 0.500, Answerable refused 0.200 (lower is better))",
    ]
    # A lower-is-better headline is judged the other way round; a group the report lacks is left out.
    assert verdicts({"unanswerable_graded_answers": 0.05}) == [
        "Declines: good (Unanswerable graded answers 0.050 (lower is better))"
    ]
