"""The Evaluate page, driven headless with AppTest over the bundled corpus and the offline backend."""

from __future__ import annotations

import functools
import json
import shutil

import pytest
import streamlit as st
from conftest import ROOT, SEED_SET
from fake_openai import FakeOpenAI
from streamlit.testing.v1 import AppTest

from rag.evaluation.metrics import METRICS
from rag.evaluation.report import PLOTS, read_report
from rag.evaluation.sets import question_sets
from rag.markup import defuse_markdown, escape_markdown, to_markdown

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


def open_evaluate(monkeypatch, data_dir) -> AppTest:
    """The app opened on its default page over `data_dir`, then switched to Evaluate."""
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(data_dir))
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


@pytest.fixture
def evaluate_page(monkeypatch, app_index_dir, reports):
    """The Evaluate page; reports go to `reports`."""
    monkeypatch.setenv("PAPERCHAT_REPORTS_DIR", str(reports))
    return open_evaluate(monkeypatch, app_index_dir)


@pytest.fixture
def default_reports(monkeypatch, app_index_dir):
    """Where reports go unless told, in the data dir the module's tests share: emptied after."""
    monkeypatch.delenv("PAPERCHAT_REPORTS_DIR", raising=False)
    folder = app_index_dir / "eval-reports"
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


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
    assert "Recall@5" in metrics and metrics["Recall@5"]["items"] == 4
    assert "Faithfulness" in metrics  # answers were written and judged
    assert "extractive" in " ".join(m.value for m in at.markdown)  # the backend
    # A verdict per group leads (issue 36), and each metric says which way is better.
    lines = [m.value for m in at.markdown]
    assert any(v.startswith("Retrieval: ") for v in lines) and any(v.startswith("Declines: ") for v in lines)
    assert metrics["Answerable refused"]["better"] == "lower" and metrics["Recall@5"]["better"] == "higher"
    [folder] = reports.iterdir()
    assert folder.name.startswith("seed-extractive-")
    assert {"report.json", "report.md", *PLOTS} <= {f.name for f in folder.iterdir()}
    report = read_report(folder)
    assert len(report.items) == 4 and report.metrics["recall@5"] == pytest.approx(metrics["Recall@5"]["value"])
    latency = table(next(d for d in at.dataframe if d.value.columns[0] == "stage"))
    assert latency["total"]["p95 (ms)"] >= latency["total"]["p50 (ms)"] > 0
    assert [t.label for t in at.tabs] == ["metrics", "latency", "by type"]
    assert all(t.get("image") for t in at.tabs)
    assert [b.label for b in at.get("download_button")] == ["report.json", "report.md"]
    # The run stays on the page while other widgets change.
    widget(at.checkbox, "Ranking only").check().run()
    assert "Recall@5" in table(at.dataframe[0])


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
    row = deltas["Recall@5"]
    assert row["A"] == pytest.approx(hybrid.metrics["recall@5"]) and row["B"] == pytest.approx(bm25.metrics["recall@5"])
    assert row["B − A"] == pytest.approx(bm25.metrics["recall@5"] - hybrid.metrics["recall@5"])
    assert "retrieve p50 (ms)" in deltas

    widget(at.selectbox, "View a report").set_value(names[0]).run()
    assert not at.exception
    assert any("Recall@5" in table(d) for d in at.dataframe[:-1])


def test_the_default_set_runs_on_the_bundled_papers_and_its_report_goes_to_the_data_dir(
    monkeypatch, app_index_dir, default_reports
):
    at = open_evaluate(monkeypatch, app_index_dir)
    choice = widget(at.selectbox, "Question set")
    # Before, the first in name order: scale-collection.jsonl, whose 13,687 papers ship with nothing.
    assert choice.value == "seed.jsonl"
    # The research table's cells are not a question set.
    assert "table-cells.jsonl" not in choice.options
    widget(at.number_input, "Limit").set_value(2)
    widget(at.checkbox, "Ranking only").check()
    widget(at.button, "Run").click().run()
    assert not at.exception and not at.error
    assert not at.warning, "the bundled papers hold every gold paper of the seed set"
    # Not under eval/reports in the project's tree: the user's data dir.
    [folder] = default_reports.iterdir()
    assert folder.name.startswith("seed-retrieval-") and (folder / "report.json").is_file()
    assert folder.name in widget(at.selectbox, "View a report").options


