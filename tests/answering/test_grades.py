"""Every answer is graded by how sure it is: answers, best match, not found (`rag.records.Grade`).
Hand-made records, no index."""

from __future__ import annotations

import json

import pytest

from rag.answering.answerability import grade_label
from rag.answering.forms.decline import partial_note
from rag.records import Answer, Answerability, Coverage, Grade, Paper, Source

DRAG = Paper(id="p1", title="DragSolver: A Multi-Scale Transformer for Drag", abstract="We estimate drag coefficients.")
MOH = Paper(id="p2", title="MoH: Multi-Head Attention as Mixture-of-Head Attention", abstract="Tokens pick heads.")


@pytest.mark.parametrize(
    ("coverage", "grade"),
    [
        (Coverage.COVERED, Grade.ANSWERS),
        (Coverage.CONTRADICTED, Grade.ANSWERS),
        (Coverage.BEST_MATCH, Grade.BEST_MATCH),
        (Coverage.PARTLY, Grade.BEST_MATCH),
        (Coverage.NOT_COVERED, Grade.NOT_FOUND),
        (Coverage.UNCLEAR, Grade.NOT_FOUND),
        (Coverage.BEYOND, Grade.NOT_FOUND),
    ],
)
def test_each_coverage_has_one_grade(coverage, grade):
    assert Answerability(coverage=coverage).grade == grade


def test_what_a_named_papers_abstract_checkably_lacks_is_not_found_though_its_quotes_are_shown():
    partly = Answerability(coverage=Coverage.PARTLY, missing=("GPU",), absent=("GPU",))
    assert partly.answers and partly.grade == Grade.NOT_FOUND
    assert Answerability(coverage=Coverage.PARTLY, missing=("GPU",)).grade == Grade.BEST_MATCH


def test_a_best_match_names_what_no_abstract_uses_and_the_paper_it_could_not_confirm():
    sources = [Source(number=1, paper=DRAG, score=1.0), Source(number=2, paper=MOH, score=0.5)]
    found = Answerability(coverage=Coverage.BEST_MATCH, missing=("air resistance",), best=("p1",))
    assert partial_note(found, sources) == (
        "No abstract uses “air resistance”. The closest match is DragSolver [1]; "
        "PaperChat could not confirm that it answers the question."
    )
    # A question that joins papers' topics is told which part only other abstracts have.
    joined = found.model_copy(update={"missing": (), "elsewhere": ("drag coefficient",), "best": ("p2",)})
    assert partial_note(joined, sources).startswith(
        "The closest abstract does not use “drag coefficient”, which other abstracts do. The closest match is MoH [2];"
    )
    both = found.model_copy(update={"missing": (), "best": ("p1", "p2")})
    note = partial_note(both, sources)
    assert note.startswith("No abstract says it in the question's words.") and "DragSolver [1] and MoH [2]" in note


def test_the_grade_is_in_the_answers_json_and_a_clarification_has_none():
    answer = Answer(
        question="q",
        standalone_question="q",
        text="t",
        citations=(),
        sources=(),
        backend="extractive",
        answerability=Answerability(coverage=Coverage.BEST_MATCH),
    )
    assert json.loads(answer.model_dump_json())["grade"] == "best match"
    # A saved answer reads back, grade and all.
    assert Answer.model_validate_json(answer.model_dump_json()).grade == Grade.BEST_MATCH
    assert answer.model_copy(update={"form": "clarify"}).grade is None
    assert grade_label(Grade.NOT_FOUND).startswith("not found: ")
