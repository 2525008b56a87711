"""Token-aware chunking of abstracts (tiktoken cl100k through LangChain's splitter).

Most abstracts fit the embedding model's window and stay whole: splitting what fits only spends
the top-k on duplicates of one paper. Longer ones are split on sentence boundaries with overlap.
Every chunk's text starts with the paper's title so title words count in the dense index.
"""

from __future__ import annotations

from functools import lru_cache

from langchain_text_splitters import RecursiveCharacterTextSplitter

from rag.corpus.tokens import ensure_tiktoken
from rag.records import Chunk, Paper, stable_id


@lru_cache(maxsize=4)
def _splitter(chunk_size: int, chunk_overlap: int) -> RecursiveCharacterTextSplitter:
    ensure_tiktoken()
    return RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base",
        chunk_size=chunk_size,
        chunk_overlap=min(chunk_overlap, chunk_size // 2),
        separators=["\n\n", "\n", ". ", "; ", ", ", " ", ""],
        keep_separator="end",
        # An abstract that spells "<|endoftext|>" is text: by default tiktoken raises on it,
        # which would stop an ingest midway with a traceback.
        disallowed_special=(),
    )


def chunk_paper(paper: Paper, *, chunk_size: int = 256, chunk_overlap: int = 32) -> list[Chunk]:
    """Split one paper into chunks whose ids derive from paper id, position and content."""
    pieces = [p.strip() for p in _splitter(chunk_size, chunk_overlap).split_text(paper.abstract)]
    pieces = [p for p in pieces if p] or [paper.abstract]
    prefix = f"{paper.title}. " if paper.title else ""
    chunks = []
    for position, piece in enumerate(pieces):
        text = prefix + piece
        chunks.append(
            Chunk(
                id=f"{paper.id}:{position}:{stable_id(text)[:8]}",
                paper_id=paper.id,
                position=position,
                n_chunks=len(pieces),
                text=text,
            )
        )
    return chunks


def chunk_paper_id(chunk_id: str) -> str:
    """The id of the paper whose chunk this is (`chunk_paper` makes the ids; a paper's id may
    hold colons)."""
    return chunk_id.rsplit(":", 2)[0]
