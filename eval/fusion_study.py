"""Compare ways of fusing the dense and BM25 rankings, on calibration and report halves.

    python eval/fusion_study.py                      # known-item, SciFact train, the question sets
    python eval/fusion_study.py --set ../shared/benchmarks/scifact

Each question is retrieved once, as `rag.search.retrieval.search` does it (the question analysed; the
dense side embeds its focus, BM25 reads it whole), keeping both candidate lists with their scores
and, for the dense side, the same search with the question unstripped. Every variant is then a
re-ranking of those lists. Halves are fixed by a hash of the query id (as `load_beir` splits a
BEIR set): choose on the calibration half, quote the report half. It prints, per set and half,
nDCG@10 and Recall@100 of each variant and the query p50 of the rankers it needs; then, per
variant, its lowest margin over the better single ranker across the sets.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.evaluation.evaluate import retrieval_scores  # noqa: E402
from rag.evaluation.sets import eval_index, load_eval_set  # noqa: E402
from rag.question.analysis import analyze
from rag.question.kind import is_statement  # noqa: E402
from rag.search.retrieval import score_fusion  # noqa: E402
from rag.settings import Settings  # noqa: E402

SETS = (
    "eval/sets/known-item",
    str(ROOT.parent / "shared" / "benchmarks" / "scifact"),
    "eval/sets/scale-how-result.jsonl",
    "eval/sets/scale-collection.jsonl",
    "eval/sets/scale-extra.jsonl",
    "eval/sets/seed.jsonl",
    "eval/sets/seed-how-result.jsonl",
    "eval/sets/seed-collection.jsonl",
    "eval/sets/seed-extra.jsonl",
)
Scored = list[tuple[str, float]]


def rrf(lists: list[Scored], k: int = 60) -> list[str]:
    """Reciprocal rank fusion (Cormack et al. 2009), the default before score fusion."""
    scores: dict[str, float] = {}
    for items in lists:
        for rank, (paper, _) in enumerate(items, 1):
            scores[paper] = scores.get(paper, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda p: -scores[p])


def min_max(dense: Scored, lexical: Scored, dense_weight: float) -> list[str]:
    """Scores scaled to [0, 1] between each list's lowest and highest; missing papers get 0."""
    def scale(items: Scored) -> dict[str, float]:
        low, high = min(s for _, s in items), max(s for _, s in items)
        return {p: (s - low) / ((high - low) or 1.0) for p, s in items}

    d, b = (scale(x) if x else {} for x in (dense, lexical))
    papers = list(dict.fromkeys([p for p, _ in dense] + [p for p, _ in lexical]))
    fused = {p: dense_weight * d.get(p, 0.0) + (1 - dense_weight) * b.get(p, 0.0) for p in papers}
    return sorted(papers, key=lambda p: -fused[p])


def fused(dense: Scored, lexical: Scored, dense_weight: float) -> list[str]:
    return [p for p, _ in score_fusion([dense, lexical], [dense_weight, 1 - dense_weight])]


def variants(row: dict) -> dict[str, list[str]]:
    dense, raw, lexical = row["dense"], row["dense_raw"], row["bm25"]
    per_type = raw if row["statement"] else dense
    out = {
        "dense (focus)": [p for p, _ in dense],
        "dense (question as asked)": [p for p, _ in raw],
        "dense (focus for questions only)": [p for p, _ in per_type],
        "bm25": [p for p, _ in lexical],
        "rrf k=60 (the previous default)": rrf([dense, lexical]),
        "rrf k=20": rrf([dense, lexical], 20),
        "min-max 0.5/0.5": min_max(dense, lexical, 0.5),
    }
    for weight in (0.4, 0.5, 0.6):
        out[f"score fusion {weight:.1f}/{1 - weight:.1f}"] = fused(dense, lexical, weight)
    out["score fusion 0.5/0.5, focus for questions only"] = fused(per_type, lexical, 0.5)
    out["score fusion, focus + as asked + BM25, 1/1/1"] = [
        p for p, _ in score_fusion([dense, raw, lexical], [1.0, 1.0, 1.0])
    ]
    return out


