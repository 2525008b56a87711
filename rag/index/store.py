"""The index on disk: a persistent Chroma collection of chunks plus a BM25 index over papers.

Chroma holds everything: each chunk's vector, its text and its paper's metadata, with the whole
paper record on the paper's first chunk, so the paper table is read from the collection when it
opens. The collection records the embedding model that built it; opening it with another is an
error.

The store is embedded (a folder under `data_dir`) or, with `chroma_url`, a Chroma server that
several people share. Every write stamps the collection with a new generation; `refresh` compares
it with the one this process last read, so one client sees another's ingest at its next question.
What a question reads of the whole corpus (the BM25 index, each paper's facets, the corpus
profile: `rag.index.catalog`) is saved under the generation it was made for and read while that
generation is current, so it cannot drift out of step with the store. An ingest makes the next
generation's catalog from the last one and the papers it wrote.

A write (ingest, remove, reset) to the embedded store holds its collection's write lock
(`rag.index.locking`): a second writer waits for the first, or gives up with "index busy"; readers never
wait. Each batch is stamped before and after it is written, so a writer killed midway leaves a
generation with no catalog saved: the next reader makes it from the paper table, and a paper is
in the catalog exactly when it is in the table.

What the answerer reads of each paper (`rag.index.papertext.evidence_texts`: its abstract's
sentences and its words) is split and embedded at ingest and kept beside Chroma
(`rag.index.textvectors`), so that a question embeds only itself. A paper without them (indexed
before, or by another client of the server) gets them the first time a question reads it.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Sequence, Sized
from contextlib import contextmanager, nullcontext
from itertools import count, islice
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.corpus.chunking import chunk_paper, chunk_paper_id
from rag.errors import EmbeddingMismatchError, PaperNotFoundError, StoreError
from rag.index.catalog import Additions, Catalog, Entry, entry
from rag.index.chroma import DenseHit, chroma_client, paper_from_metadata, paper_metadata, store_hint
from rag.index.corpusmap import Progress as MapProgress
from rag.index.corpusmap import make_map
from rag.index.embeddings import LazyEmbeddings, embedding_model_id, for_index, make_embeddings
from rag.index.ingestprogress import BatchProgress, IngestStopped
from rag.index.locking import Waiting, WriteLock
from rag.index.mapfile import read_map, save_map
from rag.index.maprecords import CorpusMap
from rag.index.offline import prepare
from rag.index.textvectors import Sentences, TextVectors, write_texts
from rag.records import Chunk, CorpusProfile, Filters, IndexStats, IngestReport, LoadResult, Paper, SkippedRecord
from rag.settings import Settings

Progress = Callable[[int, int], None]

_BATCH = 256
_PAGE = 5000  # rows per read of the paper table
# Papers whose chunks one read fetches by id: a few thousand would overflow SQLite's limit on
# bound variables in Chroma's query, as a page does.
_PAPERS_PER_READ = 1000


def _not_found(paper_id: str) -> PaperNotFoundError:
    return PaperNotFoundError(f"no paper with id {paper_id!r} in the index", hint="`paperchat stats` lists what is indexed")


class Index:
    """Papers, their chunks and vectors, and the lexical index; the only code touching Chroma."""

    def __init__(self, settings: Settings, embeddings: Embeddings | None = None, *, model_id: str | None = None) -> None:
        # The embedded store's folder; None on a server.
        self.path: Path | None = None if settings.chroma_url else Path(settings.data_dir) / "chroma"
        self.location = f"{settings.chroma_url} (collection '{settings.collection}')" if settings.chroma_url else str(self.path)
        self._client = chroma_client(settings, self.path)
        self.settings = settings = for_index(settings, self._built_with(settings))
        if embeddings is None or (isinstance(embeddings, LazyEmbeddings) and embeddings.model_id != embedding_model_id(settings)):
            # A model shared by the caller (an evaluation's, for a set's own index) is used only
            # where it makes this index's vectors; the model is loaded on first use.
            embeddings = make_embeddings(settings)
        self.embeddings = embeddings
        self.model_id = model_id or embedding_model_id(settings)
        self._connect()
        self.texts = TextVectors(self._local_folder("texts") / "vectors.sqlite3", self.model_id)
        # A server orders its clients' writes itself.
        self._lock = (
            None
            if self.path is None
            else WriteLock(self.path.parent / "locks" / f"{settings.collection}.lock", self.location, settings.lock_timeout)
        )
        self._papers: dict[str, Paper] | None = None
        self._table_first_chunks: dict[str, str] = {}
        self._count: int | None = None
        self._catalog: Catalog | None = None
        self._map: CorpusMap | None = None
        self._map_lock = threading.Lock()

    def _connect(self) -> None:
        from langchain_chroma import Chroma

        try:
            self.vectorstore = Chroma(
                client=self._client,
                collection_name=self.settings.collection,
                embedding_function=self.embeddings,
                collection_metadata={"embedding_model": self.model_id},
                collection_configuration={"hnsw": {"space": "cosine"}},
            )
        except Exception as exc:  # chromadb raises its own, httpx's and ValueError alike
            raise StoreError(f"cannot open the index at {self.location}: {exc}", hint=store_hint(self.settings)) from exc
        # Chroma's own client gives the collection (count, metadata, get and delete by filter),
        # rather than the LangChain store's private handle on it.
        self._collection = self._stored()
        built_with = (self._collection.metadata or {}).get("embedding_model")
        if built_with != self.model_id:
            raise EmbeddingMismatchError(
                f"the index at {self.location} was built with {built_with}, "
                f"but the configured embedding model is {self.model_id}",
                hint="use the model it was built with, or another PAPERCHAT_DATA_DIR / "
                "PAPERCHAT_COLLECTION, or `paperchat reset` and ingest again",
            )
        self._generation = (self._collection.metadata or {}).get("generation")

    @classmethod
    def open(cls, settings: Settings, *, embeddings: Embeddings | None = None) -> Index:
        """Open (or create) the index under `settings.data_dir`, loading the embedding model."""
        prepare()
        return cls(settings, embeddings)

    def _built_with(self, settings: Settings) -> str | None:
        """The embedding model the collection records; None for one not made yet."""
        from chromadb.errors import NotFoundError

        try:
            found = self._client.get_collection(settings.collection)
        except NotFoundError:
            return None
        except Exception as exc:  # a server that is gone: httpx's errors, or chromadb's own
            raise StoreError(f"cannot open the index at {self.location}: {exc}", hint=store_hint(settings)) from exc
        return (found.metadata or {}).get("embedding_model")

    # -- reading ---------------------------------------------------------------------------

    def _load_papers(self) -> dict[str, Paper]:
        if self._papers is None:
            papers: dict[str, Paper] = {}
            first_chunks: dict[str, str] = {}
            # A page at a time: past about 32k rows Chroma's own SQL query overflows SQLite's
            # limit on bound variables ("too many SQL variables").
            for offset in count(0, _PAGE):
                got = self._collection.get(where={"position": 0}, include=["metadatas"], limit=_PAGE, offset=offset)
                metas = got["metadatas"] or []
                papers.update((m["paper_id"], paper_from_metadata(m)) for m in metas)
                first_chunks.update((m["paper_id"], i) for m, i in zip(metas, got["ids"], strict=True))
                if len(metas) < _PAGE:
                    break
            self._papers, self._table_first_chunks = papers, first_chunks
        return self._papers

    @property
    def papers(self) -> dict[str, Paper]:
        """Every indexed paper by id."""
        return self._load_papers()

    @property
    def generation(self) -> str | None:
        """The stamp of the last write to the store, as this process last read it (`refresh`):
        what is read of the store's contents can be kept under it. None before the first write."""
        return self._generation

    def __len__(self) -> int:
        # The profile saved for this generation counts the papers: reading the paper table to
        # count them takes seconds at 100k papers (a chat's first prompt waited on it).
        if self._papers is not None or self._generation is None:
            return len(self.papers)
        return self.catalog.profile.papers

    def get(self, paper_id: str) -> Paper:
        try:
            return self.fetch([paper_id])[paper_id]
        except KeyError:
            raise _not_found(paper_id) from None

    def find(self, ref: str) -> Paper:
        """A paper by id, or by words of its title (all must occur; the shortest title wins)."""
        if ref in self.papers:
            return self.papers[ref]
        words = ref.casefold().split()
        hits = [p for p in self.papers.values() if words and all(w in p.display_title.casefold() for w in words)]
        if not hits:
            raise PaperNotFoundError(
                f"no indexed paper has {ref!r} in its id or title",
                hint="give the paper id, or other words of its title",
            )
        return min(hits, key=lambda p: (len(p.display_title), p.id))

    def stats(self) -> IndexStats:
        """Counts from each paper's facets, saved per generation: the app's sidebar shows them
        on every rerun, and reading the paper table for them takes seconds at 100k papers."""
        facets = self.catalog.facets.values()
        return IndexStats(
            papers=len(facets),
            chunks=self._chunk_count(),
            embedding_model=self.model_id,
            location=self.location,
            categories=dict(Counter(category for category, _, _, _ in facets if category).most_common()),
            venues=dict(Counter(venue for _, venue, _, _ in facets if venue).most_common()),
            years=dict(sorted(Counter(year for _, _, _, year in facets if year).items())),
        )

    def _chunk_count(self) -> int:
        # Counting costs a scan in Chroma, so once per generation (the sidebar asks every rerun).
        if self._count is None:
            self._count = self._collection.count()
        return self._count

    def sample(self, n: int) -> dict[str, Paper]:
        """Up to `n` papers, all of them in a corpus that small, without reading the table."""
        return self.fetch(list(self.catalog.facets)[:n])

    def fetch(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """These papers by id (those still indexed), without reading the whole paper table."""
        if self._papers is not None:
            return {i: self._papers[i] for i in paper_ids if i in self._papers}
        # By the first chunk's id: several times faster than a metadata filter.
        rows = self.catalog.first_chunks
        ids = [rows[i] for i in dict.fromkeys(paper_ids) if i in rows]
        if not ids:
            return {}
        got = self._collection.get(ids=ids, include=["metadatas"])
        return {m["paper_id"]: paper_from_metadata(m) for m in got["metadatas"] or []}

    def matching(self, filters: Filters) -> list[str]:
        """The ids of the papers the filters let through. They are read from each paper's
        facets (category, venue, authors, year), saved per generation with the profile, so a
        filtered question does not read the paper table either."""
        facets = self.catalog.facets
        ids = [pid for place, pids in self.catalog.places.items() if filters.admits_place(*place) for pid in pids]
        return [pid for pid in ids if filters.admits_authors(facets[pid][2])] if filters.author else ids

    def scope_summary(self, filters: Filters) -> str:
        """What a question under `filters` is asked of: the papers they leave out of the whole
        ("1 of 20 ICML 2025 papers"), or the whole index's summary when no filter is set."""
        stats = self.stats()
        if not filters.active or not stats.papers:
            return stats.summary
        return f"{len(self.matching(filters)):,} of {stats.summary}"

    @property
    def catalog(self) -> Catalog:
        """This generation's catalog (`rag.index.catalog`): saved with the generation, or made from the
        paper table and saved for the next process."""
        if self._catalog is None:
            if self._generation is None and self._collection.count():
                # Written before generations were recorded: stamp it once, so the catalog made
                # now is saved as the current generation's.
                self._stamp()
            self._catalog = Catalog(self._catalog_folder(), self._table_entries)
        return self._catalog

    def _table_entries(self) -> list[Entry]:
        """Every paper's catalog entry, from the paper table read whole (a minute at 100k
        papers): for a generation with no catalog saved."""
        papers = self.papers
        return [entry(p, self._table_first_chunks[pid]) for pid, p in papers.items()]

    def profile(self) -> CorpusProfile:
        """What question analysis reads of the corpus: size, term counts, venues, authors, names."""
        return self.catalog.profile

    def stored_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors ingest stored for these words, by word; the others are not in the result."""
        return self.texts.words(texts)

    def stored_sentences(self, papers: Sequence[Paper]) -> dict[str, Sentences]:
        """Each paper's abstract sentences, in order, with their vectors. Papers stored without
        them (or as another version) get them now, unless sentence vectors are off; papers with
        none to store are not in the result."""
        ids = [p.id for p in papers]
        if self.settings.sentence_vectors:
            stored = self.texts.hashes(ids)
            missing = [p for p in papers if stored.get(p.id) != p.content_hash]
            if missing:
                write_texts(self.texts, missing, self.embeddings, BatchProgress())
        return self.texts.sentences(ids)

    def dense_search(self, query_vector: Sequence[float], n: int, paper_ids: Sequence[str] | None = None) -> list[DenseHit]:
        """Nearest chunks by cosine similarity, optionally only among some papers."""
        if paper_ids is not None and not paper_ids:
            return []
        # LangChain types the filter as flat str pairs; Chroma takes its operators.
        where: dict[str, Any] | None = {"paper_id": {"$in": list(paper_ids)}} if paper_ids is not None else None
        n = min(n, self._chunk_count())
        if n == 0:
            return []
        found = self.vectorstore.similarity_search_by_vector_with_relevance_scores(list(query_vector), k=n, filter=where)
        # Chroma's cosine space returns distance = 1 - cosine similarity.
        return [DenseHit(d.metadata["paper_id"], 1.0 - dist, d.page_content) for d, dist in found]

    @property
    def lexical(self):
        """The BM25 index over papers (title + abstract), this generation's."""
        return self.catalog.lexical

    def paper_vectors(self, paper_ids: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Each paper's vector (every paper's, or these papers'), with their ids in the same
        order: the mean of its chunks' vectors, which stands for the whole abstract. Its first
        chunk's alone would leave out the rest of the 29% of the scale corpus's abstracts that
        make more than one chunk (the two's cosine is 0.94 there on average, 0.80 at worst).
        Papers not indexed are left out."""
        wanted = list(self.catalog.facets) if paper_ids is None else list(dict.fromkeys(paper_ids))
        row = {pid: i for i, pid in enumerate(wanted)}
        rows: list[int] = []
        vectors: list[np.ndarray] = []
        for start in range(0, len(wanted), _PAPERS_PER_READ):
            some = wanted[start : start + _PAPERS_PER_READ]
            # The chunk ids tell their papers: reading the metadata too took twice as long.
            got = self._collection.get(where={"paper_id": {"$in": some}}, include=["embeddings"])
            rows.extend(row[chunk_paper_id(i)] for i in got["ids"])
            vectors.append(np.asarray(got["embeddings"], dtype=np.float32).reshape(len(got["ids"]), -1))
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        stacked = np.concatenate(vectors)
        sums = np.zeros((len(wanted), stacked.shape[1]), dtype=np.float32)
        np.add.at(sums, rows, stacked)
        chunks = np.bincount(rows, minlength=len(wanted))
        found = np.flatnonzero(chunks)
        return [wanted[i] for i in found], sums[found] / chunks[found, None]

    def corpus_map(self, progress: MapProgress | None = None) -> CorpusMap:
        """This generation's map of the corpus (`rag.index.corpusmap`). It is made once per generation,
        from every paper's vector and text (about 12 s at 13,687 papers), and saved beside the index,
        where another process or the next run reads it; `progress` hears what making it is at."""
        # The app's sessions share one Index: a second one opening the map meanwhile waits for
        # this one's rather than making its own.
        with self._map_lock:
            if self._map is not None:
                return self._map
            saved, generation = self._map_file(), self._generation
            made = read_map(saved) or self._make_map(saved, progress)
            # Kept unless another process's write was seen meanwhile: then it is the last
            # generation's map.
            if self._generation == generation:
                self._map = made
            return made

    def _make_map(self, saved: Path | None, progress: MapProgress | None) -> CorpusMap:
        papers = self.papers
        ids, vectors = self.paper_vectors()
        kept = [i for i, pid in enumerate(ids) if pid in papers]
        made = make_map([papers[ids[i]] for i in kept], vectors[kept], threads=self.settings.threads, progress=progress)
        if saved is not None:
            save_map(saved, made)
        return made

    def _map_file(self) -> Path | None:
        """Where this generation's map is saved; None for a store never written to."""
        _ = self.catalog  # made for a store written before generations were, it stamps one
        if self._generation is None:
            return None
        return self._local_folder("maps") / f"{self._generation}.json"

    def _local_folder(self, kind: str) -> Path:
        """This machine's folder for what it keeps of the collection: beside the embedded store,
        or in data_dir for a server's collection."""
        if self.path is not None:
            return self.path.parent / kind / self.settings.collection
        server = re.sub(r"[^A-Za-z0-9.-]+", "_", self.settings.chroma_url or "")
        return Path(self.settings.data_dir) / kind / server / self.settings.collection

    def _catalog_folder(self) -> Path | None:
        """Where this generation's catalog is saved; None for a store not stamped yet."""
        if self._generation is None:
            return None
        return self._local_folder("catalog") / self._generation

    # -- writing ---------------------------------------------------------------------------

    def ingest(
        self,
        papers: Iterable[Paper | SkippedRecord] | LoadResult,
        *,
        progress: Progress | None = None,
        total: int | None = None,
        waiting: Waiting | None = None,
    ) -> IngestReport:
        """Upsert papers: new ones are added, changed ones replaced, unchanged ones left alone.

        `papers` may be a stream (`read_corpus`): it is read a batch at a time, and `progress`
        counts the papers read of `total` (its length where it has one). Chunks are written
        before stale ones are deleted, so an interrupted ingest never loses a paper that was
        indexed before it. `waiting` is told if another process is writing to the index.
        """
        if isinstance(papers, LoadResult):
            papers = [*papers.papers, *papers.skipped]
        if total is None and isinstance(papers, Sized):
            total = sum(isinstance(p, Paper) for p in papers)
        with self._writing(waiting):
            return self._ingest(papers, progress, total)

    def _ingest(self, papers: Iterable[Paper | SkippedRecord], progress: Progress | None, total: int | None) -> IngestReport:
        started = time.perf_counter()
        skipped: list[SkippedRecord] = []
        added = updated = unchanged = written = done = 0
        # The catalog this ingest updates, and what of the papers it writes goes into the next
        # one; `alone` stays true while no other process writes to the store between this
        # ingest's writes. Nothing else is kept of a batch once it is written: memory grows with
        # the papers written only by what the catalog and Chroma's vector index keep of them.
        base: Catalog | None = None
        additions: Additions | None = None
        alone = True
        if progress:
            progress(0, total or 0)
        try:
            stream = iter(papers)
            while batch := list(islice(stream, _BATCH)):
                skipped.extend(r for r in batch if isinstance(r, SkippedRecord))
                latest = {p.id: p for p in batch if isinstance(p, Paper)}
                # Looked up a batch at a time by id, not by reading the paper table (minutes at 100k
                # papers). Every field that goes into content_hash is stored, so the stored paper's
                # hash is its own.
                indexed = {pid: p.content_hash for pid, p in self.fetch(list(latest)).items()}
                todo = [p for p in latest.values() if indexed.get(p.id) != p.content_hash]
                # The lookup goes by the catalog as it was before this ingest, so a paper that an
                # earlier batch wrote is told by `additions`: given again, it is an update. (One an
                # earlier batch found unchanged is still in the store, and found again.)
                earlier: Container[str] = additions if additions is not None else ()
                added += sum(p.id not in indexed and p.id not in earlier for p in todo)
                updated += sum(p.id in indexed or p.id in earlier for p in todo)
                unchanged += len(latest) - len(todo)
                # How far this batch has come, in papers, as its texts are embedded.
                work = BatchProgress(progress, before=done, size=len(latest), total=total)
                if todo:
                    base = base or self.catalog.complete()
                    additions = additions if additions is not None else Additions(base.lexical.vocabulary)
                    # Stamped before as well as after: a catalog another process saves for the last
                    # generation meanwhile must not be current while these papers are in the table.
                    alone = self._stamp() and alone
                    written += self._write(todo, additions, work)
                    alone = self._stamp() and alone
                if self.settings.sentence_vectors:
                    # Unchanged papers whose sentences are not stored (indexed before, or by another
                    # client of the server): only their sentences and words are embedded.
                    same = [p for p in latest.values() if indexed.get(p.id) == p.content_hash]
                    stored = self.texts.hashes([p.id for p in same])
                    if bare := [p for p in same if stored.get(p.id) != p.content_hash]:
                        write_texts(self.texts, bare, self.embeddings, work)
                done += len(latest)
                if progress:
                    progress(done, max(total or 0, done))
        except KeyboardInterrupt as stop:
            # The count said so far runs ahead of what is written (`BatchProgress`).
            raise IngestStopped(done) from stop
        self._drop_old_layout()
        if added or updated:
            # `base` and `additions` are set: something was written.
            self._next_catalog(base.updated((), additions) if alone and base is not None and additions is not None else None)
        return IngestReport(
            added=added,
            updated=updated,
            unchanged=unchanged,
            skipped=tuple(skipped),
            chunks_written=written,
            seconds=time.perf_counter() - started,
        )

    def _next_catalog(self, catalog: Catalog | None) -> None:
        """After a write: the new generation's catalog is `catalog`, made by updating the last
        one, or (None) made from the paper table; saved either way, so the next process opens
        by reading it."""
        self._invalidate()
        folder = self._catalog_folder()
        if catalog is None or folder is None:
            self.catalog.complete()
        else:
            catalog.save(folder)
            self._catalog = catalog

    def _write(self, papers: list[Paper], additions: Additions, work: BatchProgress) -> int:
        """Write the papers' chunks (and sentences), add their catalog entries to `additions`;
        returns how many chunks were written."""
        size, overlap = self.settings.chunk_size, self.settings.chunk_overlap
        chunks = [(paper, chunk_paper(paper, chunk_size=size, chunk_overlap=overlap)) for paper in papers]
        work.expect(sum(len(c) for _, c in chunks))
        if self.settings.sentence_vectors:
            write_texts(self.texts, papers, self.embeddings, work)
        ids, firsts = self._add_chunks(chunks, work)
        additions.add(entry(paper, first) for paper, first in zip(papers, firsts, strict=True))
        fresh, old = set(ids), self._collection.get(where={"paper_id": {"$in": [p.id for p in papers]}}, include=[])["ids"]
        if stale := [i for i in old if i not in fresh]:
            self._collection.delete(ids=stale)
        return len(ids)

    def _add_chunks(self, chunked: list[tuple[Paper, list[Chunk]]], work: BatchProgress) -> tuple[list[str], list[str]]:
        """Embed the papers' chunks into Chroma; returns their ids and each paper's first chunk's."""
        pairs = [(paper, chunk) for paper, chunks in chunked for chunk in chunks]
        texts, ids, metas = [c.text for _, c in pairs], [c.id for _, c in pairs], [paper_metadata(p, c) for p, c in pairs]
        firsts = [chunks[0].id for _, chunks in chunked]
        for part in work.slices(len(texts)):
            self.vectorstore.add_texts(texts[part], metadatas=metas[part], ids=ids[part])
        return ids, firsts

    def _drop_old_layout(self) -> None:
        """An index made while sentences and words were Chroma collections of their own holds
        them twice now: those collections go (their memory is what moving them out saves)."""
        for name in (f"{self.settings.collection}-sentences", f"{self.settings.collection}-words"):
            try:
                self._client.delete_collection(name)
            except Exception:  # noqa: BLE001  (not there: chromadb raises NotFoundError or ValueError by version)
                continue
        # The BM25 index alone, saved per generation before the catalog held it.
        shutil.rmtree(self._local_folder("lexical"), ignore_errors=True)

    def remove(self, paper_ids: Sequence[str], *, waiting: Waiting | None = None) -> list[Paper]:
        """Delete papers, their chunks and their sentences (words stay: other papers use them);
        returns what was removed. An id that is not indexed removes nothing."""
        with self._writing(waiting):
            found = self.fetch(paper_ids)
            if missing := [i for i in paper_ids if i not in found]:
                raise _not_found(missing[0])
            base = self.catalog.complete()
            alone = self._stamp()
            self._collection.delete(where={"paper_id": {"$in": list(found)}})
            self.texts.drop(list(found))
            self._next_catalog(base.updated(list(found), ()) if self._stamp() and alone else None)
            return list(found.values())

    @contextmanager
    def _writing(self, waiting: Waiting | None) -> Iterator[None]:
        """One write, under the write lock of an embedded store, from the store as it is now."""
        with self._lock.held(waiting) if self._lock is not None else nullcontext():
            self.refresh()
            yield

    def _stored(self):
        """The collection as the store has it now (its metadata holds the generation)."""
        try:
            return self._client.get_collection(self.settings.collection)
        except Exception as exc:  # deleted by another client's reset, or the server is gone
            raise StoreError(f"cannot read the index at {self.location}: {exc}", hint=store_hint(self.settings)) from exc

    def refresh(self) -> bool:
        """Forget what was read of the store if anyone (another process, another client of the
        server) has written to it since; returns whether it had changed."""
        current = self._stored()
        generation = (current.metadata or {}).get("generation")
        if current.id == self._collection.id and generation == self._generation:
            return False
        if self.path is not None:  # this client's vector index is behind the other process's writes
            self._client = chroma_client(self.settings, self.path)
            self._connect()
        elif current.id == self._collection.id:
            self._generation = generation
        else:  # reset by another client: a new collection behind the same name
            self._connect()
        self._invalidate()
        return True

    def _stamp(self) -> bool:
        """A new generation: every other reader's cache of the store is now stale. Returns
        whether the generation it replaces is the one this process last saw (no other process
        wrote in between)."""
        last = (self._stored().metadata or {}).get("generation")
        # Chroma replaces a collection's metadata whole, and refuses to restate its space.
        meta = {k: v for k, v in (self._collection.metadata or {}).items() if not k.startswith("hnsw:")}
        alone = last == self._generation
        self._generation = meta["generation"] = uuid.uuid4().hex
        self._collection.modify(metadata=meta)
        return alone

    def _invalidate(self) -> None:
        self._papers = None
        self._count = None
        self._catalog = None
        self._map = None

    def reset(self, *, waiting: Waiting | None = None) -> None:
        """Drop every paper (the collection is recreated empty, for the same model)."""
        with self._writing(waiting):
            self.vectorstore.reset_collection()
            self.texts.clear()
            self._collection = self._stored()
            self._stamp()
            self._invalidate()
