"""Answering backends, chosen by settings: openai(-compatible), local GGUF, or extractive.

Every backend is the same pair of LangChain runnables, `answer` and `summarize`, each taking
{"question", "sources", "history"} and streaming text, so the chain, streaming and citation
checking are one code path whichever backend answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableLambda

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


@dataclass(frozen=True)
class Backend:
    """An answering backend and why it was chosen."""

    name: str
    model: str
    reason: str
    answer: Runnable
    summarize: Runnable
    chat_model: BaseChatModel | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ({self.model})" if self.model else self.name


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


def _prompted(chat_model: BaseChatModel, system: str, user: str, *, with_history: bool) -> Runnable:
    parts: list = [("system", load_prompt(system))]
    if with_history:
        parts.append(MessagesPlaceholder("history"))
    parts.append(("human", load_prompt(user)))
    prompt = ChatPromptTemplate.from_messages(parts)

    def inputs(x: dict) -> dict:
        return {
            "question": x.get("question", ""),
            "sources": format_sources(x["sources"]),
            "history": history_messages(x.get("history", ())),
        }

    return RunnableLambda(inputs) | prompt | chat_model | StrOutputParser()


def model_backend(name: str, model: str, reason: str, chat_model: BaseChatModel) -> Backend:
    """A backend around any LangChain chat model (OpenAI, llama.cpp, or a fake in tests)."""
    return Backend(
        name=name,
        model=model,
        reason=reason,
        answer=_prompted(chat_model, "answer_system", "answer_user", with_history=True),
        summarize=_prompted(chat_model, "summarize_system", "summarize_user", with_history=False),
        chat_model=chat_model,
    )


def openai_chat(settings: Settings) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.openai_model,
        api_key=settings.openai_client_key,
        base_url=settings.openai_base_url,
        temperature=settings.temperature,
        timeout=settings.request_timeout,
        max_retries=1,
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

    return LlamaCppChat(model_path=str(path), temperature=settings.temperature, n_threads=settings.threads)


def choose_backend(settings: Settings, vectors: SentenceVectors) -> Backend:
    """The backend the settings ask for, or the offline one, with the reason in words."""
    from rag.extractive import extractive_backend

    wanted = settings.backend
    if wanted == "openai" or (wanted == "auto" and settings.uses_openai):
        if settings.uses_openai:
            why = "OPENAI_API_KEY is set" if settings.has_openai_key else f"OPENAI_BASE_URL is {settings.openai_base_url}"
            return model_backend("openai", settings.openai_model, why, openai_chat(settings))
        return extractive_backend(vectors, reason="backend 'openai' was asked for but no OPENAI_API_KEY is set")
    if wanted == "local" or (wanted == "auto" and settings.local_model_path):
        why = "backend 'local' was asked for" if wanted == "local" else "PAPERCHAT_LOCAL_MODEL_PATH is set"
        return model_backend("local", settings.local_model_path.name if settings.local_model_path else "", why, _local_chat(settings))
    if wanted == "extractive":
        return extractive_backend(vectors, reason="backend 'extractive' was asked for")
    return extractive_backend(vectors, reason="no OPENAI_API_KEY")


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

