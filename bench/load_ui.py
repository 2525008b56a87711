"""Load on the chat: browser sessions asking at once against one `paperchat ui` server.

    python bench/load_ui.py                                  # 8 sessions x 5 questions, bundled papers
    python bench/load_ui.py --sessions 16 --questions 3 --data-dir DIR --port 8600

One headless Chromium, one context (its own cookies, so its own Streamlit session) per session,
all driven at once by playwright's async API. Each session opens the page, then, once every
session has, asks the questions in turn, each after the last one's answer. An answer's latency
runs from pressing Enter to the finished answer: the app idle again with the answer's source
cards drawn, which the app does only from the stored Answer, after the stream. An error is an
exception or error box shown in the app, a page that does not open, an answer whose source cards
do not appear in time, a crashed page (a session stops at its first), or a traceback in the
server's log. As every session asks the same questions, "differing" counts those answered
differently in different sessions, which a deterministic backend never does. RSS is the server process's and its children's, at start,
once every session has the page open (the index and model loaded), and after the last answer.
The server answers with the extractive backend unless told otherwise, so the figures are the
app's and not a model's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench_ingest_ask import ROOT, table

if TYPE_CHECKING:  # playwright is a dev extra, imported where a browser is driven
    from playwright.async_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
PAPERS = ROOT / "data" / "papers.jsonl"
# One of each kind the app answers: a lookup, a collection, a how-question, one the papers do
# not answer (a decline with its closest papers), a summary.
QUESTIONS = (
    "Has anyone made transformer attention cheaper by letting every token use only a fraction of the heads?",
    "Which papers are about bandits?",
    "How does Flat-LoRA avoid the extra cost of sharpness-aware minimization?",
    "Are there papers on diffusion models for text-to-video generation?",
    "Summarize “FG-CLIP: Fine-Grained Visual and Textual Alignment”",
)
# True once the app is idle with `answers` answers drawn in full ("answer"), or idle with an
# error shown ("error"). Source cards are expanders, drawn only by the rerun from the stored Answer.
FINISHED = """answers => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stException"], [data-testid="stAlertContentError"]')) return 'error';
  const messages = document.querySelectorAll('[data-testid="stChatMessage"]');
  return messages.length >= 2 * answers && messages[2 * answers - 1].querySelector('[data-testid="stExpander"]') !== null && 'answer';
}"""


@dataclass(frozen=True)
class UiServer:
    url: str
    pid: int
    log: Path  # the server's stdout and stderr


def tracebacks(log: str) -> list[str]:
    """The exception line of each traceback in a log."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    return [next((line for line in lines[i + 1:] if line and not line[0].isspace()), "?") for i in starts]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(data_dir: Path, port: int | None = None, backend: str | None = None, wait_s: float = 60) -> Iterator[UiServer]:
    """`paperchat ui` over the index in `data_dir` (the command a user runs, which becomes the
    Streamlit server), once it answers its health check; stopped on leaving."""
    port = port or free_port()
    options = ["--backend", backend] if backend else []
    command = [sys.executable, "-m", "rag.cli", *options, "ui", "--port", str(port)]
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data_dir)}
    logs = tempfile.TemporaryDirectory()
    log = Path(logs.name) / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"streamlit did not come up within {wait_s:.0f} s") from None
                time.sleep(0.3)
        yield UiServer(url, process.pid, log)
    finally:
        process.terminate()
        process.wait(timeout=120)  # far above need: a busy machine stops it slowly
        logs.cleanup()


