"""The corpus formats, each read record by record into fields for `rag.corpus.fields.to_paper`.

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
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import groupby
from pathlib import Path

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

from rag.corpus.fields import SKIP, Invalid, Parsed
from rag.errors import CorpusError
from rag.records import normalize_space

Parser = Callable[[Iterable[str]], Iterator[Parsed]]


def listing_records(lines: Iterable[str]) -> Iterator[Parsed]:
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
            Invalid(
                f"incomplete paper: {len(block)} of 3 paragraphs (category, authors, abstract)",
                "give every paper a category line, an author line and an abstract, separated by "
                f"blank lines (a missing one shifts every paper after it), {SKIP}",
            ),
        )


def jsonl_records(lines: Iterable[str]) -> Iterator[Parsed]:
    hint = f"make the line one JSON object, {SKIP}"
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, Invalid(f"invalid JSON: {exc.msg} (column {exc.colno})", hint)
            continue
        except RecursionError:
            yield number, Invalid("invalid JSON: nested deeper than can be read", hint)
            continue
        except ValueError:  # json.loads builds every int, and int() refuses over 4,300 digits
            yield number, Invalid("invalid JSON: a number of over 4,300 digits", hint)
            continue
        if isinstance(record, dict):
            yield number, record
        else:
            yield number, Invalid(f"expected a JSON object, got {type(record).__name__}", hint)


def csv_records(lines: Iterable[str]) -> Iterator[Parsed]:
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
                    raise Invalid(
                        f"no abstract column in the header ({shown})",
                        'name the column of abstracts "abstract" (or "text")',
                        start,
                    )
                continue
            if len(row) > len(header):
                yield (
                    start,
                    Invalid(
                        f"{len(row)} cells but the header has {len(header)}",
                        f"put cells that hold commas in double quotes, {SKIP}",
                    ),
                )
                continue
            yield start, dict(zip(header, row, strict=False))
    except csv.Error as exc:  # the reader cannot go on past it
        raise Invalid(f"malformed CSV: {exc}", "check the quotes of this row", end + 1) from None


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


def bibtex_records(lines: Iterable[str]) -> Iterator[Parsed]:
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
                Invalid(
                    f"BibTeX syntax error: {normalize_space(detail)}",
                    f"check that the entry's braces and quotes are balanced, {SKIP}",
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


_PARSERS: dict[str, Parser] = {
    ".txt": listing_records,
    ".jsonl": jsonl_records,
    ".csv": csv_records,
    ".bib": bibtex_records,
}
FORMATS = "Corpus files are .txt (seed listing), .jsonl, .csv or .bib, each optionally gzipped (.jsonl.gz)."


def parser_for(path: str | Path) -> Parser:
    name = str(path)
    if Path(path).is_dir():
        hint = f"pass the corpus files in it instead. {FORMATS}"
        raise CorpusError(f"{name} is a directory, not a corpus file", hint=hint)
    suffix = Path(name.lower().removesuffix(".gz")).suffix
    parse = _PARSERS.get(suffix)
    if parse is None:
        what = f"unknown corpus format {suffix!r}" if suffix else "no extension to tell its format"
        raise CorpusError(f"{name}: {what}", hint=FORMATS)
    return parse
