"""The BM25 index: weighted as bm25s weighs, updated without re-reading the corpus, saved whole."""

from __future__ import annotations

import bm25s
import numpy as np
from conftest import PAPERS

from rag.corpus.reading import load_corpus
from rag.index.lexical import LexicalIndex, paper_terms

QUERIES = ["attention heads mixture", "low-rank adaptation", "reinforcement learning agents", "diffusion", "zebra"]


def _papers():
    return [(p.id, paper_terms(p.title, p.abstract)) for p in load_corpus(PAPERS).papers]


def _ranked(index: LexicalIndex) -> list[list[tuple[str, float]]]:
    return [[(h.paper_id, round(h.score, 4)) for h in index.search(q, 20)] for q in QUERIES]


def test_scores_are_those_of_bm25s_own_index():
    papers = _papers()
    ours = LexicalIndex.empty().updated((), papers)
    reference = bm25s.BM25()
    reference.index([terms for _, terms in papers], show_progress=False)
    for query in QUERIES:
        terms = [t for t in paper_terms("", query) if t in reference.vocab_dict]
        if not terms:
            continue
        expected = reference.get_scores(terms)
        got = np.zeros(len(papers))
        for hit in ours.search(query, len(papers)):
            got[ours.ids.index(hit.paper_id)] = hit.score
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_an_update_scores_as_an_index_of_the_new_corpus_made_at_once():
    papers = _papers()
    changed = (papers[3][0], paper_terms("", "A zebra crossing for attention heads."))
    updated = LexicalIndex.empty().updated((), papers[:12]).updated([papers[7][0]], [changed, *papers[12:]])
    whole = [p for p in papers[:12] if p[0] not in (papers[7][0], changed[0])] + [changed, *papers[12:]]
    assert updated.ids == [pid for pid, _ in whole]
    assert _ranked(updated) == _ranked(LexicalIndex.empty().updated((), whole))
    assert updated.search("zebra", 1)[0].paper_id == changed[0]
    assert updated.document_frequency() == LexicalIndex.empty().updated((), whole).document_frequency()


def test_a_saved_index_is_loaded_and_updated_as_the_one_in_memory(tmp_path):
    papers = _papers()
    index = LexicalIndex.empty().updated((), papers[:15])
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert _ranked(loaded) == _ranked(index)
    assert _ranked(loaded.updated([papers[0][0]], papers[15:])) == _ranked(index.updated([papers[0][0]], papers[15:]))


def test_papers_without_terms_make_an_index_that_finds_nothing():
    index = LexicalIndex.empty().updated((), [("a", []), ("b", [])])
    assert index.ids == ["a", "b"] and index.search("anything", 5) == [] and index.document_frequency() == {}
