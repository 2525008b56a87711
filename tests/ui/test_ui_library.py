"""The Library page, driven headless with AppTest over the bundled 20 papers and the offline
backend: the list, the filters, paper search, an opened paper (in a dialog), asking the chat about
it, removing it, and adding papers. How the table and the dialog look in a browser at 1400 px is
tests/ui/test_browser.py's."""

from __future__ import annotations

import json
import re

import pytest
import streamlit as st
from conftest import PAPERS, library_count, plain, source_labels, uploads, writer_holding
from streamlit.testing.v1 import AppTest

from rag.corpus.reading import load_corpus
from rag.index.store import Index
from rag.settings import Settings

pytestmark = pytest.mark.slow

BANDITS = "Theory · Online Learning and Bandits"
MOH = "MoH: Multi-Head Attention as Mixture-of-Head Attention"
MATS = "MATS: An Audio Language Model under Text-only Supervision"
# A new paper whose text is markup and whose address is a script.
NEW = (
    b'{"id": "n1", "title": "<script>alert(1)</script> **Graph** Sourdough Networks", "authors": ["Ada _Evil_ Baker"], '
    b'"abstract": "See [the demo](javascript:alert(1)) and $x$.", "url": "javascript:alert(1)"}\n'
)


@pytest.fixture
def fresh_assistant():
    """For tests on an index of their own: the process-wide cached Assistant is rebuilt, then dropped."""
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


@pytest.fixture
def library(open_app):
    """The app opened (on the bundled corpus unless told), then switched to the Library page."""

    def start(*args, **env: str) -> AppTest:
        at = open_app(*args, **env)
        at.switch_page("library.py").run()
        assert not at.exception
        assert at.title[0].value == "Library"
        return at

    return start


def titles(at: AppTest) -> list[str]:
    return at.dataframe(key="library-table").value["Title"].tolist()


def pick(at: AppTest, title: str, *, column: str | None = None) -> AppTest:
    """Pick the table's row whose title starts with `title`, as a click on its box does, or on its
    cell in `column`."""
    row = next(i for i, t in enumerate(titles(at)) if t.startswith(title))
    cells = [[row, column]] if column else []
    at.session_state["library-table"] = {"selection": {"rows": [] if column else [row], "columns": [], "cells": cells}}
    at.run()
    assert not at.exception
    return at


def search(at: AppTest, query: str) -> AppTest:
    at.text_input(key="library-query").set_value(query).run()
    assert not at.exception
    return at


def opened(at: AppTest):
    """The open paper's dialog, or None."""
    dialogs = at.get("dialog")
    assert len(dialogs) <= 1
    return dialogs[0] if dialogs else None


def dialog_title(at: AppTest) -> str:
    return opened(at).proto.dialog.title


def hits(at: AppTest) -> list:
    """The search results, best first."""
    return [n for n in at.main if (getattr(n, "key", None) or "").startswith("library-hit-")]


def test_the_library_lists_every_paper_with_its_facets(library):
    at = library()
    assert library_count(at) == "20 papers"
    table = at.dataframe(key="library-table").value
    assert list(table.columns) == ["Title", "Authors", "Category", "Venue", "Year"]
    assert len(table) == 20 and opened(at) is None
    moh = table[table["Title"] == MOH].iloc[0]
    assert moh["Authors"] == "Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN"
    assert (moh["Category"], moh["Venue"], moh["Year"]) == ("Deep Learning · Attention Mechanisms", "ICML 2025", 2025)
    # A title's LaTeX reads as text in a table cell, which shows no math.
    assert "Rich Feature Learning in L-Layer Infinite-Width" in " ".join(table["Title"])


def test_the_table_fits_its_columns_in_the_pane_and_wraps_its_titles(library):
    table = library().dataframe(key="library-table")
    widths = {name: column.get("width") for name, column in json.loads(table.proto.columns).items() if name != "_index"}
    assert list(widths) == ["Title", "Authors", "Category", "Venue", "Year"]
    # The main pane is 940 px wide at 1400 px beside the sidebar (tests/ui/test_browser.py
    # measures it); the row's selection box takes about 35 px.
    assert all(isinstance(w, int) for w in widths.values()) and sum(widths.values()) + 35 <= 940, widths
    assert widths["Title"] == max(widths.values())
    # Streamlit wraps a cell's text only in rows taller than 4rem (64 px).
    assert table.proto.row_height > 64


