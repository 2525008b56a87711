"""One record of any format made a `Paper`, or rejected with the reason and what to do.

Every record gets an id: its own (``id``, ``_id``, the citation key), else `stable_id` of its
title, authors and abstract, so the same record has the same id on every load. Titles and
abstracts have their whitespace collapsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from rag.corpus.tokens import count_tokens
from rag.records import Limits, Paper, normalize_space, stable_id

SKIP = "or load with --skip-invalid to skip such records"
ENCODING_HINT = "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 OLD > NEW)"

# A field's possible names, preferred first; the first non-empty one is used.
_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "_id"),
    "title": ("title",),
    "authors": ("authors", "author"),
    "abstract": ("abstract", "text"),
    "category": ("category", "primary_area"),
    "venue": ("venue",),
    "year": ("year",),
    "url": ("url",),
}
_MAPPED = frozenset(name for names in _ALIASES.values() for name in names)
_SCALAR = (str, int, float, bool)
_AUTHOR_SEPARATOR = re.compile(r"\s*,\s*|\s+and\s+")
_VENUE_YEAR = re.compile(r"(?<!\d)(\d{4})$")
# errors="surrogateescape" turns each undecodable byte into one of these code points.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
# A JSON escape can spell half of a UTF-16 surrogate pair alone ("\udc80"): no character, and
# not text anything that writes UTF-8 (the id hash, the index, an export) can take.
_SURROGATE = re.compile("[\ud800-\udfff]")


class Invalid(Exception):
    """Why a record cannot become a Paper. A parser yields it for one bad record, and raises it
    when the rest of the file cannot be read. ``line``, if set, is where the problem sits when
    that is not the record's first line."""

    def __init__(self, reason: str, hint: str = f"fix the record, {SKIP}", line: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.line = line


Parsed = tuple[int, "Mapping[str, object] | Invalid"]


def to_paper(fields: Mapping[str, object], limits: Limits) -> Paper:
    """The one place a record of any format becomes a Paper, or is rejected."""
    fields = {str(key).strip().lower(): value for key, value in fields.items()}
    _check_surrogates(fields)
    abstract = normalize_space(_text(fields, "abstract"))
    if not abstract:
        raise Invalid("missing abstract", f'add an "abstract" field, {SKIP}')
    _check_length(abstract, limits.max_abstract_tokens)
    title = normalize_space(_text(fields, "title"))
    authors = _authors(_pick(fields, "authors"))
    venue = normalize_space(_text(fields, "venue"))
    return Paper(
        id=_text(fields, "id").strip() or stable_id(title, "; ".join(authors), abstract),
        title=title,
        authors=authors,
        abstract=abstract,
        category=normalize_space(_text(fields, "category")),
        venue=venue,
        year=_year(_pick(fields, "year"), venue),
        url=_text(fields, "url").strip(),
        extra=_extra(fields),
    )


def _check_surrogates(fields: Mapping[str, object]) -> None:
    """Refuse a lone surrogate in a name or in a text a Paper takes (nested objects it drops)."""
    for key, value in fields.items():
        for text in (key, *(value if isinstance(value, list) else [value])):
            if isinstance(text, str) and (surrogate := _SURROGATE.search(text)):
                raise Invalid(
                    f"{json.dumps(key)} holds \\u{ord(surrogate[0]):04x}, half of a surrogate pair, which is no character",
                    f"write the character itself, or both halves of its escape (\\ud83d\\ude00), {SKIP}",
                )


def _check_length(abstract: str, limit: int) -> None:
    # A token is at least one byte, so an abstract of no more bytes than the limit is within it
    # untokenized, as nearly every real one is.
    if len(abstract.encode("utf-8")) <= limit:
        return
    tokens = count_tokens(abstract)
    if tokens > limit:
        raise Invalid(
            f"abstract is {tokens:,} tokens; the limit is {limit:,} (PAPERCHAT_MAX_ABSTRACT_TOKENS)",
            f"give the paper's abstract, not its full text, or raise PAPERCHAT_MAX_ABSTRACT_TOKENS, {SKIP}",
        )


def _blank(value: object) -> bool:
    return value is None or value == [] or (isinstance(value, str) and not value.strip())


def _pick(fields: Mapping[str, object], name: str) -> object:
    return next((fields[key] for key in _ALIASES[name] if not _blank(fields.get(key))), None)


def _text(fields: Mapping[str, object], name: str) -> str:
    value = _pick(fields, name)
    if value is None:
        return ""
    if isinstance(value, _SCALAR):
        return str(value)
    raise Invalid(f'"{name}" should be text, not {type(value).__name__}')


def _authors(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        names = value.split(";") if ";" in value else _AUTHOR_SEPARATOR.split(value)
    elif isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = value
    else:
        raise Invalid('"authors" should be a list of names, or one string of them separated by ","')
    return tuple(filter(None, map(normalize_space, names)))


def _year(value: object, venue: str) -> int | None:
    if value is None:
        match = _VENUE_YEAR.search(venue)
        return int(match[1]) if match else None
    # Four digits at most: more are no year, a store could not hold them, and int() refuses a
    # string of over 4,300.
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 9999:
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]{1,4}\s*", value):
        return int(value)
    raise Invalid(f"year {value!r} is not a year", f"write the year as digits (2025), {SKIP}")


def _extra(fields: Mapping[str, object]) -> dict[str, str]:
    extra = {}
    for key, value in fields.items():
        if key in _MAPPED:
            continue
        if isinstance(value, list) and all(item is None or isinstance(item, _SCALAR) for item in value):
            text = ", ".join(str(item) for item in value if not _blank(item))
        elif isinstance(value, _SCALAR):
            text = str(value)
        else:  # nested objects (a matcher's diagnostics, BEIR's metadata) have no flat form
            continue
        if text := normalize_space(text):
            extra[key] = text
    return extra


def undecodable_reason(fields: object) -> str:
    """Why a record read from a file with bytes that are not UTF-8 is bad, or "" if it is fine."""
    if isinstance(fields, str):
        match = _UNDECODABLE.search(fields)
        return f"not UTF-8: byte 0x{ord(match[0]) - 0xDC00:02x} cannot be decoded" if match else ""
    if isinstance(fields, Mapping):
        fields = [*fields.keys(), *fields.values()]
    if isinstance(fields, list):
        return next(filter(None, map(undecodable_reason, fields)), "")
    return ""
