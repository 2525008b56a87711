"""Crash safety and concurrent writers of the embedded index.

`paperchat ingest` SIGKILLed in each of its stages leaves every paper whole or absent, in the table and
in the catalog alike, and a rerun completes it exactly. Two writers never write at once: the second
waits for the first (saying so) or gives up with "index busy"; readers are never held up; a killed
writer holds nothing up. A process that read or wrote the store before another process wrote to it
reads and writes what that process wrote.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, kill, run_cli, sentences_stored, start_cli, variant_corpus, wait_for, writer_holding
from langchain_core.embeddings import DeterministicFakeEmbedding

from rag.corpus.chunking import chunk_paper
from rag.errors import IndexBusyError
from rag.index.locking import WriteLock
from rag.index.store import Index
from rag.index.textvectors import TextVectors
from rag.records import Paper
from rag.settings import Settings

pytestmark = pytest.mark.slow


def _lock(data_dir: Path) -> WriteLock:
    """The write lock of the default collection in `data_dir`, as an Index there takes it."""
    return WriteLock(data_dir / "locks" / "papers.lock", str(data_dir / "chroma"), timeout=0)


def _held_by(data_dir: Path, child: subprocess.Popen) -> None:
    """Return once `child` holds the write lock."""
    wait_for(child, "it took the write lock", lambda: _lock(data_dir).holder() == child.pid)


def _check(index: Index, papers: list[Paper]) -> set[str]:
    """Every paper the index holds is whole, everywhere a question looks for it; returns their ids.

    Whole: all the chunks `chunk_paper` makes of it and no other, each with its vector; found by
    BM25 (every variant abstract has the word "variant"), by dense search, in the catalog's facets
    and counts, with its sentences stored (if ingest stores them). A paper absent from the table
    is found by none of them."""
    expected = {p.id: {c.id for c in chunk_paper(p)} for p in papers}
    got = index._collection.get(include=["metadatas", "embeddings"])
    chunks: dict[str, set[str]] = {}
    for chunk_id, meta in zip(got["ids"], got["metadatas"], strict=True):
        chunks.setdefault(meta["paper_id"], set()).add(chunk_id)
    table = set(index.papers)
    assert len(got["ids"]) == len(set(got["ids"])) == len(got["embeddings"]), "a chunk twice, or without its vector"
    half = {pid for pid in chunks.keys() | table if chunks.get(pid) != expected.get(pid)}
    assert not half, f"papers not whole: {sorted(half)[:5]}"
    stats = index.stats()
    assert (stats.papers, stats.chunks) == (len(table), len(got["ids"]))
    assert set(index.catalog.facets) == table
    assert {h.paper_id for h in index.lexical.search("variant", len(papers))} == table
    dense = index.dense_search(index.embeddings.embed_query("variant"), len(got["ids"]))
    assert len(dense) == len(got["ids"]) and {h.paper_id for h in dense} == table
    if index.settings.sentence_vectors:
        assert set(index.texts.hashes(list(table))) == table, "a paper in the table without its sentences"
    return table


class _Ingest:
    """A `paperchat ingest` of 20-paper files, started in `data_dir`, and the events of its run,
    read from the files it writes."""

    def __init__(self, data_dir: Path, files: list[Path], env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.sentences = sentences_stored(data_dir)  # papers' sentences stored before it ran
        self.catalogs_before = self._saved_catalogs()
        self.catalogs: set[str] = set()  # saved by this run
        self.files = self.catalogs_wanted = 0
        self.child = start_cli(data_dir, "ingest", *map(str, files), env=env)

    def _saved_catalogs(self) -> set[str]:
        folder = self.data_dir / "catalog" / "papers"
        return {p.name for p in folder.iterdir() if not p.name.endswith(".tmp")} if folder.exists() else set()

    def _chroma_written(self) -> int:
        # Chroma's SQLite file keeps a rollback journal: a reader's lock could hold its writer up,
        # so only the file's time is read.
        store = self.data_dir / "chroma" / "chroma.sqlite3"
        return store.stat().st_mtime_ns if store.exists() else 0

    def until(self, event: str) -> None:
        """Return once the next `event` of this run has happened:
        lock: it holds the write lock: the store is open, the model loaded;
        sentences: one more file's sentences are stored, its chunks not yet;
        chroma: it has written to Chroma's store since this was called;
        catalog: one more file's catalog is saved, its write done."""
        child = self.child
        if event == "lock":
            wait_for(child, "it took the write lock", lambda: _lock(self.data_dir).holder() == child.pid)
        elif event == "sentences":
            self.files += 1
            stored = self.sentences + 20 * self.files
            wait_for(child, f"{self.files} files' sentences were stored", lambda: sentences_stored(self.data_dir) >= stored)
        elif event == "chroma":
            before = self._chroma_written()
            wait_for(child, "it wrote to Chroma", lambda: self._chroma_written() != before)
        else:
            self.catalogs_wanted += 1

            def saved() -> bool:
                # Polled: a catalog saved and replaced between two looks is missed; the kill lands later.
                self.catalogs |= self._saved_catalogs() - self.catalogs_before
                return len(self.catalogs) >= self.catalogs_wanted

            wait_for(child, f"{self.catalogs_wanted} catalogs were saved", saved)


