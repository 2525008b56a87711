"""The index on disk: a persistent Chroma collection of chunks plus a BM25 index over papers.

Chroma holds everything: each chunk's vector, its text and its paper's metadata, with the whole
paper record on the paper's first chunk, so the paper table is read from the collection when it
opens. The collection records the embedding model that built it; opening it with another is an
error.

The store is embedded (a folder under `data_dir`) or, with `chroma_url`, a Chroma server that
several people share. Every write stamps the collection with a new generation; `refresh` compares
it with the one this process last read, so one client sees another's ingest at its next question.
The BM25 index is saved under the generation it was built for and loaded while that generation
is current, so it cannot drift out of step with the store.

Beside the chunks, two collections hold what the answerer reads of each paper
(`rag.answering.evidence.evidence_texts`), split and embedded at ingest so that a question
embeds only itself: `<collection>-sentences`, each abstract sentence with its vector under its
paper id and position, and `<collection>-words`, each distinct paper word once for the corpus
(its id is the word's hash). A paper stored before they existed is answered all the same: what
is missing is split and embedded when a question needs it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answering.evidence import evidence_texts
from rag.answering.question import CorpusProfile
from rag.chunking import chunk_paper
from rag.embeddings import embedding_model_id, make_embeddings
from rag.naming import method_name
from rag.errors import EmbeddingMismatchError, PaperNotFoundError, StoreError
from rag.offline import prepare
from rag.records import Chunk, IngestReport, LoadResult, Paper, stable_id
from rag.settings import Settings

Progress = Callable[[int, int], None]

_BATCH = 256
_MAX_SENTENCES = 64
# How the sentences and words are stored; a paper stored in another layout (or none) gets them
# again at the next ingest.
TEXTS_LAYOUT = 1


@dataclass(frozen=True)
class DenseHit:
    paper_id: str
    similarity: float
    text: str


@dataclass(frozen=True)
class IndexStats:
    papers: int
    chunks: int
    embedding_model: str
    location: str
    categories: dict[str, int]
    venues: dict[str, int]
    years: dict[int, int]


def _sentence_id(paper_id: str, position: int) -> str:
    return f"{paper_id}:s{position}"


def _sentence_ids(paper_ids: Iterable[str]) -> list[str]:
    """Every id the papers' sentences may have: looking up by id is several times faster than
    a metadata filter, and no stored abstract has more sentences."""
    return [_sentence_id(pid, position) for pid in dict.fromkeys(paper_ids) for position in range(_MAX_SENTENCES)]


def _paper_metadata(paper: Paper, chunk: Chunk, *, texts: bool) -> dict:
    meta: dict = {
        "paper_id": paper.id,
        "position": chunk.position,
        "n_chunks": chunk.n_chunks,
        "title": paper.title,
        "authors": json.dumps(list(paper.authors), ensure_ascii=False),
        "category": paper.category,
        "venue": paper.venue,
        "url": paper.url,
    }
    if paper.year is not None:
        meta["year"] = paper.year
    if chunk.position == 0:
        meta["abstract"] = paper.abstract
        meta["extra"] = json.dumps(paper.extra, ensure_ascii=False)
        # Its sentences and words are stored (written before this chunk), in this layout.
        meta["texts"] = TEXTS_LAYOUT if texts else 0
    return meta


def _paper_from_metadata(meta: dict) -> Paper:
    return Paper(
        id=meta["paper_id"],
        title=meta.get("title", ""),
        authors=tuple(json.loads(meta.get("authors", "[]"))),
        abstract=meta["abstract"],
        category=meta.get("category", ""),
        venue=meta.get("venue", ""),
        year=meta.get("year"),
        url=meta.get("url", ""),
        extra=json.loads(meta.get("extra", "{}")),
    )


def _hint(settings: Settings) -> str:
    if settings.chroma_url:
        return (
            "start the server (`chroma run --path DIR --host HOST --port PORT`) or check the address, "
            "or unset PAPERCHAT_CHROMA_URL to use the embedded index"
        )
    return "set PAPERCHAT_DATA_DIR to a writable folder"


def _client(settings: Settings, path: Path | None):
    """The Chroma client: an HTTP client for `chroma_url`, else the embedded store in `path`."""
    import chromadb

    url = urlsplit(settings.chroma_url or "")
    if path is None and (url.scheme not in ("http", "https") or not url.hostname):
        raise StoreError(
            f"PAPERCHAT_CHROMA_URL={settings.chroma_url!r} is not an http(s)://host:port address",
            hint="for example http://127.0.0.1:8000, where `chroma run` listens",
        )
    try:
        if path is None:
            return chromadb.HttpClient(
                host=url.hostname, port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
            )
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path))
    except Exception as exc:
        where = settings.chroma_url if path is None else path
        raise StoreError(f"cannot open the index at {where}: {exc}", hint=_hint(settings)) from exc


class Index:
    """Papers, their chunks and vectors, and the lexical index; the only code touching Chroma."""

    def __init__(self, settings: Settings, embeddings: Embeddings, *, model_id: str | None = None) -> None:
        self.settings = settings
        self.embeddings = embeddings
        self.model_id = model_id or embedding_model_id(settings)
        # The embedded store's folder; None on a server.
        self.path: Path | None = None if settings.chroma_url else Path(settings.data_dir) / "chroma"
        self.location = (
            f"{settings.chroma_url} (collection '{settings.collection}')" if settings.chroma_url else str(self.path)
        )
        self._client = _client(settings, self.path)
        self._connect()
        self._papers: dict[str, Paper] | None = None
        self._without_texts: set[str] = set()
        self._first_chunks: dict[str, str] | None = None
        self._counts: dict[str, int] = {}
        self._lexical = None
        self._profile: CorpusProfile | None = None

    def _open(self, name: str, **hnsw):
        from langchain_chroma import Chroma

        try:
            return Chroma(
                client=self._client,
                collection_name=name,
                embedding_function=self.embeddings,
                collection_metadata={"embedding_model": self.model_id},
                collection_configuration={"hnsw": {"space": "cosine", **hnsw}},
            )
        except Exception as exc:  # chromadb raises its own, httpx's and ValueError alike
            raise StoreError(
                f"cannot open the index at {self.location}: {exc}", hint=_hint(self.settings)
            ) from exc

    def _connect(self) -> None:
        self.vectorstore = self._open(self.settings.collection)
        self._collection = self.vectorstore._collection
        built_with = (self._collection.metadata or {}).get("embedding_model")
        if built_with != self.model_id:
            raise EmbeddingMismatchError(
                f"the index at {self.location} was built with {built_with}, "
                f"but the configured embedding model is {self.model_id}",
                hint="use the model it was built with, or another PAPERCHAT_DATA_DIR / "
                "PAPERCHAT_COLLECTION, or `paperchat reset` and ingest again",
            )
        self._generation = (self._collection.metadata or {}).get("generation")
        self.sentences = self._open(f"{self.settings.collection}-sentences")
        # Words are read by id, never searched: a sparse graph makes their writes cheaper.
        self.words = self._open(f"{self.settings.collection}-words", ef_construction=16, max_neighbors=8)
        for side in (self.sentences, self.words):
            if (side._collection.metadata or {}).get("embedding_model") != self.model_id:
                # Left by an index of another model under this name; a cache, so start afresh.
                side.reset_collection()

    @classmethod
    def open(cls, settings: Settings, *, embeddings: Embeddings | None = None) -> Index:
        """Open (or create) the index under `settings.data_dir`, loading the embedding model."""
        prepare()
        return cls(settings, embeddings or make_embeddings(settings))

    # -- reading ---------------------------------------------------------------------------

    def _load_papers(self) -> dict[str, Paper]:
        if self._papers is None:
            got = self._collection.get(where={"position": 0}, include=["metadatas"])
            metas = got["metadatas"] or []
            self._papers = {m["paper_id"]: _paper_from_metadata(m) for m in metas}
            self._first_chunks = {m["paper_id"]: i for m, i in zip(metas, got["ids"], strict=True)}
            self._without_texts = {m["paper_id"] for m in metas if m.get("texts") != TEXTS_LAYOUT}
        return self._papers

    @property
    def papers(self) -> dict[str, Paper]:
        """Every indexed paper by id."""
        return self._load_papers()

    def __len__(self) -> int:
        return len(self.papers)

    def get(self, paper_id: str) -> Paper:
        try:
            return self.papers[paper_id]
        except KeyError:
            raise PaperNotFoundError(
                f"no paper with id {paper_id!r} in the index", hint="`paperchat stats` lists what is indexed"
            ) from None

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
        papers = self.papers.values()
        return IndexStats(
            papers=len(self.papers),
            chunks=self._collection.count(),
            embedding_model=self.model_id,
            location=self.location,
            categories=dict(Counter(p.category for p in papers if p.category).most_common()),
            venues=dict(Counter(p.venue for p in papers if p.venue).most_common()),
            years=dict(sorted(Counter(p.year for p in papers if p.year).items())),
        )

    def fetch(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """These papers by id (those still indexed), without reading the whole paper table."""
        if self._papers is not None:
            return {i: self._papers[i] for i in paper_ids if i in self._papers}
        if not paper_ids:
            return {}
        rows = self._first_chunk_ids()
        if rows is not None:  # by id: several times faster than a metadata filter
            got = self._collection.get(ids=[rows[i] for i in dict.fromkeys(paper_ids) if i in rows], include=["metadatas"])
        else:
            got = self._collection.get(
                where={"$and": [{"paper_id": {"$in": list(paper_ids)}}, {"position": 0}]}, include=["metadatas"]
            )
        return {m["paper_id"]: _paper_from_metadata(m) for m in got["metadatas"] or []}

    def _first_chunk_ids(self) -> dict[str, str] | None:
        """Each paper's first chunk id (the one holding the paper record), as saved for this
        generation; None when there is no save to read."""
        if self._first_chunks is None:
            folder = self._lexical_folder()
            try:
                if folder is not None:
                    self._first_chunks = json.loads((folder / "first_chunks.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._first_chunks = None
        return self._first_chunks

    def profile(self) -> CorpusProfile:
        """What question analysis reads of the corpus: size, term counts, venues, authors, names.

        Saved beside the BM25 index of the same generation, so a new process reads one file
        instead of the whole paper table."""
        if self._profile is None:
            folder = self._lexical_folder()
            saved = folder / "profile.json" if folder is not None else None
            if saved is not None and saved.is_file():
                try:
                    fields = json.loads(saved.read_text(encoding="utf-8"))
                    self._profile = CorpusProfile(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
                except (OSError, ValueError, TypeError):  # damaged: built again below
                    self._profile = None
            if self._profile is None:
                self._profile = self._build_profile()
                self._save_json("profile.json", dataclasses.asdict(self._profile))
                self._save_json("first_chunks.json", self._first_chunks)
        return self._profile

    def _save_json(self, name: str, value) -> None:
        """Save `value` in this generation's folder, whole or not at all."""
        folder = self._lexical_folder()
        if folder is None or not folder.is_dir():
            return
        partial = folder / f"{name}.{uuid.uuid4().hex}.tmp"
        try:
            partial.write_text(json.dumps(value), encoding="utf-8")
            partial.replace(folder / name)
        except OSError:  # a read-only place only costs the next process a rebuild
            partial.unlink(missing_ok=True)

    def _build_profile(self) -> CorpusProfile:
        papers = list(self.papers.values())
        names: dict[str, str] = {}
        for paper in papers:
            # Only coined names ("MoH", "Flat-LoRA", "ActionPiece"), from the title or the
            # method the abstract introduces: a title used as a name is a phrase of words.
            for name in (paper.short_name, method_name(paper.abstract)):
                if name and name != paper.title and len(name.split()) <= 3 and "et al." not in name and " and " not in name:
                    names.setdefault(name, paper.id)
        return CorpusProfile(
            papers=len(papers),
            document_frequency=self.lexical.document_frequency(),
            venues=tuple(sorted({p.venue for p in papers if p.venue})),
            authors=tuple(sorted({a for p in papers for a in p.authors})),
            categories=tuple(sorted({p.category for p in papers if p.category})),
            years=tuple(sorted({p.year for p in papers if p.year})),
            names=names,
        )

    def stored_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors ingest stored for these words, by word; the others are not in the result."""
        wanted = {stable_id(t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        for ids in self._batches(list(wanted)):
            got = self.words.get(ids=ids, include=["embeddings", "documents"])
            for i, text, vector in zip(got["ids"], got["documents"], got["embeddings"], strict=True):
                if wanted[i] == text:
                    found[text] = np.asarray(vector, dtype=np.float32)
        return found

    def stored_sentences(self, paper_ids: Sequence[str]) -> dict[str, list[tuple[str, np.ndarray]]]:
        """Each paper's abstract sentences, in order, with their vectors, as ingest stored them;
        papers stored without them are not in the result."""
        if not paper_ids:
            return {}
        got = self.sentences.get(ids=_sentence_ids(paper_ids), include=["documents", "metadatas", "embeddings"])
        found: dict[str, dict[int, tuple[str, np.ndarray]]] = {}
        for text, meta, vector in zip(got["documents"], got["metadatas"], got["embeddings"], strict=True):
            found.setdefault(meta["paper_id"], {})[meta["position"]] = (text, np.asarray(vector, dtype=np.float32))
        return {
            pid: [at[i] for i in range(len(at))] for pid, at in found.items() if set(at) == set(range(len(at)))
        }

    def _batches(self, items: list) -> Iterator[list]:
        size = self._client.get_max_batch_size()
        for start in range(0, len(items), size):
            yield items[start : start + size]

    def dense_search(self, query_vector: Sequence[float], n: int, paper_ids: Sequence[str] | None = None) -> list[DenseHit]:
        """Nearest chunks by cosine similarity, optionally only among some papers."""
        return self._nearest(self.vectorstore, query_vector, n, paper_ids)

    def sentence_search(
        self, query_vector: Sequence[float], n: int, paper_ids: Sequence[str] | None = None
    ) -> list[DenseHit]:
        """Nearest abstract sentences by cosine similarity, optionally only among some papers."""
        return self._nearest(self.sentences, query_vector, n, paper_ids)

    def _nearest(self, store, query_vector: Sequence[float], n: int, paper_ids: Sequence[str] | None) -> list[DenseHit]:
        if paper_ids is not None and not paper_ids:
            return []
        where = {"paper_id": {"$in": list(paper_ids)}} if paper_ids is not None else None
        # Counting costs a scan, so once per generation.
        name = store._collection.name
        if name not in self._counts:
            self._counts[name] = store._collection.count()
        n = min(n, self._counts[name])
        if n == 0:
            return []
        found = store.similarity_search_by_vector_with_relevance_scores(list(query_vector), k=n, filter=where)
        # Chroma's cosine space returns distance = 1 - cosine similarity.
        return [DenseHit(d.metadata["paper_id"], 1.0 - dist, d.page_content) for d, dist in found]

    @property
    def lexical(self):
        """The BM25 index over papers (title + abstract): the one saved for the store's current
        generation, else built from the papers (and saved for the next process)."""
        if self._lexical is None:
            from rag.lexical import LexicalIndex

            folder = self._lexical_folder()
            if folder is not None and folder.is_dir():
                try:
                    self._lexical = LexicalIndex.load(folder)
                except (OSError, ValueError):  # a damaged save: build it again
                    shutil.rmtree(folder, ignore_errors=True)
            if self._lexical is None:
                self._lexical = LexicalIndex.build(list(self.papers.values()))
                if folder is None:
                    # Built before generations were recorded: stamp it once, so the index just
                    # built is the current generation's.
                    self._stamp()
                    folder = self._lexical_folder()
                self._save_lexical(folder)
        return self._lexical

    def _lexical_folder(self) -> Path | None:
        """Where the BM25 index of this generation is saved: beside the embedded store, or in
        data_dir for a server's collection. None for a store not stamped yet."""
        if self._generation is None:
            return None
        if self.path is not None:
            base = self.path.parent / "lexical" / self.settings.collection
        else:
            server = re.sub(r"[^A-Za-z0-9.-]+", "_", self.settings.chroma_url or "")
            base = Path(self.settings.data_dir) / "lexical" / server / self.settings.collection
        return base / self._generation

    def _save_lexical(self, folder: Path) -> None:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            self._lexical.save(folder)
        except OSError:  # a read-only place only costs the next process a rebuild
            return
        for older in folder.parent.iterdir():
            if older != folder and not older.name.endswith(".tmp"):
                shutil.rmtree(older, ignore_errors=True)

    # -- writing ---------------------------------------------------------------------------

    def ingest(self, papers: Iterable[Paper] | LoadResult, *, progress: Progress | None = None) -> IngestReport:
        """Upsert papers: new ones are added, changed ones replaced, unchanged ones left alone.

        Chunks are written before stale ones are deleted, so an interrupted ingest never loses
        a paper that was indexed before it.
        """
        started = time.perf_counter()
        skipped = papers.skipped if isinstance(papers, LoadResult) else ()
        incoming = list(papers.papers if isinstance(papers, LoadResult) else papers)
        latest = {p.id: p for p in incoming}
        self.refresh()
        # Every field that goes into content_hash is stored, so the stored paper's hash is its own.
        indexed = {pid: p.content_hash for pid, p in self.papers.items()}
        todo = [p for p in latest.values() if indexed.get(p.id) != p.content_hash]
        added = sum(1 for p in todo if p.id not in indexed)
        # Unchanged papers stored before sentence vectors were: only their sentences are embedded.
        bare = [
            p for p in latest.values()
            if self.settings.sentence_vectors and p.id in self._without_texts and indexed[p.id] == p.content_hash
        ]
        written, done, total = 0, 0, len(todo) + len(bare)
        if progress:
            progress(0, total)
        for work, batches in ((self._write, todo), (self._write_missing_texts, bare)):
            for start in range(0, len(batches), _BATCH):
                batch = batches[start : start + _BATCH]
                written += work(batch)
                done += len(batch)
                if progress:
                    progress(done, total)
        if total:
            self._invalidate()
            # The next process then opens by reading the saved BM25 index and profile.
            self.profile()
        return IngestReport(
            added=added,
            updated=len(todo) - added,
            unchanged=len(latest) - len(todo),
            skipped=tuple(skipped),
            chunks_written=written,
            seconds=time.perf_counter() - started,
        )

    def _write(self, papers: list[Paper]) -> int:
        if self.settings.sentence_vectors:
            self._write_texts(papers)
        texts, metas, ids = [], [], []
        for paper in papers:
            for chunk in chunk_paper(paper, chunk_size=self.settings.chunk_size, chunk_overlap=self.settings.chunk_overlap):
                texts.append(chunk.text)
                metas.append(_paper_metadata(paper, chunk, texts=self.settings.sentence_vectors))
                ids.append(chunk.id)
        self.vectorstore.add_texts(texts, metadatas=metas, ids=ids)
        fresh = set(ids)
        old = self._collection.get(where={"paper_id": {"$in": [p.id for p in papers]}}, include=[])["ids"]
        stale = [i for i in old if i not in fresh]
        if stale:
            self._collection.delete(ids=stale)
        self._stamp()
        return len(ids)

    def _write_texts(self, papers: list[Paper]) -> None:
        """Embed and store the papers' sentences (each under its paper and position) and the
        words not stored yet; a sentence already stored as it is is not embedded again."""
        sentences: dict[str, tuple[str, dict]] = {}
        words: dict[str, None] = {}
        for paper in papers:
            paper_sentences, paper_words = evidence_texts(paper)
            if len(paper_sentences) > _MAX_SENTENCES:  # no abstract; its questions split it then
                paper_sentences = []
            for position, sentence in enumerate(paper_sentences):
                sentences[_sentence_id(paper.id, position)] = (sentence, {"paper_id": paper.id, "position": position})
            words.update(dict.fromkeys(paper_words))
        got = self.sentences.get(ids=_sentence_ids([p.id for p in papers]), include=["documents"])
        stored = dict(zip(got["ids"], got["documents"], strict=True))
        todo = [i for i, (text, _) in sentences.items() if stored.get(i) != text]
        for batch in self._batches(todo):
            self.sentences.add_texts(
                [sentences[i][0] for i in batch], metadatas=[sentences[i][1] for i in batch], ids=batch
            )
        stale = [i for i in stored if i not in sentences]
        if stale:
            self.sentences.delete(ids=stale)
        ids = {stable_id(w): w for w in words}
        present = {i for batch in self._batches(list(ids)) for i in self.words.get(ids=batch, include=[])["ids"]}
        for batch in self._batches([w for i, w in ids.items() if i not in present]):
            self.words.add_texts(batch, ids=[stable_id(w) for w in batch])

    def _write_missing_texts(self, papers: list[Paper]) -> int:
        """Store the sentences of papers indexed without them, then mark them as having them."""
        self._write_texts(papers)
        first = self._collection.get(
            where={"$and": [{"paper_id": {"$in": [p.id for p in papers]}}, {"position": 0}]}, include=[]
        )["ids"]
        # No new generation: the papers, the BM25 index and the profile are as they were.
        self._collection.update(ids=first, metadatas=[{"texts": TEXTS_LAYOUT}] * len(first))
        return 0

    def remove(self, paper_id: str) -> Paper:
        """Delete a paper, its chunks and its sentences (words stay: other papers use them);
        returns what was removed."""
        paper = self.get(paper_id)
        self._collection.delete(where={"paper_id": paper_id})
        self.sentences.delete(where={"paper_id": paper_id})
        self._stamp()
        self._invalidate()
        return paper

    def refresh(self) -> bool:
        """Forget what was read of the store if anyone (another process, another client of the
        server) has written to it since; returns whether it had changed."""
        try:
            current = self._client.get_collection(self.settings.collection)
        except Exception as exc:  # deleted by another client's reset, or the server is gone
            raise StoreError(
                f"cannot read the index at {self.location}: {exc}", hint=_hint(self.settings)
            ) from exc
        generation = (current.metadata or {}).get("generation")
        if current.id == self._collection.id and generation == self._generation:
            return False
        if current.id == self._collection.id:
            self._generation = generation
        else:  # reset by another client: a new collection behind the same name
            self._connect()
        self._invalidate()
        return True

    def _stamp(self) -> None:
        """A new generation: every other reader's cache of the store is now stale."""
        # Chroma replaces a collection's metadata whole, and refuses to restate its space.
        meta = {k: v for k, v in (self._collection.metadata or {}).items() if not k.startswith("hnsw:")}
        self._generation = meta["generation"] = uuid.uuid4().hex
        self._collection.modify(metadata=meta)

    def _invalidate(self) -> None:
        self._papers = None
        self._first_chunks = None
        self._counts = {}
        self._lexical = None
        self._profile = None

    def reset(self) -> None:
        """Drop every paper (the collection is recreated empty, for the same model)."""
        self.vectorstore.reset_collection()
        self.sentences.reset_collection()
        self.words.reset_collection()
        self._collection = self.vectorstore._collection
        self._stamp()
        self._invalidate()
