"""Exports of a conversation: Markdown for reading, BibTeX for citing. Pure text, no UI.

Corpus text (titles, names, abstracts) is data, never markup: it is escaped for the format it is
written into, so a title like "<script>" or "**bold**" reads as written wherever it is shown.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import count, product
from string import ascii_lowercase

from rag.records import Answer, Paper

__all__ = ["bibtex", "conversation_markdown", "escape_markdown", "venue_year"]

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
    """`text` as Markdown that renders as exactly this text."""
    text = _MARKDOWN_INLINE.sub(r"\\\1", text)
    text = _MARKDOWN_BULLET.sub(r"\1\\\2", text)
    return _MARKDOWN_ORDERED.sub(r"\1\\.", text)


def conversation_markdown(history: Sequence[Answer]) -> str:
    """The conversation as a Markdown document: per turn the question, the answer, its references."""
    parts = ["# PaperChat conversation"]
    for answer in history:
        parts += [f"## Q: {escape_markdown(answer.question)}", answer.text]
        cited = answer.cited_sources
        if cited:
            parts.append("**References**")
            parts += [f"[{s.number}] {_reference(s.paper)}" for s in cited]
    return "\n\n".join(parts) + "\n"


def venue_year(paper: Paper) -> str:
    """"ICML 2025": the venue and the year, the year once (listings put it in the venue name)."""
    if paper.year and not paper.venue.endswith(str(paper.year)):
        return f"{paper.venue} {paper.year}".strip()
    return paper.venue


def _reference(paper: Paper) -> str:
    """"Authors. Title. Venue Year. URL" as Markdown, leaving out what the paper lacks."""
    fields = [", ".join(paper.authors), paper.display_title, venue_year(paper)]
    text = " ".join(_sentence(escape_markdown(f)) for f in fields if f)
    # A URL stays raw so Markdown viewers link it; escaping would break the address.
    return f"{text} {paper.url}".strip()


def _sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!")) else f"{text}."


# --- BibTeX ---------------------------------------------------------------------------------

# One pass, so the braces a replacement brings in are not escaped again. "\{" and "\}" keep a
# title's braces printable; bibtexparser and biber read them, though classic bibtex needs them
# balanced. "~" and "^" would be a space and a math error in LaTeX.
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
# Venues whose papers are journal articles; any other venue is taken as proceedings.
_JOURNAL = re.compile(r"\b(journal|transactions|letters|review|magazine|arxiv)\b", re.IGNORECASE)
# Leading words a citation key skips, as Google Scholar's keys do ("on the ..." -> the next word).
_KEY_SKIP = frozenset("a an the on of in for to towards toward".split())


def _escape_bibtex(text: str) -> str:
    """`text` as a BibTeX field value that LaTeX prints as exactly this text."""
    return _BIBTEX_SPECIAL_RE.sub(lambda m: _BIBTEX_SPECIAL[m.group()], text)


def _ascii_words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", plain)


def _key_base(paper: Paper) -> str:
    """First author's last name + year + first title word: "jin2025moh"."""
    author = paper.authors[0] if paper.authors else ""
    # "Last, First" names the family first; "First Last" names it last.
    family = author.split(",")[0] if "," in author else (author.split() or [""])[-1]
    last_name = "".join(_ascii_words(family))
    title_words = [w for w in _ascii_words(paper.title) if w not in _KEY_SKIP] or _ascii_words(paper.title)
    return f"{last_name}{paper.year or ''}{title_words[0] if title_words else ''}" or "paper"


def _suffixes() -> Iterator[str]:
    for length in count(1):
        for letters in product(ascii_lowercase, repeat=length):
            yield "".join(letters)


def _citation_keys(papers: Sequence[Paper]) -> list[str]:
    """One key per paper, in order; papers sharing a key get a, b, ... in order ("jin2025moha")."""
    bases = [_key_base(p) for p in papers]
    shared = {base for base, n in Counter(bases).items() if n > 1}
    taken = {base for base in bases if base not in shared}
    keys = []
    for base in bases:
        if base in shared:
            # A suffixed key may not land on another paper's own key ("x2025moh" + "a").
            base = next(base + s for s in _suffixes() if base + s not in taken)
            taken.add(base)
        keys.append(base)
    return keys


def _entry(paper: Paper, key: str) -> str:
    journal = bool(paper.venue) and _JOURNAL.search(paper.venue) is not None
    kind = "article" if journal else "inproceedings" if paper.venue else "misc"
    fields = [
        # Double braces keep the title's capitals ("MoH", "LoRA") from being lowercased by styles.
        ("title", "{" + _escape_bibtex(paper.title) + "}" if paper.title else ""),
        ("author", " and ".join(_escape_bibtex(a) for a in paper.authors)),
        ("year", str(paper.year or "")),
        ("journal" if journal else "booktitle", _escape_bibtex(paper.venue)),
        # Left raw: biblatex and the url package read the address verbatim.
        ("url", paper.url),
        ("abstract", _escape_bibtex(paper.abstract)),
    ]
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields if value)
    return f"@{kind}{{{key},\n{body}\n}}"


def bibtex(papers: Iterable[Paper]) -> str:
    """One BibTeX entry per paper (repeats of a paper id are left out), in order."""
    unique: dict[str, Paper] = {}
    for paper in papers:
        unique.setdefault(paper.id, paper)
    keys = _citation_keys(list(unique.values()))
    entries = [_entry(p, k) for p, k in zip(unique.values(), keys, strict=True)]
    return "\n\n".join(entries) + "\n" if entries else ""
