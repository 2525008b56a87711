"""What the app's pages share: the process's one Assistant, how an error and a paper's title,
place and relevance are shown, and how a page hands the chat a question."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import streamlit as st

from rag import Assistant, Filters, Index, IngestReport, LoadResult, Paper, PaperChatError, Settings
from rag.export import venue_year
from rag.markup import escape_markdown, to_markdown
from rag.models.prompts import say
from rag.records import IndexStats, Relevance

ALL = "All"  # the filters' "any" choice: a value in the session state, shown as t("filters.all")
MAX_K = 20
# The filter widgets' keys: the chat and the library draw the same filters, and a choice made
# on one page holds on the other.
_FILTER_KEYS = ("filter-category", "filter-venue", "filter-years", "filter-author", "filter-k")


@st.cache_resource
def app_settings() -> Settings:
    """The one settings object, read once per process."""
    return Settings()


# Set once the process's Assistant is made (st.cache_resource does not say whether it holds one).
_loaded = threading.Event()


def load_assistant() -> Assistant:
    """Settings, index, embedding model and backend: made once per process, shared by sessions and
    pages; a spinner says so in the reader's language while they load (half a second or more).
    Once loaded, no spinner: the pages call this a dozen times a rerun, and each spinner starts a
    timer thread and sends a message to the browser."""
    if _loaded.is_set():
        return _assistant()
    with st.spinner(t("common.loading")):
        assistant = _assistant()
    _loaded.set()
    return assistant


@st.cache_resource(show_spinner=False)
def _assistant() -> Assistant:
    settings = app_settings()
    assistant = Assistant(Index.open(settings), settings)
    assistant.warm_up()
    return assistant


def language() -> str:
    """The app's language: the setting (PAPERCHAT_LANG), or the browser's where it is auto."""
    try:
        chosen = app_settings().language
    except PaperChatError:  # a bad setting: the page that loads the index says which
        chosen = "auto"
    if chosen == "auto":
        chosen = "zh" if (st.context.locale or "").casefold().startswith("zh") else "en"
    return chosen


def t(key: str, **fields: object) -> str:
    """The app's words for `key` in its language (prompts/ui.json, prompts/zh/ui.json)."""
    return say(key, language(), **fields)


def backend_label(name: str, model: str) -> str:
    """What writes the answers, as the app names it: the backend's name and model; the extractive
    backend's model, which is words, in the app's language."""
    if name == "extractive":
        return t("backend.extractive")
    return f"{name} ({model})" if model else name


def show_error(error: PaperChatError) -> None:
    hint = f"\n\n{escape_markdown(error.hint)}" if error.hint else ""
    st.error(escape_markdown(error.message) + hint)


def title_markdown(paper: Paper) -> str:
    """The paper's title with its math rendered (KaTeX), its stars as written (it is often shown in
    bold); an untitled paper's display name."""
    return to_markdown(paper.title, emphasis=False) if paper.title else escape_markdown(paper.display_title)


def placement(paper: Paper) -> str:
    """Where the paper sits: "Deep Learning · Attention Mechanisms — ICML 2025"."""
    return " — ".join(x for x in (paper.category, venue_year(paper)) if x)


def show_byline(paper: Paper) -> None:
    """The paper's authors, then where it sits."""
    st.markdown(escape_markdown(", ".join(paper.authors) or t("common.unknown_authors")))
    if placement(paper):
        st.caption(escape_markdown(placement(paper)))


def counted(n: int, noun: str) -> str:
    """A count of "paper" or "column" in the app's language: "1 paper", "1,200 papers", "3 列"."""
    if noun == "column":
        return t("count.column") if n == 1 else t("count.columns", n=f"{n:,}")
    return t("count.paper") if n == 1 else t("count.papers", n=f"{n:,}")


