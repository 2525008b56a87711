"""PaperChat's Table page: the research table. Rows are papers (those a question's collection
answer lists, those the filters let through, those picked by hand, or those a chat answer or a
map cluster sent here); columns are the user's own questions; each cell is the paper's sentence
that answers its column (`rag.answering.research`), cited, or "not in the abstract".

Presentation only: `Assistant.table_papers` chooses the rows, `Assistant.research_table` fills
them a paper at a time (the progress bar follows), and `rag.answering.research` adds, removes and
filters columns. The table is saved with the open conversation (`ConversationStore.save_table`),
so a reload, or the conversation opened later, shows it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from rag import Paper, PaperChatError, Settings
from rag.answering.research import MAX_ROWS, PRESET, cell_text, chat_question, covering, rows_source, with_column, without_column
from rag.conversations import ConversationStore
from rag.export import bibtex, research_csv, research_markdown
from rag.markup import escape_markdown, highlighted
from rag.records import CellGrade, ResearchRow, ResearchTable
from ui.common import (
    TABLE_ROWS,
    TABLE_SENT,
    Request,
    ask_in_chat,
    choose_filters,
    counted,
    language,
    load_assistant,
    show_error,
    t,
)
from ui.conversations import PARAM, current_history

TABLE = "table"  # (ResearchTable, its papers): the table on screen
SHOWN_FOR = "table-conversation"  # the conversation whose saved table TABLE is
_ROW = 130  # px: six lines of a quote
# The ways to choose the rows: the values of the "table-rows" radio (a paper source another page
# sent is one too), shown in the app's language.
QUESTION, FILTERS, BY_HAND = "papers a question lists", "papers under the filters", "papers picked by hand"


# --- the table, kept with the conversation ------------------------------------------------------


def saved_table(settings: Settings) -> tuple[ResearchTable, list[Paper]] | None:
    """The open conversation's table and its papers (those still indexed); None without one."""
    conversation = st.session_state.get("conversation")
    if conversation is None:
        return None
    try:
        table = ConversationStore(settings.conversations_dir).load(conversation).table
    except PaperChatError as error:
        show_error(error)
        return None
    if table is None:
        return None
    papers = load_assistant().index.fetch([r.paper_id for r in table.rows])
    rows = tuple(r for r in table.rows if r.paper_id in papers)
    return table.model_copy(update={"rows": rows}), [papers[r.paper_id] for r in rows]


def keep(settings: Settings, table: ResearchTable, papers: list[Paper]) -> None:
    """Show `table` and save it with the open conversation (one is started for it if none is)."""
    st.session_state[TABLE] = (table, papers)
    try:
        saved = ConversationStore(settings.conversations_dir).save_table(table, to=st.session_state.get("conversation"))
    except PaperChatError as error:
        show_error(error)
        return
    if st.session_state.get("conversation") != saved.id:
        # The chat finds the new conversation empty, as it is; the user is told where it went.
        st.session_state.history, st.session_state.conversation = [], saved.id
        st.toast(t("table.saved_new", title=escape_markdown(saved.title)), icon=":material/save:")
    st.session_state[SHOWN_FOR] = saved.id
    st.query_params[PARAM] = saved.id


def grid(rows: Sequence[ResearchRow], columns: Sequence[str], shown: Sequence[int]) -> dict[str, list[str]]:
    """The table's `shown` rows as the page draws them, numbered as the exports cite them [n]."""
    data = {t("table.paper"): [f"{rows[n].title} [{n + 1}]" for n in shown]}
    data |= {c: [cell_text(rows[n].cells[i], n + 1, language=language()) for n in shown] for i, c in enumerate(columns)}
    return data


def filled(papers: Sequence[Paper], columns: Sequence[str], *, added: str | None = None) -> list[ResearchRow]:
    """`columns` judged for each paper, under a progress bar, the rows shown as they are filled;
    `added` names the one column added to a table."""
    assistant = load_assistant()
    size = {"papers": counted(len(papers), "paper"), "columns": counted(len(columns), "column")}
    starting = t("table.filling_column", column=added, **size) if added else t("table.filling", **size)
    bar = st.progress(0.0, text=starting)
    so_far = st.empty()
    rows = []
    for row in assistant.research_table(papers, columns):
        rows.append(row)
        done = {"done": len(rows), "total": len(papers)}
        bar.progress(
            len(rows) / len(papers), text=t("table.filled_column", column=added, **done) if added else t("table.filled", **done)
        )
        so_far.dataframe(grid(rows, columns, range(len(rows))), hide_index=True)
    bar.empty()
    so_far.empty()
    return rows


# --- choosing the rows --------------------------------------------------------------------------


