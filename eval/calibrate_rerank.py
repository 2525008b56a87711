"""Calibrate the reranking (`Settings.rerank_weight`, `rerank_depth`) on calibration halves only.

    python eval/calibrate_rerank.py [--sets eval/sets/known-item ../shared/benchmarks/scifact eval/sets/seed-reworded.jsonl]

Each question of each set's calibration half is ranked once by the fusion (100 deep) and its top
papers read once by the verifier; each weight of the fused score beside the verifier's
probability (`rag.search.rerank`) is then only a re-sort. It prints nDCG@10 and Recall@5 per set and
weight (weight "fused": no reranking) and the weight with the best mean nDCG@10 over the sets.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.answering.chain import Assistant  # noqa: E402
from rag.evaluation.evaluate import retrieval_scores  # noqa: E402
from rag.evaluation.sets import eval_index, load_eval_set  # noqa: E402
from rag.question.analysis import analyze  # noqa: E402
from rag.search.rerank import passages  # noqa: E402
from rag.search.retrieval import search  # noqa: E402
from rag.settings import Settings  # noqa: E402

SETS = (ROOT / "eval" / "sets" / "known-item", ROOT.parent / "shared" / "benchmarks" / "scifact", ROOT / "eval" / "sets" / "seed-reworded.jsonl")
WEIGHTS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
DEPTHS = (10, 20, 30)


def prepared(path: Path, settings: Settings):
    """Per question: its relevance, and its fused top 100 as (paper id, fused score, verified)."""
    eval_set = load_eval_set(path, split="calibration")
    index = eval_index(eval_set, settings)
    assistant = Assistant(index, index.settings)
    deep = index.settings.model_copy(update={"candidates": 100})
    rows = []
    for item in eval_set.items:
        analysis = analyze(item.question, index.profile())
        found = search(index, analysis.search_text, deep, k=100, filters=analysis.filters, focus=analysis.focus)
        head = found[: max(DEPTHS)]
        verdicts = assistant.verifier.judge(analysis.search_text, passages(analysis.focus, head, assistant.vectors)) if head else []
        rows.append((item, [(s.paper.id, s.score, v.relevant) for s, v in zip(head, verdicts, strict=True)], [s.paper.id for s in found]))
    return eval_set.name, rows


def ranking(head: list[tuple[str, float, float]], rest: list[str], weight: float | None, depth: int) -> list[str]:
    if weight is None or not head:
        return rest
    top = max(score for _, score, _ in head) or 1.0
    reranked = sorted(head[:depth], key=lambda r: -(r[2] + weight * r[1] / top))
    ids = [pid for pid, _, _ in reranked]
    return ids + [pid for pid in rest if pid not in ids]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=Path, nargs="+", default=list(SETS))
    args = parser.parse_args(argv)
    settings = Settings(backend="extractive")
    results: dict[tuple[float | None, int], list[float]] = {}
    for path in args.sets:
        name, rows = prepared(path, settings)
        relevance = {item.id: item.relevance for item, _, _ in rows}
        print(f"{name} (calibration half, {len(rows)} questions)")
        for weight in (None, *WEIGHTS):
            for depth in DEPTHS if weight is not None else (0,):
                rankings = {item.id: ranking(head, rest, weight, depth) for item, head, rest in rows}
                scores = retrieval_scores(relevance, rankings, depth=100).values()
                ndcg = sum(s["ndcg@10"] for s in scores) / max(len(scores), 1)
                recall = sum(s["recall@5"] for s in scores) / max(len(scores), 1)
                results.setdefault((weight, depth), []).append(ndcg)
                print(f"  weight {'fused' if weight is None else weight:>5}  depth {depth:>2}  nDCG@10 {ndcg:.4f}  Recall@5 {recall:.4f}")
    best = max((k for k in results if k[0] is not None), key=lambda k: sum(results[k]) / len(results[k]))
    print(f"best mean nDCG@10: weight {best[0]}, depth {best[1]}: {sum(results[best]) / len(results[best]):.4f} "
          f"(fused {sum(results[(None, 0)]) / len(results[(None, 0)]):.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
