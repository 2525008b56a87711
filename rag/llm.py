"""Answering backends, chosen by settings: openai(-compatible), local GGUF, or extractive.

Every backend takes the same typed `AnswerRequest` (`rag.answering.request`) and streams text, so
the chain, streaming and citation checking are one code path whichever backend answers. A chat
model gets one prompt pair per task, from prompts/: answers, collections, comparison tables and
summaries, each with the rules for citing, declining and saying what the abstracts lack.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from rag.answering.decline import partial_note
from rag.answering.request import AnswerRequest, Backend, Task
from rag.embeddings import SentenceVectors
from rag.errors import (
    AuthenticationError,
    BackendError,
    BackendUnavailableError,
    ModelNotFoundError,
    RateLimitError,
)
from rag.prompts import load_prompt
from rag.records import Answer, Source
from rag.settings import Settings

# The system prompt of each task; all share the user prompt (sources, coverage note, question).
_SYSTEM = {
    Task.ANSWER: "answer_system",
    Task.COLLECTION: "collection_system",
    Task.COMPARISON: "comparison_system",
    Task.SUMMARY: "summarize_system",
}


def format_sources(sources: Sequence[Source]) -> str:
    """The numbered source blocks the model reads, one per paper."""
    block = load_prompt("source_block")
    return "\n\n".join(
        block.format(
            number=s.number,
            title=s.paper.display_title,
            authors=", ".join(s.paper.authors) or "unknown",
            venue=" ".join(x for x in (s.paper.venue, s.paper.category) if x) or "unknown",
            abstract=s.paper.abstract,
        )
        for s in sources
    )


def history_messages(history: Sequence[Answer]) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for turn in history:
        messages += [HumanMessage(turn.question), AIMessage(turn.text)]
    return messages


def request_sources(request: AnswerRequest) -> list[Source]:
    """What the model reads: a collection's matches, a comparison's rows, else every source."""
    if request.task == Task.COLLECTION and request.matches:
        wanted = {m.number for m in request.matches}
        return [s for s in request.sources if s.number in wanted]
    if request.task == Task.COMPARISON and request.table is not None:
        wanted = {r.number for r in request.table.rows}
        return [s for s in request.sources if s.number in wanted]
    return request.sources


@dataclass
class ModelBackend:
    """A backend around any LangChain chat model (OpenAI, llama.cpp, or a fake in tests)."""

    name: str
    model: str
    reason: str
    chat_model: BaseChatModel

    @property
    def label(self) -> str:
        return f"{self.name} ({self.model})" if self.model else self.name

    def stream(self, request: AnswerRequest) -> Iterator[str]:
        prompt = ChatPromptTemplate.from_messages(
            [
                ("system", load_prompt(_SYSTEM[request.task])),
                MessagesPlaceholder("history"),
                ("human", load_prompt("answer_user")),
            ]
        )
        note = partial_note(request.answerability)
        inputs = {
            "question": request.question,
            "sources": format_sources(request_sources(request)),
            "coverage": load_prompt("coverage_note").format(note=note) if note else "",
            "history": history_messages(request.history if request.task != Task.SUMMARY else ()),
        }
        yield from (prompt | self.chat_model | StrOutputParser()).stream(inputs)


def openai_chat(settings: Settings) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.openai_model,
        api_key=settings.openai_client_key,
        base_url=settings.openai_base_url,
        temperature=settings.temperature,
        timeout=settings.request_timeout,
        max_retries=1,
        max_tokens=settings.max_answer_tokens,
        # langchain-openai sends the cap as `max_completion_tokens`, which OpenAI's API reads and
        # compatible servers (llama.cpp, older vLLM) ignore; they read `max_tokens`.
        extra_body={"max_tokens": settings.max_answer_tokens} if settings.openai_base_url else None,
        streaming=True,
    )


def _local_chat(settings: Settings) -> BaseChatModel:
    path = settings.local_model_path
    if path is None or not path.is_file():
        raise ModelNotFoundError(
            f"the local backend needs a GGUF model file, and {path or 'no path'} is not one",
            hint="set PAPERCHAT_LOCAL_MODEL_PATH to a .gguf file",
        )
    try:
        import llama_cpp  # noqa: F401  (imported here so a missing install is our error, not a traceback)
    except ImportError as exc:
        raise ModelNotFoundError(
            "the local backend needs llama-cpp-python", hint="make install-local (a ~5 minute build)"
        ) from exc
    from rag.local import LlamaCppChat

    return LlamaCppChat(
        model_path=str(path), temperature=settings.temperature, n_threads=settings.threads,
        max_tokens=settings.max_answer_tokens,
    )


def choose_backend(settings: Settings, vectors: SentenceVectors) -> Backend:
    """The backend the settings ask for, or the offline one, with the reason in words."""
    from rag.extractive import ExtractiveBackend

    wanted = settings.backend
    if wanted == "openai" or (wanted == "auto" and settings.uses_openai):
        if settings.uses_openai:
            where = settings.openai_base_url or "api.openai.com"
            why = f"{'OPENAI_API_KEY is set' if settings.has_openai_key else 'OPENAI_BASE_URL is set'}; {settings.openai_model} at {where}"
            return ModelBackend("openai", settings.openai_model, why, openai_chat(settings))
        return ExtractiveBackend(vectors, reason="backend 'openai' was asked for but no OPENAI_API_KEY is set")
    if wanted == "local" or (wanted == "auto" and settings.local_model_path):
        why = "backend 'local' was asked for" if wanted == "local" else "PAPERCHAT_LOCAL_MODEL_PATH is set"
        return ModelBackend("local", settings.local_model_path.name if settings.local_model_path else "", why, _local_chat(settings))
    if wanted == "extractive":
        return ExtractiveBackend(vectors, reason="backend 'extractive' was asked for")
    return ExtractiveBackend(vectors, reason="no OPENAI_API_KEY")


def translate_error(exc: Exception, settings: Settings) -> Exception:
    """Map a client library's exception to ours, with what to do; others pass through."""
    try:
        import openai
    except ImportError:
        return exc
    where = settings.openai_base_url or "the OpenAI API"
    if isinstance(exc, openai.APIConnectionError):
        return BackendUnavailableError(
            f"cannot reach {where}: {exc}", hint="check the network or OPENAI_BASE_URL, or use --backend extractive"
        )
    if isinstance(exc, openai.AuthenticationError):
        return AuthenticationError(
            f"{where} refused the API key", hint="check OPENAI_API_KEY, or unset it for the offline extractive backend"
        )
    if isinstance(exc, openai.RateLimitError):
        return RateLimitError(f"{where} is rate-limiting requests", hint="wait a moment and ask again")
    if isinstance(exc, openai.NotFoundError):
        return ModelNotFoundError(
            f"{where} has no model {settings.openai_model!r}", hint="set PAPERCHAT_OPENAI_MODEL to a model the server has"
        )
    if isinstance(exc, openai.APIError):
        return BackendError(f"{where} failed: {exc}", hint="try again, or use --backend extractive")
    return exc