def rss_mb(pid: int) -> float:
    """VmRSS of `pid` and all its descendants, in MB."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name in parentheses may hold spaces; the parent's pid is the 2nd field after it.
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    family, grown = {pid}, True
    while grown:
        children = {child for child, parent in parents.items() if parent in family} - family
        family |= children
        grown = bool(children)
    total_kb = 0
    for member in family:
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        total_kb += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total_kb / 1024


@dataclass
class SessionRun:
    latencies: list[float] = field(default_factory=list)  # seconds, one per finished answer
    texts: list[str] = field(default_factory=list)  # each finished answer as the page shows it
    errors: list[str] = field(default_factory=list)

    @property
    def answers(self) -> int:
        return len(self.latencies)


@dataclass
class LoadRun:
    sessions: list[SessionRun]
    questions: int  # asked by each session
    server_errors: list[str]  # the exception line of each traceback the server logged meanwhile
    rss_start_mb: float
    rss_before_mb: float
    rss_after_mb: float
    open_s: float  # until every session had the page open
    wall_s: float  # from the first question to the last answer

    @property
    def errors(self) -> list[str]:
        shown = [f"session {i + 1}: {e}" for i, s in enumerate(self.sessions) for e in s.errors]
        return shown + [f"server log: {e}" for e in self.server_errors]

    @property
    def differing(self) -> int:
        """Questions answered differently in different sessions: with a deterministic backend,
        state leaking from one session into another."""
        return len(self.differences())

    def differences(self) -> dict[int, dict[str, list[int]]]:
        """For each question answered differently: each text shown, and the sessions (from 1)
        that showed it; what a failing run prints, as the difference is seldom reproduced."""
        found = {}
        for i in range(self.questions):
            shown: dict[str, list[int]] = {}
            for number, session in enumerate(self.sessions, start=1):
                if i < len(session.texts):
                    shown.setdefault(session.texts[i], []).append(number)
            if len(shown) > 1:
                found[i + 1] = shown
        return found

    def row(self) -> dict:
        latencies = sorted(x for s in self.sessions for x in s.latencies)
        figures: dict = {"p50 s": "-", "p95 s": "-", "max s": "-"}
        if latencies:
            # "inclusive": a p95 between the samples, never past the slowest of a few.
            p95 = statistics.quantiles(latencies, n=20, method="inclusive")[-1] if len(latencies) > 1 else latencies[0]
            figures = {"p50 s": round(statistics.median(latencies), 1), "p95 s": round(p95, 1), "max s": round(latencies[-1], 1)}
        return {
            "sessions": len(self.sessions),
            "questions": len(self.sessions) * self.questions,
            "answers": len(latencies),
            "errors": len(self.errors),
            "differing": self.differing,
            **figures,
            "RSS start MB": round(self.rss_start_mb),
            "RSS before MB": round(self.rss_before_mb),
            "RSS after MB": round(self.rss_after_mb),
            "open s": round(self.open_s, 1),
            "wall s": round(self.wall_s, 1),
        }


async def _open(browser: Browser, url: str, run: SessionRun, timeout_ms: float) -> Page | None:
    """The app open in a new context, its chat input shown; None (and an error) if it did not open."""
    from playwright.async_api import Error

    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(timeout_ms)
    page = await context.new_page()
    page.on("crash", lambda _: run.errors.append("the page crashed"))
    try:
        await page.goto(url)
        await page.get_by_test_id("stChatInputTextArea").wait_for()
    except Error as error:
        run.errors.append(f"opening the app: {error.message.splitlines()[0]}")
        return None
    return page


async def _answer_text(message) -> str:
    """What a finished answer says: the answer's text and its cards' labels. Not the
    cards' insides: the browser mounts those as they scroll into view, so two sessions showing
    the same answer hold different parts of them at a given moment."""
    # The answer's own text, wherever the layout puts it (beside its evidence, or above it).
    answer = await message.evaluate(
        """m => [...m.querySelectorAll('[data-testid="stMarkdownContainer"]')]
             .filter(e => !e.closest('[data-testid="stExpander"]')).map(e => e.textContent).join('\\n')"""
    )
    labels = await message.locator('[data-testid="stExpander"] summary').all_text_contents()
    return "\n".join([answer, *labels])


async def _ask_all(page: Page | None, questions: Sequence[str], run: SessionRun) -> None:
    from playwright.async_api import Error

    if page is None:
        return
    for turn, question in enumerate(questions, start=1):
        try:
            await page.get_by_test_id("stChatInputTextArea").fill(question)
            await page.keyboard.press("Enter")
            asked = time.monotonic()
            finished = await page.wait_for_function(FINISHED, arg=turn, polling=100)
            latency = time.monotonic() - asked
            if await finished.json_value() == "error":
                shown = page.get_by_test_id("stException").or_(page.get_by_test_id("stAlertContentError"))
                run.errors.append(f"question {turn}: the app shows {(await shown.first.inner_text()).strip()!r}")
                return
            run.texts.append(await _answer_text(page.get_by_test_id("stChatMessage").nth(2 * turn - 1)))
        except Error as error:  # a timeout, or the page gone
            run.errors.append(f"question {turn}: {error.message.splitlines()[0]}")
            return
        run.latencies.append(latency)


async def load(
    server: UiServer, sessions: int, questions: Sequence[str], *, timeout_s: float = 180, screenshot: Path | None = None
) -> LoadRun:
    """`sessions` browser sessions each asking all of `questions` at once; a screenshot of the
    first session's page at the end, if asked for."""
    from playwright.async_api import async_playwright

    runs = [SessionRun() for _ in range(sessions)]
    logged = len(tracebacks(server.log.read_text(errors="replace")))
    rss_start = rss_mb(server.pid)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        clock = time.monotonic()
        pages = await asyncio.gather(*(_open(browser, server.url, run, timeout_s * 1000) for run in runs))
        open_s = time.monotonic() - clock
        rss_before = rss_mb(server.pid)
        clock = time.monotonic()
        await asyncio.gather(*(_ask_all(page, questions, run) for page, run in zip(pages, runs)))
        wall_s = time.monotonic() - clock
        rss_after = rss_mb(server.pid)
        if screenshot is not None and pages[0] is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            # The chat scrolls inside its own container, not the page: a viewport as tall as
            # that container's content shows the whole conversation.
            height = await pages[0].get_by_test_id("stAppScrollToBottomContainer").evaluate("chat => chat.scrollHeight")
            await pages[0].set_viewport_size({"width": 1400, "height": height})
            await pages[0].wait_for_timeout(500)
            await pages[0].screenshot(path=screenshot)
        await browser.close()
    server_errors = tracebacks(server.log.read_text(errors="replace"))[logged:]
    return LoadRun(runs, len(questions), server_errors, rss_start, rss_before, rss_after, open_s, wall_s)


