"""PaperChat's Library page: the indexed papers under the chat's filters, listed as a table or,
for a search query, as the hybrid ranking with each paper's best matching sentence; a paper,
opened in a dialog over the list (a click on its row or its result's Open), shows its abstract
and BibTeX, asks the chat about it, or leaves the index; files of papers are added here.

Presentation only: the rows and their narrowing come from `rag.library`, the papers the filters
admit from `Index.matching`, the ranking from `Assistant.search_papers`. Text from the corpus
goes through `escape_markdown` / `to_markdown` wherever Streamlit reads Markdown.

The elements' keys are stable, for tests and a browser: library-query, library-narrow,
library-table, library-hit-N and library-open-N (the Nth result), library-paper (the open paper),
library-ask, library-bibtex, library-remove, library-remove-confirm, library-remove-cancel,
library-close; library-upload, library-skip-invalid and library-ingest under "Add papers".
"""

from __future__ import annotations

import pyarrow as pa
import streamlit as st

from rag import Assistant, Filters, Index, Paper, PaperChatError, PaperMatch, PaperNotFoundError
from rag.answering.papersearch import lacking_note
from rag.answering.research import MAX_ROWS
from rag.corpus.upload import load_upload
from rag.export import bibtex, venue_year
from rag.library import LibraryRow, library_rows, narrowed
from rag.markup import escape_markdown, marked, to_markdown
from rag.text import language_of
from ui.common import (
    Request,
    SentRows,
    ask_in_chat,
    choose_filters,
    counted,
    ingest_with_progress,
    load_assistant,
    open_table,
    relevance_markdown,
    show_byline,
    show_error,
    t,
    title_markdown,
)

OPEN = "library-opened"  # the open paper's id
TABLE = "library-table"  # the table's selection
SHOWN = "library-shown"  # the ids of the papers the table lists, in its row order
CONFIRM = "library-confirm"  # the id of the paper whose removal waits for a confirmation
FOUND = "library-found"  # the last search: what was asked, and the matches
NO_SELECTION = {"selection": {"rows": [], "columns": [], "cells": []}}
ROW_HEIGHT = 72  # pixels: four lines of a cell's text
HEADER_HEIGHT = 38  # pixels: the header row and the borders
ROWS_SHOWN = 10  # the table's height in rows; more scroll inside it


# --- upload -----------------------------------------------------------------------------------


def upload(index: Index) -> None:
    """Add a corpus file; a bad one shows its error (file:line) and changes nothing."""
    limits = index.settings.limits
    file = st.file_uploader(
        t("library.corpus_file"),
        type=["txt", "jsonl", "gz", "csv", "bib"],
        help=t("library.corpus_file_help"),
        # The browser refuses a larger file before sending it; Streamlit's server refuses above
        # its own server.maxUploadSize whatever this says, so the smaller is the true limit.
        max_upload_size=min(limits.max_upload_mb, st.get_option("server.maxUploadSize")),
        key="library-upload",
    )
    skip_invalid = st.checkbox(t("library.skip_invalid"), help=t("library.skip_invalid_help"), key="library-skip-invalid")
    if file is not None and st.button(t("library.ingest"), type="primary", key="library-ingest"):
        try:
            loaded = load_upload(file.name, file.getvalue(), skip_invalid=skip_invalid, limits=limits)
        except PaperChatError as error:
            show_error(error)
            return
        report = ingest_with_progress(index, loaded)
        if report is None:
            return
        st.session_state.ingested = (file.name, report)
        # The count, filters and list were drawn, or are read, before this ingest.
        st.rerun()
    if "ingested" in st.session_state:
        name, report = st.session_state.ingested
        st.success(
            t(
                "library.ingested",
                name=escape_markdown(name),
                added=report.added,
                updated=report.updated,
                unchanged=report.unchanged,
                skipped=len(report.skipped),
            )
        )
        for skipped in report.skipped[:20]:
            st.caption(escape_markdown(str(skipped)))


# --- the table --------------------------------------------------------------------------------


def rows_of(index: Index) -> list[LibraryRow]:
    """The index's papers as the table's rows, with a spinner while they are read."""
    with st.spinner(t("library.reading")):
        return _rows_of(index, index.location, index.generation)


@st.cache_resource(max_entries=2, show_spinner=False)
def _rows_of(_index: Index, location: str, generation: str | None) -> list[LibraryRow]:
    # The paper table is read whole once per generation of the store (2 s at 14k papers), and
    # the rows are shared by the sessions, not copied at each rerun as st.cache_data would.
    return library_rows(_index.papers.values())


