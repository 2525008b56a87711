"""PaperChat: cited answers over a corpus of research-paper abstracts.

    from rag import Settings, Index, Assistant, load_corpus
    settings = Settings()
    index = Index.open(settings)
    index.ingest(load_corpus("data/papers.jsonl"))
    answer = Assistant(index, settings).ask("Which papers make attention cheaper?")

A large file is better streamed: ``index.ingest(read_corpus("arxiv.jsonl.gz"))``.
"""

from rag.chain import Assistant, DoneEvent, Event, SourcesEvent, TokenEvent
from rag.corpus import load_corpus, read_corpus
from rag.errors import PaperChatError
from rag.records import Answer, Citation, Filters, IngestReport, LoadResult, Paper, Source
from rag.settings import Settings
from rag.store import Index, IndexStats

__all__ = [
    "Answer",
    "Assistant",
    "Citation",
    "DoneEvent",
    "Event",
    "Filters",
    "Index",
    "IndexStats",
    "IngestReport",
    "LoadResult",
    "Paper",
    "PaperChatError",
    "Settings",
    "Source",
    "SourcesEvent",
    "TokenEvent",
    "load_corpus",
    "read_corpus",
]
