"""Calibrate the verifier's bars on the calibration halves, never the report halves.

    python eval/calibrate_answerability.py            # the seed sets over the bundled 20 papers
    python eval/calibrate_answerability.py --scale    # and the scale sets over the 13,687 abstracts

Every question of the calibration halves (and of eval/sets/seed.jsonl, which has none) is
prepared once by the real chain (`Assistant.prepare`: analysis, retrieval reranked by the
verifier, the verifier's verdicts); each combination of bars is then only a re-assessment. It
prints, per combination of the verifier's bars (`rag.answering.answerability.Bars`: the
probability and the papers at which a contradiction stands), the share of unanswerable questions declined, of answerable ones refused
(and how many of the seed set's) and answered in part, and of false premises contradicted by a
gold sentence; it marks the combination that declines most while refusing at most 2% of the
answerable questions and none of the seed set's (ties: more premises corrected, fewer partial
answers). Then the collection bars (`CollectionBars`) that clear precision and recall 0.9 by
most, and the model floor (`Settings.model_floor`): below the closest sentence of every
answerable question, with a margin. The settings in the code are the ones it picks.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.answering.answerability import Bars, assess  # noqa: E402
from rag.answering.chain import Assistant, about_selection  # noqa: E402
from rag.answering.forms.collection import CollectionBars, admitted  # noqa: E402
from rag.corpus.reading import load_corpus  # noqa: E402
from rag.evaluation.evaluate import same_sentence  # noqa: E402
from rag.evaluation.sets import eval_index, load_question_set  # noqa: E402
from rag.index.store import Index  # noqa: E402
from rag.records import Coverage, QuestionType  # noqa: E402
from rag.settings import Settings  # noqa: E402

SEED_SETS = ("seed", "seed-unanswerable", "seed-how-result", "seed-collection", "seed-extra", "seed-reworded", "seed-premise")
SCALE_SETS = ("scale-unanswerable", "scale-how-result", "scale-collection", "scale-extra")
# The target is at most 3% of answerable questions refused; calibration keeps a margin under it.
# (The seed set's, which has no halves, are calibration questions too.)
MAX_REFUSED = 0.02
# The model floor sits this far under the lowest closest-sentence similarity of an answerable question.
FLOOR_MARGIN = 0.05


def prepared(sets, index, settings):
    assistant = Assistant(index, settings)
    rows = []
    for name in sets:
        # The seed set has no halves: it is the regression check, and was tuned on before.
        split = None if name == "seed" else "calibration"
        for item in load_question_set(ROOT / "eval" / "sets" / f"{name}.jsonl", split=split).items:
            analysis, scope, evidence, _ = assistant.prepare(item.question)
            rows.append((name, item, analysis, scope, evidence))
    return rows


def outcome(rows, bars: Bars, collection: CollectionBars, min_similarity: float):
    declined = refused = partial = answerable = unanswerable = seed_refused = 0
    corrected: list[bool] = []
    precision: list[float] = []
    recall: list[float] = []
    for name, item, analysis, scope, evidence in rows:
        selection = about_selection(analysis, scope)
        verdict = assess(evidence, min_similarity=min_similarity, bars=bars, selection=selection)
        if item.type == "false_premise":
            found = evidence.contradicting(bars.premise_papers)
            corrected.append(
                verdict.coverage == Coverage.CONTRADICTED
                and found is not None
                and any(same_sentence(found[1].text, g) for g in item.gold_sentences)
            )
        elif item.answerable:
            answerable += 1
            refused += not verdict.answers
            seed_refused += name == "seed" and not verdict.answers
            partial += verdict.coverage == Coverage.PARTLY
        else:
            unanswerable += 1
            declined += verdict.coverage != Coverage.COVERED
        if item.type == "collection" and analysis.type in (QuestionType.COLLECTION, QuestionType.COMPARISON):
            found_ids = {p.paper.id for p in admitted(evidence, selection=selection, bars=collection)} if verdict.answers else set()
            gold = set(item.gold)
            if found_ids:
                precision.append(len(found_ids & gold) / len(found_ids))
            recall.append(len(found_ids & gold) / len(gold))
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return {
        "declined": declined / max(unanswerable, 1),
        "refused": refused / max(answerable, 1),
        "seed_refused": seed_refused,
        "partial": partial / max(answerable, 1),
        "corrected": mean(corrected),
        "coll_p": mean(precision),
        "coll_r": mean(recall),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", action="store_true", help="also the scale sets over the 13,687-abstract corpus")
    args = parser.parse_args(argv)
    settings = Settings(backend="extractive")
    seed = Index.open(settings.model_copy(update={"data_dir": settings.data_dir / "eval" / "papers"}))
    seed.ingest(load_corpus(ROOT / "data" / "papers.jsonl"))
    rows = prepared(SEED_SETS, seed, settings)
    if args.scale:
        any_scale = load_question_set(ROOT / "eval" / "sets" / f"{SCALE_SETS[0]}.jsonl")
        rows += prepared(SCALE_SETS, eval_index(any_scale, settings), settings)
    print(f"{len(rows)} calibration questions: {sum(not r[1].answerable for r in rows)} unanswerable")
    min_similarity = Settings().min_relevance
    results = []
    for contradicted, papers in itertools.product((0.3, 0.4, 0.5, 0.6, 0.7), (1, 2, 3)):
        bars = Bars(contradicted=contradicted, premise_papers=papers)
        results.append(((contradicted, papers), outcome(rows, bars, CollectionBars(), min_similarity)))
    within = [r for r in results if r[1]["refused"] <= MAX_REFUSED] or results
    fewest = min(r[1]["seed_refused"] for r in within)
    allowed = [r for r in within if r[1]["seed_refused"] == fewest]
    best = max(allowed, key=lambda r: (round(r[1]["declined"], 3), round(r[1]["corrected"], 3), -round(r[1]["partial"], 3)))
    print("contradicted premise_papers | declined refused seed partial corrected")
    for bars, o in sorted(results, key=lambda r: (-r[1]["declined"], r[1]["refused"]))[:30]:
        mark = "  <- chosen" if (bars, o) == best else ""
        print(
            f"{bars[0]:12} {bars[1]:14} | {o['declined']:8.3f} {o['refused']:7.3f} {o['seed_refused']:4} "
            f"{o['partial']:7.3f} {o['corrected']:9.3f}{mark}"
        )
    chosen = Bars(contradicted=best[0][0], premise_papers=best[0][1])
    collection = []
    for cov, weight, rel, sim in itertools.product((0.3, 0.4, 0.5), (0.5, 1.0, 2.0), (0.6, 0.7, 0.8), (0.0, 0.15, 0.25)):
        bars = CollectionBars(min_coverage=cov, similarity_weight=weight, relative=rel, min_similarity=sim)
        collection.append(((cov, weight, rel, sim), outcome(rows, chosen, bars, min_similarity)))
    # The targets are precision and recall >= 0.90: the bars that clear both by most.
    ranked = sorted(collection, key=lambda r: -min(r[1]["coll_p"] - 0.9, r[1]["coll_r"] - 0.9))
    print("min_cov sim_weight relative min_sim | coll P coll R")
    for bars, o in ranked[:12]:
        print(f"{bars[0]:7} {bars[1]:10} {bars[2]:8} {bars[3]:7} | {o['coll_p']:6.3f} {o['coll_r']:6.3f}")
    closest = [e.best_similarity for _, item, _, _, e in rows if item.answerable]
    floor = min(closest) - FLOOR_MARGIN
    print(f"lowest closest-sentence similarity of an answerable question: {min(closest):.3f}; model floor {floor:.2f}")
    print(f"chosen: contradicted {best[0][0]}, premise_papers {best[0][1]}: {best[1]}")
    print(f"collection bars {ranked[0][0]}: {ranked[0][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
