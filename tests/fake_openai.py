"""A small, real, local OpenAI-compatible HTTP server for tests.

This is not a mock of the client: it is an actual HTTP/1.1 server (stdlib only) that the real
``openai`` and ``langchain_openai`` clients talk to over a socket, so request serialisation,
Server-Sent-Events parsing, error mapping and retries are all exercised for real.

Usage::

    with FakeOpenAI(reply="Hello [1].") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        ...
        assert srv.requests[-1]["messages"][0]["content"] == "hi"

Endpoints (all under ``/v1``):

* ``POST /v1/chat/completions`` -- ``chat.completion`` JSON, or, with ``"stream": true``,
  ``chat.completion.chunk`` SSE events (role chunk, content pieces of ``chunk_size`` characters,
  a ``finish_reason: "stop"`` chunk, an optional usage chunk when
  ``stream_options.include_usage`` is set, then ``data: [DONE]``).
* ``POST /v1/embeddings`` -- deterministic, L2-normalised fake vectors (8 dims, or
  ``dimensions`` if the request asks for it) derived from a SHA-256 of each input; ``input`` may
  be a string, a list of strings, a list of token ids or a list of token-id lists. Honours
  ``encoding_format: "base64"`` (which the openai client requests by default).
* ``GET /v1/models`` (and ``GET /v1/models/{id}``) -- a single model, ``"fake"``.

With ``status != 200`` every endpoint answers with that status and ``error_body`` (or an
OpenAI-style ``{"error": {...}}`` body); a reply callable that returns an ``int`` fails just that
chat completion with that status (a server failing some requests). Every request is recorded in ``requests`` -- the JSON
body (``{}`` for GETs) plus ``"path"``, ``"query"`` and ``"authorization"`` (the header) keys --
whatever the status.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import math
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Fault", "FakeOpenAI", "fake_embedding"]

DEFAULT_MODEL = "fake"
EMBEDDING_DIM = 8

_ERRORS: dict[int, tuple[str, str | None, str]] = {
    # status: (type, code, message)
    400: ("invalid_request_error", None, "Bad request (fake)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: test (fake)."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden (fake)."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist (fake)."),
    409: ("invalid_request_error", None, "Conflict (fake)."),
    422: ("invalid_request_error", None, "Unprocessable entity (fake)."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests (fake)."),
    500: ("server_error", "server_error", "The server had an error while processing your request (fake)."),
    502: ("server_error", "server_error", "Bad gateway (fake)."),
    503: ("server_error", "server_error", "The engine is currently overloaded (fake)."),
}


def _error_body(status: int, message: str | None = None) -> dict[str, Any]:
    etype, code, default_message = _ERRORS.get(
        status,
        ("server_error" if status >= 500 else "invalid_request_error", None, f"HTTP {status} (fake)."),
    )
    return {"error": {"message": message or default_message, "type": etype, "param": None, "code": code}}


def fake_embedding(item: Any, dim: int = EMBEDDING_DIM) -> list[float]:
    """The deterministic, L2-normalised vector the server returns for one ``input`` item.

    Strings are hashed as UTF-8; anything else (token-id lists, ints) by its ``repr``.
    Exposed so tests can compute the expected vector themselves.
    """
    data = item.encode("utf-8") if isinstance(item, str) else repr(item).encode("utf-8")
    raw = b""
    counter = 0
    while len(raw) < 2 * dim:
        raw += hashlib.sha256(counter.to_bytes(4, "big") + data).digest()
        counter += 1
    # Each component from two bytes, mapped into [-1, 1].
    vec = [(int.from_bytes(raw[2 * i : 2 * i + 2], "big") / 32767.5) - 1.0 for i in range(dim)]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def _count_tokens(text: str) -> int:
    """A crude, deterministic token count (~4 characters a token)."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


