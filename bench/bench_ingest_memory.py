"""Peak memory of ingest against the size of the file: N tiny papers (an id, a title, two
authors, a two-sentence abstract) written as .jsonl and ingested into a new index, each size and
each way in a new process, with that process's peak RSS and wall time.

    python bench/bench_ingest_memory.py                          # 2k, 20k, 200k; fake embedder
    python bench/bench_ingest_memory.py --sizes 2000,20000       # smaller sizes
    python bench/bench_ingest_memory.py --embedder minilm        # the real model (hours at 200k)
    python bench/bench_ingest_memory.py --trace 5000             # what Python keeps a paper (4 minutes)

The ways, each from a new process:

- read: only reading the file (`count_papers`, the CLI's first pass, then iterating
  `read_corpus`), to tell the loader from the index;
- ingest: `paperchat ingest FILE` as the CLI runs it (its counting pass, then `Index.ingest`
  over `read_corpus`), sentence vectors on;
- ingest-nosv: the same with PAPERCHAT_SENTENCE_VECTORS=false;
- chroma: Chroma's share alone: the file read and its chunks written to a new collection 256
  papers at a time by the ingest's own chunk writer (`Index._add_chunks`, fake vectors), and
  nothing else (no catalog, no sentences).

With `--embedder fake` (the default) the CLI runs in the worker with `rag.index.store.make_embeddings`
replaced by langchain's `DeterministicFakeEmbedding(size=384)` (MiniLM's width, so Chroma's
vectors are as large as they would be): no setting chooses a fake, and the model would take
hours. With `--embedder minilm` the worker's CLI embeds with the model. The chroma way always
embeds with the fake.

`--trace N` instead ingests N papers in this process under tracemalloc and lists the allocation
sites whose memory grew from the second batch to the last, in bytes a paper. Under about 20k
papers the bounded caches of sentence splits and paper words (4,096 to 20,000 texts) are still
filling and lead the list; what stays is the catalog's (`rag.index.catalog.Additions`).

Peak RSS is the worker's VmHWM (/proc/self/status), which, unlike getrusage's ru_maxrss, a
process does not inherit across fork and exec. The last rows divide each way's figures at the
largest size by its figures at the smallest, from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest_ask import ROOT, peak_rss_mb, table

WAYS = ("read", "ingest", "ingest-nosv", "chroma")
_WORDS = [
    "attention",
    "graph",
    "learning",
    "model",
    "neural",
    "training",
    "data",
    "network",
    "robust",
    "sparse",
    "causal",
    "bandit",
    "policy",
    "reward",
    "transformer",
    "diffusion",
    "kernel",
    "gradient",
    "convex",
    "federated",
    "privacy",
    "retrieval",
    "language",
    "vision",
    "token",
    "inference",
    "sampling",
    "bayesian",
    "latent",
    "contrastive",
    "adversarial",
    "memory",
]


def write_corpus(path: Path, n: int, seed: int = 0) -> None:
    """`n` tiny papers, one JSON object a line, the same for the same `n` and `seed`. Each title
    holds a made-up name ("Zorvex12"), so the vocabulary grows with the corpus as a real one's does."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            words = rng.sample(_WORDS, 6)
            name = f"Zorvex{i}"
            out.write(
                json.dumps(
                    {
                        "id": f"tiny-{i}",
                        "title": f"{name}: {words[0]} {words[1]} for {words[2]}",
                        "authors": [f"Ada Lovelace{i % 997}", f"Alan Turing{i % 991}"],
                        "abstract": f"We study {words[3]} {words[4]} with {name}. It improves {words[5]} by {i % 13} points.",
                    }
                )
                + "\n"
            )


def _fake_embedder() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    import rag.index.store

    rag.index.store.make_embeddings = lambda settings: DeterministicFakeEmbedding(size=384)


def chroma_only(corpus: Path, data_dir: Path) -> int:
    """Write the file's chunks to a new Chroma collection as ingest does, and nothing else."""
    from itertools import islice

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag.corpus.reading import read_corpus
    from rag.index.store import _BATCH, Index
    from rag.records import Paper
    from rag.settings import Settings

    index = Index(Settings(data_dir=data_dir), DeterministicFakeEmbedding(size=384))
    stream, papers = read_corpus(corpus), 0
    while batch := list(islice(stream, _BATCH)):
        index._add_chunks([p for p in batch if isinstance(p, Paper)])
        papers += len(batch)
    return papers


