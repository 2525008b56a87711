"""What an ingest holds while it streams a file: of a written batch, only what the next catalog
keeps of its papers (and Chroma its vectors), so memory grows with the papers written by that
alone (`bench/bench_ingest_memory.py` measures it); and the catalog it gathers a batch at a time
is the one a list of entries makes."""

from __future__ import annotations

import gc
import json
from collections import Counter

import numpy as np
from conftest import PAPERS
from langchain_core.embeddings import DeterministicFakeEmbedding

import rag.index.lexical
from rag.corpus.reading import load_corpus, read_corpus
from rag.index.catalog import Additions, Catalog, Entry, entry
from rag.index.lexical import term_ids
from rag.index.store import _BATCH, Index
from rag.records import Paper

N = 1300  # six batches


def _tiny(path, n: int = N):
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "id": f"t{i}",
                "title": f"Zorvex{i} for graphs",
                "authors": [f"Ada L{i % 7}"],
                "abstract": f"We study problem {i}.",
            }
            out.write(json.dumps(record) + "\n")
    return path


IDS = frozenset(f"t{i}" for i in range(N))


def _live(kind: type) -> list:
    """The objects of `kind` alive now that belong to the tiny corpus (other tests' stay out)."""
    gc.collect()
    key = {Paper: lambda o: o.id, Entry: lambda o: o.paper_id}.get(kind, lambda o: next(iter(o), None))
    return [o for o in gc.get_objects() if isinstance(o, kind) and (kind is not set or o) and key(o) in IDS]


def test_an_ingest_holds_no_paper_or_entry_of_a_batch_it_wrote(settings, tmp_path):
    # Before: every written paper's catalog Entry (and its terms as a tuple of strings) was held
    # until the ingest ended, to make the next catalog at once.
    index = Index(settings.model_copy(update={"sentence_vectors": False}), DeterministicFakeEmbedding(size=16))
    held: list[tuple[int, int, int]] = []

    def progress(done: int, total: int) -> None:
        if (done and done % (2 * _BATCH) == 0) or done == N:
            held.append((done, len(_live(Paper)), len(_live(Entry))))

    report = index.ingest(read_corpus(_tiny(tmp_path / "tiny.jsonl")), progress=progress)
    assert report.added == N and len(index) == N
    assert held and held[-1][0] == N
    for done, papers, entries in held:
        assert papers <= 2 * _BATCH, f"{papers} papers alive after {done} read"
        assert entries == 0, f"{entries} catalog entries alive after {done} read"


def test_ingesting_an_unchanged_file_again_holds_no_set_of_its_ids(settings, tmp_path):
    # Before: a set of every id read, to tell an update from an addition.
    index = Index(settings.model_copy(update={"sentence_vectors": False}), DeterministicFakeEmbedding(size=16))
    path = _tiny(tmp_path / "tiny.jsonl")
    index.ingest(read_corpus(path))
    largest: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == N:
            largest.append(max((len(s) for s in _live(set) if len(s) > _BATCH), default=0))

    again = index.ingest(read_corpus(path), progress=progress)
    assert (again.added, again.updated, again.unchanged) == (0, 0, N)
    assert largest == [0]


def _entries() -> list[Entry]:
    papers = list(load_corpus(PAPERS).papers)
    copies = [
        p.model_copy(update={"id": f"{p.id}~{i}", "abstract": f"{p.abstract} Variant {i} zq{i}."})
        for i, p in enumerate(papers * 15)
    ]
    return [entry(p, f"{p.id}:0") for p in [*papers, *copies]]


def assert_same_catalog(a: Catalog, b: Catalog) -> None:
    assert a.lexical.ids == b.lexical.ids and a.lexical.vocabulary == b.lexical.vocabulary
    for ours, theirs in zip(a.lexical.term_counts(), b.lexical.term_counts(), strict=True):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    assert list(a.facets.items()) == list(b.facets.items()) and a.first_chunks == b.first_chunks
    assert a.profile == b.profile


def test_additions_gathered_a_batch_at_a_time_make_the_catalog_a_list_makes():
    entries = _entries()
    base = Catalog.empty().updated((), entries[:150])
    # Papers new and papers the base has (a new version of the first 10), as an ingest writes them.
    new_words = {"abstract": "Lattice cryptography for federated graphs."}
    changed = [entry(p.model_copy(update=new_words), "c:0") for p in load_corpus(PAPERS).papers[:10]]
    later = [*changed, *entries[150:]]
    additions = Additions(base.lexical.vocabulary)
    for start in range(0, len(later), 7):
        additions.add(later[start : start + 7])
    assert_same_catalog(base.updated((), additions), base.updated((), later))


def test_a_paper_added_twice_keeps_its_place_and_takes_its_later_version():
    entries = _entries()[:40]
    later = entry(Paper(id=entries[5].paper_id, title="Zebra crossings", abstract="Lattice cryptography zebra."), "z:0")
    additions = Additions({})
    additions.add(entries[:20])
    additions.add([entries[30], later, entries[20]])
    made = Catalog.empty().updated((), additions)
    expected = Catalog.empty().updated(
        (), list({e.paper_id: e for e in [*entries[:20], entries[30], later, entries[20]]}.values())
    )
    assert (
        made.lexical.ids
        == expected.lexical.ids
        == [*(e.paper_id for e in entries[:20]), entries[30].paper_id, entries[20].paper_id]
    )
    assert made.facets == expected.facets and made.profile == expected.profile
    for query in ("lattice cryptography zebra", "attention heads", entries[5].facets[0] or "graphs"):
        assert [(h.paper_id, round(h.score, 5)) for h in made.lexical.search(query, 30)] == [
            (h.paper_id, round(h.score, 5)) for h in expected.lexical.search(query, 30)
        ]


def test_terms_become_ids_the_same_a_few_papers_at_a_time(monkeypatch):
    papers = [e.terms for e in _entries()]
    whole: dict[str, int] = {}
    at_once = term_ids(papers, whole)
    # As the index was made before: ids in order of first use, each paper's distinct terms by id.
    vocabulary: dict[str, int] = {}
    reference: tuple[list[int], list[int], list[int]] = ([], [], [])
    for paper in papers:
        counted = Counter(vocabulary.setdefault(t, len(vocabulary)) for t in paper)
        reference[0].extend(sorted(counted))
        reference[1].extend(counted[t] for t in sorted(counted))
        reference[2].append(len(counted))
    assert vocabulary == whole and [a.tolist() for a in at_once] == [list(r) for r in reference]
    assert [a.dtype for a in at_once] == [np.int32, np.int32, np.int64]
    monkeypatch.setattr(rag.index.lexical, "_PAPERS_AT_ONCE", 3)
    few: dict[str, int] = {}
    for ours, theirs in zip(term_ids(papers, few), at_once, strict=True):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    assert few == whole
