"""Shared fixtures. The embedding model is real (the bundled MiniLM), loaded once per session, unless
`--fake-embedder` asks for a deterministic fake."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import hypothesis
import pytest
from streamlit.testing.v1 import AppTest

# No test may reach a network or a user's key.
for _var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PAPERCHAT_BACKEND", "PAPERCHAT_DATA_DIR", "PAPERCHAT_CHROMA_URL"):
    os.environ.pop(_var, None)
os.environ["PAPERCHAT_CONFIG"] = os.devnull
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Property tests: few examples and no deadline by default, so they take seconds on a shared two-core
# machine; HYPOTHESIS_PROFILE=deep searches harder. No example database: a failure found is kept as
# an @example instead (Hypothesis's caches in .hypothesis/ are ignored by git).
hypothesis.settings.register_profile("ci", max_examples=60, deadline=None, database=None)
hypothesis.settings.register_profile("deep", max_examples=3000, deadline=None, database=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PAPERS = ROOT / "data" / "papers.jsonl"
SEED_SET = ROOT / "eval" / "sets" / "seed.jsonl"
BROWSER_ARTIFACTS = ROOT / "tests" / "artifacts" / "browser"
# The browser tests start the app and drive Chromium with bench/load_ui.py's helpers (bench/ is
# scripts, not a package).
sys.path.append(str(ROOT / "bench"))


EXE = shutil.which("paperchat", path=os.path.dirname(sys.executable)) or "paperchat"


def _cli_env(data_dir, env: dict[str, str] | None) -> dict[str, str]:
    # The command line speaks the locale's language: the tests read its English, whatever the
    # machine's locale, unless a test sets one.
    machine = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES", "LANG", "PAPERCHAT_LANG")}
    return {**machine, "LANG": "C.UTF-8", **(env or {}), "PAPERCHAT_DATA_DIR": str(data_dir), "COLUMNS": "200"}


# Follow-ups after an answer about MoH that compare it with a topic (issue 26): the phrasings the
# analysis and the whole ask are both tested on.
COMPARED_WITH_BANDITS = (
    "How does this compare to the bandits work?",
    "How does it compare with the bandit papers?",
    "Compare this to the work on bandits",
    "What is the difference between this and the bandits papers?",
    "Is it better than the bandits approaches?",
)


def run_cli(
    data_dir, *args, check=True, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess:
    """`paperchat ARGS` in a subprocess on the index in `data_dir` (and `env`), from the repository
    root, reading `input` as what the user types."""
    done = subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=ROOT, env=_cli_env(data_dir, env), timeout=300, input=input
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture
def no_proxy(monkeypatch):
    """Keep any proxy configured in the environment away from the local servers of a test."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def model_assistant(index, base_url: str, **settings):
    """An Assistant over `index` whose answers come from the OpenAI-compatible server at `base_url`."""
    from rag.answering.chain import Assistant
    from rag.settings import Settings

    return Assistant(index, Settings(
        data_dir=index.settings.data_dir, openai_base_url=base_url, openai_api_key="sk-test", openai_model="fake",
        **settings,
    ))


def shared_file(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared corpora are not beside this checkout")
    return path


def pytest_addoption(parser):
    parser.addoption(
        "--fake-embedder", action="store_true",
        help="embed with a deterministic fake instead of MiniLM (make test-fast): for tests that need no meaning in the vectors",
    )


@pytest.fixture(scope="session")
def embeddings(request):
    if request.config.getoption("--fake-embedder"):
        from langchain_core.embeddings import DeterministicFakeEmbedding

        # MiniLM's width; the index it fills is labelled MiniLM (from the settings) but lives in a temporary folder.
        return DeterministicFakeEmbedding(size=384)
    from rag.index.embeddings import make_embeddings
    from rag.index.offline import prepare
    from rag.settings import Settings

    prepare()
    model = make_embeddings(Settings())
    model.embed_query("warm up")
    return model


@pytest.fixture(scope="module")
def server(tmp_path_factory, embeddings):
    """`paperchat ui` over the bundled papers, for a browser to drive; skips where Chromium is not installed."""
    from load_ui import CHROMIUM, serve

    from rag.corpus.reading import load_corpus
    from rag.index.store import Index
    from rag.settings import Settings

    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it with apt-get)")
    pytest.importorskip("playwright", reason="playwright is in the dev extra (make install)")
    data_dir = tmp_path_factory.mktemp("browser-index")
    Index(Settings(data_dir=data_dir), embeddings).ingest(load_corpus(PAPERS))
    # Up in seconds; the bound, far above that on a busy machine, only ends a server that hangs.
    with serve(data_dir, wait_s=300) as ui:
        yield ui


