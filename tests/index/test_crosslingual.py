"""Questions in Chinese over English abstracts (`rag.index.crosslingual`): which texts go
through e5 and the map, and, with the real models, that a Chinese question finds its paper."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rag.errors import ModelNotFoundError
from rag.index.crosslingual import CrossLingualEmbeddings, load_map
from rag.text import CJK, in_cjk, tokenize_terms


class Base:
    """MiniLM's stand-in: records what it was asked to embed."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_documents(self, texts):
        self.seen += texts
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text):
        self.seen.append(text)
        return [1.0, 0.0]


@pytest.fixture
def crosslingual(tmp_path):
    # e5's stand-in gives (0, 1); the map sends e5's first dimension to the second and adds the
    # bias to the first: a CJK text comes out as (bias, 1), normalised.
    mapping = np.array([[0.0, 0.0], [0.0, 1.0], [0.5, 0.0]], dtype=np.float16)
    np.save(tmp_path / "map.npy", mapping)
    base = Base()
    encoded: list[str] = []

    def encode(text: str) -> np.ndarray:
        encoded.append(text)
        return np.array([0.0, 1.0], dtype=np.float32)

    return CrossLingualEmbeddings(base, encode=encode, path=tmp_path / "map.npy"), base, encoded


def test_english_goes_to_the_base_model_and_cjk_through_e5_and_the_map_in_order(crosslingual):
    model, base, encoded = crosslingual
    vectors = model.embed_documents(["MoH routes tokens to heads.", "MoH 的注意力头是怎么选的？", "A paper by 张伟 on bandits."])
    assert base.seen == ["MoH routes tokens to heads.", "A paper by 张伟 on bandits."]
    assert encoded == ["MoH 的注意力头是怎么选的？"]
    assert vectors[0] == vectors[2] == [1.0, 0.0]
    assert vectors[1] == pytest.approx([0.5 / np.hypot(0.5, 1.0), 1.0 / np.hypot(0.5, 1.0)])
    assert model.embed_query("哪篇论文研究注意力头？") == pytest.approx(vectors[1])
    assert model.embed_query("attention heads") == [1.0, 0.0] and len(encoded) == 2


def test_a_missing_map_says_where_and_how_to_restore_it(tmp_path):
    with pytest.raises(ModelNotFoundError, match="e5 to MiniLM is missing") as raised:
        load_map(tmp_path / "nowhere.npy")
    assert "make train-crosslingual" in raised.value.hint


def test_the_word_rules_read_the_latin_names_of_a_mixed_question_and_no_cjk_term():
    assert tokenize_terms("MoH的注意力头是怎么选的？用了LoRA吗") == ["moh", "lora"]
    # As before for a text with no CJK: runs of two or more word characters.
    assert tokenize_terms("Mixture-of-Head attention, top_1 and LLaMA3-8B") == [
        "mixtur",
        "head",
        "attent",
        "top_1",
        "llama3",
        "8b",
    ]
    assert in_cjk("MoH 的注意力头是怎么选的？") and in_cjk("ヘッドの選び方") and in_cjk("어텐션 헤드")
    assert not in_cjk("What does 张伟 propose for bandits?") and not in_cjk("2025") and not in_cjk("")


@pytest.mark.semantic
def test_the_shipped_map_finds_the_paper_a_chinese_question_is_about(seed_index):
    from rag.answering.chain import Assistant

    assistant = Assistant(seed_index, seed_index.settings)
    for question, title in [
        ("有没有让每个词只用一部分注意力头的工作？", "MoH"),
        ("根据汽车网格估算气动阻力", "DragSolver"),
        ("MoH 的注意力头是怎么选的？", "MoH"),
    ]:
        answer = assistant.ask(question)
        assert answer.sources[0].paper.display_title.startswith(title), question
        assert str(answer.grade) == "best match" and answer.citations, question
        # Its own words in Chinese, its quotes in the abstract's English.
        assert "最接近的是" in answer.note and "“" in answer.text, answer.note
    # Nothing of the twenty papers is about a robot vacuum's map of a room.
    declined = assistant.ask("哪篇论文帮扫地机器人给房间建图？")
    assert str(declined.grade) == "not found" and declined.text.startswith("已索引的论文没有回答这个问题")
    # An English question is answered in English words.
    assert not re.search(f"[{CJK}]", assistant.ask("How does MoH choose attention heads?").text)


def test_e5_reorders_a_chinese_question_s_first_papers_and_reads_each_paper_once(crosslingual):
    from rag.records import Paper, Source
    from rag.search.rerank import by_e5

    model, _, _ = crosslingual
    read: list[str] = []

    def passages(texts):
        read.extend(texts)
        # e5's stand-in puts the bandit paper nearest the question (0, 1).
        return np.array([[0.0, 1.0] if "Bandits" in t else [1.0, 0.0] for t in texts], dtype=np.float32)

    model.passages = passages
    papers = [Paper(id=i, title=t, abstract="An abstract.") for i, t in (("a", "Attention"), ("b", "Bandits"), ("c", "Cells"))]
    sources = [Source(number=n, paper=p, score=s) for n, (p, s) in enumerate(zip(papers, (1.0, 0.97, 0.5), strict=True), 1)]
    ranked = by_e5("老虎机", sources, model)
    assert [s.paper.id for s in ranked] == ["b", "a", "c"] and [s.number for s in ranked] == [1, 2, 3]
    by_e5("老虎机有哪些", sources, model)
    assert len(read) == 3, "a paper read for one question is not embedded again for the next"
    # A clear lead in the fusion is not overturned: "c" stays last however e5 reads it.
    assert by_e5("老虎机", [sources[2].model_copy(update={"score": 0.1}), *sources[:2]], model)[-1].paper.id == "c"
