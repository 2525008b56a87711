"""The [n] citation markers of an answer: found, linked, stripped, their numbers checked against
the sources, and how much of a streamed text is settled. Pure logic: no model calls, no I/O.

What counts as a citation marker
--------------------------------
A bracket group of source numbers:

- one number or several, separated by "," or ";":   [1]   [1, 2]   [1,2]   [1; 3]
- ranges with "-", "–" or "—", expanded:             [1-3]   [1–3]   [1, 4-5]
- each number optionally led by "Source"/"Sources" (any case, optional ":"):  [Source 2]  [source 1, 2]
- adjacent groups are separate markers:              [1][2]

and only when

- every number, and every range end, is between 1 and 99, and ranges go up ([3-1] is no marker):
  this keeps the interval "in [0, 1]", years "[2022]" and "[1, 100]" out. An interval of two
  small integers such as "[1, 5]" is indistinguishable from a citation and is read as one;
- the group is not immediately followed by "(": "[1](https://...)" is a Markdown link;
- the group is not inside inline math "$...$" / "$$...$$" or inline code "`...`".

Anything else in brackets ("[x]", "[text](url)", "[^1]", "[0.5, 1]") is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.markup import to_plain
from rag.records import Answer

# Where a streamed answer cited only numbers that name no source: the marker is cut before it is
# shown (a reader could follow it to the wrong paper), and this says a citation was there.
HELD_BACK_MARK = " *(no such source)*"

_ITEM = r"(?:sources?\s*:?\s*)?\d{1,2}(?:\s*[-–—]\s*\d{1,2})?"
_MARKER = re.compile(rf"\[\s*({_ITEM}(?:\s*[,;]\s*{_ITEM})*)\s*\](?!\()", re.IGNORECASE)
_NUMBER_OR_RANGE = re.compile(r"(\d{1,2})(?:\s*[-–—]\s*(\d{1,2}))?")
# Spans where brackets are not citations. Inline math follows Pandoc's rule (no space just inside
# the dollars, no digit right after the closing one) so "costs $5 [1] and $10" is not math.
_PROTECTED = re.compile(r"\$\$.+?\$\$|\$(?=\S)[^$\n]*?(?<=\S)\$(?!\d)|`[^`\n]*`", re.DOTALL)
_MAX_NUMBER = 99
# What may follow a "[" that still opens a marker ("[1, 2", "[Sour"), once the bracket groups
# after it that may be markers are cut ("[[7]1" is "[1" when [7] goes).
_MARKER_SO_FAR = re.compile(r"[\s\d,;:\-–—\[source]*", re.IGNORECASE)
_MAYBE_MARKER = re.compile(r"\[[\s\d,;:\-–—source]*\]", re.IGNORECASE)
# The spacing and "(" before a marker that removing it tidies away.
_TIDIED = re.compile(r"[ \t]*\(?[ \t]*$")


@dataclass(frozen=True)
class CitationMarker:
    """One citation marker in a text: its span and the source numbers it names, in order."""

    start: int
    end: int
    numbers: tuple[int, ...]


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def _expand(body: str) -> tuple[int, ...]:
    """The numbers a marker's inside names, ranges expanded, repeats dropped; () if any is out of 1..99."""
    numbers: list[int] = []
    for low_text, high_text in _NUMBER_OR_RANGE.findall(body):
        low = int(low_text)
        high = int(high_text) if high_text else low
        if not 1 <= low <= high <= _MAX_NUMBER:
            return ()
        numbers.extend(range(low, high + 1))
    return tuple(dict.fromkeys(numbers))


def find_citation_markers(text: str) -> list[CitationMarker]:
    """Every citation marker in `text`, in order (see the module docstring for the rules)."""
    protected = [m.span() for m in _PROTECTED.finditer(text)]
    markers = []
    for match in _MARKER.finditer(text):
        if any(start <= match.start() < end for start, end in protected):
            continue
        numbers = _expand(match.group(1))
        if numbers:
            markers.append(CitationMarker(match.start(), match.end(), numbers))
    return markers


