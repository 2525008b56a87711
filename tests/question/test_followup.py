"""Follow-up references read against what the previous answer showed: settled ones become titles,
an unclear one is asked back with the papers it may mean. Hand-made answers, no index."""

from __future__ import annotations

import pytest

from rag.question.followup import (
    listed_papers,
    read_references,
    resolve_by_rule,
    resolve_references,
    stands_alone,
    with_choice,
)
from rag.records import Answer, Citation, CollectionMatch, CorpusProfile, Paper, Source

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
        number=source.number,
        paper_id=p.id,
        title=p.title,
        authors=(),
        citing_sentence=p.abstract,
        support=p.abstract,
        support_score=1.0,
    )


def answer(retrieved: tuple[Source, ...], cited: list[int], **fields) -> Answer:
    """An answer that retrieved `retrieved` and cites the sources numbered `cited`, in that order."""
    by_number = {s.number: s for s in retrieved}
    return Answer(
        question="q",
        standalone_question="Which papers are about bandits?",
        text="...",
        citations=tuple(cite(by_number[n]) for n in cited),
        sources=retrieved,
        backend="extractive",
        **fields,
    )


def clarification_of(question: str, previous: Answer) -> Answer:
    reading = read_references(question, [previous])
    return Answer(
        question=question,
        standalone_question=reading.question,
        text=reading.ask_back,
        citations=(),
        sources=(),
        backend="extractive",
        form="clarify",
        choices=reading.choices,
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


@pytest.mark.parametrize(
    "question", ["Summarize it", "Who wrote that paper?", "What data does this one use?", "What is the paper's main result?"]
)
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


def test_a_declines_closest_papers_are_what_its_ordinals_and_numbers_count_and_each_is_offered_not_taken():
    # They do not answer the last question: a reference to one is said so and offered, never
    # taken silently.
    for question, paper in (("summarize the second one", D), ("summarize [3]", B), ("what about the last paper?", B)):
        reading = read_references(question, [DECLINE])
        assert reading.question == question, "nothing is resolved silently"
        assert reading.offer and [(c.number, c.paper.id) for c in reading.choices] == [(1, paper.id)]
    reading = read_references("summarize the second one", [DECLINE])
    assert reading.unclear == "the second one"
    assert reading.ask_back == (
        f"By “the second one” you mean “{D.title}”, one of the closest papers to the last "
        "question (“Which papers are about bandits?”), which it does not cite. Summarize it anyway?"
    )
    reading = read_references("summarize the fourth one", [DECLINE])
    assert not reading.offer and len(reading.choices) == 3
    assert reading.why == "The last answer cites no paper; it lists 3 closest papers."


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


# Ten papers, cited in order, with authors: what ordinals past six and names are read against.
NAMED = [
    Paper(id=f"n{n}", title=f"Paper Number {n}", abstract=f"Abstract {n}.", authors=authors)
    for n, authors in enumerate(
        [
            ("Li Yuan", "Peng Jin"),
            ("Su Jia", "Nathan Kallus"),
            ("Xilin Chen",),
            ("Guanting Chen", "Yu Pan"),
            ("Joan Serrà",),
            ("Sho Takemori",),
            ("Adam Wierman",),
            ("Ed Chi",),
            ("Wen Wang",),
            ("Yuki Mitsufuji",),
        ],
        1,
    )
]
TEN_CITED = answer(sources(*NAMED), list(range(1, 11)))


@pytest.mark.parametrize(
    ("question", "reference", "position"),
    [
        ("and the seventh one?", "the seventh one", 7),
        ("and the 7th one?", "the 7th one", 7),
        ("what about the seventh paper", "the seventh paper", 7),
        ("and the seventh?", "the seventh", 7),
        ("summarize the tenth one", "the tenth one", 10),
        ("What does the 10th paper propose?", "the 10th paper", 10),
        ("the 3rd one", "the 3rd one", 3),
        ("the 2nd one?", "the 2nd one", 2),
        ("the eighth one", "the eighth one", 8),
        ("and the ninth?", "the ninth", 9),
        ("what about the last one", "the last one", 10),
        ("and the final one?", "the final one", 10),
        ("the final paper", "the final paper", 10),
        ("the second-to-last one", "the second-to-last one", 9),
        ("the penultimate one", "the penultimate one", 9),
    ],
)
def test_ordinals_in_words_and_numerals_up_to_tenth_and_the_last_resolve(question, reference, position):
    reading = read_references(question, [TEN_CITED])
    assert not reading.unclear
    assert reading.question == question.replace(reference, f'"{NAMED[position - 1].title}"')


@pytest.mark.parametrize(
    "question", ["and the seventh one?", "what about the 7th one", "summarize the tenth paper", "and the seventh?"]
)
def test_an_ordinal_past_what_the_last_answer_listed_says_so_and_guesses_nothing(question):
    reading = read_references(question, [TWO_CITED])
    assert reading.question == question and reading.unclear and reading.unclear in question
    assert reading.why == "The last answer cites 2 papers." and [c.paper.id for c in reading.choices] == [C.id, A.id]
    assert not reading.offer


@pytest.mark.parametrize(
    ("question", "paper"),
    [
        ("the one by Yuan", 1),
        ("summarize the one by Kallus", 2),
        ("what about the one by yuan?", 1),
        ("and the one by Li Yuan?", 1),
        ("the paper by Wierman", 7),
        ("What does the work by Serra find?", 5),
        ("summarize the one by Mitsufuji et al.", 10),
    ],
)
def test_the_one_by_an_author_is_the_listed_paper_with_that_name(question, paper):
    reading = read_references(question, [TEN_CITED])
    assert not reading.unclear and f'"{NAMED[paper - 1].title}"' in reading.question
    assert " by " not in reading.question, "the name goes with the reference it is part of"


def test_the_one_by_a_name_several_or_none_of_the_papers_have_is_asked_back():
    several = read_references("what about the one by Chen?", [TEN_CITED])
    assert several.unclear == "the one by Chen" and [c.paper.id for c in several.choices] == [NAMED[2].id, NAMED[3].id]
    assert several.why == "The last answer cites 2 papers by Chen."
    assert with_choice(clarification_of("what about the one by Chen?", TEN_CITED), several.choices[1]) == (
        f'what about "{NAMED[3].title}"?'
    )
    none = read_references("summarize the one by Smith", [TWO_CITED])
    assert none.unclear == "the one by Smith" and [c.paper.id for c in none.choices] == [C.id, A.id]
    assert none.why == "The last answer cites no paper by Smith."
    # "The paper by Smith" describes a paper to search for when no listed one is by Smith.
    assert read_references("What is the paper by Smith about?", [TWO_CITED]) == read_references(
        "What is the paper by Smith about?", []
    )
    assert (
        read_references("Which papers by Chen are about audio?", [TEN_CITED]).question == "Which papers by Chen are about audio?"
    )


def test_what_is_not_an_ordinal_reference_is_left_alone():
    for question in ("What was the first method to use sparse heads?", "Who came in first?", "What is the second moment?"):
        assert read_references(question, [TEN_CITED]) == read_references(question, [])


def test_a_collection_counts_its_further_matches_after_the_papers_it_cites():
    # Cites the first two it lists; five match in all (the rest under "and 3 more").
    matches = tuple(CollectionMatch(number=n, sentence="s", relevance=0.5) for n in range(1, 6))
    collection = answer(sources(*NAMED[:5]), [1, 2], matches=matches, form="collection")
    assert resolve_references("and the fourth one?", [collection]) == f'and "{NAMED[3].title}"?'
    assert resolve_references("summarize the one by Serra", [collection]) == f'summarize "{NAMED[4].title}"'
    past = read_references("and the sixth one?", [collection])
    assert past.unclear and past.why == "The last answer lists 5 papers."


def test_a_yes_to_an_offer_of_one_paper_is_the_question_asked_about_it():
    offer = clarification_of("summarize the second one", DECLINE)
    assert offer.choices and len(offer.choices) == 1
    for reply in ("yes", "Yes please", "ok", "sure!", "1"):
        assert resolve_references(reply, [DECLINE, offer]) == f'summarize "{D.title}"'
    assert resolve_references("summarize it", [DECLINE, offer]) == f'summarize "{D.title}"'
    # A yes to a question with several choices chooses nothing.
    several = clarification_of("summarize the third one", TWO_CITED)
    assert resolve_references("yes", [TWO_CITED, several]) == "yes"


def test_a_bare_ordinal_joined_to_another_is_a_reference_too():
    assert resolve_references("compare the first and the third one", [TEN_CITED]) == (
        f'compare "{NAMED[0].title}" and "{NAMED[2].title}"'
    )
    assert resolve_references("summarize the second and the 4th", [TEN_CITED]) == (
        f'summarize "{NAMED[1].title}" and "{NAMED[3].title}"'
    )
    assert resolve_references("the first and only method", [TEN_CITED]) == "the first and only method"


def test_a_determiner_after_by_is_no_name():
    assert read_references("the one by the same authors", [TEN_CITED]) == read_references("the one by the same authors", [])


def turn(question: str, standalone: str, retrieved: tuple[Source, ...] = (), cited: tuple[int, ...] = ()) -> Answer:
    """An answer whose standalone question was `standalone`, citing nothing unless told."""
    return answer(retrieved, list(cited)).model_copy(update={"question": question, "standalone_question": standalone})


@pytest.mark.parametrize(
    "follow_ups",
    [
        ["How does it work?", "and what are their limits?", "Is that better than the baselines?"],
        ["what about their results?", "How do these scale?"],
        ["Do they need interference?", "What do those assume?", "and its regret?", "How does this compare to ordinal rewards?"],
    ],
)
def test_a_follow_up_to_a_follow_up_is_joined_to_the_last_real_question_once(follow_ups):
    # The first answer cited nothing, so each pronoun leans on the topic rather than on a paper.
    history = [answer(sources(A, B), [])]
    for question in follow_ups:
        standalone = resolve_by_rule(question, history)
        assert standalone == f"{question} (following up on: Which papers are about bandits?)"
        history.append(turn(question, standalone))


def test_a_follow_up_after_a_nested_record_leans_on_the_innermost_real_question():
    # Saved before follow-ups stopped nesting.
    nested = "and its regret? (following up on: How does it work? (following up on: Which papers are about bandits?))"
    assert resolve_by_rule("what about their data?", [turn("and its regret?", nested)]) == (
        "what about their data? (following up on: Which papers are about bandits?)"
    )
    # A rule-resolved or model-rewritten question is a real question: it is the one joined.
    real = turn("summarize the first one", f'summarize "{C.title}"', sources(C), (1,))
    assert resolve_by_rule("and what are their limits?", [real]) == (
        f'and what are their limits? (following up on: summarize "{C.title}")'
    )


# A conversation about the bandit papers (A and B), then a question that names its own subject.
BANDITS = answer(sources(A, B), [1])


@pytest.mark.parametrize(
    "question",
    [
        "Which paper predicts the air resistance of a car from its 3D shape?",
        "is there also a paper on reward models learnt from rankings?",
        "and what about language agents? any paper on those?",
        "ok now the paper on sparse heads, what's new there?",
        "what about the music one?",
        "protein fitness optimization",
        "also, anything on machine translation?",
        # An "its" or "their" after a name the question gives is that name's.
        "How does MoH pick its attention heads?",
        "does QLASS put their code online?",
    ],
)
def test_a_question_that_names_its_own_subject_is_not_joined_to_the_last(question):
    assert stands_alone(question, [BANDITS], CorpusProfile())
    assert resolve_by_rule(question, [BANDITS]) == question


@pytest.mark.parametrize(
    "question",
    [
        "any limitations?",
        "how big is the dataset",
        "what do the authors assume about interference?",
        "does it also work for image generation models?",
        "who wrote it?",
        # No name before the "its"; or one, but "them" still points back.
        "how does its vocabulary compare on Amazon?",
        "I wonder how its regret grows",
        "Does MoH beat them?",
        # "interference" is in the last answer's paper: an aspect of it, not a new topic.
        "and with interference?",
    ],
)
def test_a_question_with_a_reference_or_no_subject_of_its_own_leans_on_the_last(question):
    assert not stands_alone(question, [BANDITS], CorpusProfile())
    # Joined to the last question, or, for "it" after an answer from one paper, that paper's title.
    standalone = resolve_by_rule(question, [BANDITS])
    assert standalone in (f"{question} (following up on: Which papers are about bandits?)", question.replace("it", f'"{A.title}"'))