# Where each run is killed: at once, or right after the events named, in turn. Each kill lands in
# the stage after its last event, the last of them in the 10th of the 15 files: no run can finish
# first. (A file whose sentences a killed run stored is written again without adding to the count.)
# Measured, the papers indexed after each kill: 0 0 0 40 60 80 100 100 100 140 160 160 180.
_KILLS: tuple[tuple[str, ...], ...] = (
    (),  # Python starting, the files read and counted, the model loading
    ("lock",),  # the first file's lookups and its sentences' embedding
    ("sentences",),  # its chunks' embedding
    ("sentences", "chroma"),  # its chunks in Chroma: the stale ones' deletion, the stamps, the catalog's save
    ("catalog",),  # the next file's lock, lookups and embedding
    ("lock", "sentences", "chroma", "chroma"),  # later in a file's write
    ("sentences", "sentences"),
    (),
    ("lock",),
    ("catalog", "catalog"),
    ("sentences", "chroma"),
    ("sentences",),
    ("catalog",),
)


def test_an_ingest_killed_in_each_of_its_stages_leaves_every_paper_whole_or_absent(tmp_path, embeddings):
    # 300 papers in 15 files: each file is one ingest (the write lock, a batch's sentences, then
    # its chunks, the stamps, a catalog save). The kills are placed by what the ingest has
    # written, not by time: a busy machine changes when they land, not where.
    files = [tmp_path / f"part{i:02}.jsonl" for i in range(15)]
    papers = [p for i, path in enumerate(files) for p in variant_corpus(path, [i])]
    data_dir = tmp_path / "index"
    settings = Settings(data_dir=data_dir)
    # No wait for the lock: a lock a killed run left behind would fail the next run at once.
    env = {"PAPERCHAT_LOCK_TIMEOUT": "0"}
    sizes: list[int] = []  # papers in the index after each kill
    for events in _KILLS:
        ingest = _Ingest(data_dir, files, env)
        for event in events:
            ingest.until(event)
        kill(ingest.child)
        sizes.append(len(_check(Index(settings, embeddings), papers)))
    # No kill lost what an earlier run wrote, and the kills found the corpus at different points:
    # none written, part of it, ...
    assert len(sizes) >= 12 and sizes == sorted(sizes), sizes
    assert len(set(sizes)) >= 3 and any(0 < n < len(papers) for n in sizes), sizes
    done = run_cli(data_dir, "ingest", *map(str, files), env=env)
    assert "index busy" not in done.stderr
    assert _check(Index(settings, embeddings), papers) == {p.id for p in papers}
    assert Index(settings, embeddings).stats().chunks == sum(len(chunk_paper(p)) for p in papers)


class _Died(Exception):
    """The process ended here."""


def test_a_writer_that_dies_between_writing_and_stamping_leaves_every_paper_whole_or_absent(settings, monkeypatch):
    # The kills rarely land in this window of milliseconds: the table has changed, and the
    # generation is still the one whose catalog, saved by the last write, says otherwise.
    plain = settings.model_copy(update={"sentence_vectors": False})
    fake = DeterministicFakeEmbedding(size=16)
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study variant {i}.") for i in range(30)]
    Index(plain, fake).ingest(papers[:20])
    write = Index._write

    def dies_after_writing(self, *args):
        write(self, *args)
        raise _Died

    monkeypatch.setattr(Index, "_write", dies_after_writing)
    with pytest.raises(_Died):
        Index(plain, fake).ingest(papers[20:])
    monkeypatch.undo()
    assert _check(Index(plain, fake), papers) == {p.id for p in papers}
    # The rerun finds them indexed and writes nothing: what it reads must already have them.
    again = Index(plain, fake)
    assert again.ingest(papers).unchanged == 30
    assert _check(again, papers) == {p.id for p in papers}

    def dies(self, paper_ids):
        raise _Died

    # A removal that dies once the chunks are deleted: the paper is found nowhere.
    monkeypatch.setattr(TextVectors, "drop", dies)
    with pytest.raises(_Died):
        Index(plain, fake).remove(["p3"])
    monkeypatch.undo()
    assert _check(Index(plain, fake), papers) == {p.id for p in papers} - {"p3"}


