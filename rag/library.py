"""The library's list of papers: a row per paper for the app's table, and the rows a view shows
(the papers the filters admit, narrowed by words of their titles and authors). Pure: the app's
Library page draws it, `rag.index.store.Index.matching` says which papers the filters admit."""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from rag.records import Paper

__all__ = ["LibraryRow", "library_rows", "narrowed"]


def _folded(text: str) -> str:
    # Any case and without accents: a name is typed as "Muller" as often as "Müller".
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@dataclass(frozen=True)
class LibraryRow:
    """A paper as the table lists it, in plain text (its title's LaTeX as Unicode)."""

    paper_id: str
    title: str
    authors: str
    category: str
    venue: str
    year: int | None
    # The title and the authors folded, where narrowing words are looked for: made once with the
    # row rather than at every keystroke over a library of 14k papers.
    words: str


def library_rows(papers: Iterable[Paper]) -> list[LibraryRow]:
    """A row per paper, in the order given."""
    rows = []
    for paper in papers:
        title, authors = paper.display_title, ", ".join(paper.authors)
        rows.append(LibraryRow(paper.id, title, authors, paper.category, paper.venue, paper.year, _folded(f"{title}\n{authors}")))
    return rows


def narrowed(rows: Sequence[LibraryRow], words: str, admitted: Collection[str] | None = None) -> list[LibraryRow]:
    """The rows whose title or authors hold every one of `words` (any case, accents or not), of
    the papers in `admitted` (all of them if None), in order."""
    needles = _folded(words).split()
    return [r for r in rows if (admitted is None or r.paper_id in admitted) and all(n in r.words for n in needles)]
