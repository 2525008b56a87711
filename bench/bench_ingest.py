"""Ingest at the model's speed: end-to-end ingest against the raw model, per embedding runtime.

    python bench/bench_ingest.py                 # the 13,687 abstracts of ../shared (about 25 minutes)
    python bench/bench_ingest.py --limit 1000    # the first 1,000

For each runtime the same papers are first embedded by the model alone (their chunks, as ingest
makes them: the reference), then ingested into a new index (load, chunk, embed, write to Chroma,
BM25 on first use). Both are timed in the same run, so their ratio holds on a shared machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_ingest_ask import SCALE, table

from rag.chunking import chunk_paper
from rag.corpus import load_corpus
from rag.settings import Settings
from rag.store import Index


def measure(runtime: str, papers: list, folder: Path) -> dict:
    settings = Settings(data_dir=folder, backend="extractive", embedding_runtime=runtime)
    index = Index.open(settings)
    index.embeddings.embed_query("load the model")
    texts = [c.text for p in papers for c in chunk_paper(p, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)]
    clock = time.perf_counter()
    index.embeddings.embed_documents(texts)
    raw = time.perf_counter() - clock
    clock = time.perf_counter()
    index.ingest(papers)
    len(index.lexical.document_frequency())
    ingest = time.perf_counter() - clock
    return {
        "runtime": runtime,
        "papers": len(papers),
        "chunks": len(texts),
        "model alone papers/s": round(len(papers) / raw, 1),
        "ingest papers/s": round(len(papers) / ingest, 1),
        "ingest / model": round(raw / ingest, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, help="only the first N abstracts")
    parser.add_argument("--runtimes", nargs="+", default=["onnx", "onnx-int8"])
    args = parser.parse_args()
    if not SCALE.exists():
        raise SystemExit(f"{SCALE} is absent: the shared corpora are not beside this checkout")
    papers = list(load_corpus(SCALE).papers)[: args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(r, papers, Path(tmp) / r) for r in args.runtimes]
    if len(rows) == 2:
        first, second = rows
        rows.append({
            "runtime": f"{second['runtime']} / {first['runtime']}", "papers": "", "chunks": "",
            "model alone papers/s": round(second["model alone papers/s"] / first["model alone papers/s"], 2),
            "ingest papers/s": round(second["ingest papers/s"] / first["ingest papers/s"], 2),
            "ingest / model": "",
        })
    print(table(rows))


if __name__ == "__main__":
    main()