@pytest.fixture
def settings(tmp_path):
    from rag.settings import Settings

    return Settings(data_dir=tmp_path / "index", backend="extractive")


@pytest.fixture(scope="session")
def seed_index(tmp_path_factory, embeddings):
    """The bundled corpus, indexed once for read-only tests."""
    from rag.corpus.reading import load_corpus
    from rag.index.store import Index
    from rag.settings import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("seed-index"), backend="extractive")
    index = Index(settings, embeddings)
    index.ingest(load_corpus(PAPERS))
    return index


@pytest.fixture(scope="module")
def app_index_dir(tmp_path_factory, embeddings):
    """The bundled 20 papers indexed for the Streamlit app; its cached Assistant is dropped around the module."""
    import streamlit as st

    from rag.corpus.reading import load_corpus
    from rag.index.store import Index
    from rag.settings import Settings

    data_dir = tmp_path_factory.mktemp("app-index")
    Index(Settings(data_dir=data_dir), embeddings).ingest(load_corpus(PAPERS))
    st.cache_resource.clear()
    yield data_dir
    st.cache_resource.clear()


@pytest.fixture
def fresh_assistant():
    """For tests that change settings: the process-wide cached Assistant is rebuilt, then dropped."""
    import streamlit as st

    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


APP = str(ROOT / "ui" / "app.py")  # AppTest resolves a relative path against this file, not the cwd


@pytest.fixture
def open_app(monkeypatch, app_index_dir):
    """Start the app on an index dir (the bundled corpus unless told) with extra environment, at
    a URL with `query` parameters."""
    # The app saves every answered question under the index dir the module's tests share: each
    # test starts with none saved.
    shutil.rmtree(app_index_dir / "conversations", ignore_errors=True)

    def start(data_dir=app_index_dir, *, query: dict[str, str] | None = None, **env: str) -> AppTest:
        monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(data_dir))
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        at = AppTest.from_file(APP, default_timeout=120)
        at.query_params.update(query or {})
        at.run()
        assert not at.exception
        return at

    return start


def plain(markdown: str) -> str:
    """What escaped Markdown displays."""
    return re.sub(r"\\(.)", r"\1", markdown)


def ask(at: AppTest, question: str) -> AppTest:
    at.chat_input[0].set_value(question).run()
    assert not at.exception
    return at


def uploads(at: AppTest):
    """The Library page's "Add papers" section: the uploader, its button and its messages."""
    return next(e for e in at.expander if e.label == "Add papers")


def answer_text(message) -> str:
    """An assistant turn's answer, as Markdown: the first Markdown after the turn's scope chips
    (which name the backend) and its grade's badge."""
    return next(m.value for m in message.markdown if ":material/smart_toy:" not in m.value and "-badge[" not in m.value)


def grade_badge(message) -> str:
    """An assistant turn's grade, as its badge shows it: "answers", "best match", "not found"."""
    labels = [re.sub(r"^:\w+-badge\[(.*)\]$", r"\1", m.value) for m in message.markdown if re.match(r"^:\w+-badge\[", m.value)]
    [grade] = [label for label in labels if label in ("answers", "best match", "not found")]
    return grade


def library_count(at: AppTest) -> str:
    """The Library page's count of papers: "20 papers", "2 of 20 papers match the filters"."""
    [line] = [m.value for m in at.markdown if re.fullmatch(r"[\d,]+ (of [\d,]+ )?papers?( match the filters)?", m.value)]
    return line


def source_labels(message) -> list[str]:
    return [e.label for e in message.expander if e.label.startswith("[")]


def variant_corpus(path: Path, variants: Iterable[int]) -> list:
    """The bundled papers once per variant (its number on their ids and abstracts), written to
    `path` as JSONL; returns the papers."""
    import json

    from rag.corpus.reading import load_corpus

    seed = load_corpus(PAPERS).papers
    papers = [p.model_copy(update={"id": f"{p.id}-v{i}", "abstract": f"{p.abstract} Variant {i}."}) for i in variants for p in seed]
    path.write_text("\n".join(json.dumps({**p.model_dump(), "authors": list(p.authors)}) for p in papers), encoding="utf-8")
    return papers


