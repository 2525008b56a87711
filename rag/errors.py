"""PaperChat's exceptions: one hierarchy, each with a message a user can act on.

Every error a user can cause or meet (a bad file, a bad record, a missing model, an API that is
down, a missing key) is a `PaperChatError`. Its message says what went wrong and where; its
`hint` says what to do. The CLI and the UI print these without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class PaperChatError(Exception):
    """Base of every error PaperChat raises on purpose."""

    # The CLI's exit status for it.
    exit_code = 1

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(PaperChatError):
    """A setting is missing or inconsistent."""


class CorpusError(PaperChatError):
    """A corpus file cannot be read at all (missing, unknown format, empty)."""


class RecordError(CorpusError):
    """One record of a corpus file is invalid; names the file and the line."""

    def __init__(self, path: str, line: int, reason: str, *, hint: str = "") -> None:
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}", hint=hint or "fix the record, or load with --skip-invalid to skip it")


class StoreError(PaperChatError):
    """The index on disk cannot be opened or written."""


class EmbeddingMismatchError(StoreError):
    """The index was built with another embedding model than the one configured."""


class IndexBusyError(StoreError):
    """Another process was writing to the embedded index for longer than a writer waits."""


class InputError(PaperChatError):
    """Text a user typed that cannot be asked: too long, an empty research-table column, too many of them."""


class QuestionTooLongError(InputError):
    """A question, search query or table column longer than `Settings.max_question_chars`:
    refused before it is searched for, sent to a model or said back."""


class OutputPathError(PaperChatError):
    """A file an export was asked to write cannot be written there; names the path."""


class ModelNotFoundError(PaperChatError):
    """A model file or package the configuration names is not there."""


class PaperNotFoundError(PaperChatError):
    """No indexed paper matches the id or title words given."""


class ConversationError(PaperChatError):
    """A saved conversation's file cannot be read or written; names the file."""

    def __init__(self, path: Path, reason: str, *, hint: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}", hint=hint)


class ConversationNotFoundError(ConversationError):
    """No saved conversation has the id asked for (deleted, or an id no file can have)."""


class BackendError(PaperChatError):
    """The answering backend failed (API down, bad key, rate limit, model error)."""

    def __init__(self, message: str, *, hint: str = "", retry_after: float | None = None) -> None:
        super().__init__(message, hint=hint)
        # Seconds the server asked us to wait before trying again (its Retry-After), if it said.
        self.retry_after = retry_after


class BackendUnavailableError(BackendError):
    """The backend's server cannot be reached."""


class AuthenticationError(BackendError):
    """The API key was refused."""


class RateLimitError(BackendError):
    """The API asked us to slow down."""


class ServerError(BackendError):
    """The model server answered with an error of its own (HTTP 5xx)."""


class BackendTimeoutError(BackendError):
    """No answer came within the configured bounds."""


class AnswerCutOff(BackendError):
    """The answer broke off after part of it was shown: the connection was lost, the server went
    silent, or the total bound was reached."""


class IngestInterruptedError(PaperChatError):
    """Ctrl+C stopped an ingest: what it wrote is kept, and the same command again adds the rest."""

    exit_code = 130  # the shell's convention for SIGINT

    def __init__(self, path: str, indexed: int, total: int) -> None:
        self.path, self.indexed, self.total = path, indexed, total
        done = (
            f"the first {indexed:,} of {total:,} papers of {path} are in the index"
            if indexed
            else f"before the first batch of {path} was written; the index holds what it held"
        )
        super().__init__(
            f"interrupted {done}",
            hint="run the same command again for the rest: papers already indexed are not embedded again",
        )


class EvalIncompleteError(PaperChatError):
    """An evaluation run left questions without scores (some failed, or it stopped early); its
    partial report is written, and `paperchat eval --resume` asks those questions again."""

    def __init__(self, message: str, *, folder: Path, interrupted: bool = False) -> None:
        self.folder = folder
        # Stopped by Ctrl+C: the shell's convention for SIGINT, and nothing to wait for to resume.
        self.exit_code = 130 if interrupted else 1
        when = "to ask the rest" if interrupted else "once the backend answers again"
        super().__init__(message, hint=f"{when}: paperchat eval --resume {folder}")
