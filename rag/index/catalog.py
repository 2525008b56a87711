"""A generation's catalog: what the index knows of its papers without reading the paper table.

Per paper: its facets (category, venue, authors, year) for filters and the sidebar's counts,
the id of its first chunk (which holds the paper record, so papers are fetched by id) and the
names it coins; over all papers, the BM25 index and the corpus profile that question analysis
reads. It is saved in one folder per store generation and read back a file at a time, as a
question needs it.

An ingest or a removal makes the next generation's catalog from the last one and the papers it
wrote (`Catalog.updated`), so adding papers to a large index tokenizes only them. An ingest
gathers what it adds a batch at a time (`Additions`): only what the next catalog keeps of each
paper, its terms as ids and counts, not the paper's `Entry` until the ingest ends. Rebuilt from
the paper table instead, a catalog of 100k papers takes about a minute on two cores (reading the
table 35 s, tokenizing 8 s, BM25 7 s, the names 11 s); that is left for an index with no
catalog saved, or one written by another process meanwhile.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.index.lexical import LexicalIndex, paper_terms, term_ids
from rag.naming import method_name
from rag.records import CorpusProfile, Paper

# category, venue, authors, year
Facets = tuple


@dataclass(frozen=True)
class Entry:
    """What the catalog keeps of one paper, made when the paper is written."""

    paper_id: str
    facets: Facets
    first_chunk: str
    names: tuple[str, ...]
    terms: tuple[str, ...]


def entry(paper: Paper, first_chunk: str) -> Entry:
    # Only coined names ("MoH", "Flat-LoRA", "ActionPiece"), from the title or the method the
    # abstract introduces: a title used as a name is a phrase of words.
    names = tuple(
        dict.fromkeys(
            name
            for name in (paper.short_name, method_name(paper.abstract))
            if name and name != paper.title and len(name.split()) <= 3 and "et al." not in name and " and " not in name
        )
    )
    # Interned: a catalog made from the paper table holds every paper's terms until it is made.
    terms = tuple(sys.intern(t) for t in paper_terms(paper.title, paper.abstract))
    return Entry(paper.id, (paper.category, paper.venue, list(paper.authors), paper.year), first_chunk, names, terms)


class Additions:
    """The papers an ingest adds to a catalog, gathered a batch at a time as they are written
    (`add`), for `Catalog.updated`. Of each paper it keeps only what the next catalog keeps
    (facets, first chunk, names) and its terms as the ids and counts the BM25 index is made of
    (`rag.index.lexical.term_ids`, 8 bytes a distinct term); not its `Entry` (the object, and its
    terms as a tuple of strings) until the ingest ends. A paper added again keeps its place and
    takes its new version, as in a dict."""

    def __init__(self, vocabulary: dict[str, int]) -> None:
        self.vocabulary = dict(vocabulary)  # the catalog's, extended with the new papers' terms
        self.facets: dict[str, Facets] = {}
        self.first_chunks: dict[str, str] = {}
        self.names: dict[str, tuple[str, ...]] = {}
        self._terms: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._again: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # papers added twice: the later terms

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self.facets

    def add(self, entries: Iterable[Entry]) -> None:
        latest = {e.paper_id: e for e in entries}
        terms, counts, per_paper = term_ids([e.terms for e in latest.values()], self.vocabulary)
        again = np.fromiter((pid in self.facets for pid in latest), dtype=bool, count=len(latest))
        if again.any():
            ends = np.cumsum(per_paper)
            starts = ends - per_paper
            ids = list(latest)
            for row in np.flatnonzero(again):
                span = slice(starts[row], ends[row])
                self._again[ids[row]] = (terms[span].copy(), counts[span].copy())
            kept = np.repeat(~again, per_paper)
            terms, counts, per_paper = terms[kept], counts[kept], per_paper[~again]
        self._terms.append((terms, counts, per_paper))
        for e in latest.values():
            self.facets[e.paper_id] = e.facets
            self.first_chunks[e.paper_id] = e.first_chunk
            self.names[e.paper_id] = e.names

    def term_ids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The papers' terms as `rag.index.lexical.term_ids` gives them, in the order of `facets`."""
        parts = [(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64)), *self._terms]
        terms, counts, per_paper = (np.concatenate([part[i] for part in parts]) for i in range(3))
        self._terms = [(terms, counts, per_paper)]
        if not self._again:
            return terms, counts, per_paper
        ends = np.cumsum(per_paper)
        spans = [(terms[e - n : e], counts[e - n : e]) for e, n in zip(ends, per_paper, strict=True)]
        for row, paper_id in enumerate(self.facets):
            if paper_id in self._again:
                spans[row] = self._again[paper_id]
        per_paper = np.fromiter((len(t) for t, _ in spans), dtype=np.int64, count=len(spans))
        terms = np.concatenate([np.zeros(0, np.int32), *(t for t, _ in spans)])
        counts = np.concatenate([np.zeros(0, np.int32), *(c for _, c in spans)])
        return terms, counts, per_paper


