"""Ingest at the model's speed: end-to-end ingest against the raw model, per embedding runtime,
with and without the sentence vectors stored at ingest.

    python bench/bench_ingest.py                 # the 13,687 abstracts of ../shared (about an hour)
    python bench/bench_ingest.py --limit 2000    # the first 2,000
    python bench/bench_ingest.py --sentence-vectors on   # only ingest as it runs by default, and int8 / float

For each runtime the same papers are first embedded by the model alone (the reference: the texts
ingest embeds, i.e. their chunks, and with sentence vectors also their sentences and distinct
words), then ingested into a new index (load, chunk, split, embed, write to Chroma, BM25 on first
use). Both are timed in the same run, so their ratio holds on a shared machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

from bench_ingest_ask import SCALE, table

from rag.corpus.chunking import chunk_paper
from rag.corpus.reading import load_corpus
from rag.index.papertext import evidence_texts
from rag.index.store import Index
from rag.settings import Settings


def texts_embedded(papers: list, settings: Settings, stored_words: Collection[str] = ()) -> list[str]:
    """What ingest embeds for these papers, into an index that already holds `stored_words`."""
    chunks = [c.text for p in papers for c in chunk_paper(p, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)]
    if not settings.sentence_vectors:
        return chunks
    sentences: dict[str, None] = {}
    words: dict[str, None] = {}
    for paper in papers:
        paper_sentences, paper_words = evidence_texts(paper)
        sentences.update(dict.fromkeys(paper_sentences))
        words.update(dict.fromkeys(paper_words))
    return chunks + list(sentences) + [w for w in words if w not in stored_words]


def measure(runtime: str, sentence_vectors: bool, papers: list, folder: Path) -> dict:
    settings = Settings(
        data_dir=folder, backend="extractive", embedding_runtime=runtime, sentence_vectors=sentence_vectors
    )
    index = Index.open(settings)
    index.embeddings.embed_query("load the model")
    texts = texts_embedded(papers, settings)
    clock = time.perf_counter()
    index.embeddings.embed_documents(texts)
    raw = time.perf_counter() - clock
    clock = time.perf_counter()
    index.ingest(papers)
    len(index.lexical.document_frequency())
    ingest = time.perf_counter() - clock
    return {
        "runtime": runtime,
        "sentence vectors": "on" if sentence_vectors else "off",
        "papers": len(papers),
        "texts embedded": len(texts),
        "model alone papers/s": round(len(papers) / raw, 1),
        "ingest papers/s": round(len(papers) / ingest, 1),
        "ingest / model": round(raw / ingest, 2),
    }


def ratio(name: str, top: dict, bottom: dict) -> dict:
    return {
        "runtime": name, "sentence vectors": "", "papers": "", "texts embedded": "",
        "model alone papers/s": round(top["model alone papers/s"] / bottom["model alone papers/s"], 2),
        "ingest papers/s": round(top["ingest papers/s"] / bottom["ingest papers/s"], 2),
        "ingest / model": "",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, help="only the first N abstracts")
    parser.add_argument("--runtimes", nargs="+", default=["onnx", "onnx-int8"])
    parser.add_argument(
        "--sentence-vectors", choices=("on", "both"), default="both",
        help="on: only ingest as it runs by default (half the time); both: also without them, and their ratio",
    )
    args = parser.parse_args()
    if not SCALE.exists():
        raise SystemExit(f"{SCALE} is absent: the shared corpora are not beside this checkout")
    papers = list(load_corpus(SCALE).papers)[: args.limit]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for runtime in args.runtimes:
            on = measure(runtime, True, papers, Path(tmp) / f"{runtime}-on")
            if args.sentence_vectors == "on":
                rows.append(on)
                continue
            off = measure(runtime, False, papers, Path(tmp) / f"{runtime}-off")
            rows += [off, on, ratio(f"{runtime}: on / off", on, off)]
        if args.sentence_vectors == "on" and len(rows) == 2:
            rows.append(ratio(f"{rows[1]['runtime']} / {rows[0]['runtime']}", rows[1], rows[0]))
    print(table(rows))


if __name__ == "__main__":
    main()
