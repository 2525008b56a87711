"""Each answer form in the app, driven with AppTest over the bundled 20 papers, offline."""

from __future__ import annotations

import pytest
from conftest import PAPERS, answer_text, ask, grade_badge, plain, source_labels

from rag.corpus.reading import load_corpus
from rag.records import Filters

pytestmark = pytest.mark.slow


def test_a_question_the_corpus_does_not_answer_is_declined_with_the_closest_papers_apart(open_app):
    reply = ask(open_app(), "Which papers detect bugs in smart contracts?").chat_message[1]
    assert grade_badge(reply) == "not found"
    text = plain(answer_text(reply))
    assert text.startswith("The indexed papers do not answer this") and "[1]" not in text
    assert source_labels(reply) == [], "a decline cites nothing"
    [closest] = [e for e in reply.expander if e.label.startswith("Closest papers")]
    assert "not cited" in closest.label and closest.markdown


def test_a_question_in_other_words_is_the_best_match_under_its_badge(open_app):
    reply = ask(open_app(), "Which paper predicts air resistance of a car from its 3D shape?").chat_message[1]
    assert grade_badge(reply) == "best match"
    [note] = reply.info
    assert "could not confirm" in plain(note.value)
    assert source_labels(reply)[0].startswith("[1] DragSolver")


def test_a_partly_covered_question_says_what_no_abstract_reports(open_app):
    reply = ask(open_app(), "What ImageNet top-1 accuracy does MoH reach?").chat_message[1]
    assert "64.0%" not in answer_text(reply), "no other number in place of the one asked for"
    [note] = reply.info
    assert "No abstract gives a figure for" in plain(note.value) and "ImageNet top-1 accuracy" in plain(note.value)
    assert source_labels(reply)[0].startswith("[1] MoH")


def test_a_how_question_quotes_the_sentence_that_says_how(open_app):
    reply = ask(open_app(), "Hi! How does MoH make attention cheaper?").chat_message[1]
    text = plain(answer_text(reply))
    assert "MoH enables each token to select the appropriate attention heads" in text
    assert "**MoH**: “" in answer_text(reply)  # a quote, attributed to its paper
    caption = plain(next(c.value for c in reply.caption if c.value.startswith("Searched for:")))
    assert "how" in caption and "MoH" in caption


def test_a_collection_lists_every_matching_paper_and_groups_many(open_app):
    reply = ask(open_app(), "Which papers are about bandits?").chat_message[1]
    assert plain(answer_text(reply)).startswith("2 papers match:")
    assert len(source_labels(reply)) == 2

    at = open_app()
    at.sidebar.text_input[0].set_value("Wang")  # an author filter that leaves a handful of papers
    reply = ask(at, "What do these papers propose?").chat_message[1]
    text = plain(answer_text(reply))
    wanted = sum(Filters(author="Wang").matches(p) for p in load_corpus(PAPERS).papers)
    assert text.startswith(f"{wanted} papers match:"), text[:80]
    assert len(source_labels(reply)) == wanted, "each of them answers, with its contribution"

    at = open_app()
    at.sidebar.text_input[0].set_value("Yuan")  # one paper left: still answered, for it
    reply = ask(at, "What do these papers propose?").chat_message[1]
    assert plain(answer_text(reply)).startswith("1 paper matches:")


def test_a_comparison_is_a_table_with_cited_cells_and_downloads(open_app):
    at = ask(open_app(), "Compare MoH and Flat-LoRA")
    reply = at.chat_message[1]
    table = answer_text(reply)
    assert "| Paper | Problem | Method | Data | Reported result |" in table
    assert "[1]" in table and "[2]" in table
    assert [b.label for b in reply.get("download_button")] == ["CSV", "Markdown"]


def test_a_comparison_takes_the_full_width_and_its_downloads_are_named_by_format(open_app):
    at = ask(open_app(), "Compare MoH and Flat-LoRA")
    reply = at.chat_message[1]
    # Nothing beside the table: its evidence follows it.
    assert not reply.columns
    assert "| Paper | Problem | Method | Data | Reported result |" in answer_text(reply)
    assert [plain(label).split(":")[0] for label in source_labels(reply)] == ["[1] MoH", "[2] Flat-LoRA"]
    assert [b.label for b in reply.get("download_button")] == ["CSV", "Markdown"]
    assert any(plain(c.value) == "Download the table:" for c in reply.caption)
