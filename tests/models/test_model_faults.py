"""Model faults against the local OpenAI-compatible server (tests/fake_openai.py): a refused
connection, HTTP 500, 429 with Retry-After (in seconds or as a date), a server that stalls before
or during the answer, a dropped connection, a stream that is not JSON, an invalid key, a slow
stream that outlasts the total bound and one that ignores the token cap. Each ends within its configured bound, with our error and a clear message, or
with the part already shown kept and marked as cut off."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from conftest import model_assistant
from fake_openai import FakeOpenAI, Fault

from rag.answering.chain import Assistant, StatusEvent, TokenEvent
from rag.corpus.tokens import count_tokens
from rag.errors import (
    AuthenticationError,
    BackendError,
    BackendTimeoutError,
    BackendUnavailableError,
    RateLimitError,
    ServerError,
)

QUESTION = "How does MoH make attention cheaper?"
REPLY = (
    "MoH enables each token to select the appropriate attention heads, enhancing inference efficiency "
    "without compromising accuracy or increasing the number of parameters [1]."
)


pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_proxy")]


def assistant(index, base_url: str, **bounds) -> Assistant:
    return model_assistant(index, base_url, **{"first_token_timeout": 2.0, "request_timeout": 10.0, **bounds})


def chats(server: FakeOpenAI) -> int:
    return sum(r["path"].endswith("/chat/completions") for r in server.requests)


def run(assistant: Assistant) -> tuple[list, float]:
    """The events of one question, and the seconds they took."""
    clock = time.monotonic()
    events = list(assistant.stream(QUESTION))
    return events, time.monotonic() - clock


def failure(assistant: Assistant, kind: type[Exception]) -> tuple[Exception, list, float]:
    """The error one question ends with, the events before it, and the seconds it took."""
    events: list = []
    clock = time.monotonic()
    with pytest.raises(kind) as caught:
        for event in assistant.stream(QUESTION):
            events.append(event)
    return caught.value, events, time.monotonic() - clock


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_is_retried_then_named_with_its_address(seed_index):
    url = f"http://127.0.0.1:{free_port()}/v1"
    error, events, seconds = failure(assistant(seed_index, url, max_retries=2), BackendUnavailableError)
    assert f"cannot reach fake at {url}" in error.message
    assert len([e for e in events if isinstance(e, StatusEvent)]) == 2
    # Far above the two backoffs (1.5 s at most) on a busy machine; reached only by waiting on
    # something else, such as a timeout.
    assert seconds < 60


def test_a_server_error_is_retried_and_the_answer_comes(seed_index):
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=500)]) as server:
        events, _ = run(assistant(seed_index, server.base_url))
        assert chats(server) == 2
    statuses = [e.text for e in events if isinstance(e, StatusEvent)]
    assert len(statuses) == 1 and "HTTP 500" in statuses[0] and "attempt 2" in statuses[0]
    assert events[-1].answer.text.startswith("MoH enables") and not events[-1].answer.cut_off


def test_server_errors_past_the_retries_end_in_our_error(seed_index):
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=503)] * 3) as server:
        error, _, _ = failure(assistant(seed_index, server.base_url, max_retries=1), ServerError)
        assert chats(server) == 2
    assert "HTTP 503" in error.message and "fake at http://127.0.0.1" in error.message


def test_a_rate_limit_waits_what_retry_after_asks(seed_index):
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=429, retry_after="1.5")]) as server:
        events, seconds = run(assistant(seed_index, server.base_url))
        assert chats(server) == 2
    assert seconds >= 1.5
    statuses = [e.text for e in events if isinstance(e, StatusEvent)]
    assert len(statuses) == 1 and "rate-limiting" in statuses[0] and "trying again in 2 s" in statuses[0]
    assert events[-1].answer.citations


def test_a_retry_after_past_the_total_bound_fails_at_once(seed_index):
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=429, retry_after="300")]) as server:
        error, _, seconds = failure(assistant(seed_index, server.base_url, request_timeout=20), RateLimitError)
        assert chats(server) == 1
    assert "would wait 300 s, past the 20 s bound" in error.message
    assert seconds < 60  # far above need on a busy machine, far below the 300 s asked for


def test_a_retry_after_given_as_an_http_date_is_obeyed(seed_index):
    # Five minutes ahead, past the 20 s bound: obeyed, it ends the call at once; ignored, the
    # backoff's half a second would retry and the answer would come.
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=300), usegmt=True)
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=429, retry_after=later)]) as server:
        error, _, _ = failure(assistant(seed_index, server.base_url, request_timeout=20), RateLimitError)
        assert chats(server) == 1
    wait = re.search(r"would wait (\d+) s, past the 20 s bound", error.message)
    assert wait and 250 <= int(wait[1]) <= 300, error.message


def test_a_wait_under_a_second_is_said_rounded_up_not_as_none(seed_index):
    # Retry-After: 0 is met with the backoff's first wait, under a second.
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=429, retry_after="0")]) as server:
        events, _ = run(assistant(seed_index, server.base_url))
    [status] = [e.text for e in events if isinstance(e, StatusEvent)]
    assert "trying again in 1 s (attempt 2)" in status
    assert events[-1].answer.citations


def test_a_server_that_ignores_the_token_cap_is_cut_off_at_it(seed_index):
    # The fake server, like the one that streamed 93 KB, never reads max_tokens: 150 KB follow.
    endless = "MoH lets each token choose the attention heads it needs [1]. " * 2500
    with FakeOpenAI(reply=endless, chunk_size=40) as server:
        events, _ = run(assistant(seed_index, server.base_url, max_answer_tokens=60))
        [request] = [r for r in server.requests if r["path"].endswith("/chat/completions")]
    assert request["max_tokens"] == 60, "the cap was asked for, and ignored"
    shown = "".join(e.text for e in events if isinstance(e, TokenEvent))
    answer = events[-1].answer
    assert 0 < count_tokens(shown) <= 60 and answer.text.startswith("MoH lets each token")
    assert answer.cut_off == f"the answer reached the 60-token cap (fake at {server.base_url} did not stop at it)"


def test_an_invalid_key_is_not_retried(seed_index):
    with FakeOpenAI(reply=REPLY, faults=[Fault(status=401)]) as server:
        error, _, _ = failure(assistant(seed_index, server.base_url), AuthenticationError)
        assert chats(server) == 1
    assert "refused the API key" in error.message and "sk-test" not in str(error)


def test_a_server_that_stalls_before_answering_ends_at_the_first_token_bound(seed_index):
    # The stall ends when the server stops: the bound, not the server, ends the call.
    with FakeOpenAI(reply=REPLY, faults=[Fault(stall=600)]) as server:
        error, events, seconds = failure(assistant(seed_index, server.base_url, first_token_timeout=1.5), BackendTimeoutError)
        assert chats(server) == 1, "a stall is not retried: the reader would wait twice"
    assert "sent nothing for 1.5 s" in error.message and "PAPERCHAT_FIRST_TOKEN_TIMEOUT" in error.hint
    assert not [e for e in events if isinstance(e, TokenEvent)]
    assert 1.5 <= seconds < 60  # far above the bound on a busy machine, far below the stall


def test_a_server_that_goes_silent_mid_answer_keeps_what_was_shown_marked_cut_off(seed_index):
    with FakeOpenAI(reply=REPLY, chunk_size=10, faults=[Fault(after=5, stall=600)]) as server:
        events, seconds = run(assistant(seed_index, server.base_url, first_token_timeout=1.5))
    answer = events[-1].answer
    shown = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert shown and REPLY.startswith(shown.strip()) and len(shown) < len(REPLY)
    assert answer.cut_off == "fake at " + server.base_url + " went silent mid-answer for 1.5 s"
    assert 1.5 <= seconds < 60  # far above the bound on a busy machine, far below the stall


def test_a_dropped_connection_says_connection_lost_not_cannot_reach(seed_index):
    with FakeOpenAI(reply=REPLY, chunk_size=10, faults=[Fault(after=4, drop=True)]) as server:
        events, _ = run(assistant(seed_index, server.base_url))
    answer = events[-1].answer
    assert answer.cut_off.startswith(f"connection lost to fake at {server.base_url}")
    assert "cannot reach" not in answer.cut_off
    assert answer.text.startswith("MoH enables") and len(answer.text) < len(REPLY)


def test_a_stream_that_outlasts_the_total_bound_is_cut_off_there(seed_index):
    # About 140 s of stream, at 8 characters each 0.2 s.
    with FakeOpenAI(reply=REPLY * 30, chunk_size=8, faults=[Fault(pace=0.2)]) as server:
        events, seconds = run(assistant(seed_index, server.base_url, first_token_timeout=2, request_timeout=2.5))
    answer = events[-1].answer
    assert answer.cut_off == f"the answer was not finished from fake at {server.base_url} within the 2.5 s bound"
    assert answer.text and 2.5 <= seconds < 60  # far above the bound on a busy machine, far below the stream


def test_a_stream_that_is_not_json_is_our_error(seed_index):
    with FakeOpenAI(reply=REPLY, faults=[Fault(garbage=True)]) as server:
        error, _, _ = failure(assistant(seed_index, server.base_url, max_retries=0), BackendError)
    assert f"fake at {server.base_url}" in error.message


def test_the_request_caps_the_answer_and_the_client_bounds_the_connection(seed_index):
    with FakeOpenAI(reply=REPLY) as server:
        helper = assistant(seed_index, server.base_url, max_answer_tokens=77, connect_timeout=1.25)
        helper.ask(QUESTION)
        body = [r for r in server.requests if r["path"].endswith("/chat/completions")][-1]
    assert body["max_tokens"] == 77 or body.get("max_completion_tokens") == 77
    timeout = helper.backend.chat_model.root_client.timeout
    assert timeout.connect == 1.25 and timeout.read == pytest.approx(3.0)


def test_offline_answers_from_the_abstracts_after_a_failure(seed_index):
    failing = assistant(seed_index, f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(BackendUnavailableError):
        failing.ask(QUESTION)
    answer = failing.offline().ask(QUESTION)
    assert answer.backend == "extractive" and answer.citations and answer.citations[0].supported
    assert failing.backend.name == "openai", "the fallback is a copy: the chat's own backend stays"


def paperchat(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    # The timeout is only against a hang: far above a cold start's seconds on a busy machine.
    return subprocess.run(
        [sys.executable, "-m", "rag.cli", *args], env=env, capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture
def cli_env(seed_index, monkeypatch):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PAPERCHAT_"))}
    return {**env, "PAPERCHAT_DATA_DIR": str(seed_index.settings.data_dir), "OPENAI_API_KEY": "sk-secret-fault-test",
            "PAPERCHAT_OPENAI_MODEL": "fake", "PAPERCHAT_FIRST_TOKEN_TIMEOUT": "1.5", "NO_PROXY": "127.0.0.1"}


def test_the_cli_says_whom_it_waits_for_and_ends_a_stall_without_a_traceback(cli_env):
    with FakeOpenAI(reply=REPLY, faults=[Fault(stall=30)]) as server:
        done = paperchat("ask", QUESTION, env={**cli_env, "OPENAI_BASE_URL": server.base_url})
    assert done.returncode == 1
    assert f"waiting for fake at {server.base_url}" in done.stderr
    assert "error: fake at" in done.stderr and "sent nothing for 1.5 s" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout and "sk-secret-fault-test" not in done.stderr + done.stdout


def test_the_cli_keeps_a_cut_off_answer_and_says_so(cli_env):
    with FakeOpenAI(reply=REPLY, chunk_size=10, faults=[Fault(after=5, drop=True)]) as server:
        done = paperchat("ask", QUESTION, env={**cli_env, "OPENAI_BASE_URL": server.base_url})
    assert done.returncode == 1, "an answer cut short is not a success for a script"
    assert done.stdout.startswith("MoH enables")
    assert f"answer cut off: connection lost to fake at {server.base_url}" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
