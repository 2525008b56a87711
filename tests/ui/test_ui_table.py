"""The Table page, driven headless with AppTest over the bundled corpus."""

from __future__ import annotations

import pytest
from conftest import ask

from rag.answering.research import NOT_IN_ABSTRACT, PRESET

pytestmark = pytest.mark.slow

CODE = "Which papers say their code is available?"


def build(at, query: str = CODE, columns: str = "Is the code released?\nsample size"):
    at.switch_page("table.py").run()
    at.text_input(key="table-query").input(query)
    at.text_area(key="table-columns").input(columns)
    at.button(key="table-build").click().run()
    assert not at.exception, at.exception
    return at


def test_the_table_page_builds_a_cited_cell_per_paper_and_question_and_exports_it(open_app):
    at = open_app()
    at.switch_page("table.py").run()
    assert not at.exception and at.title[0].value == "Table"
    assert at.text_area(key="table-columns").value.splitlines() == list(PRESET)

    build(at)
    assert not at.warning, at.warning[0].value
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["Paper", "Is the code released?", "sample size"]
    assert len(frame) == 5
    assert all("available" in c and c.endswith(f"[{n}]") for n, c in enumerate(frame["Is the code released?"], 1))
    assert set(frame["sample size"]) == {NOT_IN_ABSTRACT}
    assert [b.proto.label for b in at.get("download_button")] == ["CSV", "Markdown", "BibTeX"]

    # The table stays for the session: another page and back finds it.
    at.switch_page("library.py").run()
    at.switch_page("table.py").run()
    assert len(at.dataframe[0].value) == 5


def test_a_column_is_added_removed_and_filtered_by(open_app):
    at = build(open_app())
    at.text_input(key="table-new-column").input("What is the main result?")
    at.button(key="FormSubmitter:table-add-Add column").click().run()
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["Paper", "Is the code released?", "sample size", "What is the main result?"]
    # The cells already there were not judged again, and the new ones quote their paper.
    quoted = ("“", "(closest sentence) “")
    assert all(c.startswith(quoted) for c in frame["Is the code released?"])
    assert any(c.startswith(quoted) for c in frame["What is the main result?"])

    at.selectbox(key="table-column").select("sample size")
    at.button(key="table-remove").click().run()
    assert list(at.dataframe[0].value.columns) == ["Paper", "Is the code released?", "What is the main result?"]

    answered = sum(c != NOT_IN_ABSTRACT for c in at.dataframe[0].value["What is the main result?"])
    at.selectbox(key="table-only").select("What is the main result?").run()
    assert len(at.dataframe[0].value) == answered < 5
    assert NOT_IN_ABSTRACT not in set(at.dataframe[0].value["What is the main result?"])


def test_the_table_is_saved_with_the_conversation_and_a_reload_shows_it(open_app):
    at = ask(open_app(), CODE)
    conversation = at.query_params["c"]
    build(at, columns="Is the code released?")
    # Kept with the conversation the chat had open, whose URL the page keeps.
    assert at.query_params["c"] == conversation

    reloaded = open_app(query={"c": conversation})
    reloaded.switch_page("table.py").run()
    assert not reloaded.exception
    frame = reloaded.dataframe[0].value
    assert len(frame) == 5 and list(frame.columns) == ["Paper", "Is the code released?"]
    assert reloaded.text_area(key="table-columns").value == "Is the code released?"
    assert f"“{CODE}”, the papers its collection answer lists" in " ".join(c.value for c in reloaded.caption)
    # And the chat still has its turn.
    reloaded.switch_page("chat.py").run()
    assert reloaded.chat_message and CODE in reloaded.chat_message[0].markdown[0].value


def test_a_table_with_no_conversation_open_starts_one_and_says_so(open_app):
    at = build(open_app())
    assert at.query_params["c"]
    # Not silently (issue 36): a toast names the conversation it was saved as.
    [toast] = at.toast
    assert toast.value.startswith("Saved as a new conversation, “Table: ")
    at.switch_page("chat.py").run()
    assert not at.exception and not at.chat_message
    assert any("Table: “Which papers say their code" in b.label for b in at.button)


def test_rows_come_from_the_filters_or_are_picked_by_hand(open_app):
    at = open_app()
    at.switch_page("table.py").run()
    at.radio(key="table-rows").set_value("papers under the filters").run()
    at.text_area(key="table-columns").input("What is the main result?")
    at.button(key="table-build").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 20

    at.radio(key="table-rows").set_value("papers picked by hand").run()
    chooser = at.multiselect(key="table-picked")
    assert "MoH: Multi-Head Attention as Mixture-of-Head Attention" in chooser.options  # listed by title
    chooser.select("site_85ad8ae8b1").select("site_89d4f71bac").run()
    at.button(key="table-build").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 2
    assert "2 papers picked by hand" in " ".join(c.value for c in at.caption)
    assert at.subheader[0].value == "2 papers × 1 column"
    # One paper is "1 paper", not "1 papers" (issue 36).
    at.multiselect(key="table-picked").unselect("site_89d4f71bac").run()
    at.button(key="table-build").click().run()
    assert at.subheader[0].value == "1 paper × 1 column"


def test_a_collection_answer_opens_as_a_table_of_its_papers(open_app):
    at = ask(open_app(), CODE)
    at.button(key="open-table-0").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Table"
    assert at.radio(key="table-rows").value == f"“{CODE}”, the papers the chat's answer lists"
    at.text_area(key="table-columns").input("Is the code released?\nsample size\nWhat is the main result?")
    at.button(key="table-build").click().run()
    frame = at.dataframe[0].value
    assert frame.shape == (5, 4)


def test_a_column_asked_in_the_chat_is_answered_there_of_the_table_papers(open_app):
    at = build(open_app(), columns="What is the main result?")
    at.button(key="table-ask").click().run()
    assert not at.exception, at.exception
    assert at.chat_message, "the chat answered"
    question = at.chat_message[0].markdown[0].value
    assert question.startswith("What is the main result? Papers: ")
    answer = at.chat_message[1]
    assert "[1]" in " ".join(m.value for m in answer.markdown)
