"""The fake OpenAI server speaks the protocol well enough for the real openai / langchain clients."""

from __future__ import annotations

import base64
import json
import math
import struct
import threading
import urllib.request

import openai
import pytest
from fake_openai import FakeOpenAI, fake_embedding
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

pytestmark = pytest.mark.slow

REPLY = "PaperChat answers with citations [1] — naïve ✓ unicode too."
# The local server answers at once: a client's timeout, far above that on a busy machine, is only
# against a hang.
TIMEOUT = 60


@pytest.fixture(autouse=True)
def _local_only(no_proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _client(srv: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0, timeout=TIMEOUT)


# -- openai client: chat ------------------------------------------------------------------------


def test_openai_streaming_chat_returns_reply_and_records_request() -> None:
    messages = [
        {"role": "system", "content": "Cite sources."},
        {"role": "user", "content": "What is RAG?"},
    ]
    with FakeOpenAI(reply=REPLY, chunk_size=5) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
        stream = _client(srv).chat.completions.create(
            model="gpt-fake", messages=messages, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)

    contents = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(contents) == REPLY
    assert len(contents) == math.ceil(len(REPLY) / 5)  # really streamed in chunk_size pieces
    assert all(len(piece) <= 5 for piece in contents)
    assert chunks[0].choices[0].delta.role == "assistant"
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finishing] == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # include_usage chunk last
    assert chunks[-1].usage.total_tokens == chunks[-1].usage.prompt_tokens + chunks[-1].usage.completion_tokens
    assert all(c.model == "gpt-fake" and c.object == "chat.completion.chunk" for c in chunks)

    assert len(srv.requests) == 1
    sent = srv.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["messages"] == messages
    assert sent["stream"] is True
    assert sent["model"] == "gpt-fake"


def test_openai_streaming_without_usage_has_no_usage_chunk() -> None:
    with FakeOpenAI(reply="abcdefghij", chunk_size=4) as srv:
        chunks = list(
            _client(srv).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            )
        )
    assert [c.choices[0].delta.content for c in chunks] == ["", "abcd", "efgh", "ij", None]
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


def test_openai_non_streaming_chat_with_callable_reply() -> None:
    def echo(body: dict) -> str:
        return "echo: " + body["messages"][-1]["content"].upper()

    with FakeOpenAI(reply=echo) as srv:
        resp = _client(srv).chat.completions.create(
            model="gpt-fake", messages=[{"role": "user", "content": "hello there"}]
        )
    assert resp.object == "chat.completion"
    assert resp.choices[0].message.content == "echo: HELLO THERE"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None and resp.usage.completion_tokens > 0
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert "stream" not in srv.requests[-1]


def test_reply_callable_error_surfaces_as_server_error() -> None:
    def broken(body: dict) -> str:
        raise KeyError("nope")

    with FakeOpenAI(reply=broken) as srv:
        with pytest.raises(openai.InternalServerError, match="KeyError"):
            _client(srv).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])


def test_reply_callable_fails_the_requests_it_returns_a_status_for() -> None:
    def flaky(body: dict) -> str | int:
        return 503 if "fail" in body["messages"][-1]["content"] else "fine"

    with FakeOpenAI(reply=flaky) as srv:
        client = _client(srv)
        with pytest.raises(openai.InternalServerError, match="overloaded") as failed:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "fail this"}])
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "answer this"}])
    assert failed.value.status_code == 503
    assert reply.choices[0].message.content == "fine" and len(srv.requests) == 2


def test_wire_format_is_openai_sse() -> None:
    """Byte-level check of the stream, independent of any OpenAI client's parser."""
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    with FakeOpenAI(reply="abcdef", chunk_size=4) as srv:
        req = urllib.request.Request(
            srv.base_url + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            content_type = r.headers["Content-Type"]
            raw = r.read().decode()
    assert content_type.startswith("text/event-stream")
    events = raw.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    assert all(e.startswith("data: ") and "\n" not in e for e in events[:-1])
    payloads = [json.loads(e[len("data: ") :]) for e in events[:-2]]
    assert [p["choices"][0]["delta"] for p in payloads] == [
        {"role": "assistant", "content": ""},
        {"content": "abcd"},
        {"content": "ef"},
        {},
    ]
    assert [p["choices"][0]["finish_reason"] for p in payloads] == [None, None, None, "stop"]
    assert {(p["id"], p["object"], p["model"]) for p in payloads} == {("chatcmpl-fake", "chat.completion.chunk", "m")}


# -- langchain ---------------------------------------------------------------------------------


def _chat_model(srv: FakeOpenAI, **kw) -> ChatOpenAI:
    return ChatOpenAI(base_url=srv.base_url, api_key="test", model="fake", max_retries=0, timeout=TIMEOUT, **kw)


def test_langchain_chat_stream_and_invoke() -> None:
    with FakeOpenAI(reply=REPLY, chunk_size=3) as srv:
        llm = _chat_model(srv, streaming=True)
        pieces = [chunk.content for chunk in llm.stream("What is RAG?")]
        assert "".join(pieces) == REPLY
        assert sum(1 for p in pieces if p) == math.ceil(len(REPLY) / 3)
        assert srv.requests[-1]["stream"] is True
        assert srv.requests[-1]["messages"] == [{"role": "user", "content": "What is RAG?"}]

        msg = llm.invoke("again")  # streaming=True: invoke aggregates the stream
        assert msg.content == REPLY
        assert srv.requests[-1]["messages"][-1]["content"] == "again"

        plain = _chat_model(srv).invoke("plain")  # non-streaming request
        assert plain.content == REPLY
        assert not srv.requests[-1].get("stream")
        assert plain.usage_metadata is not None and plain.usage_metadata["output_tokens"] > 0
    assert len(srv.requests) == 3


def test_langchain_stream_usage() -> None:
    with FakeOpenAI(reply="short answer") as srv:
        chunks = list(_chat_model(srv, streaming=True).stream("q", stream_usage=True))
    assert srv.requests[-1]["stream_options"] == {"include_usage": True}
    total = chunks[0]
    for c in chunks[1:]:
        total += c
    assert total.content == "short answer"
    assert total.usage_metadata is not None and total.usage_metadata["output_tokens"] == 3


# -- embeddings ----------------------------------------------------------------------------------


def test_langchain_embeddings_are_deterministic_unit_vectors() -> None:
    texts = ["attention is all you need", "BERT pre-training", "retrieval augmented generation"]
    with FakeOpenAI() as srv:
        emb = OpenAIEmbeddings(
            base_url=srv.base_url,
            api_key="test",
            model="text-embedding-3-small",
            check_embedding_ctx_length=False,
            max_retries=0,
        )
        vectors = emb.embed_documents(texts)
        again = emb.embed_documents(texts)
        query = emb.embed_query(texts[1])

    assert len(vectors) == 3 and all(len(v) == 8 for v in vectors)
    for v in vectors:
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5)
    assert vectors == again
    assert len({tuple(v) for v in vectors}) == 3  # different texts, different vectors
    for v, t in zip(vectors, texts):
        assert v == pytest.approx(fake_embedding(t), abs=1e-6)
    assert query == pytest.approx(vectors[1], abs=1e-6)
    assert srv.requests[0]["path"] == "/v1/embeddings"
    assert srv.requests[0]["input"] == texts