@dataclass(frozen=True)
class Fault:
    """How one chat request misbehaves: ``FakeOpenAI(faults=[...])`` spends one per chat request,
    in order, then answers normally.

    ``status``: answer with that HTTP status and error body (``retry_after`` as its Retry-After
    header). ``stall``: seconds of silence, before the response or, with ``after``, after that
    many content pieces. ``drop``: close the connection (after ``after`` pieces). ``garbage``: a
    200 event stream whose data is not JSON. ``pace``: seconds between streamed pieces.
    """

    status: int = 0
    retry_after: str | None = None
    stall: float = 0.0
    after: int | None = None
    drop: bool = False
    garbage: bool = False
    pace: float = 0.0


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: FakeOpenAI) -> None:
        self.owner = owner
        self.open_sockets: dict[socket.socket, threading.Thread] = {}
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:  # pragma: no cover
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return  # client went away / we were shut down: not interesting in tests
        super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive + chunked streaming, like the real API
    server_version = "FakeOpenAI/1.0"
    timeout = 30  # idle keep-alive connections are dropped after this
    server: _Server

    # -- plumbing ---------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        with self.server.sockets_lock:
            self.server.open_sockets[self.connection] = threading.current_thread()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.sockets_lock:
                self.server.open_sockets.pop(self.connection, None)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # silence the default per-request logging

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # trailers, up to the blank line
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # CRLF after each chunk
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_fake")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, status: int, message: str | None = None, retry_after: str | None = None) -> None:
        owner = self.server.owner
        body = owner.error_body if (owner.error_body is not None and message is None) else _error_body(status, message)
        if retry_after is None and status == 429:
            retry_after = "0"
        self._send_json(status, body, {"retry-after": retry_after} if retry_after is not None else None)

    # -- dispatch ---------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self._read_body()
        body: dict[str, Any] = {}
        bad_json = False
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else {"_body": parsed}
            except ValueError:
                bad_json = True
                body = {"_raw": raw.decode("utf-8", "replace")}
        query = self.path.partition("?")[2]
        owner._record({**body, "path": path, "query": query, "authorization": self.headers.get("Authorization", "")})

        if owner.status != 200:
            self._send_error(owner.status)
            return
        if bad_json:
            self._send_error(400, "We could not parse the JSON body of your request (fake).")
            return

        if method == "POST" and path == "/v1/chat/completions":
            fault = owner._next_fault()
            if fault.stall and fault.after is None:
                owner._stopping.wait(fault.stall)
            if fault.status:
                self._send_error(fault.status, retry_after=fault.retry_after)
            elif fault.drop and fault.after is None:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self._chat(body, fault)
        elif method == "POST" and path == "/v1/embeddings":
            self._embeddings(body)
        elif method == "GET" and path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [owner._model_obj(DEFAULT_MODEL)]})
        elif method == "GET" and path.startswith("/v1/models/"):
            self._send_json(200, owner._model_obj(path.rsplit("/", 1)[1]))
        else:
            self._send_error(404, f"Unknown request URL: {method} {self.path} (fake).")

    # -- endpoints --------------------------------------------------------------------------

    def _chat(self, body: dict[str, Any], fault: Fault) -> None:
        owner = self.server.owner
        if not isinstance(body.get("messages"), list):
            self._send_error(400, "'messages' is a required property (fake).")
            return
        try:
            reply = owner.reply(body) if callable(owner.reply) else owner.reply
        except Exception as exc:  # surface test bugs as a server error the client will raise
            self._send_error(500, f"FakeOpenAI reply callable raised {type(exc).__name__}: {exc}")
            return
        if isinstance(reply, int):
            self._send_error(reply)
            return
        reply = str(reply)
        model = body.get("model") or DEFAULT_MODEL
        created = int(time.time())
        prompt_tokens = sum(_count_tokens(_message_text(m.get("content"))) for m in body["messages"] if isinstance(m, dict))
        completion_tokens = _count_tokens(reply)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

        if not body.get("stream"):
            self._send_json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "system_fingerprint": "fp_fake",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply, "refusal": None},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                },
            )
            return

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
            c: dict[str, Any] = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }
            if include_usage:
                c["usage"] = None  # as OpenAI does: null on every chunk but the last
            return c

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""}, None)]
        size = max(1, owner.chunk_size)
        events += [chunk({"content": reply[i : i + size]}, None) for i in range(0, len(reply), size)]
        events.append(chunk({}, "stop"))
        if include_usage:
            events.append(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": "fp_fake",
                    "choices": [],
                    "usage": usage,
                }
            )

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", "req_fake")
        self.end_headers()
        if fault.garbage:
            events = ["{not json", *events]
        for n, ev in enumerate(events):
            if fault.after is not None and n == fault.after + 1:  # the role chunk, then `after` pieces
                if fault.stall:
                    owner._stopping.wait(fault.stall)
                if fault.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
            if fault.pace and n:
                owner._stopping.wait(fault.pace)
            self._write_chunk(f"data: {ev if isinstance(ev, str) else json.dumps(ev)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")  # end of chunked body
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _embeddings(self, body: dict[str, Any]) -> None:
        inp = body.get("input")
        if isinstance(inp, str):
            items: list[Any] = [inp]
        elif isinstance(inp, list) and inp and all(isinstance(x, int) for x in inp):
            items = [inp]  # a single pre-tokenised input
        elif isinstance(inp, list) and inp:
            items = list(inp)
        else:
            self._send_error(400, "'input' must be a non-empty string or array (fake).")
            return
        dim = body.get("dimensions") or EMBEDDING_DIM
        if not isinstance(dim, int) or dim < 1:
            self._send_error(400, "'dimensions' must be a positive integer (fake).")
            return
        b64 = body.get("encoding_format") == "base64"
        data = []
        tokens = 0
        for i, item in enumerate(items):
            vec = fake_embedding(item, dim)
            tokens += len(item) if isinstance(item, list) else _count_tokens(str(item))
            emb: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii") if b64 else vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or "text-embedding-3-small",
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