def browse(index: Index, admitted: set[str] | None) -> None:
    """The papers the filters admit, as a sortable table; picking a row opens its paper."""
    rows = rows_of(index)
    words = st.text_input(t("library.narrow"), key="library-narrow", placeholder=t("library.narrow_hint"))
    shown = narrowed(rows, words, admitted)
    if words.strip():
        st.caption(t("library.narrowed", papers=counted(len(shown), "paper"), words=escape_markdown(words.strip())))
    ids = [r.paper_id for r in shown]
    if st.session_state.get(SHOWN) != ids:
        # A selection is a row number: in another list it would be another paper.
        st.session_state[TABLE] = NO_SELECTION
        st.session_state[SHOWN] = ids
    title, authors, category, venue, year = (
        t("library.column_title"),
        t("library.column_authors"),
        t("library.column_category"),
        t("library.column_venue"),
        t("library.column_year"),
    )
    st.dataframe(
        pa.table(
            {
                title: [r.title for r in shown],
                authors: [r.authors for r in shown],
                category: [r.category for r in shown],
                venue: [r.venue for r in shown],
                year: pa.array([r.year for r in shown], pa.int32()),
            }
        ),
        # In all 855 px, which the main pane (940 px at 1400 px beside the sidebar) holds; the
        # columns grow to fill a wider one. A cell's text wraps, which Streamlit does only in rows
        # taller than 4rem, to four lines: some 55 characters a line of a title, so the longest
        # of the 13,687 in the scale corpus (189) is read whole.
        column_config={
            title: st.column_config.TextColumn(width=380),
            authors: st.column_config.TextColumn(width=200),
            category: st.column_config.TextColumn(width=150),
            venue: st.column_config.TextColumn(width=75),
            year: st.column_config.NumberColumn(width=50, format="%d"),
        },
        row_height=ROW_HEIGHT,
        height=min(len(shown), ROWS_SHOWN) * ROW_HEIGHT + HEADER_HEIGHT,
        # A click on any cell opens its row's paper, as a click on the row's box does.
        hide_index=True,
        key=TABLE,
        on_select="rerun",
        selection_mode=["single-row", "single-cell"],
        placeholder="",
    )
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(t("library.click_hint"))
        source = t("library.list_narrowed", words=words.strip()) if words.strip() else t("library.list")
        offer_table(ids, source, key="library-as-table")


def offer_table(ids: list[str], source: str, *, key: str) -> None:
    """A button that makes the papers shown the rows of a research table (the first `MAX_ROWS`)."""
    taken = ids[:MAX_ROWS]
    if len(ids) <= MAX_ROWS:
        label = t("open_table.papers", n=len(taken))
    else:
        label = t("open_table.papers_of", n=len(taken), total=len(ids))
    if ids and st.button(label, key=key, icon=":material/table:"):
        open_table(SentRows(source, tuple(taken)))


def picked_in_table() -> None:
    """A row picked in the table opens its paper. The row number is of the list the table showed
    when it was picked, the last run's."""
    state = st.session_state.get(TABLE)
    picked = [*state["selection"]["rows"], *(row for row, _ in state["selection"]["cells"])] if state else []
    shown = st.session_state.get(SHOWN, [])
    if picked and picked[0] < len(shown):
        st.session_state[OPEN] = shown[picked[0]]


# --- search -----------------------------------------------------------------------------------


def search(assistant: Assistant, query: str, filters: Filters, k: int) -> list[PaperMatch]:
    """The ranking for `query`, kept for the reruns that follow (opening a result) until the
    query, the filters, k or the index change."""
    asked = (query, filters, k, assistant.index.generation)
    found = st.session_state.get(FOUND)
    if found is None or found[0] != asked:
        with st.spinner(t("library.searching")):
            found = (asked, assistant.search_papers(query, filters=filters, k=k))
        st.session_state[FOUND] = found
    return found[1]


def results(assistant: Assistant, query: str, filters: Filters, k: int) -> None:
    try:
        matches = search(assistant, query, filters, k)
    except PaperChatError as error:
        show_error(error)
        return
    if not matches:
        st.info(t("library.no_match"))
        return
    with st.container(horizontal=True, vertical_alignment="center"):
        if note := lacking_note(matches, language_of(query)):
            st.caption(f":orange[{escape_markdown(note)}]")
        else:
            st.caption(t("library.best", papers=counted(len(matches), "paper"), query=escape_markdown(query)))
        source = t("library.search_source", query=query)
        offer_table([m.source.paper.id for m in matches], source, key="library-results-as-table")
    for match in matches:
        result(match)


def result(match: PaperMatch) -> None:
    """One result: title, byline, how it meets the query (as the chat's evidence says it) and its
    score, its best sentence highlighted; a weak match is greyed."""
    paper, number = match.source.paper, match.source.number
    with st.container(border=True, key=f"library-hit-{number}"):
        title = title_markdown(paper)
        st.markdown(f"[{number}] :gray[{title}]" if match.weak else f"[{number}] **{title}**")
        byline = " · ".join(x for x in (paper.author_line, venue_year(paper)) if x)
        if byline:
            st.caption(escape_markdown(byline))
        st.caption(f"{relevance_markdown(match)} · {t('library.score', score=f'{match.source.score:.2f}')}")
        if match.sentence:
            st.markdown(marked(match.sentence, colour="gray" if match.weak else "orange"))
        st.button(t("library.open"), key=f"library-open-{number}", on_click=open_paper, args=(paper.id,))


# --- the open paper ---------------------------------------------------------------------------


def open_paper(paper_id: str) -> None:
    st.session_state[OPEN] = paper_id
    st.session_state.pop(CONFIRM, None)


