"""Parse, check and ground the [n] citations of an answer. Pure logic: no model calls, no I/O.

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

Checking (`check_citations`)
----------------------------
Numbers that name no retrieved source are removed from the text and reported; every remaining
citation is tied to the answer sentence it sits in and to the sentence of the cited abstract that
best supports that sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import pairwise

from rag.markup import to_plain
from rag.records import Answer, Citation, CitationReport, Source, normalize_space
from rag.text import lexical_similarity, sentence_spans, split_sentences

__all__ = [
    "HELD_BACK_MARK",
    "CitationMarker",
    "CitedSentence",
    "SentenceScorer",
    "check_citations",
    "citation_tips",
    "cited_numbers",
    "cited_sentences",
    "drop_invalid",
    "find_citation_markers",
    "find_support",
    "held_back_claims",
    "link_citations",
    "marker_owners",
    "settled",
    "settled_head",
    "strip_citations",
]

# Where a streamed answer cited only numbers that name no source: the marker is cut before it is
# shown (a reader could follow it to the wrong paper), and this says a citation was there.
HELD_BACK_MARK = " *(no such source)*"
_HELD_BACK = re.compile(r"\s*" + re.escape(HELD_BACK_MARK.strip()))

SentenceScorer = Callable[[str, list[str]], list[float]]
"""scorer(claim, candidate_sentences) -> one score per candidate, higher is better supported."""

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

# Markdown that is layout, not claim: list/heading/quote openers, a bold lead-in label such as the
# extractive backend's "**Title**: ", and emphasis markers.
_BLOCK_OPENER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+|>\s*)+")
_LEAD_LABEL = re.compile(r"^(\*\*|__)(?:(?!\1).)+\1\s*:\s*")
# The same label where it opens a line of a whole answer; a title in it may hold a full stop.
_LABEL_IN_TEXT = re.compile(r"^[ \t]*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?(\*\*|__)(?:(?!\1).)+\1\s*:", re.MULTILINE)
_EMPHASIS = re.compile(r"\*\*|__")
_ESCAPE = re.compile(r"\\([\\`*_\[\]()<>#$~|&:.+=!-])")
_TABLE_ROW = re.compile(r"^[ \t]*\|")
_TABLE_SEPARATOR = re.compile(r"^[ \t]*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
_NOTE_CELL = re.compile(r"\*[^*]+\*|_[^_]+_")

# An answer sentence this close to an abstract sentence is a copy of it (extractive answers quote).
_COPY_THRESHOLD = 0.9
_MIN_QUOTE_WORDS = 4
_WORD = re.compile(r"\w+")


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


def _splice(text: str, edits: Sequence[tuple[int, int, str]], mark: str = "") -> tuple[str, list[int]]:
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
        text = _splice(text, edits, mark)[0]


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


# ---------------------------------------------------------------------------------------------
# Answer sentences
# ---------------------------------------------------------------------------------------------


def _clean_sentence(sentence: str) -> str:
    """The claim of an answer sentence: no list/heading opener, bold lead-in label, emphasis or
    Markdown escape ("\\(MoH\\)" says "(MoH)")."""
    sentence = _BLOCK_OPENER.sub("", sentence)
    sentence = _LEAD_LABEL.sub("", _HELD_BACK.sub("", sentence))
    return normalize_space(_ESCAPE.sub(r"\1", _EMPHASIS.sub("", sentence)))


def _table_cells(plain: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(the spans of Markdown table lines, the cells among them that are claims).

    A table's cells are separate claims. Its header row, its separator, each row's first cell
    (the row's label) and a cell that is all emphasis (a note such as "*not reported*") are not.
    """
    lines, cells = [], []
    offset = 0
    rows = plain.split("\n")
    for i, line in enumerate(rows):
        start, end = offset, offset + len(line)
        offset = end + 1
        if not _TABLE_ROW.match(line):
            continue
        lines.append((start, end))
        following = rows[i + 1] if i + 1 < len(rows) else ""
        if _TABLE_SEPARATOR.match(line) or _TABLE_SEPARATOR.match(following):
            continue
        bounds = [m.start() for m in _CELL_BORDER.finditer(line)]
        for low, high in list(pairwise(bounds))[1:]:
            cell = line[low + 1 : high]
            if cell.strip() and not _NOTE_CELL.fullmatch(cell.strip()):
                lead = len(cell) - len(cell.lstrip())
                cells.append((start + low + 1 + lead, start + low + 1 + len(cell.rstrip())))
    return lines, cells


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int
    claim: str


