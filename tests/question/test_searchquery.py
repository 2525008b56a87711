"""A model's English search query for a question in Chinese, kept only when plausible."""

from __future__ import annotations

import pytest

from rag.question.searchquery import acceptable_query, written_names

QUESTION = "MoH 的注意力头是怎么选的？"


def test_the_names_and_numbers_a_chinese_question_writes_are_read_in_order():
    assert written_names("MoH 和 Flat-LoRA 在 2024 年的 ViT 上比较如何？") == ("MoH", "Flat-LoRA", "2024", "ViT")
    assert written_names("哪篇论文研究注意力头的选择？") == ()


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("How does MoH select attention heads?", "How does MoH select attention heads?"),
        ("<query>how does moh choose which attention heads to use</query>", "how does moh choose which attention heads to use"),
        ("  MoH attention head selection per token \n", "MoH attention head selection per token"),
    ],
)
def test_an_english_one_line_query_keeping_the_questions_names_is_kept(reply, kept):
    assert acceptable_query(reply, QUESTION) == kept


@pytest.mark.parametrize(
    "reply",
    [
        "MoH 如何选择注意力头？",  # not English: the model echoed the question
        "How does Mixture-of-Head attention select heads?",  # "MoH" dropped: BM25 loses the name
        "How does MoE select attention heads?",  # the name "corrected" into another one
        "Query: how does MoH pick heads\nAnswer: it routes tokens",  # two lines
        "User: how does MoH select attention heads?",  # the prompt leaked
        "How does <b>MoH</b> select heads?",  # a tag inside
        "",
        "2024",  # no words to search
        "MoH " + "attention heads are selected by a router that scores each token " * 5,  # an essay
    ],
)
def test_a_query_that_is_no_plausible_english_search_for_the_question_is_not_kept(reply):
    assert acceptable_query(reply, QUESTION) is None


def test_a_question_with_no_latin_names_needs_none_in_its_query():
    assert acceptable_query("attention head selection", "哪篇论文研究注意力头的选择？") == "attention head selection"
