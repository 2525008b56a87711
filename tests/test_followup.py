"""Follow-up references read against what the previous answer showed: settled ones become titles,
an unclear one is asked back with the papers it may mean. Hand-made answers, no index."""

from __future__ import annotations

import pytest

from rag.answering.followup import listed_papers, read_references, resolve_by_rule, resolve_references, with_choice
from rag.records import Answer, Citation, Paper, Source

PAPERS = [
    Paper(id=f"p{n}", title=title, abstract=f"An abstract about {title.lower()}.")
    for n, title in enumerate(["Bandits with Interference", "Linear Bandits", "Ordinal Reward Models", "Sparse Heads"], 1)
]
A, B, C, D = PAPERS


def sources(*papers: Paper) -> tuple[Source, ...]:
    return tuple(Source(number=n, paper=p, score=1.0 / n) for n, p in enumerate(papers, 1))


def cite(source: Source) -> Citation:
    p = source.paper
    return Citation(
        number=source.number, paper_id=p.id, title=p.title, authors=(), citing_sentence=p.abstract,
        support=p.abstract, support_score=1.0,
    )


def answer(retrieved: tuple[Source, ...], cited: list[int], **fields) -> Answer:
    """An answer that retrieved `retrieved` and cites the sources numbered `cited`, in that order."""
    by_number = {s.number: s for s in retrieved}
    return Answer(
        question="q", standalone_question="Which papers are about bandits?", text="...",
        citations=tuple(cite(by_number[n]) for n in cited), sources=retrieved, backend="extractive", **fields,
    )


def clarification_of(question: str, previous: Answer) -> Answer:
    reading = read_references(question, [previous])
    return Answer(
        question=question, standalone_question=reading.question, text=reading.ask_back, citations=(), sources=(),
        backend="extractive", form="clarify", choices=reading.choices,
    )


# Four retrieved; the text cites [3] first, then [1]: a reader meets C, then A.
TWO_CITED = answer(sources(A, B, C, D), [3, 1, 3])
ONE_CITED = answer(sources(A, B, C), [1])
DECLINE = answer((), [], closest=sources(C, D, B), form="not covered")


def test_ordinals_count_the_cited_papers_in_the_order_the_answer_cites_them():
    assert listed_papers(TWO_CITED) == (TWO_CITED.sources[2], TWO_CITED.sources[0])
    assert resolve_references("summarize the first one", [TWO_CITED]) == f'summarize "{C.title}"'
    assert resolve_references("summarize the second paper", [TWO_CITED]) == f'summarize "{A.title}"'
    assert resolve_references("and the last one?", [TWO_CITED]) == f'and "{A.title}"?'


def test_an_explicit_number_of_a_shown_source_is_its_title_cited_or_not():
    # [2] and [4] were listed as retrieved but not cited: the user saw them numbered.
    assert resolve_references("compare [2] and [4]", [TWO_CITED]) == f'compare "{B.title}" and "{D.title}"'
    assert not read_references("compare [2] and [4]", [TWO_CITED]).unclear


def test_an_ordinal_past_the_cited_papers_is_asked_back_with_the_cited_ones():
    reading = read_references("summarize the third one", [TWO_CITED])
    assert reading.unclear == "the third one"
    assert reading.question == "summarize the third one", "nothing is guessed"
    assert [(c.number, c.paper.id) for c in reading.choices] == [(1, C.id), (2, A.id)]
    assert reading.ask_back == "Which paper do you mean by “the third one”? The last answer cites 2 papers."
    one = read_references("What does the second one report?", [ONE_CITED])
    assert one.unclear == "the second one" and [c.paper.id for c in one.choices] == [A.id]
    assert one.why == "The last answer cites one paper."


def test_a_number_the_answer_did_not_show_is_asked_back():
    reading = read_references("summarize [7]", [TWO_CITED])
    assert (reading.unclear, reading.why) == ("[7]", "The last answer shows no source [7].")
    assert [c.paper.id for c in reading.choices] == [C.id, A.id]


@pytest.mark.parametrize("question", ["Summarize it", "Who wrote that paper?", "What data does this one use?", "What is the paper's main result?"])
def test_a_single_paper_reference_after_several_cited_is_asked_back(question):
    reading = read_references(question, [TWO_CITED])
    assert reading.unclear and reading.unclear.casefold() in question.casefold()
    assert [c.paper.id for c in reading.choices] == [C.id, A.id]
    assert reading.why == "The last answer cites 2 papers."