def close_paper() -> None:
    # Drawn before the table, so its selection can still be set in this run.
    st.session_state.pop(OPEN, None)
    st.session_state.pop(CONFIRM, None)
    st.session_state[TABLE] = NO_SELECTION


def ask_to_remove(paper_id: str) -> None:
    st.session_state[CONFIRM] = paper_id


def cancel_removal() -> None:
    st.session_state.pop(CONFIRM, None)


def show_paper(index: Index, paper_id: str) -> None:
    """The open paper, in a dialog over the list: wherever the list is scrolled, the paper opens
    in view at a readable width, and the list keeps its width, scroll and place beneath it."""
    try:
        paper = index.get(paper_id)
    except PaperNotFoundError:  # removed meanwhile, by another session or process
        close_paper()
        return
    # Dismissed (its X, Escape, a click outside), it closes as its Close button does.
    opened = st.dialog(title_markdown(paper), width="medium", icon=":material/article:", on_dismiss=close_paper)
    opened(paper_panel)(index, paper)


def paper_panel(index: Index, paper: Paper) -> None:
    """The paper: byline; ask the chat about it, its link, BibTeX, remove it; abstract with its
    math, BibTeX shown. A dialog's button reruns the dialog alone; st.rerun draws the page anew."""
    with st.container(key="library-paper"):
        show_byline(paper)
        entry = bibtex([paper])
        linked = paper.url.startswith(("https://", "http://"))
        with st.container(horizontal=True):
            if st.button(t("library.ask"), key="library-ask", icon=":material/chat:", type="primary"):
                close_paper()  # back on the Library, the list, not this paper again
                # As the chat's own summary buttons ask it.
                ask_in_chat(Request(f"Summarize “{paper.display_title}”", summary_of=paper.id))
            if linked:
                st.link_button(t("library.open_paper"), paper.url, icon=":material/open_in_new:")
            st.download_button(
                "BibTeX",
                entry,
                file_name="paper.bib",
                mime="application/x-bibtex",
                key="library-bibtex",
                icon=":material/download:",
                on_click="ignore",  # a download changes nothing on the page
            )
            st.button(
                t("library.remove"),
                key="library-remove",
                icon=":material/delete:",
                help=t("library.remove_help"),
                on_click=ask_to_remove,
                args=(paper.id,),
            )
            if st.button(t("library.close"), key="library-close", icon=":material/close:", on_click=close_paper):
                st.rerun()
        if st.session_state.get(CONFIRM) == paper.id:
            removal(index, paper.id, paper.display_title)
        if paper.url and not linked:  # not a web address: shown, never a link
            st.caption(escape_markdown(paper.url))
        st.markdown(f"**{t('library.abstract')}**")
        st.markdown(to_markdown(paper.abstract))
        st.markdown("**BibTeX**")
        st.code(entry, language="latex")


def removal(index: Index, paper_id: str, title: str) -> None:
    """The confirmation a removal waits for; confirmed, the paper leaves the index."""
    st.warning(t("library.remove_sure", title=escape_markdown(title)), icon=":material/warning:")
    with st.container(horizontal=True):
        confirmed = st.button(t("library.remove"), key="library-remove-confirm", type="primary")
        st.button(t("library.cancel"), key="library-remove-cancel", on_click=cancel_removal)
    if not confirmed:
        return
    waiting = st.empty()
    try:
        index.remove([paper_id], waiting=lambda text: waiting.caption(escape_markdown(text)))
    except PaperChatError as error:  # the index busy past the wait, or the store gone
        waiting.empty()
        show_error(error)
        return
    st.session_state["library-removed"] = title
    close_paper()
    # The count and the list are read again from the store as it is now.
    st.rerun()


# --- page -------------------------------------------------------------------------------------


def library() -> None:
    try:
        assistant = load_assistant()
        index = assistant.index
        # Another process or a teammate on the shared server may have written since the last rerun.
        index.refresh()
        stats = index.stats()
        with st.sidebar:
            filters, k = choose_filters(stats, assistant.settings.k)
        admitted = set(index.matching(filters)) if filters.active else None
    except PaperChatError as error:  # no index, or a shared server that went away
        show_error(error)
        st.stop()

    st.title(t("library.title"))
    if removed := st.session_state.pop("library-removed", None):
        st.success(t("library.removed", title=escape_markdown(removed)), icon=":material/delete:")
    total = stats.papers
    st.markdown(
        counted(total, "paper")
        if admitted is None
        else t("library.count_filtered", shown=f"{len(admitted):,}", papers=counted(total, "paper"))
    )
    # In the main pane, where the uploader's list of formats is read whole (the sidebar cuts it).
    with st.expander(t("library.add"), expanded=not total, icon=":material/upload_file:"):
        upload(index)
    if not total:
        st.info(t("library.empty", location=escape_markdown(index.location)))
    query = st.text_input(t("library.search"), key="library-query", placeholder=t("library.search_hint")).strip()
    picked_in_table()
    if OPEN in st.session_state:  # before the table, whose selection closing the paper clears
        show_paper(index, st.session_state[OPEN])
    if query:
        results(assistant, query, filters, k)
    else:
        browse(index, admitted)


library()
