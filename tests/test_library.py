"""The library's rows and their narrowing (`rag.library`): pure."""

from __future__ import annotations

from rag.library import library_rows, narrowed
from rag.records import Paper

MOH = Paper(
    id="moh",
    title="MoH: Multi-Head Attention as Mixture-of-Head Attention",
    authors=("Peng Jin", "Bo Zhu", "Li Yuan", "Shuicheng YAN"),
    abstract="We propose Mixture-of-Head attention (MoH).",
    category="Deep Learning · Attention Mechanisms",
    venue="ICML 2025",
    year=2025,
)
LAYERS = Paper(
    id="layers",
    title="Global Convergence in $L$-Layer Networks",
    authors=("José Müller",),
    abstract="We study deep networks.",
    category="Deep Learning · Theory",
)
UNTITLED = Paper(id="untitled", authors=("Ada Lovelace",), abstract="We propose DragSolver, a multi-scale transformer for drag.")
ROWS = library_rows([MOH, LAYERS, UNTITLED])


def test_a_row_holds_the_facets_in_plain_text_in_the_order_given():
    assert [r.paper_id for r in ROWS] == ["moh", "layers", "untitled"]
    moh = ROWS[0]
    assert (moh.title, moh.authors, moh.category, moh.venue, moh.year) == (
        MOH.title,
        "Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN",
        "Deep Learning · Attention Mechanisms",
        "ICML 2025",
        2025,
    )
    assert ROWS[1].title == "Global Convergence in L-Layer Networks"  # LaTeX as text: a table shows no math
    assert (ROWS[1].venue, ROWS[1].year) == ("", None)
    assert ROWS[2].title == UNTITLED.display_title == "DragSolver"


def test_words_narrow_by_title_or_author_in_any_case_and_order():
    assert [r.paper_id for r in narrowed(ROWS, "attention MIXTURE")] == ["moh"]
    assert [r.paper_id for r in narrowed(ROWS, "yuan")] == ["moh"]  # an author
    assert [r.paper_id for r in narrowed(ROWS, "attention lovelace")] == []  # every word must occur
    assert [r.paper_id for r in narrowed(ROWS, "dragsolver")] == ["untitled"]  # an untitled paper by its shown name


def test_a_name_is_found_with_or_without_its_accents():
    assert [r.paper_id for r in narrowed(ROWS, "muller jose")] == ["layers"]
    assert [r.paper_id for r in narrowed(ROWS, "Müller")] == ["layers"]


def test_no_words_keep_every_row_and_the_admitted_papers_keep_theirs():
    assert narrowed(ROWS, "  ") == ROWS
    assert [r.paper_id for r in narrowed(ROWS, "", admitted={"untitled", "moh"})] == ["moh", "untitled"]
    assert [r.paper_id for r in narrowed(ROWS, "networks", admitted={"layers", "moh"})] == ["layers"]
    assert narrowed(ROWS, "networks", admitted={"moh"}) == []
    assert narrowed(ROWS, "", admitted=set()) == []

