"""The index on disk: upserts, removal, restarts, and the embedding-model check."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import PAPERS, ROOT, interrupted_ingest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from rag.answering.chain import Assistant
from rag.corpus.chunking import chunk_paper
from rag.corpus.reading import load_corpus
from rag.errors import EmbeddingMismatchError, PaperNotFoundError
from rag.index.embeddings import MINILM_ID, MINILM_INT8_ID, LazyEmbeddings, SentenceVectors
from rag.index.papertext import evidence_texts
from rag.index.store import Index
from rag.index.textvectors import TextVectors
from rag.records import Filters, Paper
from rag.text import split_sentences


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


def test_ingest_looks_papers_up_by_id_not_by_reading_the_paper_table(settings, monkeypatch):
    # At 100k papers reading the table takes seconds to minutes; an ingest reads none of it:
    # it looks papers up by id and updates the saved catalog.
    from langchain_core.embeddings import DeterministicFakeEmbedding

    fake = DeterministicFakeEmbedding(size=16)
    plain = settings.model_copy(update={"sentence_vectors": False})
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}.") for i in range(30)]
    Index(plain, fake).ingest(papers[:20])
    reopened = Index(plain, fake)
    reads = []
    load = reopened._load_papers
    # A read is a call that finds no table in memory.
    monkeypatch.setattr(reopened, "_load_papers", lambda: reads.append(reopened._papers is None) or load())
    again = reopened.ingest(papers[:20])
    assert (again.added, again.unchanged, sum(reads)) == (0, 20, 0)
    assert len(reopened) == 20 and sum(reads) == 0  # counted by the saved profile
    assert reopened.stats().papers == 20 and len(reopened.sample(5)) == 5 and sum(reads) == 0
    # A batch of papers none of which is indexed yet (Chroma refuses a look-up of no ids).
    more = reopened.ingest(papers[20:])
    assert (more.added, more.unchanged, sum(reads)) == (10, 0, 0)
    again = Index(plain, fake).ingest(papers)
    assert (again.added, again.unchanged) == (0, 30)
    assert len(Index(plain, fake)) == 30


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


@pytest.mark.slow
def test_index_survives_a_new_process(settings, embeddings):
    Index(settings, embeddings).ingest(load_corpus(PAPERS))
    script = (
        "import json; from rag.settings import Settings; from rag.index.store import Index;"
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
    papers = list(load_corpus(PAPERS).papers)
    writer = Index(settings, embeddings)
    writer.ingest(papers[:10])
    built = writer.lexical.search("attention heads", 5)
    saved = writer._catalog_folder()
    assert saved.is_dir()

    def no_build(self):
        raise AssertionError("a saved index of the current generation is loaded, not built")

    with monkeypatch.context() as patched:
        patched.setattr(Index, "_table_entries", no_build)
        reader = Index(settings, embeddings)
        assert reader.lexical.search("attention heads", 5) == built
        assert reader.lexical.document_frequency() == writer.lexical.document_frequency()
    # A write makes a new generation: its index is built once, saved, and the old one removed.
    writer.ingest(papers[10:])
    assert reader.refresh() and len(reader.lexical.ids) == 20
    assert not saved.exists() and reader._catalog_folder().is_dir()
    # A damaged save is built again, not trusted.
    (reader._catalog_folder() / "ids.json").write_text("[", encoding="utf-8")
    assert len(Index(settings, embeddings).lexical.ids) == 20


def _catalog_as_built_from_the_table(index: Index):
    from rag.index.catalog import Catalog

    return Catalog.empty().updated((), Index(index.settings, index.embeddings)._table_entries())


def _bm25_scores(catalog, queries):
    return [{h.paper_id: round(h.score, 4) for h in catalog.lexical.search(q, 50)} for q in queries]


def test_ingest_and_removal_update_the_catalog_to_what_a_rebuild_from_the_table_makes(settings, monkeypatch):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    plain = settings.model_copy(update={"sentence_vectors": False})
    papers = list(load_corpus(PAPERS).papers)
    index = Index(plain, DeterministicFakeEmbedding(size=16))
    index.ingest(papers[:12])
    monkeypatch.setattr(Index, "_table_entries", lambda self: pytest.fail("the catalog is rebuilt from the table"))
    changed = papers[3].model_copy(update={"abstract": "Entirely new words: lattice cryptography for federated graphs."})
    index.ingest([*papers[:3], changed, *papers[4:]])
    index.remove([papers[7].id])
    monkeypatch.undo()
    queries = ["attention heads", "low-rank adaptation flat minima", "lattice cryptography", papers[7].title]
    rebuilt = _catalog_as_built_from_the_table(index)
    # The next process reads what the updates saved.
    updated = Index(plain, index.embeddings).catalog
    assert updated.profile == rebuilt.profile and updated.profile.papers == 19
    assert updated.facets == rebuilt.facets and updated.first_chunks == rebuilt.first_chunks
    assert _bm25_scores(updated, queries) == _bm25_scores(rebuilt, queries)
    assert updated.lexical.search("lattice cryptography", 1)[0].paper_id == papers[3].id
    assert papers[7].id not in {h.paper_id for h in updated.lexical.search(papers[7].title, 50)}


def test_the_generation_changes_with_every_write_and_is_seen_by_another_client(settings):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    plain = settings.model_copy(update={"sentence_vectors": False})
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}.") for i in range(3)]
    index = Index(plain, DeterministicFakeEmbedding(size=16))
    assert index.generation is None  # nothing written yet
    index.ingest(papers)
    ingested = index.generation
    other = Index(plain, index.embeddings)
    assert ingested is not None and other.generation == ingested
    index.ingest(papers)  # unchanged: nothing written
    assert index.generation == ingested
    index.remove(["p1"])
    assert index.generation != ingested
    assert other.generation == ingested and other.refresh() and other.generation == index.generation


def test_remove_deletes_a_paper_and_its_chunks(settings, embeddings):
    index = Index(settings, embeddings)
    index.ingest(load_corpus(PAPERS))
    target = index.find("Flat-LoRA")
    index.remove([target.id])
    assert target.id not in index.papers
    assert target.id not in _chunk_ids(index)
    assert len(index) == 19
    with pytest.raises(PaperNotFoundError, match="paperchat stats"):
        index.remove([target.id])
    # Several at once, or none of them when one is not indexed.
    pair = [index.find("MoH").id, index.find("DragSolver").id]
    with pytest.raises(PaperNotFoundError, match="no-such-paper"):
        index.remove([*pair, "no-such-paper"])
    assert len(Index(settings, embeddings)) == 19
    assert sorted(p.id for p in index.remove(pair)) == sorted(pair)
    assert len(Index(settings, embeddings)) == 17 and not set(pair) & set(_chunk_ids(index))


def test_opening_with_another_embedding_model_is_an_error(settings, embeddings):
    Index(settings, embeddings).ingest(load_corpus(PAPERS))
    with pytest.raises(EmbeddingMismatchError, match="all-MiniLM-L6-v2"):
        Index(settings, embeddings, model_id="openai/text-embedding-3-small")


def test_auto_reads_an_index_with_the_runtime_it_was_built_with_and_builds_new_ones_in_int8(settings, embeddings):
    # An index made with the float model before int8 became the default must still open.
    new = Index(settings, embeddings)
    assert new.model_id == MINILM_INT8_ID and new.settings.embedding_runtime == "onnx-int8"
    floats = settings.model_copy(update={"data_dir": settings.data_dir / "float", "embedding_runtime": "onnx"})
    Index(floats, embeddings).ingest(load_corpus(PAPERS).papers[:2])
    auto = floats.model_copy(update={"embedding_runtime": "auto"})
    reopened = Index(auto, embeddings)
    assert reopened.model_id == MINILM_ID and reopened.settings.embedding_runtime == "onnx" and len(reopened) == 2
    with pytest.raises(EmbeddingMismatchError, match="onnx int8"):
        Index(floats.model_copy(update={"embedding_runtime": "onnx-int8"}), embeddings)


def test_a_shared_model_serves_only_an_index_of_its_vectors(settings):
    # An evaluation shares its index's model with a set's own index: an int8 model must not fill
    # a float index, nor be recorded as float. Nothing is loaded to tell.
    floats = settings.model_copy(update={"embedding_runtime": "onnx"})
    Index(floats, DeterministicFakeEmbedding(size=384)).ingest(load_corpus(PAPERS).papers[:1])
    int8 = LazyEmbeddings(settings.model_copy(update={"embedding_runtime": "onnx-int8"}))
    index = Index(settings, int8)
    assert isinstance(index.embeddings, LazyEmbeddings) and index.embeddings is not int8
    assert index.embeddings.model_id == index.model_id == MINILM_ID and index.embeddings._model is None
    elsewhere = Index(settings.model_copy(update={"data_dir": settings.data_dir / "new"}), int8)
    assert elsewhere.embeddings is int8 and elsewhere.model_id == MINILM_INT8_ID


def test_find_by_title_words_and_stats(seed_index):
    assert seed_index.find("mixture head attention").title.startswith("MoH")
    with pytest.raises(PaperNotFoundError):
        seed_index.find("quantum chromodynamics lattice")
    stats = seed_index.stats()
    assert stats.papers == 20
    assert stats.venues == {"ICML 2025": 20}
    assert stats.years == {2025: 20}
    assert sum(stats.categories.values()) == 20


@pytest.mark.slow
def test_an_ingest_killed_midway_loses_nothing_and_duplicates_nothing(tmp_path):
    written, stats, chunks = interrupted_ingest(tmp_path / "index", tmp_path)
    assert 0 < written < 600, "the kill should land mid-ingest"
    assert (stats["papers"], stats["chunks"]) == (600, chunks), "no paper lost, no chunk twice"


class _Recorder(Embeddings):
    """The model, recording every text it is asked to embed."""

    def __init__(self, model: Embeddings) -> None:
        self.model = model
        self.seen: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return self.model.embed_query(text)


QUESTIONS = (
    "How does mixture-of-head attention select heads?",
    "Which papers make training cheaper, and how?",
    "What does Flat-LoRA optimize?",
)


def test_a_question_embeds_only_itself_and_answers_as_before(seed_index, embeddings):
    papers = list(seed_index.papers.values())
    stored = seed_index.texts.sentences([p.id for p in papers])
    assert {pid: [t for t, _ in s] for pid, s in stored.items()} == {p.id: evidence_texts(p)[0] for p in papers}
    words = sorted({w for p in papers for w in evidence_texts(p)[1]})
    assert set(seed_index.stored_vectors(words)) == set(words), "every paper word is stored once"
    first = stored[papers[0].id]
    computed = np.asarray(embeddings.embed_documents([t for t, _ in first]), dtype=np.float32)
    # The same vectors, up to int8's run-wide activation scale: ingest embedded them beside other
    # papers' sentences (`tests/index/test_offline.py`).
    assert (np.stack([v for _, v in first]) * computed).sum(axis=1).min() > 0.98

    settings = seed_index.settings
    warm = Assistant(seed_index, settings)
    warm.vectors.embeddings = recorder = _Recorder(embeddings)
    cold = Assistant(seed_index, settings)
    cold.vectors.store = None
    for question in QUESTIONS:
        stored, fresh = warm.ask(question), cold.ask(question)
        # The same answer: its grade, and the papers it cites, each for a sentence it quotes. (An
        # int8 vector moves a little with its batch, so a quote at the bar may come or go.)
        assert stored.grade == fresh.grade, question
        assert {c.paper_id for c in stored.citations} == {c.paper_id for c in fresh.citations}, question
        assert not stored.citations or {c.support for c in stored.citations} & {c.support for c in fresh.citations}
    assert recorder.seen, "the question side is still embedded"
    sentences = {t for p in papers for t in evidence_texts(p)[0]}
    assert not set(recorder.seen) & (sentences | set(words)), "no abstract sentence or paper word is embedded at question time"


def test_removing_a_paper_drops_its_sentences_and_reset_drops_all(settings, embeddings):
    index = Index(settings, embeddings)
    index.ingest(load_corpus(PAPERS))
    target = index.find("Flat-LoRA")
    other = index.find("mixture head attention")
    index.remove([target.id])
    assert set(index.texts.sentences([target.id, other.id])) == {other.id}
    index.reset()
    assert not index.texts.sentences([other.id])
    assert not index.stored_vectors(evidence_texts(other)[1])


def test_a_changed_abstract_embeds_only_its_new_sentences_and_drops_the_old(settings, embeddings):
    index = Index(settings, embeddings)
    paper = load_corpus(PAPERS).papers[3]
    index.ingest([paper])
    sentences = evidence_texts(paper)[0]
    longer = paper.model_copy(update={"abstract": paper.abstract + " We also release a benchmark."})
    recorder = _Recorder(embeddings)
    index.embeddings = index.vectorstore._embedding_function = recorder
    index.ingest([longer])
    assert [t for t, _ in index.texts.sentences([paper.id])[paper.id]] == [*sentences, "We also release a benchmark."]
    assert not set(sentences) & set(recorder.seen), "a sentence stored as it is is not embedded again"
    shorter = paper.model_copy(update={"abstract": " ".join(sentences[:2])})
    index.ingest([shorter])
    assert [t for t, _ in index.texts.sentences([paper.id])[paper.id]] == sentences[:2]


def test_an_index_from_before_sentence_vectors_gets_them_at_the_next_ingest(settings, embeddings):
    papers = load_corpus(PAPERS)
    Index(settings.model_copy(update={"sentence_vectors": False}), embeddings).ingest(papers)
    index = Index(settings, embeddings)
    chunks = _chunk_ids(index)
    assert not index.texts.sentences(list(index.papers))
    # Meanwhile its questions are answered all the same, and what they read is stored then.
    read = [s.paper.id for s in Assistant(index, settings).ask(QUESTIONS[0]).sources]
    assert read and set(index.texts.sentences(read)) == set(read)
    # The first layout kept sentences and words in Chroma collections; the next ingest drops them.
    for side in ("sentences", "words"):
        index._client.create_collection(f"{settings.collection}-{side}")

    report = index.ingest(papers)
    assert (report.added, report.updated, report.unchanged, report.chunks_written) == (0, 0, 20, 0)
    assert _chunk_ids(index) == chunks, "only the sentences are embedded, not the chunks again"
    assert set(index.texts.sentences(list(index.papers))) == set(index.papers)
    assert [c.name for c in index._client.list_collections()] == [settings.collection]
    assert not index.refresh(), "the papers are unchanged: no new generation, BM25 and profile stay"
    third = Index(settings, _Recorder(embeddings))
    third.ingest(papers)
    assert not third.embeddings.seen, "a third ingest has nothing to embed"


@pytest.mark.semantic
def test_a_new_process_answers_without_reading_the_paper_table(settings, embeddings, monkeypatch):
    writer = Index(settings, embeddings)
    writer.ingest(load_corpus(PAPERS))
    filters = (Filters(category="theory", year_min=2025), Filters(author="kallus"), Filters(venue="ICML", author="Yuan"))
    expected = [sorted(p.id for p in writer.papers.values() if f.matches(p)) for f in filters]
    assert all(expected)

    def whole_table(self):
        raise AssertionError("the paper table is read whole")

    monkeypatch.setattr(Index, "_load_papers", whole_table)
    reader = Index(settings, embeddings)
    answer = Assistant(reader, settings).ask(QUESTIONS[0])
    assert answer.sources and answer.sources[0].paper.title.startswith("MoH")
    assert reader.profile() == writer.profile(), "the profile saved at ingest, read back"
    # A filtered question reads the facets saved with the profile, not the table.
    assert [sorted(reader.matching(f)) for f in filters] == expected
    # A damaged save is built again (from the table), not trusted.
    (reader._catalog_folder() / "profile.json").write_text("{", encoding="utf-8")
    monkeypatch.undo()
    assert Index(settings, embeddings).profile() == writer.profile()


def test_sentences_stored_for_another_version_of_an_abstract_are_not_used():
    class Store:
        def stored_sentences(self, paper_ids):
            return {"p1": [("An old first sentence.", np.ones(3, dtype=np.float32))]}

        def stored_vectors(self, texts):
            return {}

    paper = Paper(id="p1", title="T", abstract="A new first sentence. A new second one.")
    vectors = SentenceVectors(embeddings=None, store=Store())
    vectors.read([paper])
    assert split_sentences(paper.abstract) == ["A new first sentence.", "A new second one."]
    assert "An old first sentence." not in vectors._cache


def test_the_sentence_store_keeps_one_models_vectors(tmp_path):
    store = TextVectors(tmp_path / "vectors.sqlite3", "model-a")
    store.put({"p1": ("hash", [("A sentence.", np.ones(3, dtype=np.float32))])}, {"word": np.ones(3, dtype=np.float32)})
    again = TextVectors(tmp_path / "vectors.sqlite3", "model-a")
    assert [t for t, _ in again.sentences(["p1"])["p1"]] == ["A sentence."] and set(again.words(["word"])) == {"word"}
    other = TextVectors(tmp_path / "vectors.sqlite3", "model-b")
    assert not other.sentences(["p1"]) and not other.words(["word"]) and not other.hashes(["p1"])


def test_a_stream_is_ingested_a_batch_at_a_time_and_counted(settings):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag.records import SkippedRecord

    index = Index(settings.model_copy(update={"sentence_vectors": False}), DeterministicFakeEmbedding(size=16))
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i} with method {i}.") for i in range(600)]
    bad = SkippedRecord(path="papers.jsonl", line=7, reason="missing abstract")
    pulled = []

    def stream(items):
        for item in items:
            pulled.append(item)
            yield item

    seen: list[tuple[int, int]] = []
    read_by_then: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        read_by_then.append(len(pulled))

    first = index.ingest(stream([*papers[:300], bad, *papers[300:]]), total=600, progress=progress)
    # Progress came batch by batch, the first batch written before the stream was read further.
    assert seen[0] == (0, 600) and seen[-1] == (600, 600) and len(seen) >= 4
    assert read_by_then[1] < 300
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert (first.added, first.updated, first.unchanged, first.skipped) == (600, 0, 0, (bad,))
    assert len(index) == 600 and len(pulled) == 601

    changed = [p.model_copy(update={"abstract": p.abstract + " Again."}) if i % 100 == 0 else p for i, p in enumerate(papers)]
    unsized: list[tuple[int, int]] = []
    second = index.ingest(iter(changed), progress=lambda *a: unsized.append(a))
    assert (second.added, second.updated, second.unchanged) == (0, 6, 594)
    assert len(index) == 600 and index.stats().chunks == first.chunks_written
    assert index.get("p100").abstract.endswith("Again.")
    # With no total known, the bar's total keeps up with what was read.
    assert unsized[-1] == (600, 600) and all(done <= total for done, total in unsized)


def test_progress_moves_within_a_batch_as_its_texts_are_embedded(settings):
    # A batch of 256 papers is a minute or more on a loaded laptop: the counter must not stand
    # still that long (issue 38). Each slice of 32 texts embedded moves it.
    from langchain_core.embeddings import DeterministicFakeEmbedding

    embedder = DeterministicFakeEmbedding(size=16)
    index = Index(settings, embedder)
    papers = [
        Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}. We use method {i}. It works on task {i}.")
        for i in range(300)
    ]
    seen: list[tuple[int, int]] = []
    index.ingest(papers, progress=lambda done, total: seen.append((done, total)))
    within_first = sorted({done for done, _ in seen if 0 < done < 256})
    assert len(within_first) >= 4, seen
    assert [done for done, _ in seen] == sorted(done for done, _ in seen), "never goes back"
    assert seen[-1] == (300, 300) and all(total == 300 for _, total in seen)


def test_the_paper_table_is_read_a_page_at_a_time(settings, monkeypatch):
    # At 100k papers one read overflows SQLite's limit on bound variables inside Chroma.
    from langchain_core.embeddings import DeterministicFakeEmbedding

    import rag.index.store

    fake = DeterministicFakeEmbedding(size=16)
    unpaged = settings.model_copy(update={"sentence_vectors": False})
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}.") for i in range(20)]
    Index(unpaged, fake).ingest(papers)
    monkeypatch.setattr(rag.index.store, "_PAGE", 7)
    reopened = Index(unpaged, fake)
    reads: list[int | None] = []
    get = reopened._collection.get
    monkeypatch.setattr(reopened, "_collection", SimpleNamespace(get=lambda **kw: reads.append(kw.get("limit")) or get(**kw)))
    assert sorted(reopened.papers) == sorted(p.id for p in papers)
    assert reopened.get("p19") == papers[19]
    assert reads == [7, 7, 7]
