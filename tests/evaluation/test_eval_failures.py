"""Evaluation runs against a failing backend, the real local fake server: a failed question is
recorded and the run goes on, too many failures in a row stop it with a partial report, and
`paperchat eval --resume` asks only what the partial run did not score."""

from __future__ import annotations

import json
import signal

import pytest
from conftest import PAPERS, SEED_SET, start_cli, wait_for
from conftest import run_cli as run
from fake_openai import FakeOpenAI, Fault

from rag.answering.chain import Assistant
from rag.evaluation.evaluate import run_eval
from rag.evaluation.judges import make_judge
from rag.evaluation.report import list_reports, markdown, read_report
from rag.evaluation.sets import load_question_set

pytestmark = pytest.mark.slow

# Each of these seed questions is answered by the model (none is declined before it is asked),
# so each makes one chat request that quotes it.
QUESTIONS = load_question_set(SEED_SET).items[:6]
IDS = [q.id for q in QUESTIONS]
ANSWER = "Mixture-of-Head attention lets each token select the attention heads it needs [1]."
SUPPORT = "Is the statement fully supported"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """The bundled papers, indexed once for the CLI runs."""
    data_dir = tmp_path_factory.mktemp("eval-failures")
    run(data_dir, "ingest", str(PAPERS))
    return data_dir


def eval_cli(data_dir, server: FakeOpenAI, *args: str, **env: str):
    return run(data_dir, "eval", *args, check=False, env={"PAPERCHAT_BACKEND": "openai", "OPENAI_BASE_URL": server.base_url, **env})


def asked(server: FakeOpenAI) -> list[str]:
    """The ids of the questions the server was asked to answer, one per request."""
    prompts = [r["messages"][-1]["content"] for r in server.requests if r["path"] == "/v1/chat/completions"]
    return [q.id for p in prompts for q in QUESTIONS if q.question in p]


def test_a_question_the_server_fails_is_recorded_and_the_others_are_scored(data_dir, tmp_path):
    failing = QUESTIONS[1]

    def reply(body: dict) -> str | int:
        return 500 if failing.question in body["messages"][-1]["content"] else ANSWER

    with FakeOpenAI(reply=reply) as server:
        done = eval_cli(data_dir, server, "--set", str(SEED_SET), "--limit", "4", "--judge", "similarity", "--out", str(tmp_path))
    [folder] = list_reports(tmp_path)
    # Not every question was scored: the report is written, and the exit status says so.
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "1 of 4 questions failed" in done.stderr and str(folder / "report.md") in done.stderr
    report = read_report(folder)
    assert [i.id for i in report.items] == IDS[:4]
    failed = report.items[1]
    assert "(HTTP 500)" in failed.error and failed.answer is None and not failed.scores
    # The questions after it were asked and scored too.
    assert all(not i.error and i.answer and "recall@5" in i.scores for i in report.items if i is not failed)
    assert report.failed == 1 and not report.stopped and report.counts["recall@5"] == 3
    assert json.loads((folder / "report.json").read_text())["failed"] == 1
    text = (folder / "report.md").read_text()
    assert "## Failed (1)" in text and f"`{failing.id}`" in text and "1 of 4 questions failed" in text


