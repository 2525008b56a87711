"""Corpus text written into each format it is shown in: Markdown, terminal text, BibTeX. Pure text.

Corpus text (titles, names, abstracts) is data, never markup: it is escaped for the format it is
written into, so a title like "<script>" or "**bold**" reads as written wherever it is shown
(`escape_markdown`). It keeps its LaTeX as written ("50%$\\sim$90%", "$\\tilde O(\\sqrt T)$");
where it is shown, that becomes what the place can show:

- `to_plain`: Unicode text for the terminal, quotes in answers and the Markdown export
  ("50%∼90%", "Õ(√(T))"), by pylatexenc;
- `to_markdown`: Markdown for the app, math kept as ``$...$`` for KaTeX, everything else escaped;
- `to_bibtex`: a BibTeX field value that keeps valid LaTeX as LaTeX and escapes the rest.

In a terminal, corpus and model text is first made `terminal_safe`: no escape sequence or control
character in it reaches the terminal, which would act on it (hide text, clear the screen).

Text without a "$" or a backslash is returned unchanged by all three (escaped where asked), so a
price such as "$5" in an abstract without math is never taken for math.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from pylatexenc import latexwalker
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

__all__ = [
    "csv_cell",
    "defuse_markdown",
    "escape_markdown",
    "has_latex",
    "highlighted",
    "marked",
    "math_spans",
    "styled_segments",
    "terminal_safe",
    "to_bibtex",
    "to_markdown",
    "to_plain",
]

# Inline math as Pandoc reads it: no space just inside the dollars, no digit right after the
# closing one ("costs $5 and $10" is no math), unless it holds a command ("50%$\\sim$90%").
# Display math "$$...$$" too.
_MATH = re.compile(r"\$\$.+?\$\$|\$(?=\S)[^$\n]*?\\[A-Za-z]+[^$\n]*?\$|\$(?=\S)[^$\n]*?(?<=\S)\$(?!\d)", re.DOTALL)
# A LaTeX command ("\textbf", "\sim") or an accent ("\'e", "\"u").
_COMMAND = re.compile(r"\\(?:[A-Za-z]+|['\"`^~=.])")
_BARE_PERCENT = re.compile(r"(?<!\\)%")
_SPACES = re.compile(r"[ \t]*\n[ \t]*|[ \t]{2,}")
_SPACE = re.compile(r"\s+")
# What makes a word LaTeX in a text that has some (`has_latex`).
_LATEX_MARK = re.compile(r"\\(?:[A-Za-z]+|[^A-Za-z0-9])|[{}$~]|``|''|--")
_ENDS_IN_MACRO = re.compile(r"\\[A-Za-z]+$")


def has_latex(text: str) -> bool:
    return bool(_MATH.search(text) or _COMMAND.search(text))


def math_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every inline or display math span, dollars included."""
    return [m.span() for m in _MATH.finditer(text)]


@lru_cache(maxsize=1)
def _parser_context():
    # pylatexenc builds this anew for every text it parses unless given one.
    return latexwalker.get_default_latex_context_db()


@lru_cache(maxsize=1)
def _converter() -> LatexNodes2Text:
    context = get_default_latex_context_db()
    # A \url{...} is its address, as bibtexparser reads it.
    context.add_context_category("paperchat", prepend=True, macros=[MacroTextSpec("url", simplify_repl="%s")])
    return LatexNodes2Text(latex_context=context, math_mode="text", strict_latex_spaces=True)