def test_a_set_whose_corpus_is_not_here_is_not_offered_and_says_what_it_lacks(evaluate_page, monkeypatch, tmp_path):
    sets = tmp_path / "sets"
    sets.mkdir()
    shutil.copy(SEED_SET, sets)
    question = {"id": "q1", "question": "Which papers study bandits?", "gold": ["p1"]}
    (sets / "scale.jsonl").write_text(
        json.dumps({"corpus": "../absent/scale_corpus.jsonl.gz"}) + "\n" + json.dumps(question) + "\n"
    )
    monkeypatch.setattr("rag.evaluation.sets.question_sets", functools.partial(question_sets, sets))
    at = evaluate_page.run()
    assert widget(at.selectbox, "Question set").options == ["seed.jsonl", "Upload a question set…"]
    absent = tmp_path / "absent" / "scale_corpus.jsonl.gz"
    assert escape_markdown(f"Not offered, as {absent} is not on this machine: scale.jsonl.") in [c.value for c in at.caption]


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
    # In the questions table they are failures too, and a selected one says why.
    widget(at.selectbox, "Show").set_value("failed").run()
    assert list(questions(at).value["result"]) == ["error"] * 3
    select(at, 0)
    [why] = at.error
    assert "It failed to run" in why.value and escape_markdown("(HTTP 500)") in why.value


# --- the per-question drill-down --------------------------------------------------------------

MOH, BANDITS = "site_85ad8ae8b1", "site_6b2837ea1c"
# Two questions the offline backend answers from their gold paper, and a third whose gold paper
# is wrong on purpose: its answer cites MoH, which the set says is not gold.
DRILL_SET = [
    {
        "id": "moh",
        "question": "Has anyone made transformer attention cheaper by letting every token use only a fraction of the heads?",
        "gold": [MOH],
    },
    {
        "id": "bandits",
        "question": "What regret is achievable in an online experiment where each unit's outcome is affected by the treatments of nearby units?",
        "gold": [BANDITS],
    },
    {
        "id": "wrong-gold",
        "question": "Can an already pretrained LLM such as LLaMA3-8B be converted to use only some of its attention heads per token?",
        "gold": [BANDITS],
    },
]


def run_upload(at: AppTest, items: list[dict], name: str = "drill.jsonl") -> AppTest:
    widget(at.selectbox, "Question set").set_value("Upload a question set…").run()
    data = "".join(json.dumps(i) + "\n" for i in items).encode()
    at.file_uploader[0].set_value((name, data, "application/jsonl")).run()
    widget(at.button, "Run").click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def questions(at: AppTest):
    """The per-question table (the failed-questions table has a question column too)."""
    return next(d for d in at.dataframe if "result" in d.value.columns)


def select(at: AppTest, row: int) -> AppTest:
    # AppTest cannot click a dataframe row; a keyed dataframe's selection is set through its state.
    at.session_state[questions(at).key] = {"selection": {"rows": [row]}}
    at.run()
    assert not at.exception
    return at


def column_help(element) -> dict[str, str]:
    return {name: c.get("help", "") for name, c in json.loads(element.proto.columns).items()}


