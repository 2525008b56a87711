"""A Chinese question's English words for the word search (`rag.question.gloss`), and how its
type is read."""

from __future__ import annotations

import pytest

from rag.question.analysis import analyze
from rag.question.gloss import english_gloss
from rag.question.kind import question_type
from rag.records import QuestionType


def test_each_chinese_word_gives_its_first_sense_in_order():
    assert english_gloss("单元之间有溢出效应的老虎机").endswith("slot machine")
    assert english_gloss("根据汽车网格估算气动阻力").split()[-2:] == ["pneumatic", "resistance"]
    # Senses that name a character, not a meaning, are passed over: 吴 is a surname only.
    assert "surname" not in english_gloss("吴的论文")


def test_a_word_the_dictionary_lacks_is_read_by_its_parts_and_latin_is_left_to_the_question():
    assert "data" in english_gloss("删失数据").split()
    assert english_gloss("MoH LoRA 2025") == ""
    assert "MoH" not in english_gloss("MoH 的注意力头是怎么选的？")


def test_the_word_search_reads_the_gloss_and_the_meaning_the_question():
    analysis = analyze("单元之间有溢出效应的老虎机")
    assert analysis.in_cjk and "slot machine" in analysis.search_text
    assert analysis.focus == "单元之间有溢出效应的老虎机"
    assert {"slot", "machine"} <= {t.text.casefold() for t in analysis.terms}
    assert not analyze("bandits with spillover").in_cjk


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("MoH是怎么在推理时让注意力变便宜的？", QuestionType.HOW),
        ("为什么原来的CLIP不擅长细粒度理解？", QuestionType.HOW),
        ("哪些论文用正则项来提升泛化？", QuestionType.COLLECTION),
        ("列出自己造合成训练数据的论文", QuestionType.COLLECTION),
        ("MoH和FG-CLIP有什么区别", QuestionType.COMPARISON),
        ("有没有让每个词只用一部分注意力头的工作？", QuestionType.LOOKUP),
    ],
)
def test_a_chinese_question_s_type_is_read_from_its_words(question, kind):
    assert question_type(question)[0] == kind
