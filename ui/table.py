"""PaperChat's Table page: the research table. Rows are the papers a collection answer to a query
lists; columns are the user's own questions, one a line; each cell is the paper's sentence that
answers its column (`rag.answering.research`), cited, or "not in the abstract".

Presentation only: `Assistant.table_papers` chooses the rows and `Assistant.research_table` fills
them, a paper at a time, which the progress bar follows. The table is kept for the session, so
other pages and reruns find it again.
"""

from __future__ import annotations

import streamlit as st

from rag import PaperChatError
from rag.answering.research import PRESET, cell_text
from rag.export import bibtex, research_csv, research_markdown
from rag.markup import escape_markdown
from rag.records import ResearchTable
from ui.common import load_assistant, show_error

BUILT = "table_built"  # (ResearchTable, its papers), the session's last table


def build(query: str, columns: list[str]) -> None:
    assistant = load_assistant()
    papers = assistant.table_papers(query)
    if not papers:
        st.warning("No paper matches: try other words.")
        return
    bar = st.progress(0.0, text=f"Filling {len(papers)} x {len(columns)} cells…")
    rows = []
    for row in assistant.research_table(papers, columns):
        rows.append(row)
        bar.progress(len(rows) / len(papers), text=f"{len(rows)} of {len(papers)} papers")
    bar.empty()
    st.session_state[BUILT] = (ResearchTable(columns=tuple(columns), rows=tuple(rows)), papers)


st.title("Table")
st.caption("A row per paper, a column per question of yours; each cell quotes the abstract's sentence that answers it.")
with st.form("table-form", border=False):
    query = st.text_input("Papers", key="table-query", placeholder="a topic or a question, e.g. Which papers are about bandits?")
    columns_text = st.text_area("Columns, a question a line", value="\n".join(PRESET), key="table-columns", height=130)
    submitted = st.form_submit_button("Build the table", type="primary", icon=":material/table:")
columns = [c.strip() for c in columns_text.splitlines() if c.strip()]
if submitted:
    if not query.strip() or not columns:
        st.warning("Say which papers (a topic or a question) and at least one column.")
    else:
        try:
            build(query.strip(), columns)
        except PaperChatError as error:
            show_error(error)

if BUILT in st.session_state:
    table, papers = st.session_state[BUILT]
    shown = {"Paper": [f"{p.display_title} [{n}]" for n, p in enumerate(papers, 1)]}
    for i, column in enumerate(table.columns):
        shown[column] = [cell_text(r.cells[i], n) for n, r in enumerate(table.rows, 1)]
    st.dataframe(
        shown,
        column_config={name: st.column_config.TextColumn(width="medium") for name in shown},
        hide_index=True,
        key="table-cells",
        row_height=90,
        # Every row in view up to a dozen, then the table scrolls.
        height=min(12, len(table.rows)) * 90 + 40,
    )
    covered = sum(c.covered for r in table.rows for c in r.cells)
    st.caption(
        f"{len(table.rows)} papers x {len(table.columns)} columns; {covered} cells quote their paper, the rest are "
        "not in the abstract. A column's header sorts by it."
    )
    with st.container(horizontal=True):
        st.download_button("CSV", research_csv(table), file_name="table.csv", mime="text/csv", key="table-csv", icon=":material/download:")
        st.download_button(
            "Markdown", research_markdown(table, papers), file_name="table.md", mime="text/markdown", key="table-md", icon=":material/download:"
        )
        st.download_button(
            "BibTeX", bibtex(papers), file_name="table.bib", mime="application/x-bibtex", key="table-bib", icon=":material/download:"
        )
    with st.expander("Each cell's closest sentence and score"):
        for n, (paper, row) in enumerate(zip(papers, table.rows, strict=True), 1):
            st.markdown(f"**[{n}] {escape_markdown(paper.display_title)}**")
            for column, cell in zip(table.columns, row.cells, strict=True):
                closest = escape_markdown(cell.closest or "")
                st.markdown(f"- {escape_markdown(column)}: {cell.score:.2f} {'✓' if cell.covered else '✗'} “{closest}”")
