"""Comparison answers ("compare X and Y", "a table of the methods for Z"): papers x aspects.

The compared papers are the ones the question names, else the best-covered retrieved papers
(as for a collection). For each paper and aspect (problem, method, data, reported result) the
cell is the sentence that best plays that role, quoted, clipped and cited, or "not reported in
the abstract" when no sentence plays it. A sentence fills one cell of its row at most.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rag.answering.evidence import Evidence, PaperEvidence
from rag.answering.forms.writing import label, plain_sentence, quote
from rag.answering.roles import Role
from rag.markup import escape_markdown
from rag.records import CollectionMatch, ComparisonTable, TableCell, TableRow

__all__ = ["ASPECTS", "NOT_REPORTED", "build_table", "compared_papers", "table_markdown", "table_plain_rows", "write_table"]

ASPECTS: dict[Role, str] = {
    Role.PROBLEM: "Problem",
    Role.METHOD: "Method",
    Role.DATA: "Data",
    Role.RESULT: "Reported result",
}
NOT_REPORTED = "not reported in the abstract"
# A sentence plays a role when its cue score reaches this (rag.answering.roles).
_ROLE_BAR = 0.35
_CELL_WORDS = 28
MAX_PAPERS = 4


def compared_papers(evidence: Evidence, matches: Sequence[CollectionMatch]) -> list[PaperEvidence]:
    """The named papers, in the question's order, or else the collection matches."""
    by_id = {p.paper.id: p for p in evidence.papers}
    named = [by_id[i] for i in evidence.analysis.named_papers if i in by_id]
    if len(named) >= 2:
        return named[:MAX_PAPERS]
    by_number = {p.number: p for p in evidence.papers}
    chosen = named + [by_number[m.number] for m in matches if by_number[m.number] not in named]
    return chosen[:MAX_PAPERS] or list(evidence.papers[:2])


def _row(paper: PaperEvidence) -> TableRow:
    """Each aspect's sentence: the strongest (sentence, role) pair first, a sentence used once."""
    pairs = sorted(
        ((s.roles.get(role, 0.0), -s.position, role, s) for s in paper.quotable() for role in ASPECTS),
        key=lambda x: (-x[0], -x[1]),
    )
    chosen: dict[Role, str] = {}
    used: set[int] = set()
    for strength, _, role, sentence in pairs:
        if strength < _ROLE_BAR:
            break
        if role not in chosen and sentence.position not in used:
            chosen[role] = sentence.text
            used.add(sentence.position)
    return TableRow(
        number=paper.number, paper=paper.paper.short_name, cells=tuple(TableCell(text=chosen.get(role)) for role in ASPECTS)
    )


def build_table(papers: Sequence[PaperEvidence]) -> ComparisonTable:
    return ComparisonTable(aspects=tuple(ASPECTS.values()), rows=tuple(_row(p) for p in papers))


def _cell(cell: TableCell, number: int) -> str:
    if cell.text is None:
        return f"*{NOT_REPORTED}*"
    return quote(cell.text, number, words=_CELL_WORDS).replace("|", "\\|")


def table_markdown(table: ComparisonTable, papers: dict[int, str]) -> Iterator[str]:
    """The table as Markdown, a row per paper; `papers` maps numbers to bold labels."""
    yield "| Paper | " + " | ".join(table.aspects) + " |\n"
    yield "|---" * (len(table.aspects) + 1) + "|\n"
    for row in table.rows:
        yield f"| {papers[row.number]} | " + " | ".join(_cell(c, row.number) for c in row.cells) + " |\n"


def table_plain_rows(table: ComparisonTable) -> list[list[str]]:
    """The table as rows of plain text (header first), for CSV and the terminal."""
    rows = [["Paper", *table.aspects]]
    for row in table.rows:
        rows.append(
            [
                f"{row.paper} [{row.number}]",
                *(plain_sentence(c.text) + f" [{row.number}]" if c.text else NOT_REPORTED for c in row.cells),
            ]
        )
    return rows


def write_table(evidence: Evidence, table: ComparisonTable) -> Iterator[str]:
    papers = {p.number: label(p.paper) for p in evidence.papers}
    names = ", ".join(escape_markdown(r.paper) for r in table.rows)
    yield f"Comparing {names}, from their abstracts:\n\n"
    yield from table_markdown(table, papers)