def _latex_regions(text: str) -> list[tuple[int, int]]:
    """(start, end) of the LaTeX in `text`: its math spans, and each word holding a command, a
    brace, a dollar or a LaTeX ligature ("``", "--", "~"), widened word by word until its braces
    balance ("\\emph{a new method}")."""
    regions = math_spans(text)
    for match in _LATEX_MARK.finditer(text):
        if any(start <= match.start() < end for start, end in regions):
            continue
        start = max(text.rfind(" ", 0, match.start()), text.rfind("\n", 0, match.start())) + 1
        end = match.end()
        while True:
            space = _SPACE.search(text, end)
            end = space.start() if space else len(text)
            if end == len(text) or _balanced(text[start:end]):
                break
            end = space.end() if space else len(text)
        if space and _ENDS_IN_MACRO.search(text, start, end):
            end = space.end()  # TeX reads the space after "\\sim" as the macro's own
        regions.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(regions):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _latex_to_text(latex: str) -> str:
    # In an abstract a bare "%" is a percent sign; LaTeX would read it as a comment.
    try:
        return _converter().latex_to_text(_BARE_PERCENT.sub(r"\\%", latex), latex_context=_parser_context())
    except Exception:  # noqa: BLE001  (pylatexenc is lenient; a parse it cannot make leaves the text as written)
        return latex


@lru_cache(maxsize=8192)
def to_plain(text: str) -> str:
    """`text` with its LaTeX turned into Unicode and its control sequences dropped; otherwise as written.

    Only the LaTeX is converted, a span at a time: pylatexenc reads a few characters then
    instead of a whole abstract (milliseconds each), and the prose around it stays as written.
    Terminal control sequences go first: read as LaTeX, a link's "ESC \\" ending ate the letter
    after it ("\\link" as the command "\\l"), leaving the rest of the sequence shown."""
    text = terminal_safe(text)
    if not has_latex(text):
        return text
    out, cursor = [], 0
    for start, end in _latex_regions(text):
        out.append(text[cursor:start])
        out.append(_latex_to_text(text[start:end]))
        cursor = end
    out.append(text[cursor:])
    plain = "".join(out)
    return _SPACES.sub(lambda m: " " if "\n" in m.group() or len(m.group()) > 1 else m.group(), plain).strip()


# Characters that start Markdown (CommonMark + GFM) anywhere in a line, "$" (Streamlit renders
# $...$ as math), "&" (HTML entities) and a ":" before a letter (Streamlit's ":red[...]" directives
# and ":emoji:" codes). Backslash-escaping ASCII punctuation is always allowed in CommonMark, so an
# escape never shows.
_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]()<>#$~|&]|:(?=[A-Za-z]))")
# List and setext-heading markers only count at the start of a line; "-" and "." elsewhere are
# left alone so titles like "Multi-Head" stay readable in an exported file.
_MARKDOWN_BULLET = re.compile(r"^(\s*)([-+=])", re.MULTILINE)
_MARKDOWN_ORDERED = re.compile(r"^(\s*\d+)\.", re.MULTILINE)


def escape_markdown(text: str) -> str:
    """`text` as Markdown that renders as exactly this text, its control sequences dropped (a
    Markdown file is read in a terminal too)."""
    text = _MARKDOWN_INLINE.sub(r"\\\1", terminal_safe(text))
    text = _MARKDOWN_BULLET.sub(r"\1\\\2", text)
    return _MARKDOWN_ORDERED.sub(r"\1\\.", text)


# What a model's Markdown may not do, whatever a source told it: show an image (its address is
# fetched as the page renders, which can carry the conversation away), link anywhere, or hold
# HTML. A citation "[1]" is not a link: no "(" follows its bracket.
_TARGET = r"\((?:[^()\n]|\([^()\n]*\))*\)"  # "(url)", one level of parentheses inside
_IMAGE = re.compile(r"(?<!\\)!\[([^\]\n]*)\]" + _TARGET)
_LINK = re.compile(r"(?<!\\)(\[([^\]\n]+)\])" + _TARGET)
_CITATION = re.compile(r"[\d\s,–-]+")
_AUTOLINK = re.compile(r"(?<!\\)<((?:https?|ftp|mailto|javascript|data):[^>\s]*)>", re.I)
_HTML = re.compile(r"(?<!\\)<(?=[A-Za-z/!?])")


