"""How the index keeps papers in Chroma: the client (the embedded store in a folder, or a server),
each chunk's metadata with the whole paper record on its first chunk, and the paper read back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from rag.errors import StoreError
from rag.records import Chunk, Paper
from rag.settings import Settings


@dataclass(frozen=True)
class DenseHit:
    paper_id: str
    similarity: float
    text: str


def paper_metadata(paper: Paper, chunk: Chunk) -> dict:
    meta: dict = {
        "paper_id": paper.id,
        "position": chunk.position,
        "n_chunks": chunk.n_chunks,
        "title": paper.title,
        "authors": json.dumps(list(paper.authors), ensure_ascii=False),
        "category": paper.category,
        "venue": paper.venue,
        "url": paper.url,
    }
    if paper.year is not None:
        meta["year"] = paper.year
    if chunk.position == 0:
        meta["abstract"] = paper.abstract
        meta["extra"] = json.dumps(paper.extra, ensure_ascii=False)
    return meta


def paper_from_metadata(meta: dict) -> Paper:
    return Paper(
        id=meta["paper_id"],
        title=meta.get("title", ""),
        authors=tuple(json.loads(meta.get("authors", "[]"))),
        abstract=meta["abstract"],
        category=meta.get("category", ""),
        venue=meta.get("venue", ""),
        year=meta.get("year"),
        url=meta.get("url", ""),
        extra=json.loads(meta.get("extra", "{}")),
    )


def store_hint(settings: Settings) -> str:
    if settings.chroma_url:
        return (
            "start the server (`chroma run --path DIR --host HOST --port PORT`) or check the address, "
            "or unset PAPERCHAT_CHROMA_URL to use the embedded index"
        )
    return "set PAPERCHAT_DATA_DIR to a writable folder"


def chroma_client(settings: Settings, path: Path | None):
    """The Chroma client: an HTTP client for `chroma_url`, else the embedded store in `path`."""
    import chromadb

    url = urlsplit(settings.chroma_url or "")
    if path is None and (url.scheme not in ("http", "https") or not url.hostname):
        raise StoreError(
            f"PAPERCHAT_CHROMA_URL={settings.chroma_url!r} is not an http(s)://host:port address",
            hint="for example http://127.0.0.1:8000, where `chroma run` listens",
        )
    try:
        if path is None:
            return chromadb.HttpClient(
                host=str(url.hostname),
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
            )
        from chromadb.api.shared_system_client import SharedSystemClient

        path.mkdir(parents=True, exist_ok=True)
        # chromadb keeps one "system" per folder in a process, shared by every client of it, with
        # each collection's vector index in memory as it was first read. Through it another
        # process's later writes are never seen (dense search misses them, reading their vectors
        # fails), and a write puts the old index back over them (measured: 500 of 1,800 vectors
        # lost). So each client gets a system made now, and `Index.refresh` makes a new one when
        # another process wrote. Clients holding an older one keep it.
        SharedSystemClient._identifier_to_system.pop(str(path), None)
        return chromadb.PersistentClient(path=str(path))
    except Exception as exc:
        where = settings.chroma_url if path is None else path
        raise StoreError(f"cannot open the index at {where}: {exc}", hint=store_hint(settings)) from exc
