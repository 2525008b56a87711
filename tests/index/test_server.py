"""A Chroma server for a team: a real `chroma run` on loopback, reached through PAPERCHAT_CHROMA_URL.

Two clients share it: what one ingests the other sees at its next question, and the answers are
the ones the embedded store gives.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import APP, PAPERS, SEED_SET, answer_text, ask, interrupted_ingest, plain, run_cli

from rag.answering.chain import Assistant
from rag.corpus.reading import load_corpus
from rag.errors import StoreError
from rag.index.store import Index
from rag.records import Paper
from rag.settings import Settings

pytestmark = pytest.mark.slow

CHROMA = shutil.which("chroma", path=os.path.dirname(sys.executable))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Chroma server on a free loopback port, its data in a temporary folder; yields its URL."""
    if CHROMA is None:
        pytest.skip("the `chroma` command of the chromadb package is not installed beside this Python")
    port = _free_port()
    folder = tmp_path_factory.mktemp("chroma-server")
    log = (folder / "server.log").open("w")
    process = subprocess.Popen(
        [CHROMA, "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    # Far above need (a few seconds, more on a busy machine): the bound only ends a server that hangs.
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the Chroma server did not start: {(folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.3)
    yield url
    process.terminate()
    process.wait(timeout=30)
    log.close()


def _client(url: str, collection: str, tmp_path) -> Settings:
    return Settings(chroma_url=url, collection=collection, data_dir=tmp_path / "unused", backend="extractive")


def test_one_clients_ingest_is_seen_by_another(server, embeddings, tmp_path):
    papers = list(load_corpus(PAPERS).papers)
    alice = Index(_client(server, "team-library", tmp_path), embeddings)
    bob = Index(_client(server, "team-library", tmp_path), embeddings)
    assert not (tmp_path / "unused" / "chroma").exists(), "server mode writes no local store"
    alice.ingest(papers[:10])
    bob_assistant = Assistant(bob, bob.settings)
    answer = bob_assistant.ask("How does MoH select attention heads?")
    assert len(bob) == 10 and answer.citations and answer.sources[0].paper.title.startswith("MoH")

    # Bob has read the store (papers, BM25); Alice now adds the musical version matching paper.
    musical = next(p for p in papers[10:] if "Musical Version" in p.title)
    assert musical.id not in bob.papers
    alice.ingest(papers[10:])
    answer = bob_assistant.ask("Which paper matches musical versions at the segment level?")
    assert len(bob) == 20
    assert answer.sources[0].paper.id == musical.id and answer.citations

    # A paper Bob removes is gone for Alice at her next read, and her second ingest re-adds it once.
    bob.remove([musical.id])
    assert alice.refresh() and musical.id not in alice.papers
    report = alice.ingest(papers)
    assert (report.added, report.unchanged) == (1, 19)
    assert bob.refresh() and len(bob) == 20 and bob.stats().location.startswith(server)
    assert not bob.refresh(), "nothing written since: the store is not read again"
    # A reset makes a new collection behind the same name; Bob follows it.
    alice.reset()
    assert bob.refresh() and len(bob) == 0


def test_server_answers_as_the_embedded_store_does(server, embeddings, tmp_path):
    papers = load_corpus(PAPERS)
    remote = Index(_client(server, "seed-compare", tmp_path), embeddings)
    local = Index(Settings(data_dir=tmp_path / "embedded", backend="extractive"), embeddings)
    remote.ingest(papers)
    local.ingest(papers)
    questions = [json.loads(line)["question"] for line in SEED_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_remote = Assistant(remote, remote.settings)
    by_local = Assistant(local, local.settings)
    for question in questions:
        a, b = by_remote.ask(question), by_local.ask(question)
        assert [s.paper.id for s in a.sources] == [s.paper.id for s in b.sources], question
        assert a.text == b.text, question


def test_cli_ingests_and_asks_through_the_server(server, tmp_path):
    env = {"PAPERCHAT_CHROMA_URL": server, "PAPERCHAT_COLLECTION": "cli-library"}
    done = run_cli(tmp_path / "index", "ingest", str(PAPERS), env=env)
    assert "20 papers in the index at " + server in done.stdout
    done = run_cli(tmp_path / "index", "ask", "--json", "How does Flat-LoRA avoid extra training cost?", env=env)
    answer = json.loads(done.stdout)
    assert answer["citations"] and answer["sources"][0]["paper"]["title"].startswith("Flat-LoRA")
    done = run_cli(tmp_path / "index", "eval", "--set", str(SEED_SET), "--limit", "3", "--out", str(tmp_path / "reports"), env=env)
    assert "questions over 20 papers" in done.stderr and list((tmp_path / "reports").glob("*/report.json"))
    assert not (tmp_path / "index" / "chroma").exists()


def test_the_app_answers_from_the_server_and_sees_a_teammates_ingest(server, embeddings, tmp_path, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    papers = list(load_corpus(PAPERS).papers)
    teammate = Index(_client(server, "app-library", tmp_path), embeddings)
    teammate.ingest(papers[:10])
    for name, value in {"PAPERCHAT_CHROMA_URL": server, "PAPERCHAT_COLLECTION": "app-library", "PAPERCHAT_DATA_DIR": str(tmp_path)}.items():
        monkeypatch.setenv(name, value)
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(APP, default_timeout=120).run()
        assert not at.exception and _papers_metric(at) == 10
        teammate.ingest(papers[10:])
        at = ask(at, "Which paper matches musical versions at the segment level?")
        assert _papers_metric(at) == 20
        answer = answer_text(at.chat_message[1])
        assert "Musical Version" in plain(answer) and "[1]" in answer
    finally:
        st.cache_resource.clear()


def test_an_ingest_another_client_wrote_into_makes_its_catalog_from_the_table(server, tmp_path):
    # A server takes every client's writes as they come (an embedded index has one writer at a
    # time: tests/index/test_crash_concurrency.py), so another client may write between two batches.
    from langchain_core.embeddings import DeterministicFakeEmbedding

    plain = _client(server, "written-into", tmp_path).model_copy(update={"sentence_vectors": False})
    fake = DeterministicFakeEmbedding(size=16)
    mine, other = Index(plain, fake), Index(plain, fake)
    papers = [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}.") for i in range(300)]
    intruder = Paper(id="other", title="Written meanwhile", abstract="Another client writes about zebras.")

    def progress(done: int, total: int) -> None:
        if done == 256:  # between this ingest's first and second batch
            other.ingest([intruder])

    mine.ingest(papers, progress=progress)
    assert len(mine) == 301 and len(Index(plain, fake)) == 301
    assert mine.lexical.search("zebras", 1)[0].paper_id == "other"


def _papers_metric(at) -> int:
    return int(next(m for m in at.sidebar.metric if m.label == "Papers").value)


def test_an_unreachable_server_is_a_clear_error(tmp_path, embeddings):
    closed = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(StoreError, match="cannot open the index at " + closed):
        Index(_client(closed, "papers", tmp_path), embeddings)
    with pytest.raises(StoreError, match="not an http"):
        Index(_client("localhost:8000", "papers", tmp_path), embeddings)
    done = run_cli(tmp_path / "index", "stats", check=False, env={"PAPERCHAT_CHROMA_URL": closed})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert closed in done.stderr and "chroma run" in done.stderr



def test_an_ingest_killed_midway_on_the_server_loses_nothing(server, tmp_path):
    env = {"PAPERCHAT_CHROMA_URL": server, "PAPERCHAT_COLLECTION": "killed-ingest"}
    written, stats, chunks = interrupted_ingest(tmp_path / "index", tmp_path, env=env)
    assert 0 < written < 600, "the kill should land mid-ingest"
    assert (stats["papers"], stats["chunks"]) == (600, chunks), "no paper lost, no chunk twice"
