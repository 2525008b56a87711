"""Where ingest's time goes: each step's own share of one ingest of the scale corpus.

    python bench/profile_ingest.py                 # the 13,687 abstracts of ../shared
    python bench/profile_ingest.py --limit 2000    # the first 2,000

Each step is timed by wrapping what does it, and a step's time is its own: the embedding inside
a Chroma write counts as the embedding's, not the write's. Reading the corpus is timed apart,
before the ingest (the whole file, counted for the papers ingested); BM25 is built on first use, so that first use is timed after it. What no
wrapper covers (batching, hashing, the catalog's bookkeeping between steps) is "other".
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from bench_ingest_ask import SCALE, table
from langchain_core.embeddings import Embeddings

import rag.index.store as store
import rag.index.textvectors as textvectors
from rag.corpus.reading import load_corpus
from rag.index.store import Index
from rag.settings import Settings


class StepClock:
    """Own time per step: entering a step pauses the step it is called from."""

    def __init__(self) -> None:
        self.own: dict[str, float] = {}
        self._stack: list[tuple[str, float]] = []

    def wrap(self, step: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            now = time.perf_counter()
            if self._stack:
                outer, since = self._stack[-1]
                self.own[outer] = self.own.get(outer, 0.0) + now - since
            self._stack.append((step, now))
            try:
                return function(*args, **kwargs)
            finally:
                done = time.perf_counter()
                _, since = self._stack.pop()
                self.own[step] = self.own.get(step, 0.0) + done - since
                if self._stack:
                    self._stack[-1] = (self._stack[-1][0], done)

        return timed


def profile(papers: list, folder: Path, embeddings: Embeddings | None = None) -> tuple[dict[str, float], float]:
    """Each step's own seconds, and the whole ingest's, of `papers` into a new index in `folder`
    (with the configured model unless `embeddings` is given)."""
    clock = StepClock()
    index = Index.open(Settings(data_dir=folder, backend="extractive"), embeddings=embeddings)
    index.embeddings.embed_query("load the model")
    embed = index.embeddings.embed_documents
    # Which embedding a call is: chunks come through Chroma's write, sentences and words through
    # the text store's.
    in_chunks = {"now": False}

    def embed_any(texts: list[str]) -> list[list[float]]:
        return embed(texts)

    chunk_embed = clock.wrap("chunk vectors", embed_any)
    text_embed = clock.wrap("sentence and word vectors", embed_any)
    index.embeddings.embed_documents = lambda texts: (chunk_embed if in_chunks["now"] else text_embed)(texts)  # type: ignore[method-assign]
    add_texts = clock.wrap("Chroma writes", index.vectorstore.add_texts)

    def chroma_write(*args: Any, **kwargs: Any) -> Any:
        in_chunks["now"] = True
        try:
            return add_texts(*args, **kwargs)
        finally:
            in_chunks["now"] = False

    index.vectorstore.add_texts = chroma_write  # type: ignore[method-assign]
    store.chunk_paper = clock.wrap("chunking", store.chunk_paper)
    textvectors.evidence_texts = clock.wrap("sentence splitting and words", textvectors.evidence_texts)
    index.texts.put = clock.wrap("sentence and word store writes", index.texts.put)  # type: ignore[method-assign]
    index.fetch = clock.wrap("lookup of indexed papers", index.fetch)  # type: ignore[method-assign]
    index._collection.get = clock.wrap("Chroma writes", index._collection.get)  # type: ignore[method-assign]
    index._next_catalog = clock.wrap("catalog", index._next_catalog)  # type: ignore[method-assign]
    started = time.perf_counter()
    index.ingest(papers)
    lexical = clock.wrap("BM25 (first use)", lambda: len(index.lexical.document_frequency()))
    lexical()
    return clock.own, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, help="only the first N abstracts")
    args = parser.parse_args()
    clock = time.perf_counter()
    every = load_corpus(SCALE).papers
    papers = every[: args.limit]
    # The whole file is read: its time, for the papers ingested.
    reading = (time.perf_counter() - clock) * len(papers) / len(every)
    with tempfile.TemporaryDirectory() as tmp:
        own, total = profile(papers, Path(tmp))
    steps = {"reading the corpus": reading, **own}
    steps["other"] = max(total - sum(own.values()), 0.0)
    whole = reading + total
    rows = [
        {
            "step": step,
            "seconds": f"{seconds:.1f}",
            "share": f"{seconds / whole:.0%}",
            "papers/s alone": f"{len(papers) / seconds:.0f}" if seconds else "",
        }
        for step, seconds in sorted(steps.items(), key=lambda s: -s[1])
    ]
    rows.append(
        {"step": "ingest, all steps", "seconds": f"{whole:.1f}", "share": "100%", "papers/s alone": f"{len(papers) / whole:.1f}"}
    )
    print(f"{len(papers):,} papers, default settings")
    print(table(rows))


if __name__ == "__main__":
    main()
