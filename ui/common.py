"""What the app's pages share: the process's one Assistant, and how an error is shown."""

from __future__ import annotations

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