def collect(path: str, settings: Settings, depth: int) -> tuple[dict[str, dict], dict[str, float]]:
    eval_set = load_eval_set(path)
    index = eval_index(eval_set, settings)
    profile = index.profile()
    rows: dict[str, dict] = {}
    clocks: dict[str, list[float]] = {"dense": [], "bm25": []}
    for item in eval_set.items:
        analysis = analyze(item.question, profile)
        allowed = index.matching(analysis.filters) if analysis.filters.active else None
        row: dict = {"relevance": item.relevance, "statement": is_statement(analysis.search_text)}
        for key, text in (("dense", analysis.focus), ("dense_raw", analysis.search_text)):
            clock = time.perf_counter()
            papers: dict[str, float] = {}
            for hit in index.dense_search(index.embeddings.embed_query(text), depth * 2, allowed):
                papers.setdefault(hit.paper_id, hit.similarity)
            row[key] = list(papers.items())[:depth]
            if key == "dense":
                clocks["dense"].append(time.perf_counter() - clock)
        clock = time.perf_counter()
        row["bm25"] = [(h.paper_id, h.score) for h in index.lexical.search(analysis.search_text, depth, allowed)]
        clocks["bm25"].append(time.perf_counter() - clock)
        rows[item.id] = row
    return rows, {k: 1000 * statistics.median(v) for k, v in clocks.items() if v}


def half(query_id: str) -> str:
    return ("calibration", "report")[zlib.crc32(query_id.encode()) % 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="a set (repeatable); default: all")
    parser.add_argument("--depth", type=int, default=100, help="candidates per ranker, and the depth scored")
    args = parser.parse_args(argv)
    settings = Settings(backend="extractive")
    margins: dict[str, dict[str, float]] = {}
    for path in args.sets or SETS:
        rows, p50 = collect(path, settings, args.depth)
        by_half: dict[str, dict[str, dict[str, float]]] = {}
        for name in ("calibration", "report"):
            chosen = {q: r for q, r in rows.items() if half(q) == name}
            runs: dict[str, dict[str, list[str]]] = {}
            for q, r in chosen.items():
                for variant, ranking in variants(r).items():
                    runs.setdefault(variant, {})[q] = ranking[: args.depth]
            relevance = {q: r["relevance"] for q, r in chosen.items()}
            for variant, run in runs.items():
                scores = retrieval_scores(relevance, run, depth=args.depth).values()
                if scores:
                    by_half.setdefault(name, {})[variant] = {
                        "ndcg": statistics.mean(s["ndcg@10"] for s in scores),
                        "recall": statistics.mean(s.get(f"recall@{args.depth}", 0.0) for s in scores),
                        "n": len(scores),
                    }
        counts = " / ".join(f"{next(iter(v.values()))['n']} {k}" for k, v in by_half.items())
        print(f"\n{Path(path).name}: {counts} questions; query p50: dense {p50['dense']:.1f} ms, BM25 {p50['bm25']:.1f} ms")
        print(f"{'variant':50} {'cal nDCG@10':>12} {'rep nDCG@10':>12} {f'rep R@{args.depth}':>10}")
        for variant in by_half["calibration"]:
            cal = by_half["calibration"][variant]
            rep = by_half.get("report", {}).get(variant)
            print(f"{variant:50} {cal['ndcg']:12.4f} " + (f"{rep['ndcg']:12.4f} {rep['recall']:10.4f}" if rep else f"{'-':>12} {'-':>10}"))
            for name, figures in by_half.items():
                margin = figures[variant]["ndcg"] - max(figures["bm25"]["ndcg"], figures["dense (focus)"]["ndcg"])
                lowest = margins.setdefault(variant, {})
                lowest[name] = min(lowest.get(name, margin), margin)
    print(f"\nlowest margin over the better single ranker (nDCG@10), over all sets\n{'variant':50} {'calibration':>12} {'report':>12}")
    for variant, by in margins.items():
        print(f"{variant:50} {by['calibration']:+12.4f} {by.get('report', float('nan')):+12.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
