"""The research table: a row per paper, a column per question of the user's own ("dataset",
"What is the sample size?"), and in each cell the paper's sentence that answers that question.

A sentence's score for a column is the mean of two judgements: the verifier's (`rag.models.verifier`)
probability that it answers the column's question, and, for the preset's columns, how strongly it
plays the column's role in an abstract (`rag.answering.roles`: "we propose" for the method, the
reported numbers for the result). The best-scored sentence is quoted, exactly as the abstract has
it; below `COVERED_BAR` the cell says the abstract does not hold it, and the sentence is kept as
the closest, for the reader to check. A quote is graded "answers" only at `SURE_BAR`, where no
wrong cell of the calibration half scored; between the bars it is shown as the closest sentence. A column of the user's own has no role, so it is filled
only when the verifier is sure (answers >= 2 x the bar).

Measured on `eval/sets/table-cells.jsonl` (`eval/eval_table_cells.py`; cells written by reading
the bundled abstracts, split by paper), cells right on the report half: 0.733 for the mean at the
bar chosen on the calibration half, against 0.467 for the verifier alone and 0.750 for the role
cues alone (0.900 / 0.583 / 0.833 on the calibration half). The verifier alone takes the
preset's generic questions for questions about anything: it was trained on questions that each
name their topic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from rag.answering.roles import Role, is_boilerplate, role_scores
from rag.markup import to_plain
from rag.models.prompts import say
from rag.models.verifier import Verifier
from rag.naming import THE_PAPER
from rag.records import Answer, CellGrade, Filters, Paper, ResearchCell, ResearchRow, ResearchTable
from rag.text import split_sentences, tokenize_terms

__all__ = [
    "COVERED_BAR",
    "MAX_COLUMNS",
    "MAX_ROWS",
    "MIN_WORDS",
    "NOT_IN_ABSTRACT",
    "PRESET",
    "SURE_BAR",
    "answer_papers",
    "as_question",
    "cell_text",
    "chat_question",
    "checked_paraphrase",
    "covering",
    "paraphrased",
    "research_rows",
    "rows_source",
    "scored",
    "with_column",
    "without_column",
]

# The comparison's four aspects, as questions, with the role each asks for: where a table starts
# before the user adds columns.
PRESET: dict[str, Role] = {
    "What problem does it address?": Role.PROBLEM,
    "What method does it propose?": Role.METHOD,
    "What data does it use?": Role.DATA,
    "What is the main result?": Role.RESULT,
}
NOT_IN_ABSTRACT = CellGrade.NOT_IN_ABSTRACT.value
# The score at which a cell is filled: the best of 0.3-0.7 on the calibration half.
COVERED_BAR = 0.4
# A filled cell is graded "answers" from this score: on the calibration half of
# eval/sets/table-cells.jsonl, with the second verifier, 7 cells reach it and none is wrong (at
# 0.75, 8 and one wrong; the first verifier's bar was 0.75).
SURE_BAR = 0.85
# A question names this many papers at most: the chat answers from its top few sources.
_CHAT_PAPERS = 5
# The most rows a table takes from the filters alone: the papers a researcher reads across
# (`make bench-table`: 50 x 4 in about 5 s on 2 cores, so this many fill in about 10 s).
MAX_ROWS = 100
# The most columns: a terminal or a phone shows no more side by side, and each costs a verifier
# pass over every row.
MAX_COLUMNS = 12
# Sentences shorter than this are fragments (a heading, "Code:"), never a cell.
MIN_WORDS = 4


# A column that asks whether code or data are out: only then is a code-availability line a cell
# (the verifier, trained on questions about one topic each, finds such lines answer anything).
_ASKS_RELEASE = re.compile(r"\b(code|implementation|repository|github|open[- ]source|released?|available|availability)\b", re.I)
_CODE = re.compile(r"\b(code|implementation|github|gitlab|repository|open[- ]source)\b", re.I)


def _asked_of(column: str, subject: str) -> str:
    """A column as a question about `subject`: "it" and "the paper" become it, and a bare noun
    phrase ("sample size") the question it stands for."""
    column = " ".join(column.split())
    if not column.endswith("?") and len(column.split()) <= 4:
        return f"What {column} does {subject} report?"
    return THE_PAPER.sub(subject, column, count=1)


def as_question(column: str, paper: Paper) -> str:
    """A column as the verifier reads it of one paper: by the paper's name, as it was trained on
    questions that name what they ask about."""
    return _asked_of(column, paper.short_name)


def scored(column: str, paper: Paper, sentences: Sequence[str], verifier: Verifier) -> list[tuple[str, float, float]]:
    """Each sentence that may fill the column, with the verifier's probability that it answers
    the column and its role cue for the column (0 for a column of the user's own)."""
    if not _ASKS_RELEASE.search(column):
        sentences = [s for s in sentences if not is_boilerplate(s)]
    if not sentences:
        return []
    verdicts = verifier.judge(as_question(column, paper), [to_plain(s) for s in sentences])
    role = PRESET.get(column)
    cues = [role_scores(s, i, len(sentences))[role] if role else 0.0 for i, s in enumerate(sentences)]
    return [(s, v.answers, c) for s, v, c in zip(sentences, verdicts, cues, strict=True)]


def _cell(column: str, paper: Paper, sentences: Sequence[str], verifier: Verifier) -> ResearchCell:
    candidates = scored(column, paper, sentences, verifier)
    if not candidates:
        return ResearchCell()
    # A line that says where the code is, is what a column about code asks for, whatever the
    # verifier says (it gave "The source code is available online." 0.49). A link to videos or a
    # project page is not one.
    released = [c for c in candidates if is_boilerplate(c[0]) and _CODE.search(c[0])] if _ASKS_RELEASE.search(column) else []
    if released:
        sentence = max(released, key=lambda c: c[1])[0]
        return ResearchCell(quote=sentence, covered=True, closest=sentence, score=1.0, sure=True)
    sentence, answers, cue = max(candidates, key=lambda c: c[1] + c[2])
    score = round((answers + cue) / 2, 4)
    covered = score >= COVERED_BAR
    return ResearchCell(
        quote=sentence if covered else None, covered=covered, closest=sentence, score=score, sure=score >= SURE_BAR
    )


def research_rows(papers: Iterable[Paper], columns: Sequence[str], verifier: Verifier) -> Iterator[ResearchRow]:
    """A row per paper, in order, each as soon as its cells are judged."""
    for paper in papers:
        sentences = [s for s in split_sentences(paper.abstract) if len(s.split()) >= MIN_WORDS]
        yield ResearchRow(
            paper_id=paper.id, title=paper.display_title, cells=tuple(_cell(c, paper, sentences, verifier) for c in columns)
        )


def cell_text(cell: ResearchCell, number: int | None = None, *, language: str = "en") -> str:
    """A cell as plain text: its paraphrase or else its quote, cited [number] when given, marked
    as the closest sentence where it is not sure to answer; or "not in the abstract". The marks
    are in `language`, the quote in the abstract's."""
    if cell.quote is None:
        return say("table.not_in_abstract", language)
    said = (to_plain(cell.paraphrase) if cell.paraphrase else f"“{to_plain(cell.quote)}”") + (
        f" [{number}]" if number is not None else ""
    )
    return say("table.closest", language, text=said) if cell.grade == CellGrade.CLOSEST else said


def with_column(table: ResearchTable, column: str, rows: Sequence[ResearchRow]) -> ResearchTable:
    """`table` with one more column, whose cells `rows` holds (`research_rows` of the same papers
    for that column alone): the cells already judged are kept, not judged again."""
    cells = {r.paper_id: r.cells[0] for r in rows}
    missing = [r.paper_id for r in table.rows if r.paper_id not in cells]
    if missing:
        raise ValueError(f"no cell for {', '.join(missing)} in the new column {column!r}")
    return table.model_copy(
        update={
            "columns": (*table.columns, column),
            "rows": tuple(r.model_copy(update={"cells": (*r.cells, cells[r.paper_id])}) for r in table.rows),
        }
    )


def without_column(table: ResearchTable, column: str) -> ResearchTable:
    """`table` without `column` (as typed; the first such, should two be alike)."""
    i = table.columns.index(column)
    return table.model_copy(
        update={
            "columns": table.columns[:i] + table.columns[i + 1 :],
            "rows": tuple(r.model_copy(update={"cells": r.cells[:i] + r.cells[i + 1 :]}) for r in table.rows),
        }
    )


def covering(table: ResearchTable, column: str) -> list[int]:
    """The rows (by position) whose abstract answers `column`: the table filtered by a column."""
    i = table.columns.index(column)
    return [n for n, row in enumerate(table.rows) if row.cells[i].covered]


def chat_question(column: str, table: ResearchTable) -> str:
    """A column as a question for the chat, asked of the table's papers by their names: the chat
    retrieves by what a question names, and a name finds its paper first."""
    names = [r.title for r in table.rows]
    shown = "; ".join(names[:_CHAT_PAPERS]) + ("; …" if len(names) > _CHAT_PAPERS else "")
    return f"{_asked_of(column, 'each paper')} Papers: {shown}"


def answer_papers(answer: Answer) -> list[str]:
    """The ids of the papers a chat answer lists, in its order (a collection's matches, else the
    papers it cites): the rows of a table opened from it."""
    numbered = {s.number: s.paper.id for s in answer.sources}
    listed = [numbered[m.number] for m in answer.matches if m.number in numbered]
    return listed or [s.paper.id for s in answer.cited_sources]


def rows_source(query: str = "", *, picked: int = 0, filters: Filters | None = None, language: str = "en") -> str:
    """What chose a table's rows, in words in `language` (`ResearchTable.source`)."""
    if picked:
        return say("table.source_picked", language, n=picked)
    scope = filters.description if filters is not None and filters.active else ""
    if query:
        return say("table.source_question_in" if scope else "table.source_question", language, query=query, scope=scope)
    return say("table.source_filters_in" if scope else "table.source_filters", language, scope=scope)


# A paraphrase longer than this is no shorter than its quote.
PARAPHRASE_WORDS = 20
# The share of a paraphrase's terms its quote (or column) must hold: the model may reword a
# little ("uses" for "we use"), not add.
PARAPHRASE_SUPPORT = 0.75
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def checked_paraphrase(text: str, quote: str, column: str) -> str | None:
    """A model's short answer for a cell, if its quote bears it out: at most `PARAPHRASE_WORDS`
    words, every number in it also in the quote, and most of its terms in the quote or the
    column; else None, and the cell shows the quote alone."""
    text = " ".join(text.strip().strip('"“”').split())
    if not text or "NOT IN SENTENCE" in text.upper() or len(text.split()) > PARAPHRASE_WORDS:
        return None
    if not set(_NUMBER.findall(text)) <= set(_NUMBER.findall(quote)):
        return None
    terms = tokenize_terms(to_plain(text))
    held = set(tokenize_terms(to_plain(quote))) | set(tokenize_terms(column))
    if terms and sum(t in held for t in terms) / len(terms) < PARAPHRASE_SUPPORT:
        return None
    return text


def paraphrased(row: ResearchRow, columns: Sequence[str], paper: Paper, write: Callable[[str, str, str], str]) -> ResearchRow:
    """`row` with each quoted cell said short by `write(title, question, quote)` (a model), where
    the quote bears the paraphrase out."""
    cells = []
    for column, cell in zip(columns, row.cells, strict=True):
        if cell.quote is not None:
            question = as_question(column, paper)
            cell = cell.model_copy(
                update={"paraphrase": checked_paraphrase(write(paper.display_title, question, cell.quote), cell.quote, column)}
            )
        cells.append(cell)
    return row.model_copy(update={"cells": tuple(cells)})
