"""What the app's pages share: the process's one Assistant, how an error is shown, and how a
page hands the chat a question."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from rag import Assistant, Index, PaperChatError, Settings
from rag.markup import escape_markdown


@st.cache_resource(show_spinner="Loading the index and the embedding model…")
def load_assistant() -> Assistant:
    """Settings, index, embedding model and backend: made once per process, shared by sessions and pages."""
    settings = Settings()
    assistant = Assistant(Index.open(settings), settings)
    assistant.warm_up()
    return assistant


def show_error(error: PaperChatError) -> None:
    hint = f"\n\n{escape_markdown(error.hint)}" if error.hint else ""
    st.error(escape_markdown(error.message) + hint)


@dataclass(frozen=True)
class Request:
    """What to answer next: a typed question, or from an example button a summary of one paper."""

    text: str
    summary_of: str | None = None  # a paper id
    offline: bool = False  # answer from the abstracts alone, after the model failed


def ask_next(request: Request) -> None:
    # A button callback runs before the rerun it causes, so that rerun already knows what to
    # answer and draws no example buttons above the answer.
    st.session_state.pending = request


def ask_in_chat(request: Request) -> None:
    """From another page: go to the chat, which answers `request` first thing."""
    ask_next(request)
    st.switch_page("chat.py")
