"""`paperchat` end to end in a subprocess: ingest, ask, summarize, stats, remove, bad input."""

from __future__ import annotations

import json
import re
import signal

import pytest
from conftest import PAPERS, shared_file, start_cli, wait_for
from conftest import run_cli as run
from fake_openai import FakeOpenAI, Fault

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def listing_index(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("cli")
    done = run(data_dir, "ingest", str(shared_file("seeds/icml2025_listing.txt")))
    assert "20" in done.stdout and "papers in the index" in done.stdout
    return data_dir


def test_ask_prints_a_cited_answer_and_its_sources(listing_index):
    done = run(listing_index, "ask", "Which papers make attention cheaper, and how?")
    assert "backend: extractive" in done.stderr and "no OPENAI_API_KEY" in done.stderr
    assert "[1]" in done.stdout
    assert "Sources" in done.stdout and "Peng Jin" in done.stdout
    assert "Traceback" not in done.stderr


def test_ask_with_a_filter_and_json(listing_index):
    done = run(listing_index, "ask", "regret guarantees", "--category", "Theory", "--k", "3", "--json")
    answer = json.loads(done.stdout)
    assert answer["grade"] in ("answers", "best match")
    assert 1 <= len(answer["sources"]) <= 3
    assert all("Theory" in s["paper"]["category"] for s in answer["sources"])
    assert answer["citations"]


def test_second_ingest_reports_unchanged(listing_index):
    done = run(listing_index, "ingest", str(shared_file("seeds/icml2025_listing.txt")))
    row = next(line for line in done.stdout.splitlines() if "icml2025_listing" in line)
    added, updated, unchanged = (cell.strip() for cell in row.split("│")[2:5])
    assert (added, updated, unchanged) == ("0", "0", "20")


def test_summarize_stats_and_remove(tmp_path):
    run(tmp_path, "ingest", str(PAPERS))
    summary = run(tmp_path, "summarize", "Flat-LoRA")
    assert "[1]" in summary.stdout and "Flat-LoRA" in summary.stdout
    assert "papers: 20" in run(tmp_path, "stats").stdout
    target = "site_85ad8ae8b1"
    assert "removed site_85ad8ae8b1" in run(tmp_path, "remove", target).stdout
    assert "papers: 19" in run(tmp_path, "stats").stdout


def test_a_bad_file_names_its_line_and_indexes_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "title": "T", "abstract": "An abstract."}\n{"id": "b", "title": "U"}\n')
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "g", "title": "G", "abstract": "Another abstract."}\n')
    # Every file is checked before any is written: neither the good file nor line 1 goes in.
    done = run(tmp_path / "index", "ingest", str(good), str(bad), check=False)
    assert done.returncode == 1
    assert "bad.jsonl:2" in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr
    skipped = run(tmp_path / "index", "ingest", str(bad), "--skip-invalid")
    assert "bad.jsonl:2" in skipped.stderr
    assert "1 papers in the index" in skipped.stdout


