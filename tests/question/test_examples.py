"""The first screen's example questions, drawn from the corpus."""

from __future__ import annotations

from conftest import PAPERS

from rag.corpus.reading import load_corpus
from rag.question.examples import example_questions
from rag.records import Paper


def test_examples_ask_about_the_biggest_topic_a_named_method_and_summarize_a_short_title():
    papers = [
        Paper(id="moh", title="MoH: Multi-Head Attention as Mixture-of-Head Attention", abstract="."),
        Paper(id="short", title="Bandits Again", abstract="."),
        Paper(id="tiny", title="MoH", abstract="."),
    ]
    asks = example_questions(
        {"Deep Learning · Attention Mechanisms": 5, "Theory · Bandits": 2}, {"MoH": "tiny"}, papers
    )
    assert [a.text for a in asks] == [
        "Which papers work on Attention Mechanisms?",
        "How does MoH work?",
        "Summarize “Bandits Again”",
    ]
    assert [a.paper_id for a in asks] == [None, None, "short"]


def test_examples_of_the_bundled_corpus_and_of_an_empty_one():
    papers = load_corpus(PAPERS).papers
    asks = example_questions({"Deep Learning · Large Language Models": 3}, {"MoH": papers[0].id}, papers)
    assert len(asks) == 3 and asks[2].paper_id in {p.id for p in papers}
    assert example_questions({}, {}, []) == []
    untitled = [Paper(id="x", abstract="An abstract with no title.")]
    assert [a.text for a in example_questions({"Optimization": 1}, {}, untitled)] == ["Which papers work on Optimization?"]
