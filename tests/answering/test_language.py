"""An answer's own words in its question's language: English in prompts/, Chinese in
prompts/zh/, one entry per language for every text an answer says (`rag.models.prompts`)."""

from __future__ import annotations

import re

from conftest import ROOT

from rag.answering.answerability import grade_label
from rag.answering.forms.decline import decline_text, partial_note
from rag.models.prompts import PROMPTS_DIR, listed, load_prompt
from rag.records import Answerability, Coverage, Grade
from rag.text import language_of

PLACEHOLDER = re.compile(r"\{(\w+)\}")
# A text loaded in the answer's language: load_prompt("name", language=...).
IN_A_LANGUAGE = re.compile(r'load_prompt\(\s*(?:f"grade_\{[^}]*\}"|"(\w+)")\s*,\s*language=')


def test_every_text_an_answer_says_has_a_chinese_entry_with_the_same_blanks():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "rag").rglob("*.py"))
    names = {m.group(1) for m in IN_A_LANGUAGE.finditer(source) if m.group(1)} | {f"grade_{g.name.lower()}" for g in Grade}
    assert {"best_match", "not_covered", "unclear", "partly_covered", "search_lacking"} <= names
    for name in names:
        english, chinese = load_prompt(name), load_prompt(name, language="zh")
        assert set(PLACEHOLDER.findall(english)) == set(PLACEHOLDER.findall(chinese)), name
        assert not re.search(r"[A-Za-z]{4,}", PLACEHOLDER.sub("", chinese).replace("PaperChat", "")), f"{name} is English"
    # Nothing in prompts/zh/ that English lacks.
    assert {p.stem for p in (PROMPTS_DIR / "zh").glob("*.md")} <= {p.stem for p in PROMPTS_DIR.glob("*.md")}


def test_the_language_is_the_question_s_and_japanese_or_korean_is_answered_in_english():
    assert language_of("MoH 的注意力头是怎么选的？") == "zh"
    assert language_of("Which paper uses 张伟's data?") == "en"
    assert language_of("アテンションヘッドの選び方") == "en" and language_of("어텐션 헤드") == "en"


def test_a_decline_and_a_best_match_speak_chinese_with_chinese_listings():
    missing = Answerability(coverage=Coverage.NOT_COVERED, missing=("MoH", "LoRA", "CLIP"))
    assert decline_text(missing, language="zh") == (
        "已索引的论文没有回答这个问题：没有摘要提到“MoH”、“LoRA”或“CLIP”。可以换个说法、放宽筛选条件，或导入这个主题的论文。"
    )
    assert decline_text(missing).startswith(
        "The indexed papers do not answer this: no abstract mentions “MoH”, “LoRA” or “CLIP”."
    )
    assert (
        partial_note(Answerability(coverage=Coverage.PARTLY, missing=("ImageNet",)), language="zh") == "摘要中没有：“ImageNet”。"
    )
    assert grade_label(Grade.BEST_MATCH, "zh").startswith("最接近") and grade_label(Grade.BEST_MATCH).startswith("best match")
    assert listed(["a", "b"], "zh") == "“a”或“b”" and listed(["a", "b", "c"]) == "“a”, “b” or “c”"


def test_the_app_s_catalogue_has_every_key_it_uses_in_both_languages_with_the_same_blanks():
    from rag.models.prompts import catalogue

    english, chinese = catalogue("en"), catalogue("zh")
    assert english.keys() == chinese.keys()
    for key, text in english.items():
        assert set(PLACEHOLDER.findall(text)) == set(PLACEHOLDER.findall(chinese[key])), key
    code = "\n".join(p.read_text(encoding="utf-8") for folder in ("rag", "ui") for p in (ROOT / folder).rglob("*.py"))
    # Keys are dotted ("chat.ask"); f"grade.{...}" is each grade's.
    used = set(re.findall(r"""\b(?:t|say)\(\s*f?["']([a-z_]+\.[\w.]*)""", code))
    assert "grade." in used and {"nav.chat", "chat.ask", "conversations.new", "terminal.sources"} <= used
    used = (used - {"grade."}) | {f"grade.{g.name.lower()}" for g in Grade}
    assert used <= english.keys(), sorted(used - english.keys())


def test_a_research_tables_marks_and_row_source_are_in_the_readers_language_and_its_quotes_in_english():
    from rag.answering.research import cell_text, rows_source
    from rag.records import Filters, ResearchCell

    closest = ResearchCell(quote="We use 50% of the heads.", covered=True, sure=False)
    assert cell_text(closest, 2) == "(closest sentence) “We use 50% of the heads.” [2]"
    assert cell_text(closest, 2, language="zh") == "（最接近的句子）“We use 50% of the heads.” [2]"
    assert cell_text(ResearchCell(), language="zh") == "摘要中未提及"
    assert rows_source(picked=3) == "3 papers picked by hand" and rows_source(picked=3, language="zh") == "手动挑选的 3 篇论文"
    scoped = rows_source("bandits", filters=Filters(venue="ICML"), language="zh")
    assert scoped.startswith("“bandits”：") and "ICML" in scoped