def test_the_filters_narrow_the_list_and_title_or_author_words_narrow_it_further(library):
    at = library()
    at.sidebar.selectbox(key="filter-category").set_value(BANDITS).run()
    assert library_count(at) == "2 of 20 papers match the filters"
    in_category = sorted(p.title for p in load_corpus(PAPERS).papers if p.category == BANDITS)
    assert sorted(titles(at)) == in_category

    at.text_input(key="library-narrow").set_value("interference").run()
    assert titles(at) == ["Multi-armed Bandits with Interference"]
    assert library_count(at) == "2 of 20 papers match the filters", "the count is the filters'"
    # An author's name narrows as well; words from other fields do not.
    at.text_input(key="library-narrow").set_value("bandits KALLUS").run()
    assert titles(at) == ["Multi-armed Bandits with Interference"]
    at.text_input(key="library-narrow").set_value("attention").run()
    assert titles(at) == []


def test_a_search_ranks_the_papers_with_their_best_sentence_highlighted(library):
    at = search(library(), "mixture of attention heads")
    assert not at.dataframe, "a query lists the ranking, not the table"
    results = hits(at)
    assert len(results) == 5  # the chat's k
    first = results[0]
    assert plain(first.markdown[0].value) == f"[1] **{MOH}**"
    [sentence] = [m.value for m in first.markdown if m.value.startswith(":orange-background[")]
    assert "not all attention heads hold equal significance" in plain(sentence)
    captions = [plain(c.value) for c in first.caption]
    assert captions[0] == "Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN · ICML 2025"
    assert re.fullmatch(r":green-badge\[match\] meets .*heads.* · similarity 0\.\d\d · score \d\.\d\d", captions[1])
    # One meets little of the query and is far from it (MATS, an audio model): marked weak,
    # greyed, wherever the fusion ranks it.
    weak = [r for r in results if r.caption[-1].value.startswith(":gray-badge[weak match] ")]
    assert len(weak) == 1, "one weak match"
    [weak_one] = weak
    assert plain(weak_one.markdown[0].value) == f"[{results.index(weak_one) + 1}] :gray[{MATS}]"
    assert any(m.value.startswith(":gray-background[") for m in weak_one.markdown)
    assert not any(m.value.startswith(":orange-background[") for m in weak_one.markdown)


def test_a_search_keeps_to_the_filters(library):
    at = library()
    at.sidebar.selectbox(key="filter-category").set_value(BANDITS).run()
    search(at, "mixture of attention heads")
    shown = [plain(h.markdown[0].value) for h in hits(at)]
    assert len(shown) == 2 and not any(MOH in s for s in shown)


def test_an_opened_paper_shows_its_abstract_with_math_and_its_bibtex(library):
    at = pick(library(), "Global Convergence")
    panel = opened(at)
    assert panel is not None
    title = dialog_title(at)
    assert title.startswith("Global Convergence") and "$L$" in title and "$\\mu$" in title, "the math is left to KaTeX"
    shown = [m.value for m in panel.markdown]
    assert "Zixiang Chen, Greg Yang, Qingyue Zhao, Quanquan Gu" in shown
    [abstract] = [v for v in shown if v.startswith("Despite deep neural networks")]
    assert "$L$" in abstract
    [code] = panel.code
    assert code.value.startswith("@inproceedings{chen2025global,") and "booktitle = {ICML 2025}" in code.value
    assert panel.get("download_button")[0].proto.label == "BibTeX"
    assert panel.get("link_button")[0].proto.url.startswith("https://icml.cc/")
    assert (
        "Global Convergence and Rich Feature Learning in L-Layer Infinite-Width Neural Networks under μ Parametrization"
        in titles(at)
    )

    at.button(key="library-close").click().run()
    assert opened(at) is None


def test_a_click_on_any_cell_opens_its_paper_in_a_dialog_over_the_full_width_table(library):
    at = pick(library(), "Multi-armed Bandits", column="Venue")
    assert dialog_title(at) == "Multi-armed Bandits with Interference"
    assert opened(at).proto.dialog.is_open
    # Nothing is drawn beside the table: it keeps the page's width.
    assert not at.main.columns and len(titles(at)) == 20

    at.button(key="library-close").click().run()
    assert opened(at) is None
    assert at.session_state["library-table"]["selection"]["cells"] == [], "closed, the click is forgotten"
    pick(at, "MoH")
    assert dialog_title(at) == MOH


def test_a_search_result_opens_its_paper(library):
    at = search(library(), "mixture of attention heads")
    at.button(key="library-open-1").click().run()
    assert not at.exception
    assert dialog_title(at) == MOH
    assert hits(at), "the ranking stays beneath the paper"


def test_an_opened_abstract_shows_its_own_emphasis_not_asterisks(library):
    # Issue 36: "**MATS**" and "**S**trongly" showed with their asterisks.
    at = search(library(), "audio language model trained on text only")
    at.button(key="library-open-1").click().run()
    abstract = next(m.value for m in at.markdown if "we propose **MATS**" in m.value)
    assert "\\*\\*" not in abstract and "**S**trongly" in abstract