class FakeOpenAI:
    """A real OpenAI-compatible HTTP server on 127.0.0.1:<free port>, run in a daemon thread.

    ``reply`` is the assistant text for chat completions, or a callable taking the request body
    (a dict) and returning it, or an HTTP status (an ``int``) to fail that request with. ``status`` != 200 makes every endpoint fail with that status and
    ``error_body`` (default: an OpenAI-style error for the status). ``chunk_size`` is the number
    of characters per streamed content delta. Like some compatible servers, it ignores
    ``max_tokens``: the reply streams whole, however long (the tests of our own cap rely on it).
    """

    def __init__(
        self,
        reply: str | Callable[[dict], str | int] = "This is a fake reply.",
        *,
        status: int = 200,
        error_body: dict | None = None,
        chunk_size: int = 4,
        faults: list[Fault] | None = None,
    ) -> None:
        self.reply = reply
        self.faults = list(faults or ())
        # Set on stop, so that a stalling handler ends then rather than at its stall's end.
        self._stopping = threading.Event()
        self.status = status
        self.error_body = error_body
        self.chunk_size = chunk_size
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        if self._server is not None:
            return self
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="FakeOpenAI", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        # Drop idle keep-alive connections so their handler threads end now, not at timeout.
        with server.sockets_lock:
            open_conns = list(server.open_sockets.items())
        for sock, _ in open_conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        # They end as soon as they run again; the bound, far above that on a busy machine, only
        # keeps a hung handler from hanging the tests (test_server_stops_on_exit counts them).
        for _, handler_thread in open_conns:
            handler_thread.join(timeout=60)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers ----------------------------------------------------------------------------

    def _next_fault(self) -> Fault:
        with self._lock:
            return self.faults.pop(0) if self.faults else Fault()

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)

    @staticmethod
    def _model_obj(model_id: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 0, "owned_by": "paperchat-tests"}

    def __repr__(self) -> str:
        return f"FakeOpenAI(base_url={self.base_url!r}, status={self.status}, requests={len(self.requests)})"