def link_citations(text: str, links: Mapping[int, tuple[str, str]]) -> str:
    """`text` with each cited number that has a link, `links[n] = (href, tip)`, made a Markdown
    link: "[1]" -> `[[1]](href "tip")`, whose tip a browser shows on hover. "[1, 2]" becomes
    two links side by side; a number without a link stays as written."""
    pieces, last = [], 0
    for marker in find_citation_markers(text):
        if not any(n in links for n in marker.numbers):
            continue
        pieces.append(text[last : marker.start])
        pieces.append("".join(_link(n, *links[n]) if n in links else f"[{n}]" for n in marker.numbers))
        last = marker.end
    return "".join(pieces) + text[last:]


def citation_tips(answer: Answer) -> dict[int, str]:
    """Per cited number, what hovering over it shows: the paper's title and the sentence of its
    abstract that supports the claim (its first, when it supports several), as plain text."""
    supports: dict[int, str] = {}
    for citation in answer.citations:
        if citation.supported and citation.support:
            supports.setdefault(citation.number, citation.support)
    tips = {}
    for source in answer.cited_sources:
        title = to_plain(source.paper.display_title)
        support = supports.get(source.number)
        tips[source.number] = f"{title} — “{to_plain(support)}”" if support else title
    return tips


def _link(number: int, href: str, tip: str) -> str:
    # A link title is literal text between quotes: only its quote and backslash need escaping,
    # and the pipe, which a table row reads as a cell border before anything else.
    tip = " ".join(tip.split()).replace("\\", "\\\\").replace('"', '\\"').replace("|", "\\|")
    return f'[[{number}]]({href} "{tip}")'


def cited_numbers(text: str) -> list[int]:
    """The source numbers cited in `text`, each once, in order of first appearance."""
    numbers = (n for marker in find_citation_markers(text) for n in marker.numbers)
    return list(dict.fromkeys(numbers))


def strip_citations(text: str) -> str:
    """`text` without its citation markers, spacing tidied ("foo [1]." -> "foo.")."""
    return drop_invalid(text, set())[0]


# ---------------------------------------------------------------------------------------------
# Editing
# ---------------------------------------------------------------------------------------------


def splice(text: str, edits: Sequence[tuple[int, int, str]], mark: str = "") -> tuple[str, list[int]]:
    """Apply ordered, non-overlapping (start, end, replacement) edits to `text`.

    An empty replacement removes a marker and tidies what it leaves: the space before it goes
    when punctuation, a space or the end follows ("foo [7]." -> "foo."), the space after it goes
    at the start of a line ("[7] Foo" -> "Foo"), and emptied parentheses go ("foo ([7])." ->
    "foo."). `mark` (" *(x)*") is then put where it was ("foo *(x)*."). Returns the new text
    and, per edit, where it landed in the new text.
    """
    out = ""
    positions: list[int] = []
    cursor = 0
    for start, end, replacement in edits:
        out += text[cursor:start]
        cursor = end
        if replacement:
            positions.append(len(out))
            out += replacement
            continue
        out, cursor = _tidy_removal(out, text, cursor)
        if mark:
            out = _marked(out, text[cursor : cursor + 1], mark)
        positions.append(len(out))
    return out + text[cursor:], positions


def _marked(out: str, following: str, mark: str) -> str:
    """`out`, the text before a removed marker, with `mark` spaced as a marker is: after a space
    unless it opens a line, and before one where a word follows."""
    before = out.rstrip(" \t")
    out = before + mark if before and not before.endswith("\n") else out + mark.lstrip()
    return out + " " if following and not following.isspace() and following not in ".,;:!?)]}" else out


def _tidy_removal(out: str, text: str, cursor: int) -> tuple[str, int]:
    """Spacing after a marker was cut between `out` and `text[cursor:]`; returns both, adjusted."""
    following = text[cursor : cursor + 1]
    if out.rstrip(" \t").endswith("(") and following == ")":
        out, cursor = out.rstrip(" \t")[:-1], cursor + 1
        following = text[cursor : cursor + 1]
    if out[-1:] in (" ", "\t") and (not following or following.isspace() or following in ".,;:!?)]}"):
        return out.rstrip(" \t"), cursor
    if (not out or out.endswith("\n")) and following in (" ", "\t"):
        while text[cursor : cursor + 1] in (" ", "\t"):
            cursor += 1
    return out, cursor


def _format_marker(numbers: Sequence[int]) -> str:
    return "[" + ", ".join(str(n) for n in numbers) + "]"


