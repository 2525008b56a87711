"""What a question takes for granted, in every form an answer may have to correct."""

from __future__ import annotations

import pytest

from rag.answering.premise import has_premise, stated_premise


@pytest.mark.parametrize(
    ("question", "premise"),
    [
        ("How does DragSolver use deep ensembles?", "DragSolver uses deep ensembles"),
        ("Since MoH models have to be trained from scratch, how much compute did they take?", "MoH models have to be trained from scratch"),
        ("Given that FG-CLIP trains without hard negatives, how does it tell captions apart?", "FG-CLIP trains without hard negatives"),
        ("How much does the SAM inner loop slow Flat-LoRA down?", "the SAM inner loop slows Flat-LoRA down"),
        (
            "In the bandits with interference paper, why is each unit's reward assumed to depend on its own arm?",
            "In the bandits with interference paper, why is each unit's reward assumed to depend on its own arm",
        ),
        ("Why does DragSolver still run a CFD simulation?", "DragSolver still runs a CFD simulation"),
    ],
)
def test_each_form_of_premise_is_restated_in_the_questions_words(question, premise):
    assert has_premise(question)
    assert stated_premise(question) == premise


@pytest.mark.parametrize(
    "question",
    ["What does MoH use to pick heads?", "Which paper predicts drag?", "papers on bandits", "How many heads does MoH use?"],
)
def test_a_question_that_only_asks_takes_nothing_for_granted(question):
    assert not has_premise(question)


def test_a_count_is_still_restated_in_the_questions_words():
    # For a model's note, or a premise the verifier finds some other way.
    assert stated_premise("How many attention heads does MoH-LLaMA3-8B actually use?") == (
        "MoH-LLaMA3-8B actually uses attention heads"
    )
