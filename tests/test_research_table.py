"""The research table (`rag.answering.research`, `Assistant.table_papers`, `paperchat table`): a
row per paper, a column per question, each cell the abstract's sentence that answers it.

The decisions are tested with a verifier whose verdicts the test sets; the command end to end
with the committed verifier on the bundled papers."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import run_cli

from rag.answering.research import COVERED_BAR, NOT_IN_ABSTRACT, PRESET, as_question, research_rows
from rag.answering.roles import Role, role_scores
from rag.export import research_csv, research_markdown
from rag.records import Paper, ResearchCell, ResearchRow, ResearchTable
from rag.verifier import Verdict

PAPER = Paper(
    id="moh",
    title="MoH: Multi-Head Attention as Mixture-of-Head Attention",
    abstract=(
        "Attention heads cost compute at every token. "
        "We propose a router that lets each token pick the heads it needs. "
        "MoH reaches 64.0% accuracy with half of the heads. "
        "Code is available at https://github.com/example/moh."
    ),
)


class ScriptedVerifier:
    """Answers with the probability the test gives a sentence containing a word, else 0.05."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.asked: list[str] = []

    def judge(self, question: str, passages: list[str]) -> list[Verdict]:
        self.asked.append(question)
        return [
            Verdict(answers=max((v for w, v in self.scores.items() if w in p), default=0.05), contradicts=0.0)
            for p in passages
        ]


def test_a_column_is_asked_of_each_paper_by_its_name():
    assert as_question("What method does it propose?", PAPER) == "What method does MoH propose?"
    assert as_question("sample size", PAPER) == "What sample size does MoH report?"
    assert as_question("Which datasets are used?", PAPER) == "Which datasets are used?"


def test_a_cell_quotes_the_sentence_the_verifier_and_the_role_agree_on_exactly_as_the_abstract_has_it():
    # "64.0%" is what the verifier prefers alone; the method's role ("We propose") outweighs it.
    verifier = ScriptedVerifier({"router": 0.6, "64.0%": 0.7})
    (row,) = research_rows([PAPER], ["What method does it propose?"], verifier)
    (cell,) = row.cells
    method = "We propose a router that lets each token pick the heads it needs."
    cue = role_scores(method, 1, 3)[Role.METHOD]
    assert cell.covered and cell.quote == method and cell.quote in PAPER.abstract
    assert cell.score == pytest.approx((0.6 + cue) / 2) and cue > 0.5
    assert verifier.asked == ["What method does MoH propose?"]


def test_a_column_of_the_users_own_is_filled_only_when_the_verifier_is_sure():
    sure, unsure = ScriptedVerifier({"64.0%": 0.9}), ScriptedVerifier({"64.0%": 0.7})
    (filled,) = next(research_rows([PAPER], ["accuracy"], sure)).cells
    (empty,) = next(research_rows([PAPER], ["accuracy"], unsure)).cells
    assert filled.covered and "64.0%" in filled.quote
    assert not empty.covered and empty.quote is None and "64.0%" in empty.closest
    assert COVERED_BAR * 2 > 0.7


def test_below_the_bar_a_cell_is_not_in_the_abstract_and_keeps_its_closest_sentence():
    verifier = ScriptedVerifier({"64.0%": COVERED_BAR - 0.01})
    (row,) = research_rows([PAPER], ["sample size"], verifier)
    (cell,) = row.cells
    assert not cell.covered and cell.quote is None
    assert cell.closest == "MoH reaches 64.0% accuracy with half of the heads."
    table = ResearchTable(columns=("sample size",), rows=(row,))
    assert list(csv.reader(io.StringIO(research_csv(table))))[1] == ["moh", PAPER.display_title, NOT_IN_ABSTRACT]


def test_the_markdown_export_cites_each_quote_and_lists_the_references():
    row = ResearchRow(
        paper_id="moh", title=PAPER.display_title, cells=(ResearchCell(quote="A | B holds.", covered=True), ResearchCell())
    )
    text = research_markdown(ResearchTable(columns=("Result?", "n"), rows=(row,)), [PAPER])
    lines = text.splitlines()
    assert lines[0] == "| Paper | Result? | n |"
    assert lines[2].endswith("| “A \\| B holds.” [1] | *not in the abstract* |")
    assert "[1] MoH: Multi-Head Attention as Mixture-of-Head Attention." in text


def test_a_code_line_is_a_cell_only_for_a_column_that_asks_about_code():
    # The verifier finds a code-availability line answers anything; only a question about the
    # code's release may quote it.
    verifier = ScriptedVerifier({"github": 0.95, "router": 0.6})
    (row,) = research_rows([PAPER], ["What method does it propose?", "Is the code released?"], verifier)
    method, code = row.cells
    assert "router" in method.quote
    assert code.quote == "Code is available at https://github.com/example/moh."


@pytest.mark.slow
@pytest.mark.semantic
def test_paperchat_table_fills_a_column_per_question_for_a_collections_papers(seed_index, tmp_path):
    data_dir = seed_index.settings.data_dir
    path = tmp_path / "table.csv"
    done = run_cli(
        data_dir, "table", "Which papers say their code is available?",
        "--column", "Is the code released?", "--column", "sample size", "--csv", str(path), "--json",
        "--bib", str(tmp_path / "t.bib"),
    )
    table = json.loads(done.stdout)
    assert table["columns"] == ["Is the code released?", "sample size"]
    assert len(table["rows"]) == 5
    papers = seed_index.papers
    for row in table["rows"]:
        code, size = row["cells"]
        assert code["covered"] and code["quote"] in papers[row["paper_id"]].abstract
        assert "available" in code["quote"]
        assert not size["covered"] and size["quote"] is None
    written = list(csv.reader(path.open(encoding="utf-8")))
    assert written[0] == ["paper_id", "title", "Is the code released?", "sample size"] and len(written) == 6
    assert all(r[3] == NOT_IN_ABSTRACT for r in written[1:])
    assert (tmp_path / "t.bib").read_text(encoding="utf-8").count("@inproceedings") == 5


@pytest.mark.slow
@pytest.mark.semantic
def test_paperchat_table_of_papers_by_id_with_the_preset_columns(seed_index):
    ids = sorted(seed_index.papers)[:2]
    done = run_cli(seed_index.settings.data_dir, "table", "--ids", ids[1], "--ids", ids[0], "--json")
    table = json.loads(done.stdout)
    assert table["columns"] == list(PRESET)
    assert [r["paper_id"] for r in table["rows"]] == [ids[1], ids[0]]
    shown = run_cli(seed_index.settings.data_dir, "table", "--ids", ids[0]).stdout
    assert "What problem does it" in shown and "[1]" in shown
    refused = run_cli(seed_index.settings.data_dir, "table", check=False)
    assert refused.returncode != 0 and "--ids" in refused.stderr