def run_load(server: UiServer, sessions: int, questions: Sequence[str], **options) -> LoadRun:
    return asyncio.run(load(server, sessions, questions, **options))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="per session, taken in turn from a fixed five")
    parser.add_argument("--data-dir", type=Path, help="an index (default: data/papers.jsonl indexed into a temporary folder)")
    parser.add_argument("--port", type=int, help="default: a free one")
    parser.add_argument("--backend", default="extractive", help="who answers (paperchat --backend)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for one answer")
    parser.add_argument("--screenshot", type=Path, help="save the first session's final page here")
    args = parser.parse_args()
    asked = [QUESTIONS[i % len(QUESTIONS)] for i in range(args.questions)]
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(tmp)
            env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data_dir)}
            subprocess.run([sys.executable, "-m", "rag.cli", "ingest", str(PAPERS)], env=env, cwd=ROOT, check=True, capture_output=True)
        with serve(data_dir, args.port, args.backend) as server:
            run = run_load(server, args.sessions, asked, timeout_s=args.timeout, screenshot=args.screenshot)
    print(table([run.row()]))
    # The machine is shared: the figures mean little without its load around them.
    start, end = (" ".join(f"{x:.2f}" for x in xs) for xs in (load_at_start, os.getloadavg()))
    print(f"load average (1, 5, 15 min): {start} at the start, {end} at the end")
    for error in run.errors:
        print(error)
    sys.exit(1 if run.errors else 0)


if __name__ == "__main__":
    main()