def test_openai_embeddings_float_string_and_token_inputs() -> None:
    with FakeOpenAI() as srv:
        client = _client(srv)
        single = client.embeddings.create(model="e", input="one text", encoding_format="float")
        tokens = client.embeddings.create(model="e", input=[[1, 2, 3], [4, 5]], encoding_format="float")
        sized = client.embeddings.create(model="e", input=["a"], dimensions=16)  # base64 by default
        raw = json.loads(
            client.embeddings.with_raw_response.create(model="e", input="b64", encoding_format="base64").text
        )

    assert len(single.data) == 1 and single.data[0].embedding == pytest.approx(fake_embedding("one text"))
    assert single.model == "e" and single.usage.total_tokens > 0
    assert [d.index for d in tokens.data] == [0, 1]
    assert tokens.data[0].embedding == pytest.approx(fake_embedding([1, 2, 3]))
    assert tokens.usage.prompt_tokens == 5
    assert len(sized.data[0].embedding) == 16
    assert srv.requests[-2]["encoding_format"] == "base64"
    encoded = raw["data"][0]["embedding"]
    assert isinstance(encoded, str)  # base64 of little-endian float32, as the real API sends
    assert list(struct.unpack("<8f", base64.b64decode(encoded))) == pytest.approx(fake_embedding("b64"))


# -- models and errors -------------------------------------------------------------------------


def test_models_endpoint() -> None:
    with FakeOpenAI() as srv:
        ids = [m.id for m in _client(srv).models.list()]
        with urllib.request.urlopen(srv.base_url + "/models", timeout=TIMEOUT) as r:
            raw = json.load(r)
    assert ids == ["fake"]
    assert raw["object"] == "list" and raw["data"][0]["object"] == "model"
    assert srv.requests[-1] == {"path": "/v1/models", "query": "", "authorization": ""}


@pytest.mark.parametrize(
    ("status", "exc", "code"),
    [
        (401, openai.AuthenticationError, "invalid_api_key"),
        (429, openai.RateLimitError, "rate_limit_exceeded"),
        (500, openai.InternalServerError, "server_error"),
    ],
)
def test_error_status_maps_to_openai_exceptions(status: int, exc: type[Exception], code: str) -> None:
    with FakeOpenAI(status=status) as srv:
        client = _client(srv)
        with pytest.raises(exc) as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
        assert info.value.status_code == status
        assert info.value.code == code
        with pytest.raises(exc):
            client.embeddings.create(model="e", input="x")
    assert len(srv.requests) == 2  # max_retries=0: exactly one attempt each


def test_custom_error_body() -> None:
    body = {"error": {"message": "quota gone", "type": "insufficient_quota", "code": "insufficient_quota"}}
    with FakeOpenAI(status=429, error_body=body) as srv:
        with pytest.raises(openai.RateLimitError, match="quota gone") as info:
            _client(srv).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert info.value.code == "insufficient_quota"


def test_langchain_raises_on_auth_error() -> None:
    with FakeOpenAI(status=401) as srv:
        with pytest.raises(openai.AuthenticationError):
            _chat_model(srv, streaming=True).invoke("x")


def test_server_stops_on_exit() -> None:
    before = set(threading.enumerate())
    with FakeOpenAI() as srv:
        url = srv.base_url
        client = _client(srv)  # keep-alive connection stays open past the with-block
        client.models.list()
        client.models.list()
    assert not [t for t in set(threading.enumerate()) - before if t.is_alive()]  # no leaked threads
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=url, api_key="test", max_retries=0, timeout=2).models.list()