def test_the_questions_table_marks_each_check_with_readable_names_and_filters_to_failures(evaluate_page):
    at = run_upload(evaluate_page, DRILL_SET)
    # The aggregate table names metrics readably and says what each measures.
    metrics = table(at.dataframe[0])
    assert "Gold citation recall" in metrics and "gold_citation_recall" not in metrics
    assert metrics["Gold citation recall"]["what it measures"] == METRICS["gold_citation_recall"].description

    frame = questions(at).value
    assert list(frame["id"]) == ["moh", "bandits", "wrong-gold"]
    assert {"Recall@5", "Citation precision", "Gold citation precision", "Gold citation recall", "Decline accuracy"} <= set(
        frame.columns
    )
    assert not {m for m in METRICS if m in frame.columns}  # no raw ids
    helps = column_help(questions(at))
    assert "every gold paper is cited" in helps["Gold citation recall"] and "top 5" in helps["Recall@5"]
    rows = {r["id"]: r for r in frame.to_dict("records")}
    assert rows["moh"]["result"] == rows["bandits"]["result"] == "pass"
    wrong = rows["wrong-gold"]
    assert wrong["result"] == "fail" and wrong["Gold citation recall"] == wrong["Gold citation precision"] == "✗"
    assert list(wrong["cited"]) == [MOH] and list(wrong["gold"]) == [BANDITS]
    assert rows["moh"]["Gold citation recall"] == "✓"

    widget(at.selectbox, "Show").set_value("failed").run()
    assert not at.exception
    assert list(questions(at).value["id"]) == ["wrong-gold"]
    assert "Select a row" in " ".join(c.value for c in at.caption)
    widget(at.selectbox, "Show").set_value("gold_citation_precision").run()
    assert list(questions(at).value["id"]) == ["wrong-gold"]
    widget(at.selectbox, "Show").set_value("citation_recall").run()
    assert not [d for d in at.dataframe if "result" in d.value.columns]
    assert "No question failed." in [s.value for s in at.success]


def test_a_selected_question_shows_its_answer_its_evidence_and_why_it_failed(evaluate_page, reports):
    at = run_upload(evaluate_page, DRILL_SET)
    item = read_report(next(reports.iterdir())).items[2]
    widget(at.selectbox, "Show").set_value("failed").run()
    select(at, 0)
    [why] = at.error
    assert "Gold citation recall is 0.00" in why.value and "every gold paper is cited" in why.value
    # Every score of the question, graded ones too.
    [scores] = [c.value for c in at.caption if c.value.startswith("Scores: ")]
    assert "Gold citation recall 0.00" in scores and f"Answer relevance {item.scores['answer_relevance']:.2f}" in scores
    shown = " ".join(m.value for m in at.markdown)
    assert defuse_markdown(item.answer) in shown
    assert item.citations and {c.paper_id for c in item.citations} == {MOH}
    for citation in item.citations:
        assert f"**[{citation.number}]** {to_markdown(citation.title)}" in shown
        assert citation.support and f":orange-background[{to_markdown(citation.support)}]" in shown
    papers = table(next(d for d in at.dataframe if "rank" in d.value.columns))
    # The gold paper, titled though the answer does not cite it, and the cited one that is not gold.
    gold = papers["Multi-armed Bandits with Interference"]
    assert gold["gold"] and not gold["cited"] and gold["id"] == BANDITS
    cited = next(p for p in papers.values() if p["id"] == MOH)
    assert cited["cited"] and not cited["gold"] and cited["rank"] == 1

    widget(at.selectbox, "Show").set_value("all").run()
    select(at, 0)
    assert not at.error and "Passed every check." in [s.value for s in at.success]


def test_a_ranking_only_run_checks_retrieval_and_says_it_wrote_no_answer(evaluate_page):
    at = run(evaluate_page, limit=2, ranking_only=True)
    checks = [c for c in questions(at).value.columns if c in {m.label for m in METRICS.values()}]
    assert checks == ["Recall@5"]
    select(at, 0)
    assert "None: the run ranked papers only." in [c.value for c in at.caption]


def test_a_report_written_before_items_kept_titles_still_opens(evaluate_page, reports):
    at = run_upload(evaluate_page, DRILL_SET)
    [folder] = reports.iterdir()
    data = json.loads((folder / "report.json").read_text())
    for item in data["items"]:
        del item["titles"]
    old = reports / "drill-extractive-20200101-000000"
    old.mkdir()
    (old / "report.json").write_text(json.dumps(data))
    (old / "report.md").write_text("# old\n")
    del at.session_state["eval_run"]  # forget the run: only the old report is drawn
    at.run()
    widget(at.selectbox, "View a report").set_value(old.name).run()
    assert not at.exception
    select(at, 2)
    papers = table(next(d for d in at.dataframe if "rank" in d.value.columns))
    # Without stored titles, the gold paper the answer does not cite goes by its id; the cited one
    # by its citation's title.
    assert papers[BANDITS]["gold"]
    assert papers["MoH: Multi-Head Attention as Mixture-of-Head Attention"]["cited"]