def relevance_markdown(relevance: Relevance | None) -> str:
    """How a paper meets the question: the words it shares with it and the closeness of its best
    sentence; a weak match says so."""
    if relevance is None:
        return ""
    parts = [t("relevance.similarity", score=f"{relevance.similarity:.2f}")]
    if relevance.matched:
        parts.insert(0, t("relevance.meets", terms=", ".join(relevance.matched)))
    if relevance.lacks and not relevance.weak:
        parts.append(t("relevance.lacks", terms=", ".join(relevance.lacks)))
    text = escape_markdown(" · ".join(parts))
    if relevance.weak:
        return f":gray-badge[{t('relevance.weak')}] :gray[{text}]"
    if relevance.lacks:
        return f":orange-badge[{t('relevance.partial')}] {text}"
    return f":green-badge[{t('relevance.match')}] {text}"


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


TABLE_ROWS = "table-sent"  # SentRows: papers another page sent to the Table page
TABLE_SENT = "table-sent-unbuilt"  # True until a table of them is built


@dataclass(frozen=True)
class SentRows:
    """Papers sent to the Table page as its rows (a chat answer's, a map cluster's), and in words
    where they come from."""

    source: str
    paper_ids: tuple[str, ...]


def open_table(rows: SentRows) -> None:
    """From another page: go to the Table page, with `rows` chosen as its rows."""
    st.session_state[TABLE_ROWS] = rows
    st.session_state[TABLE_SENT] = True
    st.session_state["table-rows"] = rows.source
    st.switch_page("table.py")


def choose_filters(stats: IndexStats, default_k: int) -> tuple[Filters, int]:
    """The filter widgets (drawn where the caller is, the sidebar on the chat and the library);
    returns the filters and how many papers to retrieve."""
    for key in _FILTER_KEYS:
        # Streamlit forgets a widget's value on a page that does not draw it; set again, it is
        # kept as the user's, so the filters survive a visit to another page.
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    st.subheader(t("filters.title"))
    category = st.selectbox(
        t("filters.category"),
        [ALL, *stats.categories],
        format_func=lambda c: t("filters.all") if c == ALL else f"{c} ({stats.categories[c]})",
        key="filter-category",
    )
    venue = ALL
    if stats.venues:
        venue = st.selectbox(
            t("filters.venue"),
            [ALL, *stats.venues],
            format_func=lambda v: t("filters.all") if v == ALL else v,
            key="filter-venue",
        )
    first, last = min(stats.years, default=None), max(stats.years, default=None)
    # Defaults go in the session state, not the widgets: a widget given both warns on every page switch.
    st.session_state.setdefault("filter-k", min(default_k, MAX_K))
    low, high = first, last
    # A slider needs two distinct ends; with one year there is nothing to filter by.
    if first is not None and last is not None and first != last:
        chosen = st.session_state.get("filter-years")
        if chosen is None or not first <= chosen[0] <= chosen[1] <= last:  # first use, or the corpus changed
            st.session_state["filter-years"] = (first, last)
        low, high = st.slider(t("filters.years"), first, last, key="filter-years")
    author = st.text_input(t("filters.author"), placeholder=t("filters.author_hint"), key="filter-author")
    k = st.slider(t("filters.k"), 1, MAX_K, key="filter-k")
    filters = Filters(
        category=None if category == ALL else category,
        venue=None if venue == ALL else venue,
        author=author.strip() or None,
        # The slider's full range means "any year", which includes papers with no year.
        year_min=low if low != first else None,
        year_max=high if high != last else None,
    )
    return filters, k


def ingest_with_progress(index: Index, loaded: LoadResult) -> IngestReport | None:
    """Index `loaded` under a progress bar; None, with the error shown, if the index stayed busy."""
    bar = st.progress(0.0, text=t("common.indexing"))
    try:
        return index.ingest(
            loaded,
            progress=lambda done, total: bar.progress(
                done / total if total else 1.0, text=t("common.indexing_progress", done=done, total=total)
            ),
            waiting=lambda text: bar.progress(0.0, text=escape_markdown(text)),
        )
    except PaperChatError as error:  # another process kept the index busy past the wait
        bar.empty()
        show_error(error)
        return None