def defuse_markdown(text: str) -> str:
    """A model's answer as Markdown that is safe to render: an image is its alt text, a link its
    text (a citation "[1](url)" stays "[1]"), an autolink its address, shown, and an HTML tag
    shows as text."""
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m[1] if _CITATION.fullmatch(m[2]) else m[2], text)
    text = _AUTOLINK.sub(lambda m: escape_markdown(m[1]), text)
    return _HTML.sub(r"\\<", text)


def marked(text: str, *, colour: str = "orange") -> str:
    """`text` as Markdown on a coloured background (Streamlit's `:orange-background[...]`), its
    LaTeX as plain Unicode: a highlighted sentence reads as the quote a citation's hover shows."""
    return f":{colour}-background[{_with_emphasis(escape_markdown(to_plain(text)))}]"


def highlighted(text: str, sentences: Sequence[str], *, colour: str = "orange") -> tuple[str, list[str]]:
    """`text` as Markdown (`to_markdown`) with each of `sentences` found in it on a coloured
    background, whatever the spacing between its words; and the sentences not found in it."""
    spans: list[tuple[int, int]] = []
    missing = []
    for sentence in sentences:
        words = sentence.split()
        found = re.search(r"\s+".join(map(re.escape, words)), text) if words else None
        if found is None:
            missing.append(sentence)
        elif not any(start < found.end() and found.start() < end for start, end in spans):
            spans.append(found.span())
    out, cursor = [], 0
    for start, end in sorted(spans):
        out += [to_markdown(text[cursor:start]), marked(text[start:end], colour=colour)]
        cursor = end
    out.append(to_markdown(text[cursor:]))
    return "".join(out), missing


def to_markdown(text: str, *, emphasis: bool = True) -> str:
    """Markdown that shows `text` as written, its math rendered by KaTeX (Streamlit's ``$...$``).

    Text outside math is escaped and its LaTeX commands ("\\textbf{...}", "\\'e") turned into
    Unicode; math spans are passed through for KaTeX. Its own emphasis ("**MATS**") is shown as
    emphasis unless `emphasis` is off: a title shown in bold would nest it.
    """
    text = terminal_safe(text)
    shown = _with_emphasis if emphasis else str
    out: list[str] = []
    cursor = 0
    for start, end in math_spans(text):
        out.append(shown(escape_markdown(to_plain(text[cursor:start]))))
        # Streamlit renders no inline math whose closing dollar a digit follows ("50%$\\sim$90%"):
        # such a span is shown as its plain Unicode ("50%∼90%") rather than as raw LaTeX.
        math = text[start:end]
        out.append(escape_markdown(to_plain(math)) if text[end : end + 1].isdigit() else math)
        cursor = end
    out.append(shown(escape_markdown(to_plain(text[cursor:]))))
    return "".join(out)


# An abstract's own emphasis, once escaped: "**MATS**", "**M**ultiple", "*Variational ...*" on one
# line. Shown as emphasis, not as asterisks; what it holds stays escaped. Italics only between
# words: "2*3*4" is arithmetic.
_ESCAPED_BOLD = re.compile(r"\\\*\\\*(?=\S)([^\n*]+?)(?<=\S)\\\*\\\*")
_ESCAPED_ITALIC = re.compile(r"(?<![\w\\*])\\\*(?=[^\s\\])([^\n*]+?)(?<=[^\s\\])\\\*(?!\w)")


def _with_emphasis(escaped: str) -> str:
    return _ESCAPED_ITALIC.sub(r"*\1*", _ESCAPED_BOLD.sub(r"**\1**", escaped))


_BIBTEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_BIBTEX_SPECIAL_RE = re.compile("[" + re.escape("".join(_BIBTEX_SPECIAL)) + "]")
# Text-mode LaTeX that abstracts use and BibTeX readers decode: kept as written outside math.
# ("\textbf{...}" keeps its braces, which are balanced by the check in to_bibtex.)
_TEXT_COMMAND = re.compile(r"\\(?:textbf|textit|emph|texttt|textsc|textrm|underline)\{[^{}]*\}|\\['\"`^=.][A-Za-z]|\\[~][A-Za-z]")


