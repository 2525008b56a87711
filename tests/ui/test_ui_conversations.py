"""Saved conversations in the app, driven headless with AppTest: each answered question is saved
at once, a reload (the URL's ?c=<id>) reopens the conversation, and the sidebar's list opens,
renames and deletes them, changing the files."""

from __future__ import annotations

import re

import pytest
from conftest import ask, plain, source_labels
from streamlit.testing.v1 import AppTest

from rag.conversations import ConversationStore
from rag.markup import escape_markdown
from rag.settings import Settings

pytestmark = pytest.mark.slow

ATTENTION = "Which papers make attention cheaper, and how?"
BANDITS = "Which papers are about bandits?"


@pytest.fixture
def store(app_index_dir) -> ConversationStore:
    return ConversationStore(Settings(data_dir=app_index_dir).conversations_dir)


def files(store: ConversationStore) -> list[str]:
    return sorted(p.name for p in store.folder.glob("*.json"))


def row(at: AppTest, id: str):
    return at.sidebar.button(key=f"conversation-open-{id}")


def open_menu(at: AppTest, id: str) -> AppTest:
    at.session_state[f"conversation-menu-{id}"] = True
    at.run()
    assert not at.exception
    return at


def test_each_answer_is_saved_at_once_and_a_reload_reopens_the_conversation(open_app, store):
    at = ask(open_app(), ATTENTION)
    [saved] = store.list().conversations
    assert files(store) == [f"{saved.id}.json"]
    assert at.query_params["c"] == saved.id
    assert (saved.title, saved.turns) == (ATTENTION, 1)
    assert row(at, saved.id).proto.type == "primary", "the open conversation is marked"

    # A browser reload: a new session, the same URL.
    again = open_app(query={"c": saved.id})
    assert [m.name for m in again.chat_message] == ["user", "assistant"]
    assert plain(again.chat_message[0].markdown[0].value) == ATTENTION
    assert source_labels(again.chat_message[1])[0].startswith("[1] MoH")
    assert [b.label for b in again.sidebar.download_button] == ["Conversation (Markdown)", "Cited papers (BibTeX)"]
    # The reopened turns are its history: a follow-up is rewritten from them, and saved after them.
    follow_up = ask(again, "summarize the first one").chat_message[3]
    searched = [plain(c.value) for c in follow_up.caption if c.value.startswith("Searched for:")]
    assert len(searched) == 1 and "MoH" in searched[0]
    assert [t.question for t in store.load(saved.id).turns] == [ATTENTION, "summarize the first one"]
    assert len(files(store)) == 1, "a follow-up is a turn of the same conversation"
    assert again.query_params["c"] == saved.id


def test_a_new_conversation_is_saved_apart_and_the_list_reopens_either(open_app, store):
    at = ask(open_app(), ATTENTION)
    first = at.query_params["c"]
    at.sidebar.button(key="conversation-new").click().run()
    assert not at.exception
    assert not at.chat_message and "c" not in at.query_params
    assert "conversation-new" not in [b.key for b in at.sidebar.button], "nothing to leave: no new conversation to start"

    ask(at, BANDITS)
    second = at.query_params["c"]
    assert second != first and len(files(store)) == 2
    listed = [c.id for c in store.list().conversations]
    assert listed == [second, first], "newest first"
    assert [b.key for b in at.sidebar.button if b.key.startswith("conversation-open-")] == [
        f"conversation-open-{second}",
        f"conversation-open-{first}",
    ]
    assert row(at, second).proto.type == "primary" and row(at, first).proto.type == "tertiary"

    row(at, first).click().run()
    assert not at.exception
    assert at.query_params["c"] == first
    assert [plain(m.markdown[0].value) for m in at.chat_message if m.name == "user"] == [ATTENTION]
    assert row(at, first).proto.type == "primary"


def test_rename_and_delete_from_the_menu_change_the_files(open_app, store):
    at = ask(open_app(), ATTENTION)
    id = at.query_params["c"]
    open_menu(at, id)
    at.sidebar.text_input(key=f"conversation-title-{id}").set_value("  *Cheaper*   [attention](javascript:x) ").run()
    at.sidebar.button(key=f"conversation-rename-{id}").click().run()
    assert not at.exception
    title = "*Cheaper* [attention](javascript:x)"
    assert store.load(id).title == title
    assert row(at, id).label.endswith(" " + escape_markdown(title)), "a title is shown as typed, never as markup"

    assert at.sidebar.button(key=f"conversation-delete-{id}").disabled, "deleting waits for its confirmation"
    at.sidebar.checkbox(key=f"conversation-sure-{id}").check().run()
    at.sidebar.button(key=f"conversation-delete-{id}").click().run()
    assert not at.exception
    assert files(store) == []
    # The open conversation was the one deleted: the chat starts afresh.
    assert not at.chat_message and "c" not in at.query_params
    assert not [b for b in at.sidebar.button if b.key.startswith("conversation-open-")]


def test_a_url_naming_no_saved_conversation_says_so_and_starts_afresh(open_app, store):
    for id, said in (("20250101-000000-abcdef", "no such saved conversation"), ("../../secrets", "is not a conversation id")):
        at = open_app(query={"c": id})
        assert not at.exception
        [error] = at.error
        assert said in plain(error.value)
        assert not at.chat_message and "c" not in at.query_params
    assert not store.folder.exists() or files(store) == []


def test_an_unreadable_file_is_named_in_the_list_and_the_others_still_open(open_app, store):
    at = ask(open_app(), ATTENTION)
    good = at.query_params["c"]
    store.folder.joinpath("20250101-000000-abcdef.json").write_text('{"format": 1, "id": "20250101', encoding="utf-8")
    at = open_app(query={"c": good})
    assert [b.key for b in at.sidebar.button if b.key.startswith("conversation-open-")] == [f"conversation-open-{good}"]
    skipped = [plain(c.value) for c in at.sidebar.caption if c.value.startswith("Not listed")]
    assert len(skipped) == 1 and "20250101-000000-abcdef.json" in skipped[0]
    assert [m.name for m in at.chat_message] == ["user", "assistant"]


def test_leaving_for_another_page_keeps_the_conversation_open(open_app, store):
    at = ask(open_app(), ATTENTION)
    id = at.query_params["c"]
    at.switch_page("evaluate.py").run()
    # The browser's URL for another page of the app has no ?c=.
    at.query_params.clear()
    at.switch_page("chat.py").run()
    assert not at.exception
    assert [m.name for m in at.chat_message] == ["user", "assistant"]
    assert at.query_params.get("c") == id
    ask(at, BANDITS)
    assert len(store.load(id).turns) == 2 and len(files(store)) == 1


def test_each_row_shows_its_date_and_one_question_asked_twice_reads_as_two_conversations(open_app, store):
    at = ask(open_app(), ATTENTION)
    first = at.query_params["c"]
    at.sidebar.button(key="conversation-new").click().run()
    ask(at, ATTENTION)
    second = at.query_params["c"]
    labels = {id: plain(row(at, id).label) for id in (first, second)}
    # Asked today: each row leads with the time of its last question, and the two rows of one
    # title read differently.
    time = r"\d\d:\d\d( \(\d\))?"
    assert re.fullmatch(rf":gray\[{time}\] {re.escape(ATTENTION)}", labels[first]), labels[first]
    assert re.fullmatch(rf"{time} {re.escape(ATTENTION)}", labels[second]), "the open one's date is not greyed on its colour"
    assert labels[first].removeprefix(":gray[").replace("]", "", 1) != labels[second]
    assert (row(at, first).proto.type, row(at, second).proto.type) == ("tertiary", "primary")
