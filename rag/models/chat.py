"""The chat models a backend wraps, made from the settings: an OpenAI(-compatible) server or a local
GGUF file; and a client library's exception turned into ours, with what to do and no secret in it."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from rag.errors import (
    AuthenticationError,
    BackendError,
    BackendUnavailableError,
    ModelNotFoundError,
    RateLimitError,
    ServerError,
)
from rag.settings import HIDDEN, Settings


def openai_chat(settings: Settings) -> BaseChatModel:
    import openai
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.openai_model,
        api_key=SecretStr(settings.openai_client_key),
        base_url=settings.openai_endpoint,
        default_query=settings.openai_query or None,
        temperature=settings.temperature,
        # The client's read bound is a little longer than the first-token bound, so that
        # rag.models.modelcall's clock, which tells a silent server from a slow start, decides.
        timeout=openai.Timeout(settings.request_timeout, connect=settings.connect_timeout, read=settings.first_token_timeout + 1),
        # rag.models.modelcall retries, within the total bound.
        max_retries=0,
        max_completion_tokens=settings.max_answer_tokens,
        # langchain-openai sends the cap as `max_completion_tokens`, which OpenAI's API reads and
        # compatible servers (llama.cpp, older vLLM) ignore; they read `max_tokens`.
        extra_body={"max_tokens": settings.max_answer_tokens} if settings.openai_base_url else None,
        streaming=True,
    )


def local_chat(settings: Settings) -> BaseChatModel:
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
    from rag.models.local import LlamaCppChat

    return LlamaCppChat(
        model_path=str(path),
        temperature=settings.temperature,
        n_threads=settings.threads,
        max_tokens=settings.max_answer_tokens,
    )


# The client's "Error code: 500 - " before what the server said: the message gives the status itself.
_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")


def _retry_after(exc: Exception) -> float | None:
    """The seconds a server's Retry-After (or Retry-After-Ms) header asks for, if it sent one:
    as seconds, or as an HTTP date (RFC 9110 allows both)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name, "")
        seconds: float | None
        try:
            seconds = float(value) / scale
        except ValueError:
            seconds = _seconds_until(value) if name == "retry-after" else None
        if seconds is not None and seconds >= 0:
            return seconds
    return None


def _seconds_until(http_date: str) -> float | None:
    """The seconds from now to an HTTP date, 0 for one past; None for what is not a date."""
    try:
        when = parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    # A date without a zone is UTC: HTTP dates are GMT.
    return max(0.0, (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() - datetime.now(UTC).timestamp())


def _redacted(said: str, settings: Settings) -> str:
    """What a server said, without the API key or the credentials in OPENAI_BASE_URL: some servers
    echo the key they refused or the URL they were asked, and a message is printed, logged and
    written into evaluation reports."""
    # The longest first: a shorter secret inside a longer one would leave the rest of it shown.
    for secret in sorted(settings.secrets, key=len, reverse=True):
        said = said.replace(secret, HIDDEN)
    return said


def translate_error(exc: Exception, settings: Settings) -> Exception:
    """Map a client library's exception to ours, with what to do; others pass through."""
    try:
        import openai
    except ImportError:
        return exc
    where = settings.openai_server
    model = settings.openai_model
    if isinstance(exc, openai.APIConnectionError):
        return BackendUnavailableError(
            f"cannot reach {model} at {where}: {_redacted(str(exc), settings)}",
            hint="check the network or OPENAI_BASE_URL, or use --backend extractive",
        )
    if isinstance(exc, openai.AuthenticationError):
        return AuthenticationError(
            f"{where} refused the API key", hint="check OPENAI_API_KEY, or unset it for the offline extractive backend"
        )
    if isinstance(exc, openai.RateLimitError):
        return RateLimitError(
            f"{where} is rate-limiting requests (HTTP 429)", hint="wait a moment and ask again", retry_after=_retry_after(exc)
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelNotFoundError(f"{where} has no model {model!r}", hint="set PAPERCHAT_OPENAI_MODEL to a model the server has")
    if isinstance(exc, openai.APIStatusError):
        said = _redacted(_STATUS_PREFIX.sub("", exc.message), settings)
        kind = ServerError if isinstance(exc, openai.InternalServerError) else BackendError
        return kind(
            f"{model} at {where} failed (HTTP {exc.status_code}): {said}",
            hint="try again, or use --backend extractive",
            retry_after=_retry_after(exc),
        )
    if isinstance(exc, openai.APIError):
        return BackendError(
            f"{model} at {where} failed: {_redacted(str(exc), settings)}", hint="try again, or use --backend extractive"
        )
    return exc
