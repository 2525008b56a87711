"""Exports of a conversation: Markdown for reading, BibTeX for citing. Pure text, no UI.

Corpus text (titles, names, abstracts) is data, never markup: `rag.markup` escapes it for the
format it is written into, LaTeX included (plain Unicode in Markdown, LaTeX kept in BibTeX).
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import count, product
from string import ascii_lowercase

from rag.answering.answerability import grade_label
from rag.answering.forms.comparison import table_plain_rows
from rag.answering.research import NOT_IN_ABSTRACT
from rag.markup import csv_cell, escape_markdown, to_bibtex, to_plain
from rag.records import Answer, CellGrade, ComparisonTable, Paper, ResearchCell, ResearchTable

__all__ = [
    "bibtex",
    "conversation_bibtex",
    "conversation_markdown",
    "research_csv",
    "research_markdown",
    "scope_items",
    "table_csv",
    "table_markdown_text",
    "venue_year",
]


def conversation_markdown(history: Sequence[Answer], *, exported: str = "") -> str:
    """The conversation as a Markdown document: when it was exported, then per turn the question,
    its scope (searched for, corpus, filters, backend, date), the answer, what it lacks, its
    references, the closest papers of a decline, and the papers a clarification offers."""
    parts = ["# PaperChat conversation"]
    if exported:
        parts.append(f"*Exported {escape_markdown(exported)}*")
    for answer in history:
        # A heading is one line; a question typed with line breaks is still one question.
        parts.append(f"## Q: {escape_markdown(' '.join(answer.question.split()))}")
        if scope := scope_items(answer):
            parts.append("*" + escape_markdown(" · ".join(scope)) + "*")
        if answer.grade is not None:
            parts.append(f"*Grade: {grade_label(answer.grade, answer.language)}*")
        if answer.note:
            # What no abstract holds, before what they say (as the app and the CLI show it).
            parts.append(f"*{answer.note}*")
        parts.append(answer.text)
        if answer.cut_off:
            parts.append(f"**Answer cut off:** {escape_markdown(answer.cut_off)}")
        cited = answer.cited_sources
        if cited:
            parts.append("**References**")
            parts += [f"[{s.number}] {_reference(s.paper)}" for s in cited]
        if answer.closest:
            parts.append("**Closest papers (not cited)**")
            parts += [f"- {_reference(s.paper)}" for s in answer.closest]
        if answer.choices:
            parts.append("**The papers it may mean**")
            parts += [f"{s.number}. {_reference(s.paper)}" for s in answer.choices]
    return "\n\n".join(parts) + "\n"


def scope_items(answer: Answer) -> list[str]:
    """What a turn was asked of, as plain text: the rewritten question when it differs, the
    corpus, the filters, the backend and the date."""
    items = []
    if answer.standalone_question != answer.question:
        items.append(f"searched for: {answer.standalone_question}")
    if answer.corpus:
        items.append(f"corpus: {answer.corpus}")
    if answer.filters.active:
        items.append(f"filters: {answer.filters.description}")
    if answer.answered_by:
        items.append(f"answered by: {answer.answered_by}")
    if answer.created:
        items.append(f"on {answer.created}")
    return items


def table_csv(table: ComparisonTable) -> str:
    """A comparison table as CSV: a row per paper, a column per aspect, quotes in plain text."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([csv_cell(c) for c in row] for row in table_plain_rows(table))
    return buffer.getvalue()


def research_csv(table: ResearchTable) -> str:
    """The research table as CSV: a row per paper, a column per question, each cell its quote
    (plain text; "(closest sentence)" before one not sure to answer) or "not in the abstract"."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(c) for c in ("paper_id", "title", *table.columns)])
    for row in table.rows:
        writer.writerow(
            [
                csv_cell(row.paper_id),
                csv_cell(to_plain(row.title)),
                *(csv_cell(_closest(c) + to_plain(c.quote)) if c.quote else NOT_IN_ABSTRACT for c in row.cells),
            ]
        )
    return buffer.getvalue()


def _closest(cell: ResearchCell) -> str:
    """What goes before a quoted cell that is only the paper's closest sentence."""
    return f"({CellGrade.CLOSEST.value}) " if cell.grade == CellGrade.CLOSEST else ""