_PAUSED_WRITER = """
import sys
from pathlib import Path
from rag.corpus.reading import read_corpus
from rag.settings import Settings
from rag.index.store import Index

def pause(done, total):
    if done:  # its papers written, its catalog not saved yet, the lock held
        print("written", flush=True)
        sys.stdin.readline()

Index.open(Settings(data_dir=sys.argv[1])).ingest(read_corpus(Path(sys.argv[2])), progress=pause)
"""


def test_two_ingests_at_once_the_second_waits_a_third_is_refused_and_readers_go_on(tmp_path, embeddings):
    data_dir = tmp_path / "index"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    # Overlapping files: 80 papers are in both.
    papers = {p.id: p for p in variant_corpus(first, range(0, 12)) + variant_corpus(second, range(8, 16))}
    # The first writer is `paperchat ingest`'s Index.ingest, paused mid-ingest until told to go on:
    # what follows finds it writing however fast the machine is.
    a = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_WRITER, str(data_dir), str(first)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert a.stdout.readline() == "written\n", a.communicate()[1]
    b = start_cli(data_dir, "ingest", str(second))
    busy = run_cli(data_dir, "ingest", str(second), check=False, env={"PAPERCHAT_LOCK_TIMEOUT": "1"})
    run_cli(data_dir, "stats", "--json")  # a reader: it does not wait for the writer
    b_said = ""
    while "waiting for another ingest" not in b_said:  # until the second one waits for the lock
        line = b.stderr.readline()
        assert line, b_said
        b_said += line
    _, a_err = a.communicate("go on\n")
    _, b_err = b.communicate()
    b_err = b_said + b_err
    assert (a.returncode, b.returncode) == (0, 0), a_err + b_err
    where = data_dir / "chroma"
    assert f"waiting for another ingest to finish: another paperchat process (pid {a.pid}) is writing to {where}" in b_err
    assert busy.returncode == 1 and "Traceback" not in busy.stderr
    assert f"index busy: another paperchat process (pid {a.pid}) is writing to {where}" in busy.stderr
    assert "try again when it finishes" in busy.stderr and "PAPERCHAT_LOCK_TIMEOUT is 1 s" in busy.stderr
    index = Index(Settings(data_dir=data_dir), embeddings)
    assert _check(index, list(papers.values())) == set(papers)
    assert index.stats().chunks == sum(len(chunk_paper(p)) for p in papers.values())


def test_an_upload_while_the_cli_ingests_waits_for_it_and_sees_its_papers(tmp_path, embeddings):
    # The app's upload is Index.ingest on the app's Index, opened (and read) before the CLI wrote.
    data_dir = tmp_path / "index"
    app = Index(Settings(data_dir=data_dir), embeddings)
    cli_papers = variant_corpus(tmp_path / "cli.jsonl", range(0, 8))
    uploaded = variant_corpus(tmp_path / "upload.jsonl", range(8, 10))
    app.ingest(uploaded[:1])
    assert {h.paper_id for h in app.dense_search(embeddings.embed_query("attention"), 5)} == {uploaded[0].id}
    child = start_cli(data_dir, "ingest", str(tmp_path / "cli.jsonl"))
    _held_by(data_dir, child)
    # Paused while it holds the lock, and let go on only once the upload says it waits: without
    # this, a fast machine can finish the CLI's ingest before the upload asks for the lock.
    os.kill(child.pid, signal.SIGSTOP)
    said: list[str] = []

    def waits(text: str) -> None:
        said.append(text)
        os.kill(child.pid, signal.SIGCONT)

    try:
        report = app.ingest(uploaded, waiting=waits)
    finally:
        os.kill(child.pid, signal.SIGCONT)
    _, err = child.communicate()
    assert child.returncode == 0, err
    assert said == [f"waiting for another ingest to finish: another paperchat process (pid {child.pid}) is writing to {app.location}…"]
    assert (report.added, report.unchanged) == (len(uploaded) - 1, 1)
    everything = cli_papers + uploaded
    # The app's own index finds the CLI's papers by every path, dense search included.
    assert _check(app, everything) == {p.id for p in everything}
    assert _check(Index(Settings(data_dir=data_dir), embeddings), everything) == {p.id for p in everything}


