"""PaperChat: cited answers over a corpus of research-paper abstracts.

    from rag import Settings, Index, Assistant, load_corpus
    settings = Settings()
    index = Index.open(settings)
    index.ingest(load_corpus("data/papers.jsonl"))
    answer = Assistant(index, settings).ask("Which papers make attention cheaper?")

A large file is better streamed: ``index.ingest(read_corpus("arxiv.jsonl.gz"))``. Every error
PaperChat raises on purpose is a `PaperChatError` (its subclasses are exported here too), with a
message saying what and where and a `hint` saying what to do. `PaperRetriever` is the hybrid search
as a LangChain retriever, for chains of one's own.
"""

from rag.answering.chain import Assistant, DoneEvent, Event, SourcesEvent, StatusEvent, TokenEvent
from rag.conversations import Conversation, ConversationStore
from rag.corpus.reading import load_corpus, read_corpus
from rag.errors import (
    AnswerCutOff,
    AuthenticationError,
    BackendError,
    BackendTimeoutError,
    BackendUnavailableError,
    ConfigError,
    ConversationError,
    ConversationNotFoundError,
    CorpusError,
    EmbeddingMismatchError,
    EvalIncompleteError,
    IndexBusyError,
    IngestInterruptedError,
    InputError,
    ModelNotFoundError,
    OutputPathError,
    PaperChatError,
    PaperNotFoundError,
    QuestionTooLongError,
    RateLimitError,
    RecordError,
    ServerError,
    StoreError,
)
from rag.index.store import Index
from rag.records import Answer, Citation, Filters, IndexStats, IngestReport, LoadResult, Paper, PaperMatch, Source
from rag.search.retrieval import PaperRetriever
from rag.settings import Settings

__all__ = [
    "Answer",
    "AnswerCutOff",
    "Assistant",
    "AuthenticationError",
    "BackendError",
    "BackendTimeoutError",
    "BackendUnavailableError",
    "Citation",
    "ConfigError",
    "Conversation",
    "ConversationError",
    "ConversationNotFoundError",
    "ConversationStore",
    "CorpusError",
    "DoneEvent",
    "EmbeddingMismatchError",
    "EvalIncompleteError",
    "Event",
    "Filters",
    "Index",
    "IndexBusyError",
    "IndexStats",
    "IngestInterruptedError",
    "IngestReport",
    "InputError",
    "LoadResult",
    "ModelNotFoundError",
    "OutputPathError",
    "Paper",
    "PaperChatError",
    "PaperMatch",
    "PaperNotFoundError",
    "PaperRetriever",
    "QuestionTooLongError",
    "RateLimitError",
    "RecordError",
    "ServerError",
    "Settings",
    "Source",
    "SourcesEvent",
    "StatusEvent",
    "StoreError",
    "TokenEvent",
    "load_corpus",
    "read_corpus",
]
