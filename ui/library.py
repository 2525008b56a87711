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
        "Corpus file",
        type=["txt", "jsonl", "gz", "csv", "bib"],
        help="A listing .txt, .jsonl or .jsonl.gz (also BEIR corpus.jsonl), .csv with a header, or .bib with abstracts",
        # The browser refuses a larger file before sending it; Streamlit's server refuses above
        # its own server.maxUploadSize whatever this says, so the smaller is the true limit.
        max_upload_size=min(limits.max_upload_mb, st.get_option("server.maxUploadSize")),
        key="library-upload",
    )
    skip_invalid = st.checkbox(
        "Skip invalid records", help="Load the valid records and list the others", key="library-skip-invalid"
    )
    if file is not None and st.button("Ingest", type="primary", key="library-ingest"):
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
            f"{escape_markdown(name)}: {report.added} added, {report.updated} updated, "
            f"{report.unchanged} unchanged, {len(report.skipped)} skipped"
        )
        for skipped in report.skipped[:20]:
            st.caption(escape_markdown(str(skipped)))


# --- the table --------------------------------------------------------------------------------


@st.cache_resource(max_entries=2, show_spinner="Reading the papers…")
def rows_of(_index: Index, location: str, generation: str | None) -> list[LibraryRow]:
    # The paper table is read whole once per generation of the store (2 s at 14k papers), and
    # the rows are shared by the sessions, not copied at each rerun as st.cache_data would.
    return library_rows(_index.papers.values())


def browse(index: Index, admitted: set[str] | None) -> None:
    """The papers the filters admit, as a sortable table; picking a row opens its paper."""
    rows = rows_of(index, index.location, index.generation)
    words = st.text_input("Narrow by title or author", key="library-narrow", placeholder="words of a title or a name")
    shown = narrowed(rows, words, admitted)
    if words.strip():
        st.caption(f"{counted(len(shown), 'paper')} with “{escape_markdown(words.strip())}” in the title or authors")
    ids = [r.paper_id for r in shown]
    if st.session_state.get(SHOWN) != ids:
        # A selection is a row number: in another list it would be another paper.
        st.session_state[TABLE] = NO_SELECTION
        st.session_state[SHOWN] = ids
    st.dataframe(
        pa.table(
            {
                "Title": [r.title for r in shown],
                "Authors": [r.authors for r in shown],
                "Category": [r.category for r in shown],
                "Venue": [r.venue for r in shown],
                "Year": pa.array([r.year for r in shown], pa.int32()),
            }
        ),
        # In all 855 px, which the main pane (940 px at 1400 px beside the sidebar) holds; the
        # columns grow to fill a wider one. A cell's text wraps, which Streamlit does only in rows
        # taller than 4rem, to four lines: some 55 characters a line of a title, so the longest
        # of the 13,687 in the scale corpus (189) is read whole.
        column_config={
            "Title": st.column_config.TextColumn(width=380),
            "Authors": st.column_config.TextColumn(width=200),
            "Category": st.column_config.TextColumn(width=150),
            "Venue": st.column_config.TextColumn(width=75),
            "Year": st.column_config.NumberColumn(width=50, format="%d"),
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
        st.caption("Click a paper to open it; a column's header sorts by it.")
        narrow = f" with “{words.strip()}”" if words.strip() else ""
        offer_table(ids, f"the Library's list{narrow}", key="library-as-table")


def offer_table(ids: list[str], source: str, *, key: str) -> None:
    """A button that makes the papers shown the rows of a research table (the first `MAX_ROWS`)."""
    taken = ids[:MAX_ROWS]
    label = f"Open as a table ({len(taken)} papers{'' if len(ids) <= MAX_ROWS else f' of {len(ids)}'})"
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
        with st.spinner("Searching the papers…"):
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
        st.info("No paper matches: the filters leave none.")
        return
    with st.container(horizontal=True, vertical_alignment="center"):
        if note := lacking_note(matches, language_of(query)):
            st.caption(f":orange[{escape_markdown(note)}]")
        else:
            st.caption(f"The {counted(len(matches), 'paper')} that match “{escape_markdown(query)}” best, best first")
        offer_table([m.source.paper.id for m in matches], f"the Library's search for “{query}”", key="library-results-as-table")
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
        st.caption(f"{relevance_markdown(match)} · score {match.source.score:.2f}")
        if match.sentence:
            st.markdown(marked(match.sentence, colour="gray" if match.weak else "orange"))
        st.button("Open", key=f"library-open-{number}", on_click=open_paper, args=(paper.id,))


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
            if st.button("Ask about this paper", key="library-ask", icon=":material/chat:", type="primary"):
                close_paper()  # back on the Library, the list, not this paper again
                # As the chat's own summary buttons ask it.
                ask_in_chat(Request(f"Summarize “{paper.display_title}”", summary_of=paper.id))
            if linked:
                st.link_button("Open the paper", paper.url, icon=":material/open_in_new:")
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
                "Remove",
                key="library-remove",
                icon=":material/delete:",
                help="Remove it from the index (asks first)",
                on_click=ask_to_remove,
                args=(paper.id,),
            )
            if st.button("Close", key="library-close", icon=":material/close:", on_click=close_paper):
                st.rerun()
        if st.session_state.get(CONFIRM) == paper.id:
            removal(index, paper.id, paper.display_title)
        if paper.url and not linked:  # not a web address: shown, never a link
            st.caption(escape_markdown(paper.url))
        st.markdown("**Abstract**")
        st.markdown(to_markdown(paper.abstract))
        st.markdown("**BibTeX**")
        st.code(entry, language="latex")


def removal(index: Index, paper_id: str, title: str) -> None:
    """The confirmation a removal waits for; confirmed, the paper leaves the index."""
    st.warning(
        f"Remove “{escape_markdown(title)}” from the index? Everyone using this index loses it; "
        "ingesting its file again brings it back.",
        icon=":material/warning:",
    )
    with st.container(horizontal=True):
        confirmed = st.button("Remove", key="library-remove-confirm", type="primary")
        st.button("Cancel", key="library-remove-cancel", on_click=cancel_removal)
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

    st.title("Library")
    if removed := st.session_state.pop("library-removed", None):
        st.success(f"Removed “{escape_markdown(removed)}” from the index.", icon=":material/delete:")
    total = stats.papers
    st.markdown(
        counted(total, "paper") if admitted is None else f"{len(admitted):,} of {counted(total, 'paper')} match the filters"
    )
    # In the main pane, where the uploader's list of formats is read whole (the sidebar cuts it).
    with st.expander("Add papers", expanded=not total, icon=":material/upload_file:"):
        upload(index)
    if not total:
        st.info(f"The index at {escape_markdown(index.location)} is empty: add a file of papers above.")
    query = st.text_input(
        "Search the papers",
        key="library-query",
        placeholder="a topic, a method or a question; the hybrid ranking lists the best",
    ).strip()
    picked_in_table()
    if OPEN in st.session_state:  # before the table, whose selection closing the paper clears
        show_paper(index, st.session_state[OPEN])
    if query:
        results(assistant, query, filters, k)
    else:
        browse(index, admitted)


library()
