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


def test_the_markdown_report_says_whether_the_verifier_reordered_the_ranking():
    # Issue 38: a rerank row is honest only if the report says how it ranked.
    assert "- retriever: hybrid (no verifier rerank);" in markdown(report())
    reranked = markdown(report(rerank_depth=30, rerank_weight=2.0))
    assert "- retriever: hybrid (the verifier reorders the top 30, the fused score weighing 2);" in reranked


def test_an_evaluation_records_the_rerank_it_ran_with(seed_index):
    from rag.answering.chain import Assistant
    from rag.evaluation.evaluate import run_eval
    from rag.evaluation.records import EvalItem, EvalSet

    item = EvalItem(id="q1", question="How does MoH pick heads?", relevance={"site_85ad8ae8b1": 1})
    questions = EvalSet(name="one", path="one.jsonl", items=(item,))
    for depth, weight in ((0, 0.0), (5, 1.5)):
        settings = seed_index.settings.model_copy(update={"rerank_depth": depth, "rerank_weight": weight or 2.0})
        ran = run_eval(Assistant(seed_index, settings), questions, answers=False, depth=10)
        assert (ran.rerank_depth, ran.rerank_weight) == (depth, weight)


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


def test_verdicts_are_chinese_when_asked_and_english_otherwise():
    from rag.evaluation.metrics import verdicts

    metrics = {"recall@5": 0.95, "mrr@10": 0.8, "citation_precision": 0.75, "decline_accuracy": 0.5, "answerable_refused": 0.2}
    assert verdicts(metrics, language="zh") == [
        "检索：良好（Recall@5 0.950、MRR@10 0.800）",
        "引用：尚可（引用精确率 0.750）",
        "拒答：较弱（拒答准确率 0.500、可回答题直接拒答 0.200（越低越好））",
    ]
    assert verdicts(metrics) == verdicts(metrics, language="en") == [
        "Retrieval: good (Recall@5 0.950, MRR@10 0.800)",
        "Citations: fair (Citation precision 0.750)",
        "Declines: weak (Decline accuracy 0.500, Answerable refused 0.200 (lower is better))",
    ]


def test_every_metric_s_words_are_in_both_catalogues_and_the_chinese_are_chinese():
    import re

    from rag.models.prompts import catalogue

    for language in ("en", "zh"):
        words = catalogue(language)
        for m, metric in METRICS.items():
            assert f"metric.{m}.label" in words and f"metric.{m}.description" in words, (language, m)
            assert (f"metric.{m}.rule" in words) == (metric.passes is not None), (language, m)
    for metric in METRICS.values():
        # Abbreviations (Recall@5, nDCG@10) may stay; what a metric measures and its rule are Chinese.
        for text in (metric.description_in("zh"), metric.rule_in("zh")):
            assert not re.search(r"[A-Za-z]{4,}", text), text
        assert re.search(r"[\u4e00-\u9fff]", metric.description_in("zh")), metric.id
    precision = METRICS["gold_citation_precision"]
    assert precision.label_in("zh") == "金标引用精确率" and precision.label == "Gold citation precision"
    assert precision.check_help_in("zh") == "回答引用的论文中金标论文所占比例。通过条件：引用的每篇论文都是金标论文。"
    assert precision.check_help == "Share of the papers the answer cites that are gold. A question passes when every cited paper is gold."
    assert label("recall@1", "zh") == "Recall@1" and description("recall@1", "zh") == "金标论文中排在第 1 位的比例。"


def test_why_a_question_failed_and_what_a_run_left_unscored_are_said_in_chinese_when_asked():
    from rag.evaluation.report import agreement_text, incomplete, judge_note

    bad = item("bad", scores={"gold_citation_precision": 0.5})
    broken = item("broken", retrieved=(), error="the server said 500 (HTTP 500)")
    rows = outcomes(report(bad, broken))
    assert reasons(rows[0], "zh") == ["金标引用精确率：0.50；通过条件：引用的每篇论文都是金标论文。"]
    assert reasons(rows[1], "zh") == ["运行失败：the server said 500 (HTTP 500)"]
    failed = report(bad, broken, questions=("bad", "broken"))
    assert incomplete(failed, "zh") == "2 个问题中有 1 个失败，指标按其余 1 个计算"
    assert incomplete(failed) == "1 of 2 questions failed; the metrics are over the other 1"
    stopped = report(bad, questions=("bad", "next"), stopped="interrupted")
    assert incomplete(stopped, "zh") == "提前停止（interrupted）：2 个问题中 1 个已评分，0 个失败，1 个未提问"
    agreed = report(judge_agreement={"pairs": 4.0, "agreement": 0.75, "kappa": 0.25}, judge_note="as the run wrote it")
    assert agreement_text(agreed, "zh") == "评判一致性（LLM 与离线相似度评判），共 4 次支持判断：原始一致率 0.750，Cohen's kappa 0.250。"
    assert judge_note(agreed, "zh").startswith("LLM 评判与校准过的相似度评判的一致性为 Cohen's kappa 0.250，低于 0.4 的标准")
    assert judge_note(agreed).startswith("The LLM judge agreed with the calibrated similarity judge at Cohen's kappa 0.250")
    assert judge_note(report(judge_agreement={"pairs": 4.0, "agreement": 1.0, "kappa": 1.0}), "zh") == ""
