"""The filters a question states ("at ICML 2025", "by Yuan", "since 2023"), matched against the
corpus's own venues and authors and taken out of the text that is searched."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rag.records import CorpusProfile, Filters

_YEAR = r"(19[5-9]\d|20\d\d)"
_YEAR_RANGE = re.compile(rf"\b(?:from|between)\s+{_YEAR}\s+(?:to|and|until|-|–)\s+{_YEAR}\b|\b{_YEAR}\s*[-–]\s*{_YEAR}\b", re.I)
_YEAR_FROM = re.compile(rf"\b(?:since|from|after|as of|starting(?: in)?)\s+{_YEAR}(?:\s+on(?:wards?)?)?\b", re.I)
_YEAR_TO = re.compile(rf"\b(?:before|until|up to|prior to|through)\s+{_YEAR}\b", re.I)
_YEAR_IN = re.compile(rf"\b(?:in|of|from|during)\s+{_YEAR}\b", re.I)
_NAME = r"[A-Z][\w'’\-]+(?:\s+[A-Z][\w'’\-]+){0,2}"
# "by Yuan", "Yuan et al.", "Yuan's group", "whose family name is Li", "surnamed Li": an author.
# Not "of X" or "from X" alone, which name datasets and models as often ("of Gemma 2B").
_AUTHOR_BY = re.compile(rf"\b(?:by|authored by|written by)\s+(?P<name>{_NAME})(?!\s+or\b)")
_ET_AL = re.compile(rf"\b(?P<name>{_NAME})(?:\s+et al\.?|['’]s\s+(?:group|lab|team|papers?))")
_SURNAME = re.compile(
    r"\b(?:family name|surname|last name)\s+(?:is\s+)?(?P<name>[A-Z][\w'’\-]+)(?!\s+or\b)|\bsurnamed\s+(?P<name2>[A-Z][\w'’\-]+)(?!\s+or\b)"
)


def _venue_filter(text: str, venues: Iterable[str]) -> tuple[str | None, str]:
    """The venue a question names ("at ICML 2025", "COLT papers"), and the text without it.

    Two years of one venue ("AutoML 2023 or AutoML 2024") filter by the venue's name; two
    different venues are no one filter, and stay in the text."""
    bases: dict[str, set[str]] = {}
    for venue in venues:
        base = re.sub(r"\s*\b(19|20)\d\d\b\s*", " ", venue).strip()
        if base:
            bases.setdefault(base, set()).add(venue)
    found: list[tuple[str, re.Match]] = []
    for base in sorted(bases, key=len, reverse=True):
        # Case-sensitive: venue names are written as acronyms ("COLT", "CoRL"), and "www" or "rss"
        # in lower case are words, not venues.
        pattern = rf"(?:\b(?:at|in|from|of|for)\s+(?:the\s+)?)?\b{re.escape(base)}\b(?:['’]?\s*(?P<year>(19|20)?\d\d)\b)?"
        found += [
            (base, m)
            for m in re.finditer(pattern, text)
            if not any(m.start() < o.end() and o.start() < m.end() for _, o in found)
        ]
    if not found or len({base for base, _ in found}) > 1:
        return None, text
    base = found[0][0]
    years = {("20" + m["year"] if len(m["year"]) == 2 else m["year"]) for _, m in found if m["year"]}
    venue = f"{base} {years.pop()}" if len(years) == 1 and len(found) == 1 else base
    for _, match in sorted(found, key=lambda f: -f[1].start()):
        text = text[: match.start()] + " " + text[match.end() :]
    return venue, re.sub(r"\b(or|and)\s+(?=papers?\b|\W|$)", "", text)


def _author_filter(text: str, authors: Iterable[str]) -> tuple[str | None, str]:
    names = [a.casefold() for a in authors]
    for pattern in (_AUTHOR_BY, _ET_AL, _SURNAME):
        for match in pattern.finditer(text):
            name = match.group("name") or match.groupdict().get("name2")
            if not name:
                continue
            wanted = name.casefold()
            if any(re.search(rf"(^|\s){re.escape(wanted)}($|\s)", a) for a in names):
                return name, (text[: match.start()] + " " + text[match.end() :])
    return None, text


def _year_filter(text: str) -> tuple[int | None, int | None, str]:
    for pattern, kind in ((_YEAR_RANGE, "range"), (_YEAR_FROM, "from"), (_YEAR_TO, "to"), (_YEAR_IN, "in")):
        match = pattern.search(text)
        if not match:
            continue
        years = [int(y) for y in match.groups() if y]
        rest = text[: match.start()] + " " + text[match.end() :]
        word = match.group(0).split()[0].casefold()
        if kind == "range":
            return min(years), max(years), rest
        if kind == "from":
            return years[0] + (1 if word == "after" else 0), None, rest
        if kind == "to":
            return None, years[0] - (0 if word in ("until", "through", "up") else 1), rest
        return years[0], years[0], rest
    return None, None, text


def stated_filters(text: str, profile: CorpusProfile) -> tuple[Filters, str]:
    """The filters a question states and the question without them."""
    venue, text = _venue_filter(text, profile.venues)
    author, text = _author_filter(text, profile.authors)
    # A year filters only a corpus that records years (a BEIR corpus does not), and not when the
    # venue named already has one ("ICML 2025").
    dated = profile.years and not (venue and re.search(r"\d{4}$", venue))
    year_min, year_max, text = _year_filter(text) if dated else (None, None, text)
    text = re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    return Filters(venue=venue, author=author, year_min=year_min, year_max=year_max), text
