"""Read a corpus file into `Paper`s, a record at a time, or say which record is bad and how to fix
it. The format follows the file extension (`rag.corpus.formats`); each record becomes a paper in
`rag.corpus.fields`; an upload is read by `rag.corpus.upload`.

A record is reported at the line it starts on. A bad one (no abstract, broken JSON or BibTeX, a
byte that is not UTF-8, ...) raises `RecordError` ("papers.jsonl:17: missing abstract", with a
hint), or with ``skip_invalid=True`` is left out and listed in `LoadResult.skipped`. A repeated id
with the same content (an export that lists a paper twice) is folded into the first, silently; with
other content it is a bad record naming both lines, so a strict load stops and ``skip_invalid``
keeps the first and lists the later one. A file that cannot be read at all (missing, a directory,
an unknown extension, no records) raises `CorpusError`.

Size limits (`Limits`, from `Settings.limits`; the settings' defaults when none are passed): an
abstract longer than ``max_abstract_tokens`` cl100k tokens is a bad record like any other, found
while the file is read, so it is never half-indexed. A file given to `paperchat ingest` is
streamed and has no other cap; an upload has its own (`rag.corpus.upload`).

`read_corpus` reads a file a line at a time, gzipped or not, and hands out each paper as it is
read, so a 100k-paper file is never held whole (BibTeX excepted: its parser takes the whole
text). `load_corpus` collects the same into a `LoadResult`.
"""

from __future__ import annotations

import bisect
import codecs
import gzip
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from rag.corpus.fields import ENCODING_HINT, Invalid, to_paper, undecodable_reason
from rag.corpus.formats import FORMATS, Parser, bibtex_records, csv_records, jsonl_records, listing_records, parser_for
from rag.errors import CorpusError, RecordError
from rag.records import Limits, LoadResult, Paper, SkippedRecord
from rag.settings import Settings

# For callers that pass no limits: the settings' defaults, as library code reads no environment.
DEFAULT_LIMITS = Settings.model_construct().limits


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
                raise RecordError(self.name, number, reason, hint=ENCODING_HINT) from None
        self.undecodable.append(number)
        return raw.decode("utf-8", errors="surrogateescape")


def _records(path: str | Path, parse: Parser, skip_invalid: bool, limits: Limits) -> Iterator[Paper | SkippedRecord]:
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
                if isinstance(record, Invalid):
                    raise record
                if lines.undecodable and (reason := undecodable_reason(record)):
                    # Report the line of the byte, as a strict load does, not the record's first.
                    after = bisect.bisect_left(lines.undecodable, line)
                    at = lines.undecodable[after] if after < len(lines.undecodable) else line
                    raise Invalid(reason, ENCODING_HINT, at)
                paper = to_paper(record, limits)
                if paper.id in first_seen:
                    content, first = divmod(first_seen[paper.id], 1 << 32)
                    if content == int(paper.content_hash, 16):
                        continue  # the same paper listed again
                    raise Invalid(
                        f"duplicate id {paper.id} with other content than line {first}",
                        "give one of them another id, or load with --skip-invalid to keep the first",
                    )
            except Invalid as bad:
                if not skip_invalid:
                    raise RecordError(name, bad.line or line, bad.reason, hint=bad.hint) from None
                yield SkippedRecord(path=name, line=bad.line or line, reason=bad.reason)
                continue
            first_seen[paper.id] = int(paper.content_hash, 16) << 32 | line
            yield paper
    except Invalid as fatal:
        raise RecordError(name, fatal.line, fatal.reason, hint=fatal.hint) from None
    if not found:
        raise CorpusError(f"{name}: no records found", hint=f"is this the right file? {FORMATS}")


def collect(records: Iterable[Paper | SkippedRecord]) -> LoadResult:
    papers: list[Paper] = []
    skipped: list[SkippedRecord] = []
    for record in records:
        if isinstance(record, Paper):
            papers.append(record)
        else:
            skipped.append(record)
    return LoadResult(papers=tuple(papers), skipped=tuple(skipped))


def load_listing(path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> LoadResult:
    """Load a seed listing (``.txt``): a header line, then per paper three paragraphs separated by
    blank lines (category, comma-separated authors, abstract). Papers have no title."""
    return collect(_records(path, listing_records, skip_invalid, limits))


def load_jsonl(path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> LoadResult:
    """Load JSON Lines (``.jsonl``, ``.jsonl.gz``) in our schema or as a BEIR ``corpus.jsonl``."""
    return collect(_records(path, jsonl_records, skip_invalid, limits))


def load_csv(path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> LoadResult:
    """Load a CSV file (``.csv``) whose header row names the fields, in any case."""
    return collect(_records(path, csv_records, skip_invalid, limits))


def load_bibtex(path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> LoadResult:
    """Load BibTeX (``.bib``); every entry needs an ``abstract`` field."""
    return collect(_records(path, bibtex_records, skip_invalid, limits))


def read_corpus(
    path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS
) -> Iterator[Paper | SkippedRecord]:
    """A corpus file's papers and skipped records, in file order, read as they are asked for:
    the file is never held (a .bib excepted), only each paper id read with its content hash, to
    catch a repeated id (about 170 bytes a paper: 35 MB at 200k). Errors as `load_corpus`,
    raised when the reading reaches them."""
    return _records(path, parser_for(path), skip_invalid, limits)


def count_papers(path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> int:
    """The papers a corpus file holds, read through once: a strict reading raises at its first
    bad record, before anything of it is written anywhere."""
    return sum(isinstance(record, Paper) for record in read_corpus(path, skip_invalid=skip_invalid, limits=limits))


def load_corpus(path: str | Path, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> LoadResult:
    """Load a corpus file whole, choosing the format by its extension (see the module docstring)."""
    return collect(read_corpus(path, skip_invalid=skip_invalid, limits=limits))
