"""Growth: at 1k, 10k, 13,687 and 100k papers, the ingest rate, the index's size on disk, the
start-up to a first answer, retrieval and `ask` p50/p95, and the peak memory of the process that
answers (`make bench-scale`, about an hour on 2 cores).

One index grows through the sizes: the first 1,000 scale abstracts, then the next 9,000, then
the rest, each embedded by the model. 100k is the scale corpus again and again, each copy's
title marked "(copy N)"; a copy is given the vectors the model gave its original, slightly
moved so that no two copies are one point. Embedding 86,000 more abstracts would take the model
about two hours here, and what 100k measures is what the store, BM25 and the answerer do with
that many papers; the copies' ingest rate is the pipeline without the model, reported as such.

Each size is measured by a new process (`--probe`): its start-up to a first answer, then the
88 scale-set questions, each with an empty memo as `make bench-ask` does, then its peak RSS.
Each timing has its reference from the same run: the ingest rate the model alone's rate on 500
of the papers about to be added (what ingest embeds for them: chunks, sentences, and the words
the index does not hold yet; for copies, their originals', so the ratio says how far the
pipeline runs ahead of the model), `ask` the retrieval alone in the same process.

    python bench/bench_scale.py                          # into a temporary folder
    python bench/bench_scale.py --sizes 1000 5000 --data-dir DIR
    python bench/bench_scale.py --originals 300 --sizes 100 300 3000   # a few minutes
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
from bench_ask import SETS, first_asks, p95, questions
from bench_ingest import texts_embedded
from bench_ingest_ask import ROOT, SCALE, peak_rss_mb, table
from langchain_core.embeddings import Embeddings

SIZES = (1000, 10_000, 13_687, 100_000)
SAMPLE = 500  # papers the model alone embeds at each size, for the ingest rate's reference
FIRST = "How does mixture-of-head attention select heads?"
_COPY = re.compile(r" \(copy \d+\)")
PLOT = ROOT / "bench" / "scale.png"


class Reused(Embeddings):
    """For a copy's text, the vector the model gave its original, moved a little (by an amount
    fixed by the text); the model for any other text."""

    def __init__(self, model: Embeddings, known: dict[str, np.ndarray]) -> None:
        self.model = model
        self.known = known
        self.reused = 0

    def _vector(self, text: str) -> np.ndarray | None:
        original = self.known.get(_COPY.sub("", text))
        if original is None or not _COPY.search(text):
            return original
        noise = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(original.shape)
        moved = original + 0.02 * noise
        return moved / np.linalg.norm(moved)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = {t: v for t in dict.fromkeys(texts) if (v := self._vector(t)) is not None}
        self.reused += len(vectors)
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, np.asarray(self.model.embed_documents(missing)), strict=True))
        return [np.asarray(vectors[t], dtype=np.float32).tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


def known_vectors(index) -> dict[str, np.ndarray]:
    """Every chunk's and abstract sentence's vector in the index, by text."""
    known: dict[str, np.ndarray] = {}
    page = 5000
    for offset in range(0, index.stats().chunks, page):
        got = index.vectorstore.get(limit=page, offset=offset, include=["documents", "embeddings"])
        known.update(zip(got["documents"], np.asarray(got["embeddings"], dtype=np.float32), strict=True))
    for sentences in index.texts.sentences(list(index.papers)).values():
        known.update(sentences)
    return known


def copies(papers: list, n: int) -> list:
    """`n` copies of the papers, round after round, each with its own id and a marked title."""
    out = []
    for i in range(n):
        paper = papers[i % len(papers)]
        round_ = i // len(papers) + 1
        out.append(paper.model_copy(update={"id": f"{paper.id}~{round_}", "title": f"{paper.title} (copy {round_})"}))
    return out


def disk_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def probe(data_dir: Path) -> None:
    """In a new process: one first answer (the parent times it), then latency and peak RSS."""
    from rag.answering.chain import Assistant
    from rag.index.store import Index
    from rag.search.retrieval import search
    from rag.settings import Settings

    settings = Settings(data_dir=data_dir, backend="extractive")
    index = Index.open(settings)
    assistant = Assistant(index, settings)
    assistant.ask(FIRST)
    print("answered", flush=True)
    asked = questions([ROOT / "eval" / "sets" / f"{s}.jsonl" for s in SETS])
    retrieval = []
    for question in asked:
        clock = time.perf_counter()
        search(index, question, settings)
        retrieval.append((time.perf_counter() - clock) * 1000)
    totals = first_asks(assistant, asked)
    print(json.dumps({
        "retrieval p50 ms": round(statistics.median(retrieval), 1),
        "retrieval p95 ms": round(p95(retrieval), 1),
        "ask p50 ms": round(statistics.median(totals), 1),
        "ask p95 ms": round(p95(totals), 1),
        "peak RSS MB": peak_rss_mb(),
    }), flush=True)


def measure(data_dir: Path) -> dict:
    clock = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--probe", str(data_dir)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert child.stdout is not None
    lines = iter(child.stdout)
    if next(lines, "").strip() != "answered":
        raise SystemExit(f"the probe of {data_dir} failed")
    started = time.perf_counter() - clock
    figures = json.loads(next(lines))
    child.wait()
    return {"start-up s": round(started, 2), **figures}


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    metrics = ["ingest papers/s", "disk MB", "start-up s", "retrieval p50 ms", "ask p50 ms", "peak RSS MB"]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7))
    sizes = np.array([r["papers"] for r in rows], dtype=float)
    for ax, metric in zip(axes.flat, metrics, strict=True):
        values = np.array([r[metric] for r in rows], dtype=float)
        ax.loglog(sizes, values, color="tab:blue")
        for size, value, row in zip(sizes, values, rows, strict=True):
            reused = row["vectors"] == "reused"
            ax.plot(size, value, "o", color="tab:blue", markerfacecolor="white" if reused else "tab:blue")
            ax.annotate(f"{value:g}", (size, value), textcoords="offset points", xytext=(5, 5), fontsize=8)
        # From the first size: growing in proportion to the corpus, or for a rate, holding.
        slope = 0 if metric == "ingest papers/s" else 1
        ax.loglog(sizes, values[0] * (sizes / sizes[0]) ** slope, "--", color="grey", linewidth=0.8)
        ax.set_ylim(values.min() / 3, values.max() * 3)
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(metric)
        ax.set_xlabel("papers")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(
        "PaperChat growth (make bench-scale). Hollow: copies given their original's vectors.\n"
        "Dashed: in proportion to the corpus (ingest: a rate that holds)"
    )
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--data-dir", type=Path, help="where the index grows (default: a temporary folder)")
    parser.add_argument("--originals", type=int, help="copy only the first N scale abstracts (a quick run)")
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        return probe(args.probe)

    from rag.corpus.reading import load_corpus
    from rag.index.papertext import evidence_texts
    from rag.index.store import Index
    from rag.settings import Settings

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="paperchat-scale-"))
    settings = Settings(data_dir=data_dir, backend="extractive")
    originals = load_corpus(SCALE).papers[: args.originals]
    index = Index.open(settings)
    model = index.embeddings
    model.embed_documents([p.abstract for p in originals[:64]])  # not the first reference's cost
    rows = []
    for size in sorted(args.sizes):
        # The profile's count: len(index) would read the whole paper table.
        have = index.profile().papers
        if have >= size:
            continue
        real = originals[have:size]
        extra = copies(originals, size - len(originals)) if size > len(originals) else []
        extra = extra[max(0, have - len(originals)) :]
        # The reference, taken before ingest: what ingest embeds for a sample of the papers
        # about to be added (for copies, of their originals), embedded by the model alone.
        sampled = list((real or originals)[:SAMPLE])
        words = list({w for p in sampled for w in evidence_texts(p)[1]})
        sample = texts_embedded(sampled, settings, stored_words=index.texts.words(words))
        clock = time.perf_counter()
        model.embed_documents(sample)
        model_rate = len(sampled) / (time.perf_counter() - clock)
        vectors = "model"
        clock = time.perf_counter()
        if real:
            index.ingest(real)
        if extra:
            reused = Reused(model, known_vectors(index))
            index = Index(settings, reused)
            clock = time.perf_counter()  # the copies alone: their rate is the pipeline's
            index.ingest(extra)
            vectors = "reused"
            index = Index(settings, model)
        added = len(real) if not extra else len(extra)
        rate = added / (time.perf_counter() - clock)
        figures = measure(data_dir)
        rows.append({
            "papers": index.profile().papers, "added": added, "vectors": vectors, "ingest papers/s": round(rate, 1),
            "model papers/s": round(model_rate, 1), "ingest / model": round(rate / model_rate, 2),
            "disk MB": round(disk_mb(data_dir)), **figures,
            "ask / retrieval": round(figures["ask p50 ms"] / figures["retrieval p50 ms"], 1),
        })
        print(table(rows[-1:]), flush=True)
    if not rows:
        raise SystemExit(f"the index at {data_dir} already has every size: remove it to measure again")
    first, last = rows[0], rows[-1]
    ratio = {k: (round(last[k] / first[k], 2) if isinstance(first[k], float | int) and first[k] else "") for k in first}
    rows.append({**ratio, "vectors": f"{last['papers']:,} / {first['papers']:,}"})
    print(table(rows))
    plot(rows[:-1])
    print(f"plot: {PLOT}")


if __name__ == "__main__":
    main()