def _hears_ctrl_c() -> None:
    # A shell starts a background job (`make test &`) with SIGINT ignored, and a child inherits
    # that: it would never see the Ctrl+C a test sends. A terminal's user's paperchat sees it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(data_dir, *args, env: dict[str, str] | None = None, typed: str | None = None) -> subprocess.Popen:
    """`paperchat ARGS` started as run_cli runs it, its output kept for `communicate`; `typed`:
    what the user types, all at once."""
    child = subprocess.Popen(
        [EXE, *args],
        cwd=ROOT,
        env=_cli_env(data_dir, env),
        stdin=subprocess.PIPE if typed is not None else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_hears_ctrl_c,
    )
    if typed is not None:
        child.stdin.write(typed)
        child.stdin.flush()  # `communicate` closes it
    return child


def kill(child: subprocess.Popen) -> None:
    """SIGKILL: no handler, no cleanup, as a crash or an OOM kill ends a process."""
    import signal

    child.send_signal(signal.SIGKILL)
    child.communicate()


def wait_for(child: subprocess.Popen, what: str, happened: Callable[[], bool]) -> None:
    """Return once `happened()` (something `child` wrote), while `child` runs; fail if it ends first."""
    # A bound far above need, only so that a hung child fails the test: the longest wait here,
    # an ingest of 300 papers, takes about a minute on a two-core machine busy with other work.
    deadline = time.monotonic() + 900
    while not happened():
        if child.poll() is not None:
            pytest.fail(f"paperchat ended before {what}: {child.communicate()[1][-2000:]}")
        assert time.monotonic() < deadline, f"not {what} after 900 s"
        time.sleep(0.01)


def sentences_stored(data_dir) -> int:
    """How many papers' sentences the index in `data_dir` holds. An ingest stores a batch's
    sentences (in one transaction) before it embeds the batch's chunks, so the count tells which
    batch it is writing."""
    found = sorted((Path(data_dir) / "texts").glob("**/vectors.sqlite3"))
    if not found:
        return 0
    try:
        with closing(sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True, timeout=60)) as db:
            return db.execute("SELECT count(*) FROM papers").fetchone()[0]
    except sqlite3.Error:  # being made: no table yet
        return 0


_HOLDER = """
import signal, sys
from pathlib import Path
from rag.index.locking import WriteLock
with WriteLock(Path(sys.argv[1]), "index", timeout=0).held():
    print("held", flush=True)
    signal.pause()  # until killed: a timed hold could end before a slow test's block does
"""


@contextmanager
def writer_holding(data_dir, collection: str = "papers") -> Iterator[int]:
    """Another process holding the write lock of the index in `data_dir` for the block (then
    SIGKILLed); yields its pid."""
    lock = Path(data_dir) / "locks" / f"{collection}.lock"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder.pid
    finally:
        kill(holder)


def interrupted_ingest(data_dir, tmp_path, env: dict[str, str] | None = None) -> tuple[int, dict, int]:
    """SIGKILL `paperchat ingest` of 600 papers once some are written, then ingest again.

    Returns the papers written before the kill, `stats --json` after the rerun, and the chunks
    the 600 papers make."""
    import json

    from rag.corpus.chunking import chunk_paper

    # 600 papers: three ingest batches of 256. Killed once the second batch's sentences are
    # stored: the first batch is written, the second's chunks are being embedded.
    corpus = tmp_path / "many.jsonl"
    papers = variant_corpus(corpus, range(30))
    child = start_cli(data_dir, "ingest", str(corpus), env=env)
    wait_for(child, "the second batch's sentences were stored", lambda: sentences_stored(data_dir) > 256)
    kill(child)
    written = json.loads(run_cli(data_dir, "stats", "--json", env=env).stdout)["papers"]
    run_cli(data_dir, "ingest", str(corpus), env=env)
    stats = json.loads(run_cli(data_dir, "stats", "--json", env=env).stdout)
    return written, stats, sum(len(chunk_paper(p)) for p in papers)