def choose_rows(settings: Settings) -> tuple[Callable[[], list[Paper]], str] | None:
    """How to fetch the rows the user chose (a question's are retrieved only when the table is
    built), and in words what chose them; None until they are chosen. Papers a chat answer or a
    map cluster sent here are offered first."""
    assistant = load_assistant()
    with st.sidebar:
        filters, _ = choose_filters(assistant.index.stats(), settings.k)
    sent = st.session_state.get(TABLE_ROWS)
    options = ([sent.source] if sent else []) + [QUESTION, FILTERS, BY_HAND]
    ways = {QUESTION: t("table.rows_question"), FILTERS: t("table.rows_filters"), BY_HAND: t("table.rows_by_hand")}
    way = st.radio(
        t("table.rows"), options, horizontal=True, key="table-rows", format_func=lambda o: ways.get(o) or o[:1].upper() + o[1:]
    )
    if sent and way == sent.source:
        papers = list(assistant.index.fetch(sent.paper_ids).values())
        titles = escape_markdown("; ".join(p.display_title for p in papers))
        st.caption(t("table.sent_papers", n=len(papers), titles=titles))
        return (lambda: assistant.table_papers(ids=sent.paper_ids)), sent.source
    if way == QUESTION:
        query = st.text_input(t("table.papers"), key="table-query", placeholder=t("table.papers_hint"))
        if not query.strip():
            return None
        return (lambda: assistant.table_papers(query.strip(), filters=filters)), rows_source(
            query.strip(), filters=filters, language=language()
        )
    if way == FILTERS:
        under = len(assistant.index.matching(filters))
        taken = t("table.takes_first", n=MAX_ROWS) if under > MAX_ROWS else ""
        st.caption(
            escape_markdown(
                t("table.under_filters", n=under, source=rows_source(filters=filters, language=language()), taken=taken)
            )
        )
        return (lambda: assistant.table_papers(filters=filters)), rows_source(filters=filters, language=language())
    papers = assistant.index.papers
    picked = st.multiselect(
        t("table.papers"),
        list(papers),
        format_func=lambda i: papers[i].display_title,
        key="table-picked",
        placeholder=t("table.pick_hint"),
    )
    if not picked:
        return None
    return (lambda: [papers[i] for i in picked]), rows_source(picked=len(picked), language=language())


def build(settings: Settings, fetch: Callable[[], list[Paper]], source: str, columns: list[str]) -> None:
    papers = fetch()
    if not papers:
        st.warning(t("table.no_match"))
        return
    table = ResearchTable(columns=tuple(columns), rows=tuple(filled(papers, columns)), source=source)
    keep(settings, table, papers)


# --- the table on screen ------------------------------------------------------------------------


def show(settings: Settings, table: ResearchTable, papers: list[Paper]) -> None:
    st.subheader(f"{counted(len(table.rows), 'paper')} × {counted(len(table.columns), 'column')}")
    if table.source:
        st.caption(t("table.rows_caption", source=escape_markdown(table.source)))
    only = st.selectbox(
        t("table.show"),
        [None, *table.columns],
        key="table-only",
        format_func=lambda c: t("table.show_all") if c is None else t("table.show_answering", column=c),
    )
    shown_rows = covering(table, only) if only in table.columns else list(range(len(table.rows)))
    picked = st.dataframe(
        grid(table.rows, table.columns, shown_rows),
        # Wide enough for a quote in six lines; more columns than the page holds scroll sideways.
        # The papers' names are not pinned: a pinned column is drawn grey, as if disabled, and on
        # a phone it took 60% of the width, leaving a sliver of one answer column.
        column_config={t("table.paper"): st.column_config.TextColumn(width=200)}
        | {c: st.column_config.TextColumn(width=240 if len(table.columns) > 2 else "large") for c in table.columns},
        hide_index=True,
        key="table-cells",
        row_height=_ROW,
        # Every row in view up to a dozen, then the table scrolls.
        height=min(12, max(1, len(shown_rows))) * _ROW + 40,
        on_select="rerun",
        selection_mode="single-cell",
    )
    covered = sum(c.covered for r in table.rows for c in r.cells)
    sure = sum(c.grade == CellGrade.ANSWERS for r in table.rows for c in r.cells)
    short = sum(c.paraphrase is not None for r in table.rows for c in r.cells)
    said = t("table.said_short", n=short, label=escape_markdown(load_assistant().backend.label)) if short else ""
    st.caption(t("table.cells", covered=covered, total=len(table.rows) * len(table.columns), sure=sure, said=said))
    cells = picked.selection.cells if picked else []
    if cells and cells[0][0] < len(shown_rows):
        position, column = cells[0]
        evidence(table, papers, shown_rows[position], column)
    with st.container(horizontal=True):
        st.download_button(
            "CSV", research_csv(table), file_name="table.csv", mime="text/csv", key="table-csv", icon=":material/download:"
        )
        st.download_button(
            "Markdown",
            research_markdown(table, papers),
            file_name="table.md",
            mime="text/markdown",
            key="table-md",
            icon=":material/download:",
        )
        st.download_button(
            "BibTeX",
            bibtex(papers),
            file_name="table.bib",
            mime="application/x-bibtex",
            key="table-bib",
            icon=":material/download:",
        )
    columns_tools(settings, table, papers)


