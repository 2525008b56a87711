"""Question analysis without a model: cleaning, type, stated filters, key terms, names."""

from __future__ import annotations

import pytest
from conftest import COMPARED_WITH_BANDITS

from rag.question.analysis import analyze
from rag.question.followup import acceptable_rewrite
from rag.question.kind import clean_question, is_statement
from rag.question.references import with_context
from rag.records import CorpusProfile, QuestionType

PROFILE = CorpusProfile(
    papers=20,
    venues=("ICML 2025", "COLT 2024", "AutoML 2023", "AutoML 2024"),
    authors=("Li Yuan", "Peng Jin", "Joan Serrà", "Gemma Moran"),
    categories=("Theory · Learning Theory", "Deep Learning · Large Language Models"),
    years=(2023, 2024, 2025),
    names={"MoH": "moh", "Flat-LoRA": "flat"},
)


@pytest.mark.parametrize(
    "noisy",
    ["Hi! How does MoH work?", "how does MoH work? ñ é", "注意力机制 how does MoH work?", "hey there, how does MoH work?? thanks!"],
)
def test_greetings_stray_characters_and_other_scripts_do_not_change_the_question(noisy):
    assert clean_question(noisy) == "How does MoH work?"
    analysis = analyze(noisy, PROFILE)
    assert analysis.type == QuestionType.HOW and analysis.named_papers == ("moh",)
    assert [t.text for t in analysis.terms] == ["MoH"]


def test_a_title_that_opens_like_a_greeting_is_not_cut():
    assert clean_question("So you want to learn bandits") == "So you want to learn bandits"
    assert clean_question("Well-posed robust Markov games") == "Well-posed robust Markov games"


def test_a_year_filters_only_a_corpus_that_has_years():
    undated = CorpusProfile(papers=5)
    assert not analyze("Which trials in 2019 tested aspirin?", undated).filters.active
    assert analyze("Which papers in 2024 study bandits?", PROFILE).filters.year_min == 2024


def test_a_question_wholly_in_another_language_is_left_as_it_is():
    assert clean_question("注意力机制是什么？") == "注意力机制是什么？"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Which papers make attention cheaper, and how?", QuestionType.COLLECTION),
        ("List the work on bandits", QuestionType.COLLECTION),
        ("Which AutoML 2023 papers are about neural architecture search?", QuestionType.COLLECTION),
        ("Compare MoH and Flat-LoRA", QuestionType.COMPARISON),
        ("Make a table of the bandit papers", QuestionType.COMPARISON),
        ("Table of the bandit papers: setting and guarantee", QuestionType.COMPARISON),
        # A table of values is a matrix, not a table asked for.
        ("Which paper shows that finding the diagonal sum of a huge table of values is slow?", QuestionType.LOOKUP),
        ("Summarize the MoH paper", QuestionType.SUMMARY),
        ("Why does CLIP struggle with fine details?", QuestionType.HOW),
        ("How much better is MoH-LLaMA3-8B than LLaMA3-8B?", QuestionType.RESULT),
        ("What ImageNet top-1 accuracy does MoH reach?", QuestionType.RESULT),
        ("Is MoH better than multi-head attention?", QuestionType.YES_NO),
        ("What is Flat-LoRA?", QuestionType.LOOKUP),
        ("What work is there on multi-armed or linear bandits?", QuestionType.COLLECTION),
        ("What did experiments show for censor-dependent variational inference?", QuestionType.RESULT),
        ("What kinds of concepts did dictionary learning recover?", QuestionType.RESULT),
        ("What does the convergence proof rely on?", QuestionType.HOW),
    ],
)
def test_the_question_type_comes_from_its_wording(question, kind):
    assert analyze(question, PROFILE).type == kind


def test_a_collection_that_also_asks_how_says_so():
    analysis = analyze("Which papers make attention cheaper, and how?", PROFILE)
    assert analysis.type == QuestionType.COLLECTION and analysis.asks_how


def test_stated_filters_are_read_against_the_corpus_and_taken_out_of_the_search():
    analysis = analyze("Which papers by Yuan at ICML 2025 use attention?", PROFILE)
    assert (analysis.filters.venue, analysis.filters.author) == ("ICML 2025", "Yuan")
    assert analysis.search_text == "Which papers use attention?"
    assert analyze("Papers since 2023 on bandits", PROFILE).filters.year_min == 2023
    assert analyze("bandit papers before 2024", PROFILE).filters.year_max == 2023
    both = analyze("Which AutoML 2023 or AutoML 2024 papers tune hyperparameters?", PROFILE)
    assert both.filters.venue == "AutoML"
    # A name that is a model, not an author: "of Gemma 2B" filters nothing.
    assert analyze("How biased are the outputs of Gemma 2B?", PROFILE).filters.author is None
    assert analyze("Which papers have an author whose family name is Li?", PROFILE).filters.author == "Li"


