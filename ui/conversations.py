"""The chat's saved conversations (`rag.conversations`): which one is open, saving each answered
turn, and the sidebar's list to open, rename and delete them.

The open conversation's id is in the URL (`?c=<id>`), so a reload or a bookmark reopens it. The
session keeps the turns (`history`) and the id they belong to (`conversation`); the turns are
read from the file only when the URL names another conversation than the session's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import streamlit as st

from rag import Answer, ConversationStore, PaperChatError, Settings
from rag.conversations import ConversationSummary, row_dates, row_titles
from rag.markup import escape_markdown
from ui.common import show_error, t

PARAM = "c"
# More rows than this scroll in a box of their own, so the filters below stay in reach.
SHOWN = 8


def current_history(settings: Settings) -> list[Answer]:
    """The open conversation's turns: the chat draws them, appends to them and asks follow-ups
    with them. A new session, or a URL naming another conversation, reads them from its file."""
    state = st.session_state
    wanted = st.query_params.get(PARAM)
    if "history" in state and wanted in (None, state.get("conversation")):
        if wanted is None and state.get("conversation"):
            # Another page of the app was open meanwhile, and the URL lost the id: put it back.
            st.query_params[PARAM] = state.conversation
        return state.history
    state.history, state.conversation = [], None
    if wanted:
        try:
            opened = ConversationStore(settings.conversations_dir).load(wanted)
        except PaperChatError as error:
            show_error(error)
            del st.query_params[PARAM]
        else:
            state.history, state.conversation = list(opened.turns), opened.id
    return state.history


def save_turn(settings: Settings, answer: Answer) -> None:
    """Save `answer`, just answered, as the open conversation's next turn; the first question
    starts a saved conversation, and the URL names it from then on."""
    try:
        saved = ConversationStore(settings.conversations_dir).add_turn(answer, to=st.session_state.get("conversation"))
    except PaperChatError as error:
        # The chat reruns at once to redraw the answer: the sidebar shows this then.
        st.session_state.conversation_error = error
        return
    st.session_state.conversation = saved.id
    st.query_params[PARAM] = saved.id


def conversations_section(settings: Settings) -> None:
    """The sidebar's Conversations: the saved ones newest first (the open one marked), each
    opened with a click and renamed or deleted from its menu; and, once there is a conversation
    to leave, a new one."""
    store = ConversationStore(settings.conversations_dir)
    st.subheader(t("conversations.title"))
    if st.session_state.get("history"):
        st.button(t("conversations.new"), key="conversation-new", icon=":material/add:", on_click=start_new)
    error = st.session_state.pop("conversation_error", None)
    if error is not None:
        show_error(error)
    listing = store.list()
    if not listing.conversations:
        st.caption(t("conversations.empty"))
    rows = st.container(height=320) if len(listing.conversations) > SHOWN else st.container()
    dates = row_dates(listing.conversations, reader_now())
    current = st.session_state.get("conversation")
    titles = row_titles(listing.conversations, dates, open_id=current)
    with rows:
        for summary, date, title in zip(listing.conversations, dates, titles, strict=True):
            conversation_row(store, summary, date, title, current=summary.id == current)
    for skipped in listing.skipped:
        st.caption(escape_markdown(t("conversations.not_listed", file=skipped, hint=skipped.hint)))


def reader_now() -> datetime:
    """Now in the reader's time zone (the browser's), so the list's dates are theirs; the
    server's where the browser does not say."""
    try:
        return datetime.now(ZoneInfo(st.context.timezone or ""))
    except (ZoneInfoNotFoundError, ValueError):
        return datetime.now().astimezone()


def conversation_row(store: ConversationStore, summary: ConversationSummary, date: str, shown: str, *, current: bool) -> None:
    id = summary.id
    title, more = st.columns([5, 1], vertical_alignment="center")
    questions = t("conversations.one_question") if summary.turns == 1 else t("conversations.questions", n=summary.turns)
    # The date first: a long title is cut at the button's end, and the date tells rows apart.
    date = escape_markdown(date) if current else f":gray[{escape_markdown(date)}]"
    title.button(
        f"{date} {escape_markdown(shown)}",
        key=f"conversation-open-{id}",
        on_click=open_conversation,
        args=(id,),
        type="primary" if current else "tertiary",
        icon=":material/chat:" if current else None,
        width="stretch",
        # The whole title: the button cuts a long one to its width.
        help=t(
            "conversations.row_help",
            title=escape_markdown(summary.title),
            questions=questions,
            when=f"{summary.updated.astimezone(UTC):%Y-%m-%d %H:%M}",
        ),
    )
    # Drawn only while open: a long list would otherwise send four widgets per row on every rerun.
    menu = more.popover(
        "", icon=":material/more_vert:", help=t("conversations.menu"), key=f"conversation-menu-{id}", on_change="rerun"
    )
    if not menu.open:
        return
    with menu:
        st.text_input(t("conversations.title_field"), value=summary.title, key=f"conversation-title-{id}")
        st.button(t("conversations.rename"), key=f"conversation-rename-{id}", on_click=rename, args=(store, id))
        # Deleting cannot be undone: it waits for this box to be ticked.
        sure = st.checkbox(t("conversations.sure"), key=f"conversation-sure-{id}")
        st.button(
            t("conversations.delete"), key=f"conversation-delete-{id}", disabled=not sure, on_click=delete, args=(store, id)
        )


# Callbacks: each runs before the rerun its button causes, so that rerun draws the result.


def start_new() -> None:
    st.session_state.history, st.session_state.conversation = [], None
    st.query_params.pop(PARAM, None)


def open_conversation(id: str) -> None:
    st.query_params[PARAM] = id


def rename(store: ConversationStore, id: str) -> None:
    try:
        store.rename(id, st.session_state[f"conversation-title-{id}"])
    except PaperChatError as error:
        st.session_state.conversation_error = error


def delete(store: ConversationStore, id: str) -> None:
    try:
        store.delete(id)
    except PaperChatError as error:
        st.session_state.conversation_error = error
        return
    if st.session_state.get("conversation") == id:
        start_new()
