"""Read a corpus file into `Paper`s, or say which record is bad and how to fix it.

The format follows the file extension; a trailing ``.gz`` is decompressed first, so any format may
be gzipped (``papers.jsonl.gz``). Files must be UTF-8 (a byte-order mark is accepted).

``.txt``, the seed listing, as a paper-search page prints it (``shared/seeds/``)::

    论文检索                                  <- a header line, ignored

    Deep Learning · Attention Mechanisms      <- category
    (blank)
    Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN  <- authors, comma-separated
    (blank)
    In this work, we upgrade the ...          <- abstract, one paragraph
    (blank)
    Theory · Online Learning and Bandits      <- the next paper's category
    ...

  A blank line separates every paragraph, inside a paper as between papers, so papers are read as
  consecutive groups of three paragraphs after the header. There are no titles, venues or years.

``.jsonl``, one JSON object per line, in one of two shapes told apart by their keys:

  - ours: ``id``, ``title``, ``authors`` (a list, or one string separated by "," / " and " / ";"),
    ``abstract``, ``category`` (or ``primary_area``), ``venue``, ``year``, ``url``. Every other
    scalar field goes into ``Paper.extra`` as a string, lists (``keywords``) joined with ", ".
    Without a ``year``, a venue ending in one ("3DV 2025") gives it.
  - BEIR's ``corpus.jsonl``: ``_id``, ``title``, ``text``; ``text`` is the abstract.

``.csv``, with a header row naming the same fields in any case (``text`` may stand for
``abstract``; authors separated by ";" or ",").

``.bib``, BibTeX entries with an ``abstract`` (arXiv, ACL Anthology exports). LaTeX in titles,
names, abstracts and venues becomes Unicode ("M{\\"u}ller, J." -> "J. Müller"); the venue is the
journal or booktitle, the category the primaryClass or keywords, the url the url, else the doi or
the arXiv eprint as a link; the citation key is the id.

Every record gets an id: its own (``id``, ``_id``, the citation key), else `stable_id` of its
title, authors and abstract, so the same record has the same id on every load. Titles and
abstracts have their whitespace collapsed.

A record is reported at the line it starts on. A bad one (no abstract, broken JSON or BibTeX, a
byte that is not UTF-8, ...) raises `RecordError` ("papers.jsonl:17: missing abstract", with a
hint), or with ``skip_invalid=True`` is left out and listed in `LoadResult.skipped`. A repeated id
with the same content (an export that lists a paper twice) is folded into the first, silently; with
other content it is a bad record naming both lines, so a strict load stops and ``skip_invalid``
keeps the first and lists the later one. A file that
cannot be read at all (missing, a directory, an unknown extension, no records) raises
`CorpusError`.

Size limits (`Limits`, from `Settings.limits`; the settings' defaults when none are passed): an
abstract longer than ``max_abstract_tokens`` cl100k tokens is a bad record like any other, found
while the file is read, so it is never half-indexed. An upload (`load_upload`, the app's) is
refused whole, before it is parsed, above ``max_upload_mb`` (a .gz decompressed), and when it
holds more than ``max_upload_records`` records; a file given to `paperchat ingest` is streamed
and has neither cap. An upload's name is never used as a path (`read_upload`).

`read_corpus` reads a file a line at a time, gzipped or not, and hands out each paper as it is
read, so a 100k-paper file is never held whole (BibTeX excepted: its parser takes the whole
text). `load_corpus` collects the same into a `LoadResult`.
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import csv
import gzip
import io
import json
import re
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import groupby
from pathlib import Path
from typing import TypeVar

import bibtexparser
from bibtexparser.middlewares import (
    MergeNameParts,
    NormalizeFieldKeys,
    SeparateCoAuthors,
    SplitNameParts,
    default_parse_stack,
)
from bibtexparser.model import DuplicateBlockKeyBlock, Entry, ParsingFailedBlock
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

from rag.chunking import count_tokens
from rag.errors import CorpusError, RecordError
from rag.records import Limits, LoadResult, Paper, SkippedRecord, normalize_space, stable_id
from rag.settings import Settings

T = TypeVar("T")

__all__ = [
    "count_papers",
    "load_bibtex",
    "load_corpus",
    "load_csv",
    "load_jsonl",
    "load_listing",
    "load_upload",
    "read_corpus",
    "read_upload",
]

_SKIP = "or load with --skip-invalid to skip such records"
_ENCODING_HINT = "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 OLD > NEW)"

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
# For callers that pass no limits: the settings' defaults, as library code reads no environment.
_DEFAULT_LIMITS = Settings.model_construct().limits
_MB = 1 << 20  # as Streamlit's server.maxUploadSize counts a megabyte


class _Invalid(Exception):
    """Why a record cannot become a Paper. A parser yields it for one bad record, and raises it
    when the rest of the file cannot be read. ``line``, if set, is where the problem sits when
    that is not the record's first line."""

    def __init__(self, reason: str, hint: str = f"fix the record, {_SKIP}", line: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint
        self.line = line


_Parsed = tuple[int, "Mapping[str, object] | _Invalid"]


# --- the shared record validation -----------------------------------------------------------


def _paper(fields: Mapping[str, object], limits: Limits) -> Paper:
    """The one place a record of any format becomes a Paper, or is rejected."""
    fields = {str(key).strip().lower(): value for key, value in fields.items()}
    _check_surrogates(fields)
    abstract = normalize_space(_text(fields, "abstract"))
    if not abstract:
        raise _Invalid("missing abstract", f'add an "abstract" field, {_SKIP}')
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
                raise _Invalid(
                    f"{json.dumps(key)} holds \\u{ord(surrogate[0]):04x}, half of a surrogate pair, which is no character",
                    f"write the character itself, or both halves of its escape (\\ud83d\\ude00), {_SKIP}",
                )


def _check_length(abstract: str, limit: int) -> None:
    # A token is at least one byte, so an abstract of no more bytes than the limit is within it
    # untokenized, as nearly every real one is.
    if len(abstract.encode("utf-8")) <= limit:
        return
    tokens = count_tokens(abstract)
    if tokens > limit:
        raise _Invalid(
            f"abstract is {tokens:,} tokens; the limit is {limit:,} (PAPERCHAT_MAX_ABSTRACT_TOKENS)",
            f"give the paper's abstract, not its full text, or raise PAPERCHAT_MAX_ABSTRACT_TOKENS, {_SKIP}",
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
    raise _Invalid(f'"{name}" should be text, not {type(value).__name__}')


def _authors(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        names = value.split(";") if ";" in value else _AUTHOR_SEPARATOR.split(value)
    elif isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = value
    else:
        raise _Invalid('"authors" should be a list of names, or one string of them separated by ","')
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
    raise _Invalid(f"year {value!r} is not a year", f"write the year as digits (2025), {_SKIP}")


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


def _undecodable_reason(fields: object) -> str:
    """Why a record read from a file with bytes that are not UTF-8 is bad, or "" if it is fine."""
    if isinstance(fields, str):
        match = _UNDECODABLE.search(fields)
        return f"not UTF-8: byte 0x{ord(match[0]) - 0xDC00:02x} cannot be decoded" if match else ""
    if isinstance(fields, Mapping):
        fields = [*fields.keys(), *fields.values()]
    if isinstance(fields, list):
        return next(filter(None, map(_undecodable_reason, fields)), "")
    return ""


# --- reading a file record by record -------------------------------------------------------


class _Lines:
    """A file's lines, decoded one at a time, so a large or gzipped file is never held whole.

    Lines are split at "\n" only: str.splitlines() also breaks at U+2028 and other separators
    that JSON strings may hold, which would split records and shift every line number after
    them. A "\r" left by Windows line ends is whitespace to every reader of these lines.
    When skipping, a line that is not UTF-8 is decoded with its bad bytes marked and its number
    noted in `undecodable`, so the record holding it can be skipped and reported there.
    """

    def __init__(self, path: Path, name: str, skip_invalid: bool) -> None:
        self.path, self.name, self.skip_invalid = path, name, skip_invalid
        self.undecodable: list[int] = []

    def __iter__(self) -> Iterator[str]:
        try:
            # Closed where the reading ends, below: the lines are read lazily.
            handle = gzip.open(self.path) if self.path.name.lower().endswith(".gz") else self.path.open("rb")  # noqa: SIM115
        except FileNotFoundError:
            hint = "check the path (a relative one starts at the current directory)"
            raise CorpusError(f"{self.name}: no such file", hint=hint) from None
        except OSError as exc:
            hint = "pass a corpus file you can read"
            raise CorpusError(f"{self.name}: cannot be read ({exc.strerror})", hint=hint) from None
        with handle:
            number = 0
            try:
                for number, raw in enumerate(handle, 1):
                    yield self._decode(number, raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw)
            except (OSError, EOFError, zlib.error) as exc:
                if not self.path.name.lower().endswith(".gz"):
                    hint = "pass a corpus file you can read"
                    raise CorpusError(f"{self.name}:{number + 1}: cannot be read ({exc})", hint=hint) from None
                hint = "recompress it with gzip, or drop the .gz from its name if it is not compressed"
                raise CorpusError(f"{self.name}: not a valid gzip file ({exc})", hint=hint) from None

    def _decode(self, number: int, raw: bytes) -> str:
        raw = raw.removesuffix(b"\n")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not self.skip_invalid:
                reason = f"not UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded"
                raise RecordError(self.name, number, reason, hint=_ENCODING_HINT) from None
        self.undecodable.append(number)
        return raw.decode("utf-8", errors="surrogateescape")


_Parser = Callable[[Iterable[str]], Iterator[_Parsed]]


def _records(path: str | Path, parse: _Parser, skip_invalid: bool, limits: Limits) -> Iterator[Paper | SkippedRecord]:
    name = str(path)
    lines = _Lines(Path(path), name, skip_invalid)
    # id -> its first line and content, packed in one int (the content hash above 32 bits of
    # line): a stream remembers one per paper, and a tuple of two would double that.
    first_seen: dict[str, int] = {}
    found = False
    try:
        for line, record in parse(lines):
            found = True
            try:
                if isinstance(record, _Invalid):
                    raise record
                if lines.undecodable and (reason := _undecodable_reason(record)):
                    # Report the line of the byte, as a strict load does, not the record's first.
                    after = bisect.bisect_left(lines.undecodable, line)
                    at = lines.undecodable[after] if after < len(lines.undecodable) else line
                    raise _Invalid(reason, _ENCODING_HINT, at)
                paper = _paper(record, limits)
                if paper.id in first_seen:
                    content, first = divmod(first_seen[paper.id], 1 << 32)
                    if content == int(paper.content_hash, 16):
                        continue  # the same paper listed again
                    raise _Invalid(
                        f"duplicate id {paper.id} with other content than line {first}",
                        "give one of them another id, or load with --skip-invalid to keep the first",
                    )
            except _Invalid as bad:
                if not skip_invalid:
                    raise RecordError(name, bad.line or line, bad.reason, hint=bad.hint) from None
                yield SkippedRecord(path=name, line=bad.line or line, reason=bad.reason)
                continue
            first_seen[paper.id] = int(paper.content_hash, 16) << 32 | line
            yield paper
    except _Invalid as fatal:
        raise RecordError(name, fatal.line, fatal.reason, hint=fatal.hint) from None
    if not found:
        raise CorpusError(f"{name}: no records found", hint=f"is this the right file? {_FORMATS}")


def _collect(records: Iterable[Paper | SkippedRecord]) -> LoadResult:
    papers: list[Paper] = []
    skipped: list[SkippedRecord] = []
    for record in records:
        if isinstance(record, Paper):
            papers.append(record)
        else:
            skipped.append(record)
    return LoadResult(papers=tuple(papers), skipped=tuple(skipped))


# --- the formats ----------------------------------------------------------------------------


def load_listing(path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> LoadResult:
    """Load a seed listing (``.txt``): a header line, then per paper three paragraphs separated by
    blank lines (category, comma-separated authors, abstract). Papers have no title."""
    return _collect(_records(path, _listing_records, skip_invalid, limits))


def _listing_records(lines: Iterable[str]) -> Iterator[_Parsed]:
    block: list[tuple[int, str]] = []  # the current paper's paragraphs: (first line, text)
    header = True
    for has_text, group in groupby(enumerate(lines, 1), key=lambda item: bool(item[1].strip())):
        if not has_text:
            continue
        run = list(group)
        if header:
            header = False
            continue
        block.append((run[0][0], " ".join(line.strip() for _, line in run)))
        if len(block) == 3:
            (line, category), (_, authors), (_, abstract) = block
            block = []
            yield line, {"category": category, "authors": authors, "abstract": abstract}
    if block:
        yield (
            block[0][0],
            _Invalid(
                f"incomplete paper: {len(block)} of 3 paragraphs (category, authors, abstract)",
                "give every paper a category line, an author line and an abstract, separated by "
                f"blank lines (a missing one shifts every paper after it), {_SKIP}",
            ),
        )


def load_jsonl(path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> LoadResult:
    """Load JSON Lines (``.jsonl``, ``.jsonl.gz``) in our schema or as a BEIR ``corpus.jsonl``."""
    return _collect(_records(path, _jsonl_records, skip_invalid, limits))


def _jsonl_records(lines: Iterable[str]) -> Iterator[_Parsed]:
    hint = f"make the line one JSON object, {_SKIP}"
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, _Invalid(f"invalid JSON: {exc.msg} (column {exc.colno})", hint)
            continue
        except RecursionError:
            yield number, _Invalid("invalid JSON: nested deeper than can be read", hint)
            continue
        except ValueError:  # json.loads builds every int, and int() refuses over 4,300 digits
            yield number, _Invalid("invalid JSON: a number of over 4,300 digits", hint)
            continue
        if isinstance(record, dict):
            yield number, record
        else:
            yield number, _Invalid(f"expected a JSON object, got {type(record).__name__}", hint)


def load_csv(path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> LoadResult:
    """Load a CSV file (``.csv``) whose header row names the fields, in any case."""
    return _collect(_records(path, _csv_records, skip_invalid, limits))


def _csv_records(lines: Iterable[str]) -> Iterator[_Parsed]:
    # The reader is given each line's end back: a quoted cell may hold line breaks.
    reader = csv.reader(line + "\n" for line in lines)
    header: list[str] = []
    end = 0
    try:
        for row in reader:
            # A quoted cell may span lines: the row starts after the previous one ends.
            start, end = end + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if not header:
                header = [cell.strip().lower() for cell in row]
                if not {"abstract", "text"} & set(header):
                    # A byte that is not UTF-8 (kept as a surrogate when skipping) is shown as "\x80":
                    # a message with a surrogate cannot be written out as UTF-8.
                    shown = ", ".join(header).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                    raise _Invalid(
                        f"no abstract column in the header ({shown})",
                        'name the column of abstracts "abstract" (or "text")',
                        start,
                    )
                continue
            if len(row) > len(header):
                yield (
                    start,
                    _Invalid(
                        f"{len(row)} cells but the header has {len(header)}",
                        f"put cells that hold commas in double quotes, {_SKIP}",
                    ),
                )
                continue
            yield start, dict(zip(header, row, strict=False))
    except csv.Error as exc:  # the reader cannot go on past it
        raise _Invalid(f"malformed CSV: {exc}", "check the quotes of this row", end + 1) from None


def load_bibtex(path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> LoadResult:
    """Load BibTeX (``.bib``); every entry needs an ``abstract`` field."""
    return _collect(_records(path, _bibtex_records, skip_invalid, limits))


def _bibtex_parse(text: str) -> bibtexparser.Library:
    # Names are split and reordered ("Last, First" -> "First Last") while their braces still
    # protect "{Barnes and Noble}"; LaTeX is decoded afterwards, field by field (see _latex).
    stack = [
        *default_parse_stack(),
        NormalizeFieldKeys(),
        SeparateCoAuthors(),
        SplitNameParts(),
        MergeNameParts(style="first"),
    ]
    return bibtexparser.parse_string(text, parse_stack=stack)


def _bibtex_records(lines: Iterable[str]) -> Iterator[_Parsed]:
    # bibtexparser parses a whole string: a .bib file is the one format held whole.
    for block in _bibtex_parse("\n".join(lines)).blocks:
        line = (block.start_line or 0) + 1  # bibtexparser counts lines from 0
        if isinstance(block, DuplicateBlockKeyBlock):
            # bibtexparser sets an entry with a taken key aside unparsed; parse it alone so the
            # shared check reports it as a duplicate id, as in every other format.
            block = next(iter(_bibtex_parse(block.raw or "").blocks), block)
        if isinstance(block, ParsingFailedBlock):
            detail = getattr(block.error, "abort_reason", "") or str(block.error)
            yield (
                line,
                _Invalid(
                    f"BibTeX syntax error: {normalize_space(detail)}",
                    f"check that the entry's braces and quotes are balanced, {_SKIP}",
                ),
            )
        elif isinstance(block, Entry):
            yield line, _bibtex_fields(block)


# BibTeX fields that become Paper fields; every other one goes into Paper.extra as it is.
_BIBTEX_MAPPED = frozenset({"author", "title", "abstract", "journal", "booktitle", "year", "url", "primaryclass"})


def _bibtex_fields(entry: Entry) -> dict[str, object]:
    fields = {field.key: field.value for field in entry.fields}
    return {
        **{key: value for key, value in fields.items() if key not in _BIBTEX_MAPPED},
        "id": entry.key,
        "title": _latex(fields.get("title")),
        "authors": [_latex(name) for name in fields.get("author", [])],
        "abstract": _latex(fields.get("abstract")),
        "venue": _latex(fields.get("journal") or fields.get("booktitle")),
        "category": _latex(fields.get("primaryclass") or fields.get("keywords")),
        "year": fields.get("year"),
        "url": fields.get("url") or _doi_url(fields.get("doi")) or _arxiv_url(fields),
    }


def _doi_url(doi: object) -> str:
    if not isinstance(doi, str) or not doi.strip():
        return ""
    return doi.strip() if doi.startswith("http") else f"https://doi.org/{doi.strip()}"


def _arxiv_url(fields: Mapping[str, object]) -> str:
    eprint = fields.get("eprint")
    archive = fields.get("archiveprefix") or fields.get("eprinttype") or "arXiv"
    if not isinstance(eprint, str) or not eprint.strip() or str(archive).lower() != "arxiv":
        return ""
    return f"https://arxiv.org/abs/{eprint.strip()}"


_LATEX_CONTEXT = get_default_latex_context_db()
# As bibtexparser's LatexDecodingMiddleware does: a \url{...} is its address, not "<address>".
_LATEX_CONTEXT.add_context_category("paperchat", prepend=True, macros=[MacroTextSpec("url", simplify_repl="%s")])
_LATEX_TO_TEXT = LatexNodes2Text(latex_context=_LATEX_CONTEXT, math_mode="verbatim")
_BARE_PERCENT = re.compile(r"(?<!\\)%")


def _latex(value: object) -> str:
    """LaTeX to Unicode, for the fields shown as text. Not LatexDecodingMiddleware: that decodes
    every field, cutting urls at their first "%", and skips names once they are split."""
    if not isinstance(value, str):
        return ""
    # In a field a bare % is a percent sign; LaTeX would read it as a comment and drop the rest.
    return _LATEX_TO_TEXT.latex_to_text(_BARE_PERCENT.sub(r"\\%", value))


# --- choosing the format --------------------------------------------------------------------

_PARSERS: dict[str, _Parser] = {
    ".txt": _listing_records,
    ".jsonl": _jsonl_records,
    ".csv": _csv_records,
    ".bib": _bibtex_records,
}
_FORMATS = "Corpus files are .txt (seed listing), .jsonl, .csv or .bib, each optionally gzipped (.jsonl.gz)."


def _parser(path: str | Path) -> _Parser:
    name = str(path)
    if Path(path).is_dir():
        hint = f"pass the corpus files in it instead. {_FORMATS}"
        raise CorpusError(f"{name} is a directory, not a corpus file", hint=hint)
    suffix = Path(name.lower().removesuffix(".gz")).suffix
    parse = _PARSERS.get(suffix)
    if parse is None:
        what = f"unknown corpus format {suffix!r}" if suffix else "no extension to tell its format"
        raise CorpusError(f"{name}: {what}", hint=_FORMATS)
    return parse


def read_corpus(
    path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS
) -> Iterator[Paper | SkippedRecord]:
    """A corpus file's papers and skipped records, in file order, read as they are asked for:
    the file is never held (a .bib excepted), only each paper id read with its content hash, to
    catch a repeated id (about 170 bytes a paper: 35 MB at 200k). Errors as `load_corpus`,
    raised when the reading reaches them."""
    return _records(path, _parser(path), skip_invalid, limits)


def count_papers(path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> int:
    """The papers a corpus file holds, read through once: a strict reading raises at its first
    bad record, before anything of it is written anywhere."""
    return sum(isinstance(record, Paper) for record in read_corpus(path, skip_invalid=skip_invalid, limits=limits))


def load_corpus(path: str | Path, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> LoadResult:
    """Load a corpus file whole, choosing the format by its extension (see the module docstring)."""
    return _collect(read_corpus(path, skip_invalid=skip_invalid, limits=limits))


# --- uploads --------------------------------------------------------------------------------

# The extensions that tell the format (".jsonl.gz").
_EXTENSIONS = re.compile(r"(\.[A-Za-z0-9]{1,10}){1,2}$")


def _copy_name(filename: str) -> str:
    """An upload's name made one safe file name: its last part, with only letters, digits, "_"
    and "-" kept before its extensions (so no "..", "/", NUL or leading dot), and short enough
    for any file system. A question set is named by it."""
    base = re.split(r"[/\\]", filename)[-1]
    extensions = _EXTENSIONS.search(base)
    extension = extensions[0] if extensions else ""
    stem = re.sub(r"[^\w-]", "_", base.removesuffix(extension))[:50]
    return (stem or "upload") + extension


def read_upload(filename: str, data: bytes, load: Callable[[Path], T]) -> T:
    """`load` run on bytes sent as a file of that name (an upload in the chat).

    The name is never used as a path: the copy is written under `_copy_name` in a temporary
    folder, so no name ("../../x.jsonl", "/etc/x", "..", a NUL) can place it anywhere else or
    keep it from being written. Errors name the file as the user knows it, not the copy.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / _copy_name(filename)
        path.write_bytes(data)
        try:
            return load(path)
        except RecordError as exc:
            raise RecordError(filename, exc.line, exc.reason, hint=exc.hint) from None
        except CorpusError as exc:
            raise CorpusError(exc.message.replace(str(path), filename), hint=exc.hint) from None


def load_upload(filename: str, data: bytes, *, skip_invalid: bool = False, limits: Limits = _DEFAULT_LIMITS) -> LoadResult:
    """A corpus sent as bytes (the chat's upload), within the upload limits; skipped records name
    the file too."""
    _check_upload_size(filename, data, limits.max_upload_mb)
    result = read_upload(
        filename,
        data,
        lambda path: _collect(
            _at_most(read_corpus(path, skip_invalid=skip_invalid, limits=limits), filename, limits.max_upload_records)
        ),
    )
    skipped = tuple(s.model_copy(update={"path": filename}) for s in result.skipped)
    return result.model_copy(update={"skipped": skipped})


_UPLOAD_HINT = "ingest it with `paperchat ingest FILE`, which streams a file of any size, or raise"


def _check_upload_size(filename: str, data: bytes, max_mb: int) -> None:
    limit = max_mb * _MB
    if len(data) > limit:
        what = ""
    elif filename.lower().endswith(".gz") and _inflated_size(data, limit) > limit:
        what = " decompressed"  # a few kB of gzip can inflate to gigabytes
    else:
        return
    raise CorpusError(
        f"{filename} is over {max_mb:,} MB{what}, the most an upload may be (PAPERCHAT_MAX_UPLOAD_MB)",
        hint=f"{_UPLOAD_HINT} PAPERCHAT_MAX_UPLOAD_MB",
    )


def _inflated_size(data: bytes, limit: int) -> int:
    """The size of gzipped bytes decompressed, counted up to just past `limit`."""
    size = 0
    # A broken gzip file is reported by the loader, which reads it next.
    with contextlib.suppress(OSError, EOFError, zlib.error), gzip.open(io.BytesIO(data)) as inflating:
        while size <= limit and (block := inflating.read(_MB)):
            size += len(block)
    return size


def _at_most(records: Iterator[T], filename: str, limit: int) -> Iterator[T]:
    """The records, or an error on reading the one past `limit` (not after reading them all)."""
    for count, record in enumerate(records, 1):
        if count > limit:
            raise CorpusError(
                f"{filename} holds over {limit:,} records, the most an upload may hold (PAPERCHAT_MAX_UPLOAD_RECORDS)",
                hint=f"{_UPLOAD_HINT} PAPERCHAT_MAX_UPLOAD_RECORDS",
            )
        yield record
