"""The index on disk: upserts, removal, restarts, and the embedding-model check."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import PAPERS, ROOT, interrupted_ingest

from rag.chunking import chunk_paper
from rag.corpus import load_corpus
from rag.errors import EmbeddingMismatchError, PaperNotFoundError
from rag.store import Index


def _chunk_ids(index: Index) -> dict[str, set[str]]:
    got = index._collection.get(include=["metadatas"])
    by_paper: dict[str, set[str]] = {}
    for chunk_id, meta in zip(got["ids"], got["metadatas"], strict=True):
        by_paper.setdefault(meta["paper_id"], set()).add(chunk_id)
    return by_paper


def test_second_ingest_adds_nothing(settings, embeddings):
    index = Index(settings, embeddings)
    papers = load_corpus(PAPERS)
    first = index.ingest(papers)
    chunks = index.stats().chunks
    second = index.ingest(papers)
    assert (first.added, first.unchanged) == (20, 0)
    assert (second.added, second.updated, second.unchanged, second.chunks_written) == (0, 0, 20, 0)
    assert index.stats().chunks == chunks
    assert len(index) == 20


def test_changed_abstract_replaces_only_its_chunks(settings, embeddings):
    index = Index(settings, embeddings)
    papers = list(load_corpus(PAPERS).papers)
    index.ingest(papers)
    before = _chunk_ids(index)
    changed = papers[3].model_copy(update={"abstract": papers[3].abstract + " We also release a benchmark."})
    report = index.ingest([changed])
    after = _chunk_ids(index)
    assert (report.added, report.updated) == (0, 1)
    # A chunk whose text is unchanged keeps its id (and is rewritten in place); the rest are new.
    assert after[changed.id] != before[changed.id]
    assert after[changed.id] == {c.id for c in chunk_paper(changed)}
    assert {k: v for k, v in after.items() if k != changed.id} == {k: v for k, v in before.items() if k != changed.id}
    assert index.get(changed.id).abstract.endswith("release a benchmark.")


def test_index_survives_a_new_process(settings, embeddings):
    Index(settings, embeddings).ingest(load_corpus(PAPERS))
    script = (
        "import json; from rag.settings import Settings; from rag.store import Index;"
        f"i = Index.open(Settings(data_dir={str(settings.data_dir)!r}));"
        "s = i.stats(); print(json.dumps([s.papers, s.chunks, i.find('Flat-LoRA').title]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    papers, chunks, title = json.loads(done.stdout.strip().splitlines()[-1])
    assert papers == 20 and chunks >= 20
    assert title.startswith("Flat-LoRA")


def test_a_second_reader_of_the_folder_sees_an_ingest(settings, embeddings):
    papers = list(load_corpus(PAPERS).papers)
    writer = Index(settings, embeddings)
    writer.ingest(papers[:5])
    reader = Index(settings, embeddings)
    assert len(reader) == 5 and not reader.refresh()
    writer.ingest(papers[5:])
    assert reader.refresh() and len(reader) == 20
    assert reader.lexical.document_frequency() == writer.lexical.document_frequency()


def test_the_bm25_index_is_saved_per_generation_and_loaded_by_the_next_process(settings, embeddings, monkeypatch):
    from rag.lexical import LexicalIndex

    papers = list(load_corpus(PAPERS).papers)
    writer = Index(settings, embeddings)
    writer.ingest(papers[:10])
    built = writer.lexical.search("attention heads", 5)
    saved = writer._lexical_folder()
    assert saved.is_dir()

    def no_build(papers):
        raise AssertionError("a saved index of the current generation is loaded, not built")

    with monkeypatch.context() as patched:
        patched.setattr(LexicalIndex, "build", no_build)
        reader = Index(settings, embeddings)
        assert reader.lexical.search("attention heads", 5) == built
        assert reader.lexical.document_frequency() == writer.lexical.document_frequency()
    # A write makes a new generation: its index is built once, saved, and the old one removed.
    writer.ingest(papers[10:])
    assert reader.refresh() and len(reader.lexical.ids) == 20
    assert not saved.exists() and reader._lexical_folder().is_dir()
    # A damaged save is built again, not trusted.
    (reader._lexical_folder() / "ids.json").write_text("[", encoding="utf-8")
    assert len(Index(settings, embeddings).lexical.ids) == 20


def test_remove_deletes_a_paper_and_its_chunks(settings, embeddings):
    index = Index(settings, embeddings)
    index.ingest(load_corpus(PAPERS))
    target = index.find("Flat-LoRA")
    index.remove(target.id)
    assert target.id not in index.papers
    assert target.id not in _chunk_ids(index)
    assert len(index) == 19
    with pytest.raises(PaperNotFoundError, match="paperchat stats"):
        index.remove(target.id)


def test_opening_with_another_embedding_model_is_an_error(settings, embeddings):
    Index(settings, embeddings).ingest(load_corpus(PAPERS))
    with pytest.raises(EmbeddingMismatchError, match="all-MiniLM-L6-v2"):
        Index(settings, embeddings, model_id="openai/text-embedding-3-small")


def test_find_by_title_words_and_stats(seed_index):
    assert seed_index.find("mixture head attention").title.startswith("MoH")
    with pytest.raises(PaperNotFoundError):
        seed_index.find("quantum chromodynamics lattice")
    stats = seed_index.stats()
    assert stats.papers == 20
    assert stats.venues == {"ICML 2025": 20}
    assert stats.years == {2025: 20}
    assert sum(stats.categories.values()) == 20


def test_an_ingest_killed_midway_loses_nothing_and_duplicates_nothing(tmp_path):
    written, stats, chunks = interrupted_ingest(tmp_path / "index", tmp_path)
    assert 0 < written < 600, "the kill should land mid-ingest"
    assert (stats["papers"], stats["chunks"]) == (600, chunks), "no paper lost, no chunk twice"
