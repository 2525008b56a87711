"""Model calls with bounds: a reader waits at most what the settings say, and an answer that
breaks off says so.

A chat model's stream runs in a worker thread and its pieces cross a queue, so the wall clock,
not the server, decides how long we wait:

- `connect_timeout`: opening the connection (the HTTP client's own bound);
- `first_token_timeout`: the first piece, and then each next one (a server that goes silent);
- `request_timeout`: the whole answer, retries and their waits included;
- `max_answer_tokens`: the answer's length, counted here (cl100k) as pieces arrive, since a
  server may ignore the cap the request states.

Before the first piece, a rate limit, a server error or a connection that cannot be made is
retried up to `max_retries` times, after the server's Retry-After or else an exponential backoff,
unless that wait would pass the total bound. Once a piece is shown nothing is retried (the
reader has read it): a break, or the length cap, ends the answer as cut off (`AnswerCutOff`).
"""

from __future__ import annotations

import math
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rag.corpus.tokens import count_tokens
from rag.errors import (
    AnswerCutOff,
    BackendError,
    BackendTimeoutError,
    BackendUnavailableError,
    PaperChatError,
    RateLimitError,
    ServerError,
)
from rag.settings import Settings

__all__ = ["CallBounds", "Retrying", "bounded"]

# Failures worth another attempt: the next one may well succeed.
_TRANSIENT = (RateLimitError, ServerError, BackendUnavailableError)
_BACKOFF_START, _BACKOFF_MAX = 0.5, 8.0


@dataclass(frozen=True)
class CallBounds:
    connect: float
    first_token: float
    total: float
    retries: int
    tokens: int

    @classmethod
    def of(cls, settings: Settings) -> CallBounds:
        return cls(
            settings.connect_timeout,
            settings.first_token_timeout,
            settings.request_timeout,
            settings.max_retries,
            settings.max_answer_tokens,
        )


@dataclass(frozen=True)
class Retrying:
    """No answer yet: why the last attempt failed, and how long until the next one."""

    reason: str
    wait: float
    attempt: int  # the attempt about to start: 2 for the first retry

    @property
    def text(self) -> str:
        # Rounded up: "in 0 s" would call a wait of half a second none.
        return f"{self.reason}; trying again in {math.ceil(self.wait)} s (attempt {self.attempt})"


class _End:
    """The stream finished."""


def _pump(pieces: Iterator[str], out: queue.Queue, cancel: threading.Event) -> None:
    try:
        for piece in pieces:
            if cancel.is_set():
                return
            out.put(piece)
        out.put(_End())
    except Exception as exc:  # noqa: BLE001  (handed to the caller's thread, which decides what it means)
        out.put(exc)


def _backoff(attempt: int) -> float:
    # Jittered so that clients failing together do not retry together.
    return min(_BACKOFF_START * 2 ** (attempt - 1), _BACKOFF_MAX) * random.uniform(0.75, 1.0)


def bounded(
    start: Callable[[], Iterator[str]],
    bounds: CallBounds,
    *,
    who: str,
    translate: Callable[[Exception], Exception],
) -> Iterator[str | Retrying]:
    """The pieces of `start()`'s stream, within `bounds`, with a `Retrying` before each retry.

    `who` names the model and where it runs, for messages; `translate` turns a client library's
    exception into ours. Raises our errors only: `BackendTimeoutError` when nothing came in time,
    the translated error when an attempt failed, `AnswerCutOff` when the stream broke after a
    piece was yielded.
    """
    deadline = time.monotonic() + bounds.total
    attempt = 1
    while True:
        cancel = threading.Event()
        pipe: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(start(), pipe, cancel), daemon=True).start()
        try:
            first = _next(pipe, bounds, deadline, who=who, started=False)
        except BackendTimeoutError:
            cancel.set()
            raise
        if isinstance(first, Exception):
            error = _ours(translate(first), who)
            if not isinstance(error, _TRANSIENT) or attempt > bounds.retries:
                raise error
            wait = error.retry_after or _backoff(attempt)
            if time.monotonic() + wait >= deadline:
                raise type(error)(
                    f"{error.message} (the next attempt would wait {wait:.0f} s, past the {bounds.total:g} s bound)",
                    hint="try again later, raise PAPERCHAT_REQUEST_TIMEOUT, or use --backend extractive",
                )
            attempt += 1
            yield Retrying(error.message, wait, attempt)
            time.sleep(wait)
            continue
        try:
            yield from _rest(first, pipe, bounds, deadline, who=who)
        finally:
            cancel.set()
        return


def _rest(first: str | _End, pipe: queue.Queue, bounds: CallBounds, deadline: float, *, who: str) -> Iterator[str]:
    item: str | _End | Exception = first
    tokens = 0
    while not isinstance(item, _End):
        if isinstance(item, Exception):
            raise AnswerCutOff(f"connection lost to {who}: {_first_line(item)}", hint="ask again, or use --backend extractive")
        tokens += count_tokens(item)
        if tokens > bounds.tokens:
            # The piece past the cap is dropped whole: a streamed piece is a token or a few.
            raise AnswerCutOff(
                f"the answer reached the {bounds.tokens}-token cap ({who} did not stop at it)",
                hint="ask a narrower question, or raise PAPERCHAT_MAX_ANSWER_TOKENS",
            )
        yield item
        try:
            item = _next(pipe, bounds, deadline, who=who, started=True)
        except BackendTimeoutError as exc:
            raise AnswerCutOff(exc.message, hint=exc.hint) from None


def _next(pipe: queue.Queue, bounds: CallBounds, deadline: float, *, who: str, started: bool) -> str | _End | Exception:
    left = deadline - time.monotonic()
    try:
        return pipe.get(timeout=max(0.0, min(bounds.first_token, left)))
    except queue.Empty:
        pass
    if left <= bounds.first_token:
        what = "the answer was not finished" if started else "no answer came"
        raise BackendTimeoutError(
            f"{what} from {who} within the {bounds.total:g} s bound",
            hint="raise PAPERCHAT_REQUEST_TIMEOUT, or use --backend extractive",
        )
    what = "went silent mid-answer for" if started else "sent nothing for"
    raise BackendTimeoutError(
        f"{who} {what} {bounds.first_token:g} s",
        hint="the server may be loading its model or overloaded: raise PAPERCHAT_FIRST_TOKEN_TIMEOUT, or use --backend extractive",
    )


def _ours(error: Exception, who: str) -> PaperChatError:
    """A failure the client library has no name for (a stream that is not JSON, a chat model's
    own exception) is still the backend's failure, said as ours."""
    if isinstance(error, PaperChatError):
        return error
    return BackendError(
        f"{who} sent what could not be read ({type(error).__name__}: {_first_line(error)})",
        hint="check that the server speaks the OpenAI chat API, or use --backend extractive",
    )


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