def research_markdown(table: ResearchTable, papers: Sequence[Paper]) -> str:
    """The research table as a Markdown document: each cell its quote cited [n] (after its
    paraphrase, if a model wrote one) or "not in the abstract", then the references, [n] being
    the n-th row's paper."""

    def cell(c: ResearchCell, number: int) -> str:
        if c.quote is None:
            return f"*{NOT_IN_ABSTRACT}*"
        short = f"{escape_markdown(to_plain(c.paraphrase))}: " if c.paraphrase else ""
        closest = f"*{_closest(c).strip()}* " if _closest(c) else ""
        return f"{closest}{short}“{escape_markdown(to_plain(c.quote))}” [{number}]"

    header = ["Paper", *(escape_markdown(c) for c in table.columns)]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for number, row in enumerate(table.rows, 1):
        title = escape_markdown(to_plain(row.title))
        lines.append(f"| {title} [{number}] | " + " | ".join(cell(c, number) for c in row.cells) + " |")
    lines += ["", "## References", ""]
    lines += [f"[{n}] {_reference(paper)}" for n, paper in enumerate(papers, 1)]
    return "\n".join(lines) + "\n"


def table_markdown_text(table: ComparisonTable) -> str:
    """A comparison table as a Markdown document's table."""
    rows = table_plain_rows(table)
    cells = [[escape_markdown(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(cells[0]) + " |", "|---" * len(cells[0]) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines) + "\n"


def venue_year(paper: Paper) -> str:
    """ "ICML 2025": the venue and the year, the year once (listings put it in the venue name)."""
    if paper.year and not paper.venue.endswith(str(paper.year)):
        return f"{paper.venue} {paper.year}".strip()
    return paper.venue


def _reference(paper: Paper) -> str:
    """ "Authors. Title. Venue Year. URL" as Markdown, leaving out what the paper lacks."""
    fields = [", ".join(paper.authors), to_plain(paper.display_title), venue_year(paper)]
    text = " ".join(_sentence(escape_markdown(f)) for f in fields if f)
    # A URL stays raw so Markdown viewers link it; escaping would break the address.
    return f"{text} {paper.url}".strip()


def _sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!")) else f"{text}."


# --- BibTeX ---------------------------------------------------------------------------------

# Venues whose papers are journal articles; any other venue is taken as proceedings.
_JOURNAL = re.compile(r"\b(journal|transactions|letters|review|magazine|arxiv)\b", re.IGNORECASE)
# Leading words a citation key skips, as Google Scholar's keys do ("on the ..." -> the next word).
_KEY_SKIP = frozenset(["a", "an", "the", "on", "of", "in", "for", "to", "towards", "toward"])


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
        ("title", "{" + to_bibtex(paper.title) + "}" if paper.title else ""),
        ("author", " and ".join(to_bibtex(a) for a in paper.authors)),
        ("year", str(paper.year or "")),
        ("journal" if journal else "booktitle", to_bibtex(paper.venue)),
        # Left raw: biblatex and the url package read the address verbatim.
        ("url", paper.url),
        ("abstract", to_bibtex(paper.abstract)),
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


def conversation_bibtex(history: Sequence[Answer], *, exported: str = "") -> str:
    """The papers the conversation cited, as BibTeX, under %-comments that say when it was
    exported and, per turn, the question and its scope (which BibTeX tools skip)."""
    cited = [s.paper for answer in history for s in answer.cited_sources]
    if not cited:
        return ""
    lines = ["% PaperChat conversation" + (f", exported {exported}" if exported else "")]
    for answer in history:
        # One line each: a comment ends at the line's end, and a question may hold newlines.
        lines.append("% Q: " + " ".join(to_plain(answer.question).split()))
        lines.append("%    " + " · ".join(" ".join(item.split()) for item in scope_items(answer)))
    return "\n".join(lines) + "\n\n" + bibtex(cited)
