"""The Table page, driven headless with AppTest over the bundled corpus."""

from __future__ import annotations

import pytest

from rag.answering.research import NOT_IN_ABSTRACT, PRESET

pytestmark = pytest.mark.slow


def test_the_table_page_builds_a_cited_cell_per_paper_and_question_and_exports_it(open_app):
    at = open_app()
    at.switch_page("table.py").run()
    assert not at.exception and at.title[0].value == "Table"
    assert at.text_area(key="table-columns").value.splitlines() == list(PRESET)

    at.text_input(key="table-query").input("Which papers say their code is available?")
    at.text_area(key="table-columns").input("Is the code released?\nsample size")
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.warning, at.warning[0].value
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["Paper", "Is the code released?", "sample size"]
    assert len(frame) == 5
    assert all("available" in c and c.endswith(f"[{n}]") for n, c in enumerate(frame["Is the code released?"], 1))
    assert set(frame["sample size"]) == {NOT_IN_ABSTRACT}
    assert [b.proto.label for b in at.get("download_button")] == ["CSV", "Markdown", "BibTeX"]

    # The table stays for the session: another page and back finds it.
    at.switch_page("library.py").run()
    at.switch_page("table.py").run()
    assert len(at.dataframe[0].value) == 5
