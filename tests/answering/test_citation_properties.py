"""Property tests of the citation parser and the stream guard: no text makes them raise, no number
that names no source survives a check or is ever shown, and streaming shows what checking the whole
answer gives, however the answer is split."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rag.answering.check import StreamGuard
from rag.answering.citations import check_citations, cited_sentences, marker_owners
from rag.answering.markers import HELD_BACK_MARK, cited_numbers, drop_invalid, find_citation_markers, strip_citations
from rag.records import Paper, Source

# What markers, links, math, code and tags are made of, so that random text is mostly near-misses.
PIECES = st.sampled_from([
    "[", "]", "(", ")", "1", "2", "3", "7", "12", "99", "100", "0", ",", ";", "-", "–", " ", "  ", "\n", "\t",
    "$", "$$", "`", "Source", "sources:", "<", ">", "/", "summary", "answer", ".", "foo", "**", "|",
    "[1]", "[7]", "[1, 7]", "[1-3]", "[2–4]", "[Source 2]", "[1][2]", "</summary>", "<answer>", "(https://x.org)",
])
TEXT = st.text(max_size=80) | st.lists(PIECES | st.text(max_size=3), max_size=40).map("".join)
VALID = st.sets(st.integers(1, 12), max_size=6)


def marker_numbers(text: str) -> list[tuple[int, ...]]:
    return [marker.numbers for marker in find_citation_markers(text)]


@st.composite
def markers(draw) -> tuple[str, tuple[int, ...]]:
    """A citation marker of any form, and the numbers it names."""
    form = draw(st.sampled_from(["one", "several", "range"]))
    if form == "range":
        low = draw(st.integers(1, 11))
        numbers = tuple(range(low, draw(st.integers(low + 1, 12)) + 1))
        return f"[{low}{draw(st.sampled_from(['-', '–', ' - ']))}{numbers[-1]}]", numbers
    numbers = tuple(draw(st.lists(st.integers(1, 12), min_size=1 if form == "one" else 2, max_size=4, unique=True)))
    lead = draw(st.sampled_from(["", "Source ", "Sources: ", "source "]))
    return f"[{lead}" + draw(st.sampled_from([", ", ",", "; "])).join(map(str, numbers)) + "]", numbers


@st.composite
def answers(draw) -> tuple[str, list[tuple[int, ...]]]:
    """An answer of words and citation markers (one, a pair side by side, or in parentheses), set
    apart by spaces, and the numbers each marker names."""
    parts, cited = [], []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(["Heads", "are", "routed", "cheaply.", "It", "works,", "as", "shown:", "\n", "\n\n- "])))
            continue
        group = draw(st.lists(markers(), min_size=1, max_size=2))
        text = "".join(marker for marker, _ in group)
        parts.append(f"({text})" if draw(st.booleans()) else text)
        cited.extend(numbers for _, numbers in group)
    return " ".join(parts), cited


# Where a model's stream cuts an answer into pieces: anywhere, or after every character.
CUTS = st.lists(st.integers(1, 200), max_size=10) | st.just(list(range(1, 1000)))


def pieces(text: str, cuts: list[int]) -> list[str]:
    at = sorted({cut for cut in cuts if cut < len(text)})
    return [text[start:end] for start, end in zip([0, *at], [*at, len(text)], strict=True)]


def sources(numbers: set[int]) -> list[Source]:
    paper = Paper(id="p", title="Routing", abstract="Heads are routed cheaply. It works as shown.")
    return [Source(number=n, paper=paper.model_copy(update={"id": f"p{n}"}), score=1.0) for n in sorted(numbers)]


# --- parsing --------------------------------------------------------------------------------------


@given(text=TEXT)
def test_markers_are_bracket_groups_in_order_naming_numbers_from_1_to_99(text):
    markers = find_citation_markers(text)
    ends = [0, *(m.end for m in markers)]
    for marker, previous_end in zip(markers, ends, strict=False):
        assert previous_end <= marker.start < marker.end
        assert text[marker.start] == "[" and text[marker.end - 1] == "]"
        assert marker.numbers and len(set(marker.numbers)) == len(marker.numbers)
        assert all(1 <= n <= 99 for n in marker.numbers)


@given(text=TEXT)
def test_every_marker_belongs_to_a_sentence_when_there_is_one(text):
    owned = marker_owners(text)
    assert [marker for marker, _ in owned] == find_citation_markers(text)
    sentences = cited_sentences(text)
    assert all(sentence.claim for sentence in sentences)
    cited = {n for sentence in sentences for n in sentence.numbers}
    assert cited == (set(cited_numbers(text)) if sentences else set())


@given(answer=answers())
def test_each_marker_form_names_its_numbers(answer):
    text, cited = answer
    assert marker_numbers(text) == cited


# --- dropping invalid numbers ---------------------------------------------------------------------


@given(text=TEXT, valid=VALID)
@example(text="[[7]1]", valid=set())  # cutting [7] joins "[" and "1]" into a marker
@example(text="[1[7]]", valid={2})
def test_dropping_leaves_no_marker_naming_an_invalid_number(text, valid):
    cleaned, invalid = drop_invalid(text, valid)
    assert set(cited_numbers(cleaned)) <= valid
    named = {n for numbers in marker_numbers(text) for n in numbers}
    assert named - valid <= set(invalid) and not set(invalid) & valid
    # Nothing is left to drop, and with every number valid nothing is dropped.
    assert drop_invalid(cleaned, valid) == (cleaned, [])
    assert drop_invalid(text, valid | named) == (text, [])


@given(text=TEXT)
@example(text="[[7]1]")
def test_stripping_leaves_no_marker(text):
    assert find_citation_markers(strip_citations(text)) == []


@given(answer=answers(), valid=VALID)
def test_dropping_keeps_exactly_the_valid_numbers_of_each_marker(answer, valid):
    text, cited = answer
    cleaned, invalid = drop_invalid(text, valid)
    kept = [tuple(n for n in numbers if n in valid) for numbers in cited]
    assert marker_numbers(cleaned) == [numbers for numbers in kept if numbers]
    assert invalid == [n for numbers in cited for n in numbers if n not in valid]


@given(text=TEXT, valid=VALID)
@example(text="[[7]1]", valid={2})
def test_checking_any_text_cites_only_the_sources(text, valid):
    report = check_citations(text, sources(valid))
    assert report.text == drop_invalid(text, valid)[0]
    assert {c.number for c in report.citations} <= valid
    assert list(report.invalid) == sorted(set(report.invalid)) and not set(report.invalid) & valid
    assert report.uncited == (not report.citations)


# --- the stream guard -----------------------------------------------------------------------------


def stream(pieces: list[str], valid: set[int], mark: str = "") -> tuple[list[str], StreamGuard]:
    """What a guard shows, piece by piece (the last from its flush), and the guard."""
    guard = StreamGuard(valid, mark=mark)
    shown = [guard.feed(piece) for piece in pieces]
    return [*shown, guard.flush()], guard


@given(text=TEXT, valid=VALID, cuts=CUTS)
# Streams that showed other text than the whole answer gives (math, a link, a space or parentheses
# lost), or a marker naming an invalid number (the long one; the last two even fed whole).
@example(text="$[1]$", valid=set(), cuts=[1])  # the math closes after the marker
@example(text="$$x [7] y$$", valid=set(), cuts=[7])
@example(text="See [7](https://x.org).", valid=set(), cuts=[7])  # a link, not a marker
@example(text="routed[7] and", valid=set(), cuts=[6])
@example(text="foo ([7]).", valid=set(), cuts=[8])
@example(text="Heads [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].", valid=set(range(1, 10)), cuts=list(range(1, 1000)))
@example(text="[[7]1]", valid=set(), cuts=[4])  # cutting [7] spells [1]
@example(text="$a [1]$[7]5", valid=set(), cuts=[10])  # cutting [7] puts a digit after the math: no math
@example(text="0[=]", valid=set(), cuts=[3])  # a bracket group that is no marker is not held
@pytest.mark.parametrize("mark", ["", HELD_BACK_MARK])
def test_the_stream_guard_shows_the_same_however_the_answer_is_split(text, valid, cuts, mark):
    shown, guard = stream(pieces(text, cuts), valid, mark)
    whole, whole_guard = stream([text], valid, mark)
    assert "".join(shown) == "".join(whole)
    assert guard.dropped == whole_guard.dropped
    # Nothing shown cites a number that names no source, not even for a moment.
    for end in range(len(shown)):
        assert set(cited_numbers("".join(shown[: end + 1]))) <= valid


@given(text=TEXT.filter(lambda text: "<" not in text), valid=VALID)
@pytest.mark.parametrize("mark", ["", HELD_BACK_MARK])
def test_the_stream_guard_shows_what_dropping_invalid_numbers_gives(text, valid, mark):
    shown, guard = stream([text], valid, mark)
    cleaned, invalid = drop_invalid(text, valid, mark=mark)
    assert "".join(shown) == cleaned and guard.dropped == set(invalid)


@given(answer=answers(), valid=VALID)
def test_each_marker_cut_whole_leaves_a_mark_where_it_stood(answer, valid):
    text, cited = answer
    cleaned, _ = drop_invalid(text, valid, mark=HELD_BACK_MARK)
    assert cleaned.count(HELD_BACK_MARK.strip()) == sum(not set(numbers) & valid for numbers in cited)
    kept = [tuple(n for n in numbers if n in valid) for numbers in cited]
    assert marker_numbers(cleaned) == [numbers for numbers in kept if numbers]


@given(answer=answers(), valid=VALID, cuts=CUTS)
def test_the_stream_guard_keeps_exactly_the_valid_numbers_of_each_marker(answer, valid, cuts):
    text, cited = answer
    shown, guard = stream(pieces(text, cuts), valid)
    kept = [tuple(n for n in numbers if n in valid) for numbers in cited]
    assert marker_numbers("".join(shown)) == [numbers for numbers in kept if numbers]
    assert guard.dropped == {n for numbers in cited for n in numbers} - valid