def evidence(table: ResearchTable, papers: list[Paper], n: int, column: str) -> None:
    """The clicked cell: its verdict and score, and the abstract with the sentence marked."""
    paper = papers[n]
    if column not in table.columns:
        st.markdown(f"**[{n + 1}] {escape_markdown(paper.display_title)}**")
        return
    cell = table.rows[n].cells[table.columns.index(column)]
    with st.container(border=True, key="table-evidence"):
        verdict = {
            CellGrade.ANSWERS: t("table.verdict_answers"),
            CellGrade.CLOSEST: t("table.verdict_closest"),
            CellGrade.NOT_IN_ABSTRACT: t("table.verdict_not_in_abstract"),
        }[cell.grade]
        st.markdown(f"**[{n + 1}] {escape_markdown(paper.display_title)}** · {escape_markdown(column)}")
        st.caption(t("table.score", score=f"{cell.score:.2f}", verdict=verdict))
        if cell.paraphrase:
            st.markdown(t("table.in_short", text=escape_markdown(cell.paraphrase)))
        text, _ = highlighted(paper.abstract, [cell.closest] if cell.closest else [], colour="green" if cell.covered else "gray")
        st.markdown(text)


def columns_tools(settings: Settings, table: ResearchTable, papers: list[Paper]) -> None:
    """Add a column; remove one, or ask it in the chat of the table's papers."""
    add, change = st.columns(2, gap="large")
    with add.form("table-add", border=False, clear_on_submit=True):
        new = st.text_input(t("table.add_column"), key="table-new-column", placeholder=t("table.add_column_hint"))
        if st.form_submit_button(t("table.add"), icon=":material/add:") and new.strip():
            column = " ".join(new.split())
            rows = filled(papers, [column], added=column)
            keep(settings, with_column(table, column, rows), papers)
            st.rerun()
    with change:
        column = st.selectbox(t("table.column"), table.columns, key="table-column")
        with st.container(horizontal=True):
            if st.button(t("table.remove"), key="table-remove", icon=":material/delete:", disabled=len(table.columns) < 2):
                keep(settings, without_column(table, column), papers)
                st.rerun()
            if st.button(t("table.ask"), key="table-ask", icon=":material/chat:"):
                ask_in_chat(Request(chat_question(column, table)))


# --- the page -----------------------------------------------------------------------------------

assistant = load_assistant()
settings = assistant.settings
current_history(settings)  # the conversation the URL names, if any, is the open one
if st.session_state.get(SHOWN_FOR, "") != st.session_state.get("conversation"):
    # A new session (a reload), or another conversation opened: show its table, if it has one.
    st.session_state[SHOWN_FOR] = st.session_state.get("conversation")
    st.session_state.pop(TABLE, None)
    if (found := saved_table(settings)) is not None:
        st.session_state[TABLE] = found
        st.session_state["table-columns"] = "\n".join(found[0].columns)  # to build it again, on other papers

st.title(t("table.title"))
st.caption(t("table.intro"))
# Once there is a table, it comes first and the builder folds away above it, unless another page
# just sent papers to build one of.
sent = st.session_state.get(TABLE_SENT, False)
shown = TABLE in st.session_state
label = t("table.build_sent") if sent else t("table.build_another") if shown else t("table.build_new")
with st.expander(label, expanded=sent or not shown, icon=":material/table:"):
    chosen = choose_rows(settings)
    # The default goes in the session state, not the widget: a widget given both warns on every rerun.
    st.session_state.setdefault("table-columns", "\n".join(PRESET))
    columns_text = st.text_area(t("table.columns"), key="table-columns", height=130)
    columns = [c.strip() for c in columns_text.splitlines() if c.strip()]
    if st.button(t("table.build"), type="primary", icon=":material/table:", key="table-build"):
        if chosen is None or not columns:
            st.warning(t("table.say_which"))
        else:
            try:
                build(settings, *chosen, columns)
                st.session_state.pop(TABLE_SENT, None)
                st.rerun()  # the builder folds, the new table first
            except PaperChatError as error:
                show_error(error)
if TABLE in st.session_state:
    show(settings, *st.session_state[TABLE])
