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
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rag.answering.backends import ModelBackend
from rag.answering.chain import Assistant
from rag.answering.research import (
    COVERED_BAR,
    NOT_IN_ABSTRACT,
    PRESET,
    as_question,
    cell_text,
    chat_question,
    checked_paraphrase,
    covering,
    research_rows,
    rows_source,
    with_column,
    without_column,
)
from rag.answering.roles import Role, role_scores
from rag.export import research_csv, research_markdown
from rag.markup import to_plain
from rag.models.verifier import Verdict
from rag.records import Filters, Paper, ResearchCell, ResearchRow, ResearchTable

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
            Verdict(answers=max((v for w, v in self.scores.items() if w in p), default=0.05), contradicts=0.0) for p in passages
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
        paper_id="moh", title=PAPER.display_title, cells=(ResearchCell(quote="A | B holds.", covered=True, sure=True), ResearchCell())
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


def test_a_line_saying_where_the_code_is_answers_a_column_about_code_whatever_the_verifier_says():
    # Issue 36's screenshot: "The source code is available online." was only the closest
    # sentence to "Is the code released?", at the verifier's 0.49.
    verifier = ScriptedVerifier({"github": 0.3, "router": 0.6})
    (row,) = research_rows([PAPER], ["Is the code released?"], verifier)
    [code] = row.cells
    assert code.quote == "Code is available at https://github.com/example/moh." and code.grade == "answers"
    # A link to videos is no code line: the verifier decides, and is not sure.
    videos = PAPER.model_copy(update={"abstract": PAPER.abstract.replace("Code is available at https://github.com/example/moh.", "Videos are at https://example.org/moh.")})
    (row,) = research_rows([videos], ["Is the code released?"], verifier)
    assert row.cells[0].grade != "answers"


@pytest.mark.slow
@pytest.mark.semantic
def test_paperchat_table_fills_a_column_per_question_for_a_collections_papers(seed_index, tmp_path):
    data_dir = seed_index.settings.data_dir
    path = tmp_path / "table.csv"
    done = run_cli(
        data_dir,
        "table",
        "Which papers say their code is available?",
        "--column",
        "Is the code released?",
        "--column",
        "sample size",
        "--csv",
        str(path),
        "--json",
        "--bib",
        str(tmp_path / "t.bib"),
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


@pytest.mark.slow
@pytest.mark.semantic
def test_paperchat_table_of_the_papers_under_a_filter(seed_index):
    category = "Online Learning and Bandits"
    done = run_cli(seed_index.settings.data_dir, "table", "--category", category, "--column", "regret", "--json")
    table = json.loads(done.stdout)
    wanted = {p.id for p in seed_index.papers.values() if category in p.category}
    assert wanted and {r["paper_id"] for r in table["rows"]} == wanted
    assert table["source"] == f"papers under the filters (category {category})"


def test_what_chose_the_rows_is_said_in_words():
    assert rows_source("Which papers use bandits?") == "“Which papers use bandits?”, the papers its collection answer lists"
    assert (
        rows_source("bandits", filters=Filters(year_min=2024))
        == "“bandits”, the papers its collection answer lists (years 2024–…)"
    )
    assert rows_source() == "papers under the filters (the whole library)"
    assert rows_source(picked=3, filters=Filters(venue="ICML")) == "3 papers picked by hand"


def _two_papers_table() -> tuple[list[Paper], ResearchTable]:
    other = Paper(
        id="lora",
        title="Flat-LoRA",
        abstract="We study low-rank adaptation on many tasks. Flat-LoRA improves accuracy by 2 points.",
    )
    verifier = ScriptedVerifier({"router": 0.9})
    columns = ["What method does it propose?"]
    rows = tuple(research_rows([PAPER, other], columns, verifier))
    return [PAPER, other], ResearchTable(columns=tuple(columns), rows=rows, source="attention")


def test_a_column_added_keeps_the_cells_already_judged_and_judges_only_the_new_one():
    papers, table = _two_papers_table()
    verifier = ScriptedVerifier({"64.0%": 0.9, "2 points": 0.9})
    grown = with_column(table, "What is the main result?", list(research_rows(papers, ["What is the main result?"], verifier)))
    assert grown.columns == ("What method does it propose?", "What is the main result?")
    assert [r.cells[0] for r in grown.rows] == [r.cells[0] for r in table.rows]
    assert grown.rows[0].cells[1].quote == "MoH reaches 64.0% accuracy with half of the heads."
    assert grown.source == "attention"
    # Every new question was about the new column only.
    assert all("result" in q for q in verifier.asked)


def test_a_column_added_without_a_cell_for_every_row_is_refused():
    papers, table = _two_papers_table()
    with pytest.raises(ValueError, match="lora"):
        with_column(table, "sample size", list(research_rows(papers[:1], ["sample size"], ScriptedVerifier({}))))


def test_a_column_removed_takes_its_cells_and_leaves_the_others():
    papers, table = _two_papers_table()
    grown = with_column(table, "sample size", list(research_rows(papers, ["sample size"], ScriptedVerifier({}))))
    assert without_column(grown, "What method does it propose?").columns == ("sample size",)
    assert without_column(grown, "What method does it propose?").rows[0].cells == (grown.rows[0].cells[1],)
    assert without_column(grown, "sample size") == table


def test_filtering_by_a_column_keeps_the_rows_its_abstract_answers():
    _, table = _two_papers_table()
    assert covering(table, "What method does it propose?") == [0]


def test_a_column_asked_in_the_chat_names_the_table_papers():
    _, table = _two_papers_table()
    assert chat_question("What method does it propose?", table) == (
        "What method does each paper propose? Papers: MoH: Multi-Head Attention as Mixture-of-Head Attention; Flat-LoRA"
    )
    assert chat_question("sample size", table).startswith("What sample size does each paper report? Papers: ")
    many = table.model_copy(update={"rows": table.rows * 4})
    assert chat_question("sample size", many).endswith("; …")


def test_a_paraphrase_is_kept_only_where_its_quote_bears_it_out():
    quote = "MoH reaches 64.0% accuracy with half of the heads."
    column = "What is the main result?"
    assert checked_paraphrase(" 64.0% accuracy with half the heads ", quote, column) == "64.0% accuracy with half the heads"
    assert checked_paraphrase("“Reaches 64.0% accuracy.”", quote, column) == "Reaches 64.0% accuracy."
    # A number the quote does not hold, words it does not say, a refusal, or no shorter: the quote alone.
    assert checked_paraphrase("64.5% accuracy with half the heads", quote, column) is None
    assert checked_paraphrase("State-of-the-art ImageNet results beating every transformer", quote, column) is None
    assert checked_paraphrase("NOT IN SENTENCE", quote, column) is None
    assert checked_paraphrase(" ".join(["accuracy"] * 21), quote, column) is None
    assert checked_paraphrase("", quote, column) is None


class Shortening(BaseChatModel):
    """A chat model that answers a table cell with the first words of the sentence it is given,
    and counts its calls; `broken` makes every call fail."""

    calls: int = 0
    broken: bool = False

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        if self.broken:
            raise RuntimeError("connection refused")
        quote = messages[-1].content.split("Sentence: ", 1)[1].split("\n", 1)[0]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(" ".join(quote.split()[:8])))])

    @property
    def _llm_type(self) -> str:
        return "shortening"