_OTHER_PROCESS = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from rag.records import Paper
from rag.settings import Settings
from rag.index.store import Index
index = Index(Settings(data_dir=sys.argv[1], sentence_vectors=False), DeterministicFakeEmbedding(size=384))
index.ingest([Paper(id=f"b{i}", title=f"Paper b{i}", abstract=f"We study variant b{i}.") for i in range(600)])
"""


def test_a_process_that_read_before_another_wrote_reads_and_writes_what_that_one_wrote(tmp_path):
    # chromadb keeps a collection's vector index in memory per process as it first read it: a
    # client made before another process wrote 600 papers must not search without them, nor write
    # its old index back over them. Fake vectors: only the store is under test.
    settings = Settings(data_dir=tmp_path / "index", sentence_vectors=False)
    fake = DeterministicFakeEmbedding(size=384)

    def batch(tag: str) -> list[Paper]:
        return [Paper(id=f"{tag}{i}", title=f"Paper {tag}{i}", abstract=f"We study variant {tag}{i}.") for i in range(600)]

    mine = Index(settings, fake)
    mine.ingest(batch("a"))
    assert len(mine.dense_search(np.ones(384).tolist(), 10)) == 10
    subprocess.run([sys.executable, "-c", _OTHER_PROCESS, str(settings.data_dir)], cwd=ROOT, check=True, timeout=300)
    assert mine.refresh()
    assert {h.paper_id[0] for h in mine.dense_search(np.ones(384).tolist(), 1200)} == {"a", "b"}
    mine.ingest(batch("c"))
    everything = batch("a") + batch("b") + batch("c")  # b: as the other process made them
    assert _check(Index(settings, fake), everything) == {p.id for p in everything}


def test_a_killed_writer_holds_nothing_up_and_readers_never_wait(settings):
    plain = settings.model_copy(update={"sentence_vectors": False, "lock_timeout": 0.5})
    fake = DeterministicFakeEmbedding(size=16)
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study variant {i}.") for i in range(40)]
    index = Index(plain, fake)
    index.ingest(papers[:20])
    said: list[str] = []
    with writer_holding(plain.data_dir) as pid:
        with pytest.raises(IndexBusyError, match=rf"another paperchat process \(pid {pid}\) is writing to"):
            index.ingest(papers[20:], waiting=said.append)
        assert len(said) == 1
        # Readers take no lock: a new one opens and searches while the writer holds it.
        reader = Index(plain, fake)
        assert len(reader) == 20 and reader.lexical.search("variant", 5)
    said.clear()
    index.ingest(papers[20:], waiting=said.append)
    assert not said and len(index) == 40


def test_a_write_in_another_session_of_the_process_is_refused_while_one_is_under_way(settings):
    # The app's sessions share its Index, in threads of one process; the lock holds them apart too.
    plain = settings.model_copy(update={"sentence_vectors": False, "lock_timeout": 0})
    fake = DeterministicFakeEmbedding(size=16)
    mine, other = Index(plain, fake), Index(plain, fake)
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}.") for i in range(300)]
    intruder = Paper(id="other", title="Written meanwhile", abstract="Another session writes about zebras.")
    refused: list[IndexBusyError] = []

    def progress(done: int, total: int) -> None:
        # Between this ingest's first and second batch (the count reaches 256 as the first
        # batch's last slice is embedded, and again once it is written).
        if done == 256 and not refused:
            with pytest.raises(IndexBusyError) as busy:
                other.ingest([intruder])
            refused.append(busy.value)

    mine.ingest(papers, progress=progress)
    assert len(refused) == 1 and "another session of this process" in refused[0].message
    assert len(Index(plain, fake)) == 300
    other.ingest([intruder])
    assert mine.refresh() and mine.lexical.search("zebras", 1)[0].paper_id == "other"


def test_ctrl_c_during_an_ingest_says_what_is_indexed_and_the_same_command_adds_the_rest(tmp_path, embeddings):
    # Ctrl+C (SIGINT) is not a crash: the CLI says how far it got and what to do, with no traceback.
    data_dir = tmp_path / "index"
    corpus = tmp_path / "many.jsonl"
    papers = variant_corpus(corpus, range(30))  # 600 papers: batches of 256
    child = start_cli(data_dir, "ingest", str(corpus))
    wait_for(child, "the second batch's sentences were stored", lambda: sentences_stored(data_dir) > 256)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate()
    assert child.returncode == 130, err
    assert "Traceback" not in err
    said = re.search(r"interrupted the first (\d+) of 600 papers of \S+many\.jsonl are in the index", err)
    assert said, err
    assert "run the same command again for the rest: papers already indexed are not embedded again" in err
    index = Index(Settings(data_dir=data_dir), embeddings)
    held = _check(index, papers)
    # What it says is in the index is: the first batch at least, whole.
    assert int(said[1]) in (256, 512) and {p.id for p in papers[: int(said[1])]} <= held
    again = run_cli(data_dir, "ingest", str(corpus))
    assert "600 papers in the index" in again.stdout
    assert _check(Index(Settings(data_dir=data_dir), embeddings), papers) == {p.id for p in papers}
