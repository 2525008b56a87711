"""Ingest and answer latency on this machine: prints tables of the figures.

    python bench/bench_ingest_ask.py            # runtimes compared, data/papers.jsonl, ask p50/p95
    python bench/bench_ingest_ask.py --scale    # also ../shared/data/scale_corpus.jsonl.gz (~10 min)

The two embedding runtimes (onnx, torch) are compared in the same run, as a ratio, since these
machines are shared and absolute figures drift.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag.answering.chain import Assistant
from rag.corpus.reading import load_corpus
from rag.index.store import Index
from rag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT.parent / "shared" / "data" / "scale_corpus.jsonl.gz"


def runtime_row(runtime: str, data_dir: Path, texts: list[str]) -> dict:
    """Embedding throughput and a cold `paperchat ask` (a new process) for one runtime."""
    settings = Settings(data_dir=data_dir, backend="extractive", embedding_runtime=runtime)
    index = Index.open(settings)
    index.embeddings.embed_documents(texts[:4])
    clock = time.perf_counter()
    index.embeddings.embed_documents(texts)
    rate = len(texts) / (time.perf_counter() - clock)
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data_dir), "PAPERCHAT_EMBEDDING_RUNTIME": runtime}
    cli = [sys.executable, "-m", "rag.cli", "ask", "Which papers make attention cheaper, and how?"]
    clock = time.perf_counter()
    subprocess.run(cli, env=env, check=True, capture_output=True, cwd=ROOT)
    return {"runtime": runtime, "abstracts/s": round(rate, 1), "cold ask s": round(time.perf_counter() - clock, 1)}


def ingest(path: Path, data_dir: Path) -> tuple[Index, dict]:
    settings = Settings(data_dir=data_dir, backend="extractive")
    clock = time.perf_counter()
    index = Index.open(settings)
    index.embeddings.embed_query("load the model")
    loaded_model = time.perf_counter() - clock
    clock = time.perf_counter()
    corpus = load_corpus(path)
    parsed = time.perf_counter() - clock
    report = index.ingest(corpus)
    return index, {
        "corpus": path.name,
        "papers": len(corpus.papers),
        "chunks": report.chunks_written,
        "model load s": round(loaded_model, 1),
        "parse s": round(parsed, 2),
        "ingest s": round(report.seconds, 1),
        "papers/s": round(len(corpus.papers) / report.seconds, 1),
    }


def ask_latency(index: Index, questions: list[str]) -> dict:
    assistant = Assistant(index, index.settings)
    assistant.ask(questions[0])
    totals, retrieve = [], []
    for q in questions:
        answer = assistant.ask(q)
        totals.append(answer.timings["total"] * 1000)
        retrieve.append(answer.timings["retrieve"] * 1000)
    q95 = lambda xs: statistics.quantiles(xs, n=20)[-1]  # noqa: E731
    return {
        "corpus papers": len(index),
        "questions": len(questions),
        "retrieve p50 ms": round(statistics.median(retrieve), 1),
        "retrieve p95 ms": round(q95(retrieve), 1),
        "ask p50 ms": round(statistics.median(totals), 1),
        "ask p95 ms": round(q95(totals), 1),
    }


def peak_rss_mb() -> int:
    """This process's peak resident memory. Not getrusage's ru_maxrss: Linux carries it across
    fork and exec, so a child started by a (large) bench would report the bench's."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmHWM"].split()[0]) // 1024


def table(rows: list[dict]) -> str:
    keys = list(rows[0])
    width = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
    line = lambda r: " | ".join(str(r[k]).rjust(width[k]) for k in keys)  # noqa: E731
    return "\n".join([line({k: k for k in keys}), "-+-".join("-" * width[k] for k in keys), *map(line, rows)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", action="store_true", help="also ingest the 13,687-abstract corpus")
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in (ROOT / "eval" / "sets" / "seed.jsonl").open()]
    with tempfile.TemporaryDirectory() as tmp:
        index, seed_row = ingest(ROOT / "data" / "papers.jsonl", Path(tmp) / "seed")
        rows, latency = [seed_row], [ask_latency(index, questions)]
        texts = [f"{p.title}. {p.abstract}" for p in index.papers.values()] * 5
        runtimes = [runtime_row(r, Path(tmp) / "seed", texts) for r in ("onnx", "torch")]
        runtimes.append(
            {
                "runtime": "onnx / torch",
                "abstracts/s": round(runtimes[0]["abstracts/s"] / runtimes[1]["abstracts/s"], 2),
                "cold ask s": round(runtimes[0]["cold ask s"] / runtimes[1]["cold ask s"], 2),
            }
        )
        if args.scale:
            if not SCALE.exists():
                raise SystemExit(f"{SCALE} is absent: the shared corpora are not beside this checkout")
            big, row = ingest(SCALE, Path(tmp) / "scale")
            rows.append(row)
            latency.append(ask_latency(big, questions))
    print(table(runtimes), end="\n\n")
    print(table(rows), end="\n\n")
    print(table(latency))


if __name__ == "__main__":
    main()
