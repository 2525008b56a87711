"""The Map page, driven headless with AppTest over the bundled corpus."""

from __future__ import annotations

import json

import pytest
from conftest import plain

from rag.settings import Settings
from rag.store import Index

pytestmark = pytest.mark.slow


def open_map(open_app, **kwargs):
    at = open_app(**kwargs)
    at.switch_page("map.py").run()
    assert not at.exception
    assert at.title[0].value == "Map"
    return at


def test_the_map_draws_the_clusters_lists_a_chosen_ones_papers_and_asks_the_chat_about_it(open_app, app_index_dir, embeddings):
    at = open_map(open_app)
    # The map the page drew, as the next process reads it from beside the index.
    saved = Index(Settings(data_dir=app_index_dir), embeddings).corpus_map()
    assert len(saved.paper_ids) == 20

    [chart] = at.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    assert [p["name"] for p in spec["params"]] == ["pick"]  # a click chooses a cluster
    # The points' data is a table of 20 rows in Arrow: the places, the clusters and the titles.
    import pyarrow as pa

    tables = [pa.ipc.open_stream(d.data.data).read_all() for d in chart.proto.datasets]
    [points] = [t for t in tables if t.num_rows == 20]
    assert sorted(points.column_names) == ["cluster", "title", "x", "y"]

    [choose] = at.selectbox
    assert choose.options == [f"{c.label} ({c.papers})" for c in saved.clusters]
    first = saved.clusters[0]
    choose.select_index(0).run()
    assert not at.exception
    assert plain(at.subheader[0].value) == first.label
    assert list(at.dataframe[0].value["Paper"]) == [title for _, title in saved.members(first.number)]

    [ask] = [b for b in at.button if b.label == "Ask about this cluster"]
    ask.click().run()
    assert not at.exception
    assert at.chat_input, "the chat page answers it"
    assert plain(at.chat_message[0].markdown[0].value) == first.question
    assert at.chat_message[1].markdown


def test_an_empty_index_says_there_is_nothing_to_map(open_app, tmp_path, fresh_assistant):
    at = open_map(open_app, data_dir=tmp_path / "empty")
    assert "is empty, so there is nothing to map" in plain(at.info[0].value)
    assert not at.get("vega_lite_chart") and not at.selectbox