def test_a_server_failing_every_request_stops_the_run_with_a_partial_report(data_dir, tmp_path):
    with FakeOpenAI(status=500) as server:
        done = eval_cli(data_dir, server, "--set", str(SEED_SET), "--limit", "6", "--judge", "similarity", "--out", str(tmp_path))
        reached = set(asked(server))
    [folder] = list_reports(tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout
    assert "stopped early" in done.stderr and str(folder / "report.md") in done.stderr
    assert f"paperchat eval --resume {folder}" in done.stderr
    report = read_report(folder)
    # The default: three failures in a row, then no more questions.
    assert [i.id for i in report.items] == IDS[:3] and report.failed == 3
    assert report.unasked == tuple(IDS[3:]) and reached == set(IDS[:3])
    assert "3 questions in a row failed" in report.stopped and "(HTTP 500)" in report.stopped
    assert "stopped early" in (folder / "report.md").read_text()


def test_resume_asks_only_what_the_stopped_run_did_not_score(data_dir, tmp_path):
    state = {"answers_before_down": 2, "healthy": False}

    def reply(body: dict) -> str | int:
        if state["healthy"]:
            return ANSWER
        if state["answers_before_down"]:
            state["answers_before_down"] -= 1
            return ANSWER
        return 503

    with FakeOpenAI(reply=reply) as server:
        first = eval_cli(
            data_dir, server, "--set", str(SEED_SET), "--limit", "6", "--judge", "similarity", "--out", str(tmp_path),
            PAPERCHAT_EVAL_MAX_FAILURES="2",
        )
        [folder] = list_reports(tmp_path)
        partial = read_report(folder)
        mixed = eval_cli(data_dir, server, "--resume", str(folder), "--k", "3")
        state["healthy"] = True
        server.requests.clear()
        done = eval_cli(data_dir, server, "--resume", str(folder))
        asked_again = asked(server)
    assert first.returncode == 1 and "stopped early" in first.stderr
    assert [i.id for i in partial.items if not i.error] == IDS[:2] and partial.failed == 2 and partial.unasked == tuple(IDS[4:])
    assert mixed.returncode == 2 and "leave out --k" in mixed.stderr
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr and "2 scored questions kept, 4 to ask" in done.stderr
    # Each failed or unasked question asked once; the two scored ones not at all.
    assert sorted(asked_again) == IDS[2:]
    assert list_reports(tmp_path) == [folder]  # completed in place
    final = read_report(folder)
    assert [i.id for i in final.items] == IDS and final.failed == 0 and not final.stopped and not final.unasked
    assert final.items[:2] == partial.items[:2]
    assert final.counts["recall@5"] == 6 and final.counts["faithfulness"] == 6
    assert "Incomplete" not in (folder / "report.md").read_text()


def test_ctrl_c_stops_a_run_with_a_partial_report_that_resume_completes(data_dir, tmp_path):
    # The third question's answer stalls until SIGINT: two are scored, and kept.
    with FakeOpenAI(reply=ANSWER, faults=[Fault(), Fault(), Fault(stall=600)]) as server:
        env = {"PAPERCHAT_BACKEND": "openai", "OPENAI_BASE_URL": server.base_url}
        args = ("--set", str(SEED_SET), "--limit", "6", "--judge", "similarity", "--out", str(tmp_path))
        child = start_cli(data_dir, "eval", *args, env=env)
        wait_for(child, "the third question was asked", lambda: len(asked(server)) == 3)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate()
        [folder] = list_reports(tmp_path)
        partial = read_report(folder)
        server.requests.clear()
        done = eval_cli(data_dir, server, "--resume", str(folder))
        asked_again = asked(server)
    assert child.returncode == 130 and "Traceback" not in err, err
    assert "stopped early (interrupted): 2 of 6 questions scored, 0 failed, 4 not asked" in err
    assert f"to ask the rest: paperchat eval --resume {folder}" in err
    assert [i.id for i in partial.items] == IDS[:2] and partial.unasked == tuple(IDS[2:])
    assert done.returncode == 0, done.stderr
    assert sorted(asked_again) == sorted(IDS[2:])
    assert [i.id for i in read_report(folder).items] == IDS


@pytest.mark.parametrize(("failing", "stopped_after"), [((0, 2), None), ((1, 2), 3)])
def test_only_failures_in_a_row_stop_a_run(seed_index, failing, stopped_after):
    questions = load_question_set(SEED_SET).model_copy(update={"items": QUESTIONS[:4]})
    refused = [QUESTIONS[i].question for i in failing]

    def reply(body: dict) -> str | int:
        return 500 if any(q in body["messages"][-1]["content"] for q in refused) else ANSWER

    with FakeOpenAI(reply=reply) as server:
        settings = seed_index.settings.model_copy(update={"backend": "openai", "openai_base_url": server.base_url})
        assistant = Assistant(seed_index, settings)
        report = run_eval(assistant, questions, judge=make_judge("similarity", assistant.vectors, settings), max_failures=2)
    assert [i.id for i in report.items if i.error] == [IDS[i] for i in failing]
    if stopped_after is None:
        assert not report.stopped and len(report.items) == 4
    else:
        assert report.stopped.startswith("2 questions in a row failed") and len(report.items) == stopped_after
        assert report.unasked == tuple(IDS[stopped_after:4])


def test_a_resumed_run_keeps_the_judges_verdicts_of_the_questions_it_does_not_ask_again(seed_index):
    # The third question's answer makes the LLM judge's server fail: a failure while judging.
    special = "Each token picks its attention heads, a special claim [1]."
    state = {"judge_down": True}

    def reply(body: dict) -> str | int:
        prompt = body["messages"][-1]["content"]
        if SUPPORT in prompt:
            if "special claim" in prompt and state["judge_down"]:
                return 500
            return "Yes." if "heads" in prompt.split("Statement:")[1] else "No."
        if "Write the one question" in prompt:
            return "Which papers let each token use only some attention heads?"
        return special if QUESTIONS[2].question in prompt else ANSWER + " It also cures cancer [1]."

    questions = load_question_set(SEED_SET).model_copy(update={"items": QUESTIONS[:3]})
    with FakeOpenAI(reply=reply) as server:
        settings = seed_index.settings.model_copy(update={"backend": "openai", "openai_base_url": server.base_url})
        assistant = Assistant(seed_index, settings)
        partial = run_eval(assistant, questions, judge=make_judge("auto", assistant.vectors, settings))
        state["judge_down"] = False
        server.requests.clear()
        final = run_eval(assistant, questions, judge=make_judge("auto", assistant.vectors, settings), kept=partial.items)
        asked_again = asked(server)
    failed = partial.items[2]
    assert failed.answer is None and "(HTTP 500)" in failed.error
    assert partial.failed == 1 and "## Failed (1)" in markdown(partial)
    assert asked_again == [IDS[2]]
    assert final.failed == 0 and final.items[:2] == partial.items[:2]
    kept_pairs = sum(len(i.verdicts) for i in partial.items[:2])
    assert kept_pairs and final.items[2].verdicts
    # Agreement over every item's support decisions, the kept ones' included.
    assert final.judge_agreement["pairs"] == kept_pairs + len(final.items[2].verdicts)
    assert partial.judge_agreement["pairs"] == kept_pairs
    # Half of the kept answers' sentences are made up; the third answer's one sentence holds.
    assert final.metrics["faithfulness"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)


def test_an_answer_cut_off_mid_stream_is_a_failed_question_not_a_poor_one(seed_index):
    questions = load_question_set(SEED_SET).model_copy(update={"items": QUESTIONS[:3]})
    with FakeOpenAI(reply=ANSWER, chunk_size=10, faults=[Fault(), Fault(after=2, drop=True)]) as server:
        settings = seed_index.settings.model_copy(update={"backend": "openai", "openai_base_url": server.base_url})
        assistant = Assistant(seed_index, settings)
        report = run_eval(assistant, questions, judge=make_judge("similarity", assistant.vectors, settings))
    cut = report.items[1]
    assert cut.error.startswith(f"connection lost to gpt-4o-mini at {server.base_url}") and cut.answer is None
    assert [bool(i.error) for i in report.items] == [False, True, False] and report.failed == 1