def test_key_terms_weigh_rare_words_over_everyday_ones():
    analysis = analyze("Which paper uses LoRA adapters for federated learning across many clients?", PROFILE)
    weights = {t.text: t.weight for t in analysis.terms}
    assert weights["federated"] > weights["clients"]
    assert "paper" not in weights and "uses" not in weights and "learning" not in weights
    assert next(t for t in analysis.terms if t.text == "LoRA").entity


def test_alternatives_share_a_group_and_repeated_words_are_required():
    analysis = analyze("Which papers work with biological data such as cells, genes or proteins?", PROFILE)
    groups = {t.text: t.group for t in analysis.terms}
    assert groups["cells"] == groups["genes"] == groups["proteins"] == groups["biological"]
    sanskrit = analyze("Any work on Sanskrit sandhi splitting or word segmentation of Sanskrit texts?", PROFILE)
    by_text = {t.text: t for t in sanskrit.terms}
    assert by_text["sandhi"].group == by_text["segmentation"].group
    assert by_text["Sanskrit"].group != by_text["sandhi"].group


def test_a_hyphenated_compound_is_as_rare_as_its_rarest_part():
    def weight(life_papers: int) -> float:
        profile = CorpusProfile(papers=100, document_frequency={"cycl": 1, "life": life_papers})
        return next(t.weight for t in analyze("Which paper predicts cycle-life?", profile).terms if t.text == "cycle-life")

    # Few papers say "cycle", so few say "cycle-life", however many say "life".
    assert weight(90) == weight(1)


def test_a_category_name_is_one_term_met_as_written():
    analysis = analyze("Which papers sit in the Large Language Models track?", PROFILE)
    assert "Large Language Models" in [t.text for t in analysis.terms if t.entity]


def test_what_a_how_many_question_counts_is_its_measure():
    analysis = analyze("How many long caption-image pairs were generated for FG-CLIP?", PROFILE)
    assert {t.text for t in analysis.measures} == {"long", "caption-image", "pairs"}
    assert not analyze("How much better is MoH-LLaMA3-8B than LLaMA3-8B?", PROFILE).measures


def test_a_models_rewrite_is_kept_only_when_it_is_a_plausible_question():
    assert acceptable_rewrite("What are the results of MoH attention?", "and its results?", [])
    assert not acceptable_rewrite("Conversation:\nUser: hi", "and its results?", [])
    assert not acceptable_rewrite("Assistant: protein variants are optimized", "and its results?", [])
    assert not acceptable_rewrite("word " * 80, "and its results?", [])
    assert not acceptable_rewrite("", "and its results?", [])


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("0-dimensional biomaterials lack inductive properties.", True),
        ("Multi-armed Bandits with Interference", True),
        ("How does MoH work?", False),
        ("MoH: how does it work", False),
        ("papers on bandits", False),
        ("Summarize MoH", False),
    ],
)
def test_a_claim_or_a_title_is_a_statement_not_a_question(text, statement):
    assert is_statement(text) == statement


@pytest.mark.parametrize(
    "follow_up", ["what about its results?", "How does it work?", "and their limits?", "How does this compare to the bandits work?"]
)
def test_the_words_joining_a_follow_up_to_its_question_are_never_key_terms(follow_up):
    analysis = analyze(with_context(follow_up, "How does MoH work?"), PROFILE)
    assert not {w.casefold() for t in analysis.terms for w in t.text.split()} & {"following", "up", "on"}
    # What it is about comes from both; what it asks, from its own words.
    assert analysis.named_papers == ("moh",) and "MoH" in [t.text for t in analysis.terms]
    assert analysis.cleaned == clean_question(follow_up)


@pytest.mark.parametrize(
    "follow_up",
    COMPARED_WITH_BANDITS,
)
def test_a_follow_up_comparing_what_it_leans_on_with_a_topic_takes_either_side(follow_up):
    analysis = analyze(with_context(follow_up, "How does MoH work?"), PROFILE)
    moh = next(t for t in analysis.terms if t.text == "MoH")
    bandits = next(t for t in analysis.terms if t.text.casefold().startswith("bandit"))
    # Alternatives: a paper about MoH or one about bandits meets the question, neither is missing.
    assert moh.group == bandits.group and moh.run != bandits.run


def test_a_follow_up_comparing_what_it_leans_on_with_a_named_paper_names_both():
    flat = analyze(with_context("How does this compare to Flat-LoRA?", "How does MoH work?"), PROFILE)
    assert flat.type == QuestionType.COMPARISON and flat.named_papers == ("moh", "flat")