def growth(corpus: Path, data_dir: Path, top: int) -> None:
    """What Python allocations an ingest keeps from batch to batch: tracemalloc snapshots after
    the second batch and after the last one compared, per allocation site, in bytes a paper.
    (Chroma's own memory is not Python's: the chroma way measures it.)"""
    import gc
    import tracemalloc

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag.corpus.reading import count_papers, read_corpus
    from rag.index.store import _BATCH, Index
    from rag.settings import Settings

    total = count_papers(corpus)
    tracemalloc.start(12)
    index = Index(Settings(data_dir=data_dir), DeterministicFakeEmbedding(size=384))
    snapshots: list[tuple[int, tracemalloc.Snapshot]] = []

    def progress(done: int, _: int) -> None:
        if (not snapshots and done >= 2 * _BATCH) or (done == total and len(snapshots) == 1):
            gc.collect()
            snapshots.append((done, tracemalloc.take_snapshot()))

    index.ingest(read_corpus(corpus), total=total, progress=progress)
    (first, before), (last, after) = snapshots
    papers = last - first
    grown = after.compare_to(before, "traceback")
    print(f"Python allocations kept from paper {first:,} to {last:,}: {sum(g.size_diff for g in grown) / papers:.0f} B a paper")
    for stat in grown[:top]:
        print(f"{stat.size_diff / papers:8.0f} B a paper, {stat.count_diff:>+9,} blocks, from:")
        for frame in stat.traceback.format()[-10:]:
            print(f"      {frame}")


def worker(way: str, corpus: Path, data_dir: Path, embedder: str) -> None:
    """One way on one file in this (new) process; prints its seconds and peak RSS as JSON."""
    started = time.perf_counter()
    if way == "read":
        from rag.corpus.reading import count_papers, read_corpus

        count_papers(corpus)
        papers = sum(1 for _ in read_corpus(corpus))
    elif way == "chroma":
        papers = chroma_only(corpus, data_dir)
    else:
        from rag.cli import cli

        if embedder == "fake":
            _fake_embedder()
        os.environ["PAPERCHAT_SENTENCE_VECTORS"] = "false" if way == "ingest-nosv" else "true"
        cli.main(["--data-dir", str(data_dir), "ingest", str(corpus)], standalone_mode=False)
        papers = 0
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_rss_mb(), "papers": papers}))


def measure(way: str, corpus: Path, folder: Path, embedder: str) -> dict:
    data_dir = Path(tempfile.mkdtemp(dir=folder, prefix="index-"))
    args = [sys.executable, __file__, "--worker", way, "--corpus", str(corpus), "--data-dir", str(data_dir)]
    args += ["--embedder", embedder]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{way} on {corpus} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,20000,200000", help="papers per file, comma-separated")
    parser.add_argument("--embedder", choices=("fake", "minilm"), default="fake")
    parser.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated, of: {', '.join(WAYS)}")
    parser.add_argument(
        "--trace", type=int, default=0, metavar="N", help="only: what of N papers an ingest keeps, by tracemalloc"
    )
    parser.add_argument("--top", type=int, default=12, help="with --trace: how many allocation sites to show")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.corpus, args.data_dir, args.embedder)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.trace:
            corpus = folder / f"tiny-{args.trace}.jsonl"
            write_corpus(corpus, args.trace)
            growth(corpus, folder / "index", args.top)
            return
        sizes = [int(s) for s in args.sizes.split(",")]
        ways = [w.strip() for w in args.ways.split(",")]
        measured: dict[tuple[int, str], dict] = {}
        megabytes: dict[int, float] = {}
        for n in sizes:
            corpus = folder / f"tiny-{n}.jsonl"
            write_corpus(corpus, n)
            megabytes[n] = corpus.stat().st_size / 2**20
            for way in ways:
                measured[n, way] = got = measure(way, corpus, folder, args.embedder)
                print(f"{n:,} papers, {way}: {got['peak_rss_mb']:.0f} MB, {got['seconds']:.1f} s", file=sys.stderr, flush=True)
            for path in folder.glob("index-*"):
                shutil.rmtree(path, ignore_errors=True)
            corpus.unlink()
        rows = [
            {
                "papers": f"{n:,}",
                "file MB": f"{megabytes[n]:.1f}",
                "way": way,
                "peak RSS MB": f"{measured[n, way]['peak_rss_mb']:.0f}",
                "seconds": f"{measured[n, way]['seconds']:.1f}",
            }
            for n in sizes
            for way in ways
        ]
        if len(sizes) > 1:
            small, large = sizes[0], sizes[-1]
            rows += [
                {
                    "papers": f"{large // small}x",
                    "file MB": f"{megabytes[large] / megabytes[small]:.1f}x",
                    "way": way,
                    "peak RSS MB": f"{measured[large, way]['peak_rss_mb'] / measured[small, way]['peak_rss_mb']:.2f}x",
                    "seconds": f"{measured[large, way]['seconds'] / measured[small, way]['seconds']:.1f}x",
                }
                for way in ways
            ]
        print(f"embedder: {args.embedder}")
        print(table(rows))


if __name__ == "__main__":
    main()
