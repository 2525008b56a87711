"""The Evaluate page, driven headless with AppTest over the bundled corpus and the offline backend."""

from __future__ import annotations

import pytest
import streamlit as st
from conftest import ROOT, SEED_SET
from fake_openai import FakeOpenAI
from streamlit.testing.v1 import AppTest

from rag.report import PLOTS, read_report

pytestmark = pytest.mark.slow

APP = str(ROOT / "ui" / "app.py")


@pytest.fixture
def reports(tmp_path):
    return tmp_path / "reports"


@pytest.fixture
def failing_backend(monkeypatch):
    """The app's backend an OpenAI-compatible server that fails every request; request it before
    `evaluate_page`, which reads the settings."""
    with FakeOpenAI(status=500) as server:
        monkeypatch.setenv("PAPERCHAT_BACKEND", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


@pytest.fixture
def evaluate_page(monkeypatch, app_index_dir, reports):
    """The app opened on its default page, then switched to Evaluate; reports go to `reports`."""
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(app_index_dir))
    monkeypatch.setenv("PAPERCHAT_REPORTS_DIR", str(reports))
    # The process's Assistant holds the settings read when it was made, this test's reports dir
    # included: make it anew.
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    assert at.chat_input  # the chat is the default page
    at.switch_page("evaluate.py").run()
    assert not at.exception
    assert at.title[0].value == "Evaluate"
    return at


def widget(elements, label: str):
    return next(e for e in elements if e.label == label)


def run(at: AppTest, *, limit: int, retriever: str = "hybrid", ranking_only: bool = False) -> AppTest:
    widget(at.selectbox, "Question set").set_value(SEED_SET.name)
    widget(at.number_input, "Limit").set_value(limit)
    widget(at.selectbox, "Retriever").set_value(retriever)
    widget(at.checkbox, "Ranking only").set_value(ranking_only)
    widget(at.button, "Run").click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def table(element) -> dict[str, dict]:
    """A dataframe shown on the page, as first column -> row."""
    frame = element.value
    return {row[frame.columns[0]]: row for row in frame.to_dict("records")}


def test_a_run_shows_its_metrics_plots_and_downloads_and_writes_the_report(evaluate_page, reports):
    at = run(evaluate_page, limit=4)
    metrics = table(at.dataframe[0])
    assert "recall@5" in metrics and metrics["recall@5"]["items"] == 4
    assert "faithfulness" in metrics  # answers were written and judged
    assert "extractive" in " ".join(m.value for m in at.markdown)  # the backend
    [folder] = reports.iterdir()
    assert folder.name.startswith("seed-extractive-")
    assert {"report.json", "report.md", *PLOTS} <= {f.name for f in folder.iterdir()}
    report = read_report(folder)
    assert len(report.items) == 4 and report.metrics["recall@5"] == pytest.approx(metrics["recall@5"]["value"])
    latency = table(next(d for d in at.dataframe if d.value.columns[0] == "stage"))
    assert latency["total"]["p95 (ms)"] >= latency["total"]["p50 (ms)"] > 0
    assert [t.label for t in at.tabs] == ["metrics", "latency", "by type"]
    assert all(t.get("image") for t in at.tabs)
    assert [b.label for b in at.get("download_button")] == ["report.json", "report.md"]
    # The run stays on the page while other widgets change.
    widget(at.checkbox, "Ranking only").check().run()
    assert "recall@5" in table(at.dataframe[0])


def test_past_reports_compare_two_runs(evaluate_page, reports):
    at = run(evaluate_page, limit=4, ranking_only=True)
    at = run(at, limit=4, retriever="bm25", ranking_only=True)
    hybrid, bm25 = (read_report(f) for f in sorted(reports.iterdir()))  # seed-retrieval-..., seed-retrieval-bm25-...
    names = widget(at.selectbox, "A").options
    assert len(names) == 2
    widget(at.selectbox, "A").set_value(next(n for n in names if "bm25" not in n))
    widget(at.selectbox, "B").set_value(next(n for n in names if "bm25" in n)).run()
    assert not at.exception
    deltas = table(at.dataframe[-1])
    row = deltas["recall@5"]
    assert row["A"] == pytest.approx(hybrid.metrics["recall@5"]) and row["B"] == pytest.approx(bm25.metrics["recall@5"])
    assert row["B − A"] == pytest.approx(bm25.metrics["recall@5"] - hybrid.metrics["recall@5"])
    assert "retrieve p50 (ms)" in deltas

    widget(at.selectbox, "View a report").set_value(names[0]).run()
    assert not at.exception
    assert any("recall@5" in table(d) for d in at.dataframe[:-1])


def test_a_bad_uploaded_set_shows_its_line_and_writes_nothing(evaluate_page, reports):
    at = evaluate_page
    widget(at.selectbox, "Question set").set_value("Upload a question set…").run()
    bad = b'{"id": "q1", "question": "Which papers study attention?", "gold": ["x"]}\n{"id": "q2"}\n'
    at.file_uploader[0].set_value(("bad.jsonl", bad, "application/jsonl")).run()
    widget(at.button, "Run").click().run()
    assert not at.exception
    [error] = at.error
    assert "bad.jsonl:2" in error.value and "question" in error.value
    assert not reports.exists()


def test_a_run_the_backend_fails_shows_that_it_stopped_and_which_questions_failed(failing_backend, evaluate_page, reports):
    at = run(evaluate_page, limit=5)
    [folder] = reports.iterdir()
    report = read_report(folder)
    assert report.stopped and report.failed == 3 and len(report.unasked) == 2
    [warning] = [w.value for w in at.warning if "Incomplete" in w.value]
    assert "stopped early" in warning and "3 failed" in warning and f"--resume {folder}" in warning
    failed = table(next(d for d in at.dataframe if list(d.value.columns[:1]) == ["failed question"]))
    assert list(failed) == [i.id for i in report.items]
    assert all("(HTTP 500)" in row["error"] for row in failed.values())
