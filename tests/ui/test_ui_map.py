"""The Map page, driven headless with AppTest over the bundled corpus."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import plain

from rag.index.store import Index
from rag.settings import Settings

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

    # The bundled papers are few and have categories: the map groups them by category.
    assert saved.by_category and at.selectbox[0].label == "Category"
    # A legend of the groups' colours, each its own: the map's, none alike.
    [dots] = [layer for layer in spec["layer"] if layer["mark"]["type"] == "circle"]
    colour = dots["encoding"]["color"]
    assert colour["legend"]["title"] == "Categories"
    assert colour["scale"] == {"domain": [c.label for c in saved.clusters], "range": [c.colour for c in saved.clusters]}
    assert len(set(colour["scale"]["range"])) == len(saved.clusters)
    # Each group's name is drawn where one of its points is.
    [names] = [t.to_pylist() for t in tables if "name" in t.column_names]
    places = {(x, y, c) for x, y, c in zip(saved.x, saved.y, saved.cluster, strict=True)}
    assert all((n["x"], n["y"], n["cluster"]) in places for n in names)

    [choose] = at.selectbox
    assert choose.options == [f"{c.label} ({c.papers})" for c in saved.clusters]
    first = saved.clusters[0]
    choose.select_index(0).run()
    assert not at.exception
    assert plain(at.subheader[0].value) == first.label
    assert list(at.dataframe[0].value["Paper"]) == [title for _, title in saved.members(first.number)]

    [ask] = [b for b in at.button if b.label == "Ask about this category"]
    ask.click().run()
    assert not at.exception
    assert at.chat_input, "the chat page answers it"
    assert plain(at.chat_message[0].markdown[0].value) == first.question
    assert at.chat_message[1].markdown


def test_an_empty_index_says_there_is_nothing_to_map(open_app, tmp_path, fresh_assistant):
    at = open_map(open_app, data_dir=tmp_path / "empty")
    assert "is empty, so there is nothing to map" in plain(at.info[0].value)
    assert not at.get("vega_lite_chart") and not at.selectbox


def test_the_status_box_of_a_map_being_drawn_is_gone_once_it_is_drawn(open_app, app_index_dir, tmp_path, fresh_assistant):
    # Issue 36: a "The map is drawn" box stayed on the page. A copy of the index without its
    # saved maps makes the page draw one.
    copy = tmp_path / "index"
    shutil.copytree(app_index_dir, copy)
    for path in copy.rglob("maps/*/*.json"):
        path.unlink()
    at = open_map(open_app, data_dir=copy)
    assert at.get("vega_lite_chart")
    assert not at.status, [s.label for s in at.status]


def test_a_chosen_group_opens_as_a_table_of_its_papers(open_app):
    at = open_map(open_app)
    at.selectbox[0].select_index(0).run()
    group = plain(at.subheader[0].value)
    members = list(at.dataframe[0].value["Paper"])
    at.button(key="map-table").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Table"
    assert at.radio(key="table-rows").value == f"the category “{group}” on the map"
    # AppTest reruns the page it was last told to (the map), not the one the app switched to.
    at.switch_page("table.py").run()
    at.text_area(key="table-columns").input("What is the main result?")
    at.button(key="table-build").click().run()
    assert not at.exception, at.exception
    assert [t.rsplit(" [", 1)[0] for t in at.dataframe[0].value["Paper"]] == members
