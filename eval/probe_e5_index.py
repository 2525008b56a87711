"""A whole e5 index of the scale corpus, measured and not kept (docs/benchmarks.md, "Questions
in Chinese"): each paper's title and first 300 characters embedded by multilingual-e5, searched
by the Chinese (or, with --english, the English) scale questions of a half, alone and fused by
reciprocal ranks with the product's ranking.

    python eval/probe_e5_index.py [--split calibration] [--english] [--vectors /tmp/e5scale.npz]

The vectors (about 20 minutes on 2 cores) are kept in --vectors and read back on a second run.
The product's ranking is read from the scale index `make eval-chinese` builds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

from rag.answering.chain import Assistant
from rag.index.crosslingual import _e5_passages, _e5_query
from rag.index.store import Index
from rag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT.parent / "shared" / "data" / "scale_corpus.jsonl.gz"


def vectors(path: Path) -> tuple[list[str], np.ndarray]:
    if path.exists():
        kept = np.load(path)
        return list(kept["ids"]), kept["vectors"]
    with gzip.open(SCALE, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    clock = time.perf_counter()
    made = np.concatenate(
        [_e5_passages([f"{r['title']}. {r['abstract'][:300]}" for r in rows[i : i + 64]]) for i in range(0, len(rows), 64)]
    )
    print(f"{len(rows)} passages embedded at {len(rows) / (time.perf_counter() - clock):.1f}/s")
    ids = [r["id"] for r in rows]
    np.savez(path, ids=np.array(ids), vectors=made.astype(np.float32))
    return ids, made


def fused(rankings: list[list[str]], weights: list[float]) -> list[str]:
    score: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, pid in enumerate(ranking):
            score[pid] = score.get(pid, 0.0) + weight / (60 + rank + 1)
    return sorted(score, key=lambda pid: -score[pid])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="calibration")
    parser.add_argument("--english", action="store_true", help="the English twins of the questions")
    parser.add_argument("--vectors", type=Path, default=Path("/tmp/e5scale.npz"))
    parser.add_argument("--index", type=Path, default=Path("/tmp/pc-eval/eval/scale_corpus"), help="the scale index's data dir")
    args = parser.parse_args()
    ids, matrix = vectors(args.vectors)
    settings = Settings(data_dir=args.index, backend="extractive")
    assistant = Assistant(Index.open(settings), settings)
    name = "zh-scale-en" if args.english else "zh-scale"
    items = [json.loads(line) for line in (ROOT / "eval" / "sets" / f"{name}.jsonl").open(encoding="utf-8")]
    items = [i for i in items if i.get("split") == args.split and i.get("gold")]
    ranks: dict[str, list[int]] = {"today": [], "e5 alone": [], "fused": [], "fused, e5 x2": []}
    for item in items:
        _, _, evidence, _ = assistant.prepare(item["question"], k=50, widen=False)
        today = [p.paper.id for p in evidence.papers]
        e5 = [ids[j] for j in np.argsort(-(matrix @ _e5_query(item["question"])))[:50]]
        for way, ranking in (
            ("today", today),
            ("e5 alone", e5),
            ("fused", fused([today, e5], [1, 1])),
            ("fused, e5 x2", fused([today, e5], [1, 2])),
        ):
            ranks[way].append(next((n for n, pid in enumerate(ranking) if pid in item["gold"]), 99))
    print(f"{name}, {args.split} half, {len(items)} answerable questions")
    for way, found in ranks.items():
        at = np.array(found)
        print(f"{way:<14} gold first {np.mean(at < 1):.3f}  Recall@5 {np.mean(at < 5):.3f}")


if __name__ == "__main__":
    main()