def test_ask_about_this_paper_lands_on_the_chat_with_its_summary(library):
    at = search(library(), "mixture of attention heads")
    at.button(key="library-open-1").click().run()
    at.button(key="library-ask").click().run()
    assert not at.exception
    assert at.chat_input, "the chat's page"
    assert [m.name for m in at.chat_message] == ["user", "assistant"]
    assert plain(at.chat_message[0].markdown[0].value) == f"Summarize “{MOH}”"
    assert [plain(label) for label in source_labels(at.chat_message[1])] == [f"[1] {MOH}"]
    # Back on the Library: the list, not the paper asked about.
    at.switch_page("library.py").run()
    assert not at.exception
    assert opened(at) is None and at.title[0].value == "Library"


def test_removing_a_paper_asks_first_then_the_count_drops(library, tmp_path, embeddings, fresh_assistant):
    data_dir = tmp_path / "index"
    Index(Settings(data_dir=data_dir), embeddings).ingest(load_corpus(PAPERS))
    at = pick(library(data_dir, PAPERCHAT_LOCK_TIMEOUT="0"), MOH)
    at.button(key="library-remove").click().run()
    assert plain(opened(at).warning[0].value).startswith(f"Remove “{MOH}” from the index?")
    at.button(key="library-remove-cancel").click().run()
    assert not opened(at).warning and library_count(at) == "20 papers"

    at.button(key="library-remove").click().run()
    with writer_holding(data_dir) as pid:
        at.button(key="library-remove-confirm").click().run()
    [error] = opened(at).error
    assert plain(error.value).startswith(f"index busy: another paperchat process (pid {pid})")
    assert library_count(at) == "20 papers"

    at.button(key="library-remove-confirm").click().run()
    assert not at.exception
    assert plain(at.success[0].value) == f"Removed “{MOH}” from the index."
    assert library_count(at) == "19 papers" and len(titles(at)) == 19 and MOH not in titles(at)
    assert opened(at) is None
    assert MOH not in {p.title for p in Index(Settings(data_dir=data_dir), embeddings).papers.values()}


def test_an_upload_is_ingested_here_listed_and_shown_escaped(library, tmp_path, embeddings, fresh_assistant):
    data_dir = tmp_path / "index"
    Index(Settings(data_dir=data_dir), embeddings).ingest(load_corpus(PAPERS).papers[:3])
    at = library(data_dir)
    assert library_count(at) == "3 papers"
    uploads(at).file_uploader[0].set_value(("new.jsonl", NEW, "application/jsonl")).run()
    next(b for b in uploads(at).button if b.label == "Ingest").click().run()
    assert not at.exception
    assert plain(uploads(at).success[0].value) == "new.jsonl: 1 added, 0 updated, 0 unchanged, 0 skipped"
    title = "<script>alert(1)</script> **Graph** Sourdough Networks"
    assert library_count(at) == "4 papers" and title in titles(at)  # a table cell is text, never markup

    panel = opened(pick(at, "<script>"))
    assert dialog_title(at) == "\\<script\\>alert\\(1\\)\\</script\\> \\*\\*Graph\\*\\* Sourdough Networks"
    shown = [m.value for m in panel.markdown] + [c.value for c in panel.caption]
    assert "Ada \\_Evil\\_ Baker" in shown
    assert "See \\[the demo\\]\\(javascript\\:alert\\(1\\)\\) and $x$." in shown  # math kept for KaTeX
    assert not panel.get("link_button")  # not an http(s) address: shown as text

    first = hits(search(at, "sourdough networks"))[0]
    assert first.markdown[0].value == "[1] **\\<script\\>alert\\(1\\)\\</script\\> \\*\\*Graph\\*\\* Sourdough Networks**"
    assert "Ada \\_Evil\\_ Baker" in first.caption[0].value
    assert not any(m.proto.allow_html for m in at.get("markdown") + at.get("caption"))


def test_the_list_shown_or_the_search_results_open_as_a_research_table(library):
    at = library()
    at.sidebar.selectbox(key="filter-category").set_value(BANDITS).run()
    listed = titles(at)
    at.button(key="library-as-table").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Table"
    assert at.radio(key="table-rows").value == "the Library's list"
    # AppTest reruns the page it was last told to, not the one the app switched to.
    at.switch_page("table.py").run()
    at.text_area(key="table-columns").input("What is the main result?")
    at.button(key="table-build").click().run()
    assert sorted(t.rsplit(" [", 1)[0] for t in at.dataframe[0].value["Paper"]) == sorted(listed)

    at.switch_page("library.py").run()
    search(at, "regret")
    [button] = [b for b in at.button if b.key == "library-results-as-table"]
    assert button.label == f"Open as a table ({len(hits(at))} papers)"