@pytest.mark.slow
@pytest.mark.semantic
def test_with_a_model_each_quoted_cell_is_also_said_short_and_a_failing_model_leaves_the_quotes(seed_index):
    settings = seed_index.settings
    papers = [seed_index.get(i) for i in sorted(seed_index.papers)[:3]]
    columns = ["What method does it propose?", "What is the sample size?"]
    model = Shortening()
    assistant = Assistant(seed_index, settings, backend=ModelBackend.wrapping(model, settings, name="fake", reason="test"))
    rows = list(assistant.research_table(papers, columns))
    quoted = [c for r in rows for c in r.cells if c.quote]
    assert quoted and model.calls == len(quoted)  # a cell with no quote is not sent
    assert all(c.paraphrase == " ".join(c.quote.split()[:8]) for c in quoted)
    assert all(c.paraphrase is None for r in rows for c in r.cells if not c.quote)
    closest = "(closest sentence) " if not quoted[0].sure else ""
    assert cell_text(quoted[0], 1) == f"{closest}{to_plain(quoted[0].paraphrase)} [1]"

    broken = Shortening(broken=True)
    assistant = Assistant(seed_index, settings, backend=ModelBackend.wrapping(broken, settings, name="fake", reason="test"))
    again = list(assistant.research_table(papers, columns))
    assert [[c.quote for c in r.cells] for r in again] == [[c.quote for c in r.cells] for r in rows]
    assert all(c.paraphrase is None for r in again for c in r.cells)
    assert broken.calls == 1  # a model that failed is not asked again for every cell


def test_the_markdown_gives_a_paraphrase_with_its_quote():
    cell = ResearchCell(quote="MoH reaches 64.0% accuracy.", covered=True, paraphrase="accuracy of 64.0%", sure=True)
    table = ResearchTable(columns=("result",), rows=(ResearchRow(paper_id="moh", title="MoH", cells=(cell,)),))
    assert "| MoH [1] | accuracy of 64.0%: “MoH reaches 64.0% accuracy.” [1] |" in research_markdown(table, [PAPER])


def test_a_cell_is_graded_answers_only_when_sure_and_the_closest_sentence_is_said_so():
    from rag.records import CellGrade

    sure = ResearchCell(quote="We propose MoH.", covered=True, closest="We propose MoH.", score=0.8, sure=True)
    near = sure.model_copy(update={"sure": False, "score": 0.5})
    empty = ResearchCell(closest="Background.", score=0.1)
    assert [c.grade for c in (sure, near, empty)] == [CellGrade.ANSWERS, CellGrade.CLOSEST, CellGrade.NOT_IN_ABSTRACT]
    assert cell_text(sure, 1) == "“We propose MoH.” [1]"
    assert cell_text(near, 1) == "(closest sentence) “We propose MoH.” [1]"
    assert cell_text(empty) == NOT_IN_ABSTRACT
    assert sure.model_dump(mode="json")["grade"] == "answers"