def _balanced(text: str) -> bool:
    depth = 0
    for i, char in enumerate(text):
        if char in "{}" and i and text[i - 1] == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _escape_text(text: str) -> str:
    """Plain text escaped for BibTeX, text-mode commands ("\\'e", "\\textbf{..}") kept."""
    out, cursor = [], 0
    for match in _TEXT_COMMAND.finditer(text):
        out.append(_BIBTEX_SPECIAL_RE.sub(lambda m: _BIBTEX_SPECIAL[m.group()], text[cursor : match.start()]))
        out.append(match.group())
        cursor = match.end()
    out.append(_BIBTEX_SPECIAL_RE.sub(lambda m: _BIBTEX_SPECIAL[m.group()], text[cursor:]))
    return "".join(out)


def to_bibtex(text: str) -> str:
    """`text` as a BibTeX field value that LaTeX prints as the source meant it.

    Math spans ("$\\sim$") stay LaTeX, as do text-mode commands ("\\'e", "\\textbf{...}");
    everything else is escaped character by character, so it prints as written. Math whose
    braces do not balance is escaped too, since BibTeX could not read the field otherwise.
    """
    text = terminal_safe(text)
    out: list[str] = []
    cursor = 0
    for start, end in math_spans(text):
        math = text[start:end]
        out.append(_escape_text(text[cursor:start]))
        out.append(math if _balanced(math) else _escape_text(math))
        cursor = end
    out.append(_escape_text(text[cursor:]))
    return "".join(out)


_INLINE_MARK = re.compile(r"\\(.)|\*\*|\*(?=\S)|(?<=\S)\*")


def styled_segments(markdown: str) -> list[tuple[str, str]]:
    """Our answers' inline Markdown as (text, style) pieces for a terminal: "bold", "italic" or "".

    Only what answers use: backslash escapes become the character, ``**`` bold and ``*``
    italic; anything else is text as written.
    """
    segments: list[tuple[str, str]] = []
    bold = italic = False
    cursor = 0
    buffer = ""

    def flush() -> None:
        nonlocal buffer
        if buffer:
            segments.append((buffer, "bold" if bold else "italic" if italic else ""))
            buffer = ""

    for match in _INLINE_MARK.finditer(markdown):
        buffer += markdown[cursor : match.start()]
        cursor = match.end()
        if match.group(1) is not None:
            buffer += match.group(1)
            continue
        flush()
        if match.group() == "**":
            bold = not bold
        else:
            italic = not italic
    buffer += markdown[cursor:]
    flush()
    return segments


# What a terminal acts on rather than shows (ECMA-48), in its 7-bit (ESC ...) and 8-bit (C1)
# forms: a control sequence ("ESC[8m" hides what follows, "ESC[2J" clears the screen); a string
# up to its terminator ("ESC]0;...BEL" sets the window title, "ESC]8;;URL ESC\\" makes a link
# whose address is not shown; DCS, SOS, PM and APC alike), kept to one line so an unterminated
# one cannot swallow the text after it; any other escape. Each is dropped whole, so the text
# it wrapped shows as plain text.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
# Control characters left once the sequences are gone (a lone ESC, BEL, backspace, carriage
# return, C1), all but the line break and the tab.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """`text` as a terminal shows it as written: escape sequences and control characters dropped,
    line breaks and tabs kept."""
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


# What a spreadsheet reads as the start of a formula (OWASP, "CSV injection"); a carriage
# return, the other start OWASP names, is a control character and already gone.
_FORMULA_START = ("=", "+", "-", "@", "\t")


def csv_cell(text: str) -> str:
    """`text` as a CSV cell a spreadsheet shows as text: control sequences dropped, and a cell that
    would start a formula ("=HYPERLINK(...)") led by a quote mark, which the spreadsheet hides."""
    text = terminal_safe(text)
    return f"'{text}" if text.startswith(_FORMULA_START) else text