def drop_invalid(text: str, valid: set[int], *, mark: str = "") -> tuple[str, list[int]]:
    """`text` with numbers outside `valid` cut from its markers, and the numbers cut.

    A marker keeps its own spelling when all its numbers are valid, is rewritten with the valid
    ones when some are ("[1, 7]" -> "[1]"), and is removed when none are ("foo [7]." -> "foo.",
    or with `mark`, "foo *(no such source)*.").
    Removing a marker joins the text around it, which can spell a new one ("[[7]1]" -> "[1]"):
    that is checked in turn, until no marker names an invalid number.
    """
    invalid: list[int] = []
    while True:
        edits = []
        for marker in find_citation_markers(text):
            kept = [n for n in marker.numbers if n in valid]
            invalid.extend(n for n in marker.numbers if n not in valid)
            if len(kept) < len(marker.numbers):
                edits.append((marker.start, marker.end, _format_marker(kept) if kept else ""))
        if not edits:
            return text, invalid
        text = splice(text, edits, mark)[0]


def settled(text: str) -> int:
    """How much of `text`, the start of a longer one, `drop_invalid` changes alike whatever follows.

    Held back: a "[" that may still open a marker, a bracket group at the end (a "(" next makes it
    a link, and what follows it decides the tidying), anything bracketed after math or code that may
    still close around it or, at the end, reopen, trailing space, and the spacing before a marker
    that removing it tidies. What is held back may all be cut, leaving the rest to end the text, so
    the rest must be settled as an end in turn.
    """
    cut = len(text)
    while (held := _held(text[:cut])) != cut:
        cut = held
    return cut


def _held(text: str) -> int:
    """Where what may still change at the end of `text` begins (see `settled`)."""
    forming = next((i for i, char in enumerate(text) if char == "[" and _may_be_marker(text[i + 1 :])), len(text))
    maybe_protected = text.find("[", _unsettled_protection(text))
    cut = min(len(text.rstrip()), forming, len(text) if maybe_protected == -1 else maybe_protected)
    tidied = _TIDIED.search(text, 0, cut)  # it matches everywhere: all of it is optional
    cut -= len(tidied[0]) if tidied else 0
    end = text[:cut].rstrip().removesuffix(")")
    opening = _opening(end) if end.endswith("]") else None
    return opening if opening is not None and _may_be_marker(end[opening + 1 : -1]) else cut


def _may_be_marker(inside: str) -> bool:
    """Whether what follows a "[" may be (the start of) a marker's inside."""
    while (cut := _MAYBE_MARKER.sub("", inside)) != inside:
        inside = cut
    return bool(_MARKER_SO_FAR.fullmatch(inside))


def _opening(text: str) -> int | None:
    """Where the bracket group that ends `text` opens (its "]" is the last character), if any."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {"]": 1, "[": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return None


def _unsettled_protection(text: str) -> int:
    """Where the first math or code begins that text still to come may close, or widen ("$$" is
    empty math until a closing "$$" comes), or at the end reopen ("$x$" followed by a digit is no
    math); else the end."""
    spans = [m.span() for m in _PROTECTED.finditer(text)]
    starts = [start for start, end in spans if end == len(text)]
    for i, char in enumerate(text):
        if char in "$`" and not any(start < i < end for start, end in spans):
            closed = (_PROTECTED.match(text + closing, i) for closing in ("x$$", "x$", "`"))
            if any(match and match.end() > len(text) for match in closed):
                starts.append(i)
                break
    return min(starts, default=len(text))


def settled_head(text: str) -> int:
    """Where `text`, settled as a whole (see `settled`), may be cut in two that `drop_invalid`
    changes apart as it changes them together, whatever follows: the last point between two
    letters that no bracket group, math or code spans (0 if there is none). A stream's checks need
    then look back no further."""
    spans = [m.span() for m in _PROTECTED.finditer(text)]
    depth, head = 0, 0
    for i in range(1, _unsettled_protection(text)):
        depth = max(0, depth + {"[": 1, "]": -1}.get(text[i - 1], 0))
        if depth == 0 and text[i - 1].isalpha() and text[i : i + 1].isalpha() and not any(s < i < e for s, e in spans):
            head = i
    return head
