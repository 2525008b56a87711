"""The research table: a row per paper, a column per question of the user's own ("dataset",
"What is the sample size?"), and in each cell the paper's sentence that answers that question.

A cell is judged by meaning: the verifier (`rag.verifier`) reads the column's question against
each sentence of the abstract, and the sentence it finds most surely answers is quoted, exactly
as the abstract has it. Below `COVERED_BAR` the cell says the abstract does not hold it, and the
sentence is still kept as the closest, for the reader to check. How often a cell is right has not
been measured yet (issue 25): no set of (paper, column, answering sentence) is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from rag.answering.roles import is_boilerplate
from rag.markup import to_plain
from rag.records import Paper, ResearchCell, ResearchRow
from rag.text import split_sentences
from rag.verifier import Verifier

__all__ = ["COVERED_BAR", "NOT_IN_ABSTRACT", "PRESET", "as_question", "research_rows"]

# The comparison's four aspects, as questions: where a table starts before the user adds columns.
PRESET = (
    "What problem does it address?",
    "What method does it propose?",
    "What data does it use?",
    "What is the main result?",
)
NOT_IN_ABSTRACT = "not in the abstract"
# The verifier's "answers" probability at which a cell is filled: its argmax bar (answers beats
# the two other labels' sum), where its held-out answers precision / recall were 0.63 / 0.82.
COVERED_BAR = 0.5
# Sentences shorter than this are fragments (a heading, "Code:"), never a cell.
_MIN_WORDS = 4


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


def _cell(verifier: Verifier, column: str, paper: Paper, sentences: Sequence[str]) -> ResearchCell:
    if not _ASKS_RELEASE.search(column):
        sentences = [s for s in sentences if not is_boilerplate(s)]
    if not sentences:
        return ResearchCell()
    question = as_question(column, paper)
    verdicts = verifier.judge(question, [to_plain(s) for s in sentences])
    best = max(range(len(sentences)), key=lambda i: verdicts[i].answers)
    score = round(verdicts[best].answers, 4)
    covered = score >= COVERED_BAR
    return ResearchCell(quote=sentences[best] if covered else None, covered=covered, closest=sentences[best], score=score)


def research_rows(papers: Iterable[Paper], columns: Sequence[str], verifier: Verifier) -> Iterator[ResearchRow]:
    """A row per paper, in order, each as soon as its cells are judged."""
    for paper in papers:
        sentences = [s for s in split_sentences(paper.abstract) if len(s.split()) >= _MIN_WORDS]
        yield ResearchRow(
            paper_id=paper.id, title=paper.display_title, cells=tuple(_cell(verifier, c, paper, sentences) for c in columns)
        )