def _profile(lexical: LexicalIndex, facets: dict[str, Facets], names: dict[str, tuple[str, ...]]) -> CorpusProfile:
    coined: dict[str, str] = {}
    for paper_id, paper_names in names.items():
        for name in paper_names:
            coined.setdefault(name, paper_id)
    values = facets.values()
    return CorpusProfile(
        papers=len(facets),
        document_frequency=lexical.document_frequency(),
        venues=tuple(sorted({venue for _, venue, _, _ in values if venue})),
        authors=tuple(sorted({a for _, _, authors, _ in values for a in authors})),
        categories=tuple(sorted({category for category, _, _, _ in values if category})),
        years=tuple(sorted({year for _, _, _, year in values if year})),
        names=coined,
    )


# The profile follows from the others, and is saved anyway: a question reads it alone, where
# making it would read every paper's facets and names.
_FILES = ("profile", "facets", "first_chunks", "names")


class Catalog:
    """One generation's catalog. Each piece is read from `folder` when first asked for; a piece
    that is not saved there, or is damaged, has the whole catalog built again from `source` (every
    paper's entry, from the paper table) and saved."""

    def __init__(self, folder: Path | None, source: Callable[[], Iterable[Entry]]) -> None:
        self.folder = folder
        self._source = source
        self._pieces: dict[str, object] = {}
        self._places: dict[tuple, list[str]] | None = None

    @classmethod
    def empty(cls) -> Catalog:
        return cls._made(LexicalIndex.empty(), {}, {}, {})

    @classmethod
    def _made(cls, lexical, facets, first_chunks, names) -> Catalog:
        made = cls(None, list)
        made._pieces = {
            "lexical": lexical,
            "facets": facets,
            "first_chunks": first_chunks,
            "names": names,
            "profile": _profile(lexical, facets, names),
        }
        return made

    @property
    def lexical(self) -> LexicalIndex:
        return self._piece("lexical")

    @property
    def profile(self) -> CorpusProfile:
        return self._piece("profile")

    @property
    def facets(self) -> dict[str, Facets]:
        """Each paper's (category, venue, authors, year), in the catalog's paper order."""
        return self._piece("facets")

    @property
    def first_chunks(self) -> dict[str, str]:
        return self._piece("first_chunks")

    @property
    def places(self) -> dict[tuple, list[str]]:
        """The papers at each (category, venue, year): a filter tests a few hundred places, not
        every paper."""
        if self._places is None:
            self._places = {}
            for paper_id, (category, venue, _, year) in self.facets.items():
                self._places.setdefault((category, venue, year), []).append(paper_id)
        return self._places

    def updated(self, removed: Collection[str], entries: Sequence[Entry] | Additions) -> Catalog:
        """The next generation's catalog: this one without the `removed` papers, and with
        `entries` (new papers, and new versions of papers it has, or an ingest's `Additions`)
        added after the rest."""
        if isinstance(entries, Additions):
            added = entries
        else:
            added = Additions(self.lexical.vocabulary)
            added.add(entries)
        gone = set(removed) | set(added.facets)
        lexical = self.lexical.extended(gone, list(added.facets), added.term_ids(), added.vocabulary)

        def merged(old: dict, new: dict) -> dict:
            return {k: v for k, v in old.items() if k not in gone} | new

        return self._made(
            lexical,
            merged(self.facets, added.facets),
            merged(self.first_chunks, added.first_chunks),
            merged(self._piece("names"), added.names),
        )

    def complete(self) -> Catalog:
        """This catalog with every piece in memory, ready for `updated` (the next generation's
        save removes this one's folder)."""
        for name in ("lexical", *_FILES):
            self._piece(name)
        try:
            self.lexical.term_counts()
        except (OSError, ValueError):  # saved before papers' terms were: built again
            self._rebuild()
        return self

    def _piece(self, name: str):
        if name not in self._pieces:
            try:
                self._pieces[name] = self._read(name)
            except (OSError, ValueError, TypeError, AttributeError, KeyError):  # not saved, or damaged
                self._rebuild()
        return self._pieces[name]

    def _read(self, name: str):
        if self.folder is None:
            raise FileNotFoundError("no saved catalog")
        if name == "lexical":
            return LexicalIndex.load(self.folder)
        value = json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))
        if name == "profile":
            fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
            return CorpusProfile(**fields)
        if not isinstance(value, dict):
            raise ValueError(f"{self.folder / name}.json is not a mapping")
        # JSON has no tuples: facets and names are read back as they were made.
        return {k: tuple(v) for k, v in value.items()} if name in ("facets", "names") else value

    def _rebuild(self) -> None:
        self._pieces = dict(Catalog.empty().updated((), list(self._source()))._pieces)
        self._places = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.save(self.folder)

    def save(self, folder: Path) -> None:
        """Save into `folder`, whole or not at all, and remove older generations' folders beside
        it. Another process may be saving the same generation: the first one's save stays."""
        partial = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            partial.mkdir(parents=True)
            self.lexical.save(partial)
            for name in _FILES:
                value = self._piece(name)
                value = dataclasses.asdict(value) if name == "profile" else value
                (partial / f"{name}.json").write_text(json.dumps(value), encoding="utf-8")
            partial.rename(folder)
        except OSError:  # a read-only place only costs the next process a rebuild
            shutil.rmtree(partial, ignore_errors=True)
            return
        self.folder = folder
        for older in folder.parent.iterdir():
            if older != folder and not older.name.endswith(".tmp"):
                shutil.rmtree(older, ignore_errors=True)
