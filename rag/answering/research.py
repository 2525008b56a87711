"""The research table: a row per paper, a column per question of the user's own ("dataset",
"What is the sample size?"), and in each cell the paper's sentence that answers that question.

A sentence's score for a column is the mean of two judgements: the verifier's (`rag.verifier`)
probability that it answers the column's question, and, for the preset's columns, how strongly it
plays the column's role in an abstract (`rag.answering.roles`: "we propose" for the method, the
reported numbers for the result). The best-scored sentence is quoted, exactly as the abstract has
it; below `COVERED_BAR` the cell says the abstract does not hold it, and the sentence is kept as
the closest, for the reader to check. A column of the user's own has no role, so it is filled
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
from collections.abc import Iterable, Iterator, Sequence

from rag.answering.roles import Role, is_boilerplate, role_scores
from rag.markup import to_plain
from rag.records import Paper, ResearchCell, ResearchRow
from rag.text import split_sentences
from rag.verifier import Verifier

__all__ = ["COVERED_BAR", "MIN_WORDS", "NOT_IN_ABSTRACT", "PRESET", "as_question", "cell_text", "research_rows", "scored"]

# The comparison's four aspects, as questions, with the role each asks for: where a table starts
# before the user adds columns.
PRESET: dict[str, Role] = {
    "What problem does it address?": Role.PROBLEM,
    "What method does it propose?": Role.METHOD,
    "What data does it use?": Role.DATA,
    "What is the main result?": Role.RESULT,
}
NOT_IN_ABSTRACT = "not in the abstract"
# The score at which a cell is filled: the best of 0.3-0.7 on the calibration half.
COVERED_BAR = 0.4
# Sentences shorter than this are fragments (a heading, "Code:"), never a cell.
MIN_WORDS = 4


# A column that asks whether code or data are out: only then is a code-availability line a cell
# (the verifier, trained on questions about one topic each, finds such lines answer anything).
_ASKS_RELEASE = re.compile(r"\b(code|implementation|repository|github|open[- ]source|released?|available|availability)\b", re.I)
# "it", "the paper", "this work": the row's paper.
_THE_PAPER = re.compile(r"\b(it|they|the (paper|work|study|authors)|this (paper|work|study))\b", re.I)


def as_question(column: str, paper: Paper) -> str:
    """A column as the verifier reads it of one paper. It was trained on questions that name
    what they ask about, so "it" and "the paper" become the paper's name, and a bare noun phrase
    ("sample size") the question it stands for."""
    column = " ".join(column.split())
    if not column.endswith("?") and len(column.split()) <= 4:
        column = f"What {column} does the paper report?"
    return _THE_PAPER.sub(paper.short_name, column, count=1)


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
    sentence, answers, cue = max(candidates, key=lambda c: c[1] + c[2])
    score = round((answers + cue) / 2, 4)
    covered = score >= COVERED_BAR
    return ResearchCell(quote=sentence if covered else None, covered=covered, closest=sentence, score=score)


def research_rows(papers: Iterable[Paper], columns: Sequence[str], verifier: Verifier) -> Iterator[ResearchRow]:
    """A row per paper, in order, each as soon as its cells are judged."""
    for paper in papers:
        sentences = [s for s in split_sentences(paper.abstract) if len(s.split()) >= MIN_WORDS]
        yield ResearchRow(
            paper_id=paper.id, title=paper.display_title, cells=tuple(_cell(c, paper, sentences, verifier) for c in columns)
        )


def cell_text(cell: ResearchCell, number: int | None = None) -> str:
    """A cell as plain text: its quote, cited [number] when given, or "not in the abstract"."""
    if cell.quote is None:
        return NOT_IN_ABSTRACT
    return f"“{to_plain(cell.quote)}”" + (f" [{number}]" if number is not None else "")