def _answer_sentences(plain: str) -> list[_Sentence]:
    """Sentences of marker-free answer text that say something (a lone "-" or "**" says nothing).

    A lead-in label stays with the sentence it introduces even when the title in it ends a
    sentence ("**ABC of burns. Introduction**: Burns are ..."), so the label is never a claim; nor
    is a lead-in sentence that ends in a colon.
    """
    labels = [m.span() for m in _LABEL_IN_TEXT.finditer(plain)]
    table_lines, spans = _table_cells(plain)
    for start, end in sentence_spans(plain):
        if any(low <= start < high for low, high in table_lines):
            continue
        if spans and any(low <= spans[-1][0] and spans[-1][1] <= high for low, high in labels):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    sentences = (_Sentence(s, e, _clean_sentence(plain[s:e])) for s, e in sorted(spans))
    # A lead-in ending in a colon ("3 papers match:") introduces claims; it makes none.
    return [s for s in sentences if s.claim and not s.claim.endswith(":")]


def _owner(sentences: list[_Sentence], plain: str, position: int) -> int | None:
    """Index of the sentence a marker that stood at `position` of the plain text belongs to.

    Inside a sentence or right at its end: that sentence. Between sentences: the one before
    ("... memory. [2]", also on a line of its own), unless the marker opened a line that goes
    on with text ("[2] Foo ..."), which it then belongs to.
    """
    if not sentences:
        return None
    following = next((i for i, s in enumerate(sentences) if s.end >= position), None)
    if following is None:
        return len(sentences) - 1
    if sentences[following].start < position or following == 0:
        return following
    line_start = plain.rfind("\n", 0, position) + 1
    line_end = plain.find("\n", position)
    rest_of_line = plain[position : line_end if line_end != -1 else len(plain)]
    opens_line = not plain[line_start:position].strip() and rest_of_line.strip()
    return following if opens_line else following - 1


# ---------------------------------------------------------------------------------------------
# Support
# ---------------------------------------------------------------------------------------------


def _copy_strength(claim: list[str], sentence: list[str]) -> float:
    """How nearly two word lists are one text: 1 if equal, ~0.9+ for a quote of one in the other."""
    if claim == sentence:
        return 1.0
    if not claim or not sentence:
        return 0.0
    short, long = sorted((claim, sentence), key=len)
    if len(short) >= _MIN_QUOTE_WORDS and f" {' '.join(short)} " in f" {' '.join(long)} ":
        return _COPY_THRESHOLD + (1 - _COPY_THRESHOLD) * len(short) / len(long)
    if len(short) / len(long) < _COPY_THRESHOLD:
        return 0.0  # too different in length for the ratio below to reach the threshold
    return SequenceMatcher(None, claim, sentence, autojunk=False).ratio()


def _copied(claim: str, sentences: Sequence[str]) -> tuple[int | None, float]:
    """Index of the abstract sentence the claim copies (or quotes, or nearly copies), if any, and
    how nearly (1.0: word for word).

    Both sides are compared as plain text, so a quote whose LaTeX was turned into Unicode
    ("50%∼90%") still copies its sentence ("50%$\\sim$90%")."""
    words = _WORD.findall(to_plain(claim).casefold())
    strengths = [_copy_strength(words, _WORD.findall(to_plain(s).casefold())) for s in sentences]
    best = max(range(len(sentences)), key=strengths.__getitem__, default=None)
    if best is None or strengths[best] < _COPY_THRESHOLD:
        return None, 0.0
    return best, strengths[best]


def _scores(claim: str, sentences: list[str], scorer: SentenceScorer | None) -> list[float]:
    if scorer is None:
        return [lexical_similarity(claim, s) for s in sentences]
    scores = [float(x) for x in scorer(claim, sentences)]
    if len(scores) != len(sentences):
        raise ValueError(f"citation scorer returned {len(scores)} scores for {len(sentences)} sentences")
    return scores


def find_support(claim: str, abstract: str, *, scorer: SentenceScorer | None = None) -> tuple[str, float]:
    """The sentence of `abstract` that best supports `claim`, and its score.

    Candidates are scored with `scorer(claim, sentences)` when given, else with
    `lexical_similarity`; the highest wins (the earliest on ties). A sentence the claim copies,
    quotes (4+ words verbatim), or nearly copies (word-level similarity >= 0.9) wins whatever
    the scores say, since extractive answers copy sentences and the scorer may be noisy. The
    score returned is the scorer's score of the winning sentence, and 1.0 for a sentence copied
    word for word, which needs no scorer (the extractive answerer's claims: nothing is embedded).
    ("", 0.0) for an empty abstract.
    """
    sentences = split_sentences(abstract)
    if not sentences:
        return "", 0.0
    best, strength = _copied(claim, sentences)
    if best is not None and strength == 1.0:
        return sentences[best], 1.0
    scores = _scores(claim, sentences, scorer)
    if best is None:
        best = max(range(len(sentences)), key=scores.__getitem__)
    return sentences[best], scores[best]


# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------


def check_citations(
    text: str,
    sources: Sequence[Source],
    *,
    scorer: SentenceScorer | None = None,
) -> CitationReport:
    """Check an answer's citations against the sources it was given, and ground each one.

    - A number that names no source (no `source.number` equals it) is removed from the text,
      spacing and brackets tidied ("foo [7]." -> "foo.", "[1, 7]" -> "[1]"), and listed in
      `invalid` (sorted, once each).
    - Each remaining citation becomes one `Citation` per (number, citing sentence): citing a
      source twice in one sentence gives one, citing it in two sentences gives two. Order is the
      order of appearance.
    - `citing_sentence` is the answer sentence the marker sits in, without markers or Markdown
      layout; a marker after the sentence's period ("... memory. [2]", even on its own line)
      belongs to that sentence, a marker opening a line belongs to the text after it.
    - `support` / `support_score` come from `find_support` over the cited paper's abstract.
    - `uncited` is True when no valid citation remains.
    """
    by_number = {source.number: source for source in sources}
    cleaned, invalid = drop_invalid(text, set(by_number))
    citations: list[Citation] = []
    seen: set[tuple[int, str]] = set()
    _, sentences, owned = _parse(cleaned)
    for marker, owner in owned:
        claim = sentences[owner].claim if owner is not None else ""
        for number in marker.numbers:
            if (number, claim) not in seen:
                seen.add((number, claim))
                citations.append(_citation(by_number[number], claim, scorer))
    return CitationReport(
        text=cleaned,
        citations=tuple(citations),
        invalid=tuple(sorted(set(invalid))),
        uncited=not citations,
    )


def _parse(text: str) -> tuple[str, list[_Sentence], list[tuple[CitationMarker, int | None]]]:
    """The answer's text without markers, its sentences, and each marker with the index of the
    sentence it belongs to."""
    markers = find_citation_markers(text)
    plain, positions = _splice(text, [(m.start, m.end, "") for m in markers])
    sentences = _answer_sentences(plain)
    return plain, sentences, [(m, _owner(sentences, plain, p)) for m, p in zip(markers, positions, strict=True)]


def marker_owners(text: str) -> list[tuple[CitationMarker, str]]:
    """Every marker of `text` with the claim of the sentence it belongs to ("" if none)."""
    _, sentences, owned = _parse(text)
    return [(m, sentences[o].claim if o is not None else "") for m, o in owned]


@dataclass(frozen=True)
class CitedSentence:
    """One sentence of an answer (markers and layout removed) and the source numbers it cites."""

    claim: str
    numbers: tuple[int, ...]


def cited_sentences(text: str) -> list[CitedSentence]:
    """Every sentence of an answer that says something, in order, with the numbers it cites.

    The unit ALCE's citation metrics judge; a sentence citing nothing has `numbers == ()`.
    Markers attach to sentences by the same rules as in `check_citations`.
    """
    _, sentences, owned = _parse(text)
    numbers: list[list[int]] = [[] for _ in sentences]
    for marker, owner in owned:
        if owner is not None:
            numbers[owner].extend(marker.numbers)
    return [CitedSentence(s.claim, tuple(dict.fromkeys(ns))) for s, ns in zip(sentences, numbers, strict=True)]


def held_back_claims(text: str) -> list[str]:
    """The claims of an answer's sentences that cite no source but held one back: a citation
    naming no retrieved source, cut and marked with HELD_BACK_MARK as it streamed."""
    plain, sentences, owned = _parse(text)
    # A mark stands where its marker stood, so it belongs to a sentence as that marker would.
    held = {_owner(sentences, plain, m.start()) for m in _HELD_BACK.finditer(plain)}
    citing = {owner for _, owner in owned}
    return [s.claim for i, s in enumerate(sentences) if i in held - citing]


def _citation(source: Source, claim: str, scorer: SentenceScorer | None) -> Citation:
    paper = source.paper
    support, score = find_support(claim, paper.abstract, scorer=scorer)
    return Citation(
        number=source.number,
        paper_id=paper.id,
        title=paper.display_title,
        authors=paper.authors,
        url=paper.url,
        citing_sentence=claim,
        support=support,
        support_score=score,
    )