def test_a_single_paper_reference_after_one_cited_is_that_paper():
    assert read_references("Summarize it", [ONE_CITED]) == read_references(f'Summarize "{A.title}"', [])
    assert resolve_references("Who wrote that paper?", [ONE_CITED]) == f'Who wrote "{A.title}"?'


@pytest.mark.parametrize(
    "question",
    [
        "Is it true that bandits need interference?",  # an "it" that points at nothing
        "Which is the paper that introduces sparse heads?",  # a description, not a reference back
        'Summarize "Is It Sparse?"',  # words of a quoted title
        "What is Flat-LoRA?",
    ],
)
def test_what_is_no_reference_to_a_paper_is_left_alone(question):
    reading = read_references(question, [TWO_CITED])
    assert (reading.question, reading.unclear, reading.choices) == (question, "", ())


def test_no_history_or_nothing_shown_leaves_the_follow_up_as_it_is():
    assert read_references("summarize the third one", []).question == "summarize the third one"
    nothing = answer((), [])
    assert read_references("summarize the second one", [nothing]) == read_references("summarize the second one", [])
    # "It" after an answer that cited nothing leans on the topic: joined to the previous question.
    uncited = answer(sources(A, B), [])
    assert not read_references("How does it work?", [uncited]).unclear
    assert resolve_by_rule("How does it work?", [uncited]).endswith("(following up on: Which papers are about bandits?)")


def test_an_answer_that_cited_nothing_offers_what_it_retrieved():
    uncited = answer(sources(A, B), [])
    reading = read_references("summarize the first one", [uncited])
    assert reading.unclear == "the first one" and [c.paper.id for c in reading.choices] == [A.id, B.id]
    assert reading.why == "The last answer cites no paper."


def test_a_declines_closest_papers_are_what_its_ordinals_and_numbers_count():
    assert resolve_references("summarize the second one", [DECLINE]) == f'summarize "{D.title}"'
    assert resolve_references("summarize [3]", [DECLINE]) == f'summarize "{B.title}"'
    reading = read_references("summarize the fourth one", [DECLINE])
    assert reading.why == "The last answer lists 3 papers." and len(reading.choices) == 3


def test_settled_references_are_kept_and_a_choice_fills_the_unclear_one():
    reading = read_references("compare [2] with the third one", [TWO_CITED])
    assert reading.question == f'compare "{B.title}" with the third one' and reading.unclear == "the third one"
    clarification = clarification_of("compare [2] with the third one", TWO_CITED)
    assert clarification.standalone_question == reading.question
    assert with_choice(clarification, reading.choices[1]) == f'compare "{B.title}" with "{A.title}"'


def test_a_reply_naming_a_choice_is_the_question_asked_again_about_it():
    clarification = clarification_of("Summarize it", TWO_CITED)
    assert with_choice(clarification, clarification.choices[0]) == f'Summarize "{C.title}"'
    for reply in ("2", "[2]", "bandits with interference", " Bandits with Interference. "):
        assert resolve_references(reply, [TWO_CITED, clarification]) == f'Summarize "{A.title}"'
    # Words of both titles, or a number not offered, choose nothing.
    both = answer(sources(A, B), [1, 2])
    assert resolve_references("bandits", [both, clarification_of("Summarize it", both)]) == "bandits"
    assert resolve_references("3", [TWO_CITED, clarification]) == "3"
    # The choices are the clarification's listed papers: "the second one" is choice 2.
    assert resolve_references("the second one", [TWO_CITED, clarification]) == f'"{A.title}"'


def test_a_question_with_a_quoted_title_is_not_joined_to_the_previous_one():
    assert resolve_by_rule('Summarize "Is It Sparse?"', [TWO_CITED]) == 'Summarize "Is It Sparse?"'


def test_a_clarification_round_trips_as_json_and_older_answers_load_without_choices():
    clarification = clarification_of("summarize the third one", TWO_CITED)
    assert Answer.model_validate_json(clarification.model_dump_json()) == clarification
    stored = TWO_CITED.model_dump(mode="json")
    del stored["choices"]
    assert Answer.model_validate(stored).choices == ()
