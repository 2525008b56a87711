"""Whole evaluation runs: the quality gate on the seed set, reports, the LLM judge, the CLI, the
sets offered and where reports go."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import PAPERS, SEED_SET
from conftest import run_cli as run
from fake_openai import FakeOpenAI

from rag.answering.chain import Assistant
from rag.evaluation.evaluate import KAPPA_BAR, run_eval
from rag.evaluation.judges import SimilarityJudge, make_judge
from rag.evaluation.report import PLOTS, list_reports, read_report, write_report
from rag.evaluation.sets import DEFAULT_SET, load_eval_set, load_question_set, question_sets
from rag.settings import Settings

# Quality gate: the seed set (76 questions) on the offline extractive backend. Each bar sits a
# small margin under the figure measured when it was set (2026-12-03), so a change that makes
# retrieval, citing or declining worse fails here.
MIN_RECALL_AT_5 = 0.95  # measured 0.984 (60 of 61 answerable questions)
MIN_GOLD_CITATION_PRECISION = 0.93  # measured 0.968
MIN_UNANSWERABLE_DECLINED = 0.9  # measured 1.000 (15 of 15)
MAX_ANSWERABLE_REFUSED = 0.04  # measured 0.000: at most 2 of 61 wrongly refused
# The answer forms, on the report halves of the sets written for them (never tuned on), with
# the same margins: measured 0.781 declined (25 of 32), 0.750 answering sentence quoted (21 of
# 28), collections 0.883 precision and 0.873 recall.
FORM_GATES = {
    "seed-unanswerable": {"unanswerable_declined": 0.72},
    "seed-how-result": {"gold_sentence_quoted": 0.7, "answerable_refused": -0.05},
    "seed-collection": {"collection_precision": 0.83, "collection_recall": 0.82},
}


@pytest.fixture(scope="module")
def seed_report(seed_index):
    assistant = Assistant(seed_index, seed_index.settings)
    return run_eval(assistant, load_question_set(SEED_SET), judge=SimilarityJudge(assistant.vectors))


@pytest.mark.semantic
def test_quality_gate_on_the_seed_set(seed_report):
    m = seed_report.metrics
    assert m["recall@5"] >= MIN_RECALL_AT_5
    assert m["gold_citation_precision"] >= MIN_GOLD_CITATION_PRECISION
    assert m["unanswerable_declined"] >= MIN_UNANSWERABLE_DECLINED
    assert m["answerable_refused"] <= MAX_ANSWERABLE_REFUSED


@pytest.mark.semantic
@pytest.mark.parametrize("name", FORM_GATES)
def test_quality_gate_on_the_answer_forms(seed_index, name):
    assistant = Assistant(seed_index, seed_index.settings)
    report = run_eval(
        assistant, load_question_set(SEED_SET.parent / f"{name}.jsonl", split="report"), judge=SimilarityJudge(assistant.vectors)
    )
    for metric, bar in FORM_GATES[name].items():
        # A negative bar is a ceiling: the metric must stay at or under its size.
        assert report.metrics[metric] >= bar if bar >= 0 else report.metrics[metric] <= -bar, (metric, report.metrics[metric])


@pytest.mark.semantic
def test_the_report_covers_every_item_and_metric(seed_report):
    assert len(seed_report.items) == 76 and seed_report.backend == "extractive"
    assert seed_report.counts["recall@5"] == 61 and seed_report.counts["unanswerable_declined"] == 15
    # Extractive answers quote their sources, so the citation metrics must see them as supported.
    assert seed_report.metrics["citation_recall"] >= 0.95 and seed_report.metrics["faithfulness"] >= 0.95
    assert set(seed_report.by_type) == {"lookup", "multi", "summary", "unanswerable"}
    assert {"retrieve", "generate", "total"} <= set(seed_report.latency)
    item = seed_report.items[0]
    assert item.answer and item.cited and "recall@5" in item.scores and "total" in item.timings
    # Titles of the gold and the top retrieved papers, so the report shows them without the index.
    assert item.titles[item.gold[0]] == "MoH: Multi-Head Attention as Mixture-of-Head Attention"
    assert set(item.retrieved[: seed_report.k]) <= set(item.titles)
    assert all(c.support and c.citing_sentence for c in item.citations)


def test_a_written_report_reads_back_with_its_plots(seed_report, tmp_path):
    folder = write_report(seed_report, tmp_path)
    assert folder.name.startswith("seed-extractive-")
    assert read_report(folder) == seed_report
    for plot in PLOTS:
        assert (folder / plot).read_bytes().startswith(b"\x89PNG")
    text = (folder / "report.md").read_text()
    assert "| Recall@5 |" in text and "## By question type" in text and "![metrics.png]" in text


def test_retrieval_only_ranks_without_answering(seed_index):
    assistant = Assistant(seed_index, seed_index.settings)
    report = run_eval(assistant, load_question_set(SEED_SET), answers=False, limit=5, depth=100)
    assert report.backend == "retrieval" and not report.judge
    assert all(item.answer is None for item in report.items)
    assert all(set(item.gold) | set(item.retrieved[: report.k]) <= set(item.titles) for item in report.items)
    assert "recall@100" in report.metrics and "faithfulness" not in report.metrics


def _judging_server(body: dict) -> str:
    """Answers as a model would: a cited sentence, a support verdict, or a question."""
    prompt = body["messages"][-1]["content"]
    if "Is the statement fully supported" in prompt:
        return "Yes." if "heads" in prompt.split("Statement:")[1] else "No."
    if "Write the one question" in prompt:
        return "Which papers let each token use only some attention heads?"
    return "Mixture-of-Head attention lets each token select the attention heads it needs [1]. It also cures cancer [1]."


@pytest.mark.slow
def test_the_llm_judge_runs_through_an_openai_compatible_server_and_is_compared(seed_index):
    settings = seed_index.settings.model_copy(update={"backend": "openai", "openai_base_url": None})
    with FakeOpenAI(reply=_judging_server) as server:
        settings = settings.model_copy(update={"openai_base_url": server.base_url})
        assistant = Assistant(seed_index, settings)
        judge = make_judge("auto", assistant.vectors, settings)
        items = load_question_set(SEED_SET).model_copy(update={"items": load_question_set(SEED_SET).items[:2]})
        report = run_eval(assistant, items, judge=judge)
        prompts = [r["messages"][-1]["content"] for r in server.requests if "messages" in r]
    assert report.backend == "openai" and report.judge.startswith("llm")
    assert any("Is the statement fully supported" in p for p in prompts)
    # The model judges the made-up sentence unsupported: half the sentences are.
    assert report.metrics["faithfulness"] == pytest.approx(0.5)
    assert report.metrics["citation_recall"] == pytest.approx(0.5)
    assert report.judge_agreement["pairs"] > 0 and 0 <= report.judge_agreement["agreement"] <= 1


@pytest.mark.slow
def test_an_llm_judge_that_agrees_by_chance_does_not_lead_the_report(seed_index, tmp_path):
    def lenient(body: dict) -> str:  # a weak model: every statement supported
        prompt = body["messages"][-1]["content"]
        if "Is the statement fully supported" in prompt:
            return "Yes."
        if "Write the one question" in prompt:
            return "Which papers use fewer heads?"
        return "Each token selects its attention heads [1]. It also cures cancer [1]. Sourdough rises [2]."

    settings = seed_index.settings.model_copy(update={"backend": "openai"})
    with FakeOpenAI(reply=lenient) as server:
        settings = settings.model_copy(update={"openai_base_url": server.base_url})
        assistant = Assistant(seed_index, settings)
        items = load_question_set(SEED_SET).model_copy(update={"items": load_question_set(SEED_SET).items[:3]})
        report = run_eval(assistant, items, judge=make_judge("auto", assistant.vectors, settings))
    assert report.judge_agreement["kappa"] < KAPPA_BAR
    assert "below the bar" in report.judge_note
    # The headline is the calibrated judge's: the made-up sentences are not supported there.
    assert report.metrics["faithfulness"] < report.alternative_metrics["faithfulness"] == 1.0
    assert report.judge_note in (write_report(report, tmp_path) / "report.md").read_text()


@pytest.mark.slow
def test_paperchat_eval_writes_a_report_and_compares_two(tmp_path):
    run(tmp_path, "ingest", str(PAPERS))
    out = tmp_path / "reports"
    first = run(tmp_path, "eval", "--set", str(SEED_SET), "--limit", "4", "--out", str(out))
    # Each metric by name, beside the id report.json keys it by.
    assert "Gold citation precision" in first.stdout and "gold_citation_precision" in first.stdout and "report:" in first.stdout
    second = run(
        tmp_path, "eval", "--set", str(SEED_SET), "--limit", "4", "--skip", "2", "--retriever", "bm25", "--out", str(out)
    )
    assert "bm25" in second.stdout
    folders = list_reports(out)
    assert len(folders) == 2 and "bm25" in folders[0].name  # newest first
    folders.reverse()
    report = json.loads((folders[0] / "report.json").read_text())
    assert len(report["items"]) == 4 and report["items"][0]["answer"]
    # --skip 2 --limit 4: the third to the sixth question.
    skipped = json.loads((folders[1] / "report.json").read_text())
    assert [i["id"] for i in skipped["items"]] == [i["id"] for i in report["items"]][2:] + [
        i.id for i in load_question_set(SEED_SET).items[4:6]
    ]
    compared = run(tmp_path, "eval", "--compare", str(folders[0]), str(folders[1]))
    assert "Recall@5" in compared.stdout and "B - A" in compared.stdout


@pytest.mark.slow
def test_paperchat_eval_errors_are_short(tmp_path):
    done = run(tmp_path, "eval", "--set", str(tmp_path / "nope.jsonl"), check=False)
    assert done.returncode == 1 and "no such evaluation set" in done.stderr and "Traceback" not in done.stderr
    done = run(tmp_path, "eval", "--set", str(SEED_SET), check=False)
    assert done.returncode == 1 and "empty" in done.stderr and "paperchat ingest" in done.stderr


# --- the sets offered, and where reports go ------------------------------------------------------


def test_the_sets_offered_lead_with_the_seed_set_and_say_which_corpus_each_needs(tmp_path):
    shutil.copy(SEED_SET, tmp_path)
    question = json.dumps({"id": "q1", "question": "Which papers study bandits?", "gold": ["p1"]})
    (tmp_path / "papers.jsonl.gz").write_bytes(b"")
    (tmp_path / "here.jsonl").write_text(json.dumps({"corpus": "papers.jsonl.gz"}) + "\n" + question + "\n")
    (tmp_path / "away.jsonl").write_text(json.dumps({"corpus": "../elsewhere/scale.jsonl.gz"}) + "\n" + question + "\n")
    (tmp_path / "cells.jsonl").write_text(json.dumps({"paper_id": "p1", "column": "data", "answers": []}) + "\n")
    for name, corpus in (("beir", "corpus.jsonl"), ("bare", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "queries.jsonl").write_text("")
        if corpus:
            (tmp_path / name / corpus).write_text("")
    sets = {s.name: s for s in question_sets(tmp_path)}
    assert list(sets) == [DEFAULT_SET, "away.jsonl", "here.jsonl", "bare/ (BEIR)", "beir/ (BEIR)"]
    assert sets[DEFAULT_SET].corpus is None and sets[DEFAULT_SET].available  # the configured index's
    assert sets["here.jsonl"].corpus == tmp_path / "papers.jsonl.gz" and sets["here.jsonl"].available
    assert sets["away.jsonl"].corpus == tmp_path.parent / "elsewhere" / "scale.jsonl.gz" and not sets["away.jsonl"].available
    assert sets["beir/ (BEIR)"].available and not sets["bare/ (BEIR)"].available


def test_the_shipped_sets_lead_with_the_seed_set_and_each_loads():
    sets = question_sets()
    assert sets[0].name == DEFAULT_SET == SEED_SET.name
    assert "table-cells.jsonl" not in {s.name for s in sets}
    for listed in sets:
        assert load_eval_set(listed.path).items


@pytest.mark.slow
def test_paperchat_eval_writes_its_report_under_the_data_dir(seed_index, monkeypatch):
    monkeypatch.delenv("PAPERCHAT_REPORTS_DIR", raising=False)
    data_dir = seed_index.settings.data_dir
    assert Settings(data_dir=data_dir).reports_dir == data_dir / "eval-reports"
    done = run(data_dir, "eval", "--set", str(SEED_SET), "--limit", "1", "--retrieval-only")
    [folder] = list_reports(data_dir / "eval-reports")
    assert f"report: {folder / 'report.md'}" in " ".join(done.stdout.split())
    shutil.rmtree(data_dir / "eval-reports")