def test_an_oversized_abstract_is_refused_before_anything_is_indexed(tmp_path):
    index = tmp_path / "index"
    first = tmp_path / "first.jsonl"
    first.write_text('{"id": "a", "title": "T", "abstract": "An abstract."}\n')
    run(index, "ingest", str(first))
    big = tmp_path / "big.jsonl"
    whole_paper = json.dumps({"id": "w", "title": "A Whole Paper", "abstract": "word " * 5000})
    big.write_text('{"id": "b", "title": "U", "abstract": "Another abstract."}\n' + whole_paper + "\n")

    done = run(index, "ingest", str(big), check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{big}:2: abstract is 5,000 tokens; the limit is 2,000 (PAPERCHAT_MAX_ABSTRACT_TOKENS)" in done.stderr
    assert "hint:" in done.stderr
    assert "papers: 1\n" in run(index, "stats").stdout  # not even line 1 went in
    skipped = run(index, "ingest", str(big), "--skip-invalid")
    assert f"skipped {big}:2: abstract is 5,000 tokens" in skipped.stderr
    assert "2 papers in the index" in skipped.stdout
    raised = run(index, "ingest", str(big), env={"PAPERCHAT_MAX_ABSTRACT_TOKENS": "5000"})
    assert "3 papers in the index" in raised.stdout


def test_the_command_line_speaks_the_locales_language_unless_set_and_a_search_its_querys(listing_index):
    chinese = {"LANG": "zh_CN.UTF-8"}
    assert "论文：20" in run(listing_index, "stats", env=chinese).stdout
    assert "papers: 20" in run(listing_index, "stats", env={**chinese, "PAPERCHAT_LANG": "en"}).stdout
    assert "papers: 20" in run(listing_index, "stats", env={"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}).stdout, "LC_ALL ranks first"
    failed = run(listing_index, "summarize", "no such paper anywhere", env=chinese, check=False)
    assert failed.returncode == 1 and "错误：" in failed.stderr and "Traceback" not in failed.stderr
    searched = run(listing_index, "search", "注意力头怎么选", "--k", "3").stdout
    assert "得分" in searched and "score" not in searched, "a search in Chinese is listed in Chinese"
    chat = run(listing_index, "chat", env=chinese, input="\n").stdout
    assert "已索引 20 篇论文" in chat and "你>" in chat


def test_unknown_paper_is_a_clean_error(tmp_path):
    done = run(tmp_path, "summarize", "no such paper anywhere", check=False)
    assert done.returncode == 1 and "no indexed paper" in done.stderr and "Traceback" not in done.stderr


# --- answer forms, in the terminal (the seed listing: no titles, LaTeX in its abstracts) ---------


def test_a_bad_setting_is_a_message_in_every_command_not_a_traceback(tmp_path):
    config = tmp_path / "broken.toml"
    config.write_text("k = [\n", encoding="utf-8")
    for env, expected in (
        ({"PAPERCHAT_K": "0"}, "PAPERCHAT_K is '0'"),
        ({"PAPERCHAT_BACKEND": "bogus"}, "PAPERCHAT_BACKEND is 'bogus'"),
        ({"PAPERCHAT_CONFIG": str(config)}, f"{config}:"),
    ):
        for command in (["stats"], ["ask", "How does MoH work?"]):
            done = run(tmp_path / "index", *command, check=False, env=env)
            assert done.returncode == 1 and expected in done.stderr
            assert "Traceback" not in done.stderr and "hint:" in done.stderr


def test_a_question_the_corpus_does_not_answer_is_declined_with_the_closest_papers(listing_index):
    done = run(listing_index, "ask", "Which papers detect bugs in smart contracts?")
    assert "do not answer this" in done.stdout and "[not found: the abstracts do not hold it]" in done.stdout
    assert "Closest papers (not cited)" in done.stdout
    assert "Sources" not in done.stdout


def test_a_partly_covered_result_question_quotes_no_other_number(listing_index):
    done = run(listing_index, "ask", "What ImageNet top-1 accuracy does MoH reach?")
    answer, _, rest = done.stdout.partition("Sources")
    assert "No abstract gives a figure for “ImageNet top-1 accuracy”" in answer
    assert "64.0%" not in answer and "[1]" in answer


def test_a_how_answer_is_terminal_text_quoting_the_mechanism(listing_index):
    done = run(listing_index, "ask", "How does MoH make attention cheaper?")
    assert "MoH enables each token to select the appropriate attention heads" in done.stdout
    assert "**" not in done.stdout and "\\(" not in done.stdout  # terminal text, not Markdown source
    assert "searched for:" in done.stderr and "how" in done.stderr


def test_untitled_papers_get_a_name_and_latex_becomes_text(listing_index):
    done = run(listing_index, "summarize", "DragSolver")
    assert "[untitled]" not in done.stdout and "$C_d$" not in done.stdout
    assert "[1] DragSolver" in done.stdout and "(C_d)" in done.stdout
    problem, method, result = (done.stdout.index(f"{part}:") for part in ("Problem", "Method", "Result"))
    assert problem < method < result
    assert "Also retrieved" not in done.stdout


def test_a_collection_lists_every_matching_paper(listing_index):
    done = run(listing_index, "ask", "Which papers are about bandits?", "--json")
    answer = json.loads(done.stdout)
    assert answer["form"] == "collection" and len(answer["matches"]) == 2
    assert answer["analysis"]["type"] == "collection" and answer["analysis"]["terms"][0]["text"] == "bandits"
    assert {c["number"] for c in answer["citations"]} == {1, 2}


def test_chat_asks_which_paper_an_unclear_follow_up_means_and_takes_its_number(listing_index):
    done = run(listing_index, "chat", input="Which papers are about bandits?\nsummarize the third one\n2\n")
    _, asked, rest = done.stdout.partition("Which paper do you mean by “the third one”? The last answer cites 2 papers.")
    choices, answered, summary = rest.partition("Answer with a number or words of a title.")
    assert asked and answered, done.stdout
    numbered = [line for line in choices.splitlines() if line.startswith("[")]
    assert [line[:4] for line in numbered] == ["[1] ", "[2] "]
    assert "Sources\n[1] " + numbered[1][4:] + "\n" in summary, "choice 2 is summarized, citing it alone"


def test_a_comparison_prints_a_table_and_exports_it(listing_index, tmp_path):
    out = tmp_path / "table.csv"
    done = run(listing_index, "ask", "Compare MoH and Flat-LoRA", "--export", str(out))
    assert "Reported result" in done.stdout and "| Paper |" not in done.stdout
    rows = out.read_text().splitlines()
    assert rows[0] == "Paper,Problem,Method,Data,Reported result" and len(rows) >= 3
    assert rows[1].startswith("MoH [1],")


def test_long_work_shows_its_rate_once_there_is_one():
    from types import SimpleNamespace

    from rag.terminal import Rate as _Rate

    assert _Rate().render(SimpleNamespace(speed=36.14)).plain == "36.1/s"
    assert _Rate().render(SimpleNamespace(speed=None)).plain == ""


def test_the_eval_command_offers_every_retriever():
    # The CLI spells the choices out so that `paperchat --help` does not import the retrieval stack.
    from rag.cli import eval_
    from rag.search.retrieval import RETRIEVERS

    (option,) = [p for p in eval_.params if p.name == "retriever"]
    assert tuple(option.type.choices) == RETRIEVERS


# --- hostile text: corpus and model text is shown as written, never acted on ---------------------

BRACKET_URL = "https://example.org/view?ids[]=42"
HOSTILE = [
    {"id": "brk-1", "title": "Bracket Link Routing", "authors": ["A"],
     "abstract": "We propose bracket link routing and halve training cost.", "url": BRACKET_URL},
    # Text hidden (ESC[8m), the screen cleared (ESC[2J, 8-bit CSI), the window title set (OSC 0), a
    # link whose address is not shown (OSC 8, ended by ESC\ or BEL), a bell.
    {"id": "esc-1", "title": "Hidden \x1b[8mSecret\x1b[0m Routing \x1b]0;window title\x07Networks",
     "authors": ["Eve \x1b[2J\x1b[HSmith"], "category": "cs.\x1b]8;;http://evil.example\x1b\\LG\x1b]8;;\x1b\\",
     "abstract": "We propose \x1b]8;;http://evil.example\x07sequence gated routing\x1b]8;;\x07, which "
                 "\x9b2Jreduces memory by \x07half.", "url": "https://example.org/esc"},
]
# What a terminal acts on: every control character but the line break and the tab.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    corpus = folder / "hostile.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in HOSTILE), encoding="utf-8")
    run(folder / "index", "ingest", str(PAPERS), str(corpus))
    return folder / "index"


def model_env(server: FakeOpenAI) -> dict[str, str]:
    return {"PAPERCHAT_BACKEND": "openai", "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url,
            "PAPERCHAT_OPENAI_MODEL": "fake"}


def test_a_link_holding_brackets_is_shown_in_search_ask_chat_and_export(hostile_index, tmp_path):
    found = run(hostile_index, "search", "bracket link routing")
    assert "[1] Bracket Link Routing" in found.stdout and BRACKET_URL in found.stdout
    exported = tmp_path / "answer.md"
    asked = run(hostile_index, "ask", "What does bracket link routing halve?", "--export", str(exported))
    assert BRACKET_URL in asked.stdout and BRACKET_URL in exported.read_text(encoding="utf-8")
    # The session goes on past an answer citing it.
    chat = run(hostile_index, "chat", input="What does bracket link routing halve?\nWhat is bracket link routing?\n")
    assert chat.stdout.count(BRACKET_URL) >= 2, chat.stdout
    assert "Traceback" not in found.stderr + asked.stderr + chat.stderr


@pytest.mark.usefixtures("no_proxy")
def test_terminal_escapes_in_the_corpus_and_a_models_text_never_reach_the_terminal(hostile_index):
    question = "What does sequence gated routing reduce?"
    done = {name: run(hostile_index, *command) for name, command in (
        ("search", ["search", "sequence gated routing"]),
        ("ask", ["ask", question]),
    )}
    reply = "Sequence gated routing \x1b[8mhides\x1b[0m nothing \x1b]0;window title\x07and halves memory [1]."
    with FakeOpenAI(reply=lambda body: reply, chunk_size=5) as server:
        done["model"] = run(hostile_index, "ask", question, env=model_env(server))
    for name, result in done.items():
        shown = result.stdout + result.stderr
        assert not CONTROL.search(shown), f"{name}: {CONTROL.findall(shown)} in {shown!r}"
    assert "Hidden Secret Routing Networks" in done["search"].stdout and "Eve Smith · cs.LG" in done["search"].stdout
    assert "sequence gated routing" in done["search"].stdout and "reduces memory by half" in done["ask"].stdout
    assert "hides" in done["model"].stdout and "and halves memory" in done["model"].stdout


@pytest.mark.usefixtures("no_proxy")
def test_the_terminal_marks_unsupported_and_held_back_sentences_as_the_export_does(hostile_index, tmp_path):
    # [1] is the MoH paper, which says nothing of switchbacks; [99] names no retrieved paper and is
    # cut before it is shown, leaving its sentence citing nothing.
    reply = "Switchback policies have high variance [1]. Heads are experts [99]."
    exported = tmp_path / "answer.md"
    with FakeOpenAI(reply=lambda body: reply) as server:
        done = run(hostile_index, "ask", "How does MoH make attention cheaper?", "--export", str(exported), env=model_env(server))
    marked = [line for line in done.stdout.splitlines() if "(unsupported)" in line or "(no such source)" in line]
    assert any("“Switchback policies have high variance.” [1] (unsupported)" in line for line in marked), done.stdout
    assert any("“Heads are experts.” (no such source): it cited [99]" in line for line in marked), done.stdout
    # Marked where [99] stood, in the streamed answer as in the export.
    assert "Heads are experts (no such source)." in done.stdout
    export = exported.read_text(encoding="utf-8")
    assert "Switchback policies have high variance [1] *(unsupported)*" in export
    assert "Heads are experts *(no such source)*." in export


def test_an_ingest_whose_output_is_not_a_terminal_says_its_progress_in_plain_lines(tmp_path):
    # Captured, stderr is no terminal: no bar can be drawn, so plain lines say where it is.
    done = run(tmp_path / "index", "ingest", str(PAPERS))
    lines = [line for line in done.stderr.splitlines() if line.startswith(f"indexing {PAPERS.name}: ")]
    assert lines[0] == f"indexing {PAPERS.name}: 0/20", done.stderr
    assert re.fullmatch(rf"indexing {PAPERS.name}: 20/20, \d+\.\d/s", lines[-1]), lines


@pytest.mark.usefixtures("no_proxy")
def test_ctrl_c_stops_an_answer_in_the_chat_and_the_conversation_goes_on(listing_index):
    # The model stalls after its first piece until SIGINT; then the next question is answered.
    with FakeOpenAI("Flat-LoRA keeps memory low [1].", faults=[Fault(stall=600, after=1)]) as server:
        typed = "How does Flat-LoRA keep memory low?\nWhat does Flat-LoRA do?\n\n"
        chat = start_cli(listing_index, "chat", env=model_env(server), typed=typed)
        wait_for(chat, "the first answer was asked of the model", lambda: len(server.requests) >= 1)
        chat.send_signal(signal.SIGINT)
        out, err = chat.communicate()
    assert chat.returncode == 0, err
    assert "Traceback" not in err
    assert "stopped: that answer is dropped. Ask again, or an empty line leaves." in err
    assert out.count("Flat-LoRA keeps memory low [1].") == 1 and "Sources" in out, out
    assert len(server.requests) == 2
