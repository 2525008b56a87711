"""PaperChat's Map page: the corpus in two dimensions, each paper a point coloured by its cluster
(or, in a small corpus, its category), each group named at its centre and in a legend. Choosing a
group, by a click on the map or from the list, shows its papers and can ask the chat about it.

Presentation only: `Index.corpus_map` makes the map (`rag.index.corpusmap`) once per ingest and keeps
it, on disk for other processes and in memory for reruns. The chart's data is the points'
places, clusters and titles and nothing more, so 14k papers stay a quick page.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from rag import Index, PaperChatError
from rag.answering.research import MAX_ROWS
from rag.index.maprecords import CorpusMap, MapCluster
from rag.markup import escape_markdown
from ui.common import Request, SentRows, ask_in_chat, counted, load_assistant, open_table, show_error, t

CHOSEN = "map_cluster"  # the chosen cluster's number, the list's session state
CHART = "map_chart"
SHOWN = "map_shown"  # the map the choice was made on (`Index.corpus_map` keeps one per generation)


def load_map(index: Index) -> CorpusMap:
    """The map, with a status box while it is being made (the first time after an ingest), gone
    once the map is there to see."""
    holder = st.empty()
    status = None

    def progress(step: str) -> None:
        nonlocal status
        if status is None:
            status = holder.status(t("map.drawing"), expanded=True)
        status.write(escape_markdown(step) + "…")

    corpus_map = index.corpus_map(progress)
    holder.empty()
    return corpus_map


def kind(corpus_map: CorpusMap) -> str:
    """What a group is called, in the app's language: "category" or "cluster"."""
    return t("map.category") if corpus_map.by_category else t("map.cluster")


def plural(corpus_map: CorpusMap) -> str:
    return t("map.categories") if corpus_map.by_category else t("map.clusters")


def capitalized(word: str) -> str:
    return word[:1].upper() + word[1:]


def chart(corpus_map: CorpusMap, chosen: int | None) -> alt.LayerChart:
    """The points coloured by group, the chosen group's brighter, each group's name at its
    medoid and a legend of their colours; a click on a point chooses its group."""
    # The narrowest types that hold them: the browser gets these columns on every change of choice.
    points = pd.DataFrame(
        {
            "x": np.array(corpus_map.x, dtype=np.float32),
            "y": np.array(corpus_map.y, dtype=np.float32),
            "cluster": np.array(corpus_map.cluster, dtype=np.int8),
            "title": corpus_map.titles,
        }
    )
    names = pd.DataFrame(
        {
            "cluster": [c.number for c in corpus_map.clusters],
            "label": [c.label for c in corpus_map.clusters],
            "name": [c.name for c in corpus_map.clusters],
            "x": [c.x for c in corpus_map.clusters],
            "y": [c.y for c in corpus_map.clusters],
        }
    )
    pick = alt.selection_point(name="pick", fields=["cluster"], on="click")
    position = [alt.X("x:Q", axis=None), alt.Y("y:Q", axis=None)]
    # Points big enough to click among 20 papers, small enough to tell apart among 14k.
    size = min(120, max(8, 2000 / len(points) ** 0.5))
    group = capitalized(kind(corpus_map))
    colours = alt.Scale(domain=[c.label for c in corpus_map.clusters], range=[c.colour for c in corpus_map.clusters])
    # Below the map, in columns: thirty names on its right would take a third of its width.
    # Full colour in the legend, whichever group is chosen (the others' points are faint then).
    legend = alt.Legend(
        title=capitalized(plural(corpus_map)),
        orient="bottom",
        columns=2,
        labelLimit=420,
        symbolType="circle",
        symbolSize=120,
        symbolOpacity=1,
    )
    dots = (
        alt.Chart(points)
        .mark_circle(size=size)
        # The label joins each point in the browser, from the clusters' table: repeated on 14k
        # rows it would be most of the chart's data.
        .transform_lookup(lookup="cluster", from_=alt.LookupData(names, key="cluster", fields=["label"]))
        .encode(
            *position,
            color=alt.Color("label:N", scale=colours, legend=legend),
            opacity=alt.value(0.8)
            if chosen is None
            else alt.condition(alt.datum.cluster == chosen, alt.value(0.9), alt.value(0.12)),
            tooltip=[alt.Tooltip("title:N", title=t("map.paper")), alt.Tooltip("label:N", title=group)],
        )
        .add_params(pick)
    )
    text = alt.Chart(names).encode(*position, text="name:N")
    # Just above its medoid, one of its own points; a white outline under each name keeps it
    # legible over the points.
    style = {"fontSize": 12, "fontWeight": "bold", "dy": -(size**0.5) - 4}
    halo = text.mark_text(**style, stroke="white", strokeWidth=4, strokeJoin="round")
    return alt.layer(dots, halo, text.mark_text(**style)).properties(height=560)


def clicked() -> None:
    """A click on the map chooses the clicked point's cluster in the list."""
    picked = st.session_state[CHART].selection.get("pick") or []
    if picked:
        st.session_state[CHOSEN] = picked[0]["cluster"]


def cluster_panel(corpus_map: CorpusMap, cluster: MapCluster) -> None:
    """The chosen cluster: its name, size and papers, and a question about it for the chat."""
    st.subheader(escape_markdown(cluster.label))
    st.caption(t("map.members", papers=counted(cluster.size, "paper")))
    question = cluster.question
    members = corpus_map.members(cluster.number)
    with st.container(horizontal=True):
        if question is not None and st.button(t("map.ask", kind=kind(corpus_map)), type="primary", icon=":material/chat:"):
            ask_in_chat(Request(question))
        if st.button(t("open_table.papers", n=min(len(members), MAX_ROWS)), icon=":material/table:", key="map-table"):
            ids = tuple(paper_id for paper_id, _ in members[:MAX_ROWS])
            open_table(SentRows(t("map.source", kind=kind(corpus_map), label=cluster.label), ids))
    titles = pd.DataFrame({t("map.paper"): [title for _, title in members]})
    st.dataframe(titles, hide_index=True, width="stretch")


def main() -> None:
    st.title(t("map.title"))
    try:
        index = load_assistant().index
        # Another process, or a teammate on the shared server, may have ingested since.
        index.refresh()
        corpus_map = load_map(index)
    except PaperChatError as error:
        show_error(error)
        st.stop()
    if not corpus_map.clusters:
        st.info(t("map.empty", location=escape_markdown(index.location)))
        return
    by_number = {c.number: c for c in corpus_map.clusters}
    if st.session_state.get(SHOWN) is not corpus_map:
        # The index changed since the cluster was chosen: its number names another cluster now.
        st.session_state.pop(CHOSEN, None)
        st.session_state[SHOWN] = corpus_map
    grouped = t("map.by_category") if corpus_map.by_category else t("map.by_cluster")
    st.caption(
        t(
            "map.caption",
            papers=counted(len(corpus_map.paper_ids), "paper"),
            n=len(by_number),
            groups=plural(corpus_map),
            grouped=grouped,
            kind=kind(corpus_map),
        )
    )
    chosen = st.session_state.get(CHOSEN)
    st.altair_chart(chart(corpus_map, chosen), key=CHART, on_select=clicked, selection_mode="pick")
    number = st.selectbox(
        capitalized(kind(corpus_map)),
        list(by_number),
        format_func=lambda n: f"{by_number[n].label} ({counted(by_number[n].size, 'paper')})",
        index=None,
        placeholder=t("map.choose", kind=kind(corpus_map)),
        key=CHOSEN,
    )
    if number is not None:
        cluster_panel(corpus_map, by_number[number])


main()
