"""Calibrate the offline support judge's threshold (rag.answering.citations.SUPPORT_THRESHOLD).

Labelled pairs come from the seed set's written reference answers, which paraphrase rather than
quote: every reference sentence of a one-paper question (lookup, summary) paired with its gold
abstract is "supported"; paired with the other abstract that scores highest against it, a hard
negative on a neighbouring topic, it is "not supported". The threshold with the best balanced
accuracy is printed with the score distributions.

    python eval/calibrate_judge.py [--set eval/sets/seed.jsonl] [--corpus data/papers.jsonl]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rag.corpus.reading import load_corpus
from rag.evaluation.judges import SimilarityJudge
from rag.evaluation.sets import load_question_set
from rag.index.embeddings import SentenceVectors, make_embeddings
from rag.index.offline import prepare
from rag.settings import Settings
from rag.text import split_sentences

ROOT = Path(__file__).resolve().parents[1]


def labelled_scores(judge: SimilarityJudge, set_path: Path, corpus_path: Path) -> tuple[np.ndarray, np.ndarray]:
    papers = {p.id: p for p in load_corpus(corpus_path).papers}
    passages = {pid: f"{p.title}. {p.abstract}" for pid, p in papers.items()}
    positives, negatives = [], []
    for item in load_question_set(set_path).items:
        if len(item.gold) != 1 or item.type not in ("lookup", "summary"):
            continue
        gold = item.gold[0]
        for sentence in split_sentences(item.reference):
            if len(sentence.split()) < 5:
                continue  # "Yes." and the like claim nothing on their own
            positives.append(judge.score(sentence, [passages[gold]]))
            negatives.append(max(judge.score(sentence, [text]) for pid, text in passages.items() if pid != gold))
    return np.asarray(positives), np.asarray(negatives)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=ROOT / "eval" / "sets" / "seed.jsonl")
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "papers.jsonl")
    args = parser.parse_args()
    prepare()
    judge = SimilarityJudge(SentenceVectors(make_embeddings(Settings())))
    pos, neg = labelled_scores(judge, args.set, args.corpus)
    print(f"{len(pos)} supported pairs, {len(neg)} hard negatives")
    for label, scores in (("supported", pos), ("not supported", neg)):
        q = np.percentile(scores, [5, 25, 50, 75, 95])
        print(f"{label:>14}: p5 {q[0]:.2f}  p25 {q[1]:.2f}  median {q[2]:.2f}  p75 {q[3]:.2f}  p95 {q[4]:.2f}")
    print("threshold  true-pos  true-neg  balanced accuracy")
    best = (0.0, 0.0)
    for threshold in np.arange(0.30, 0.91, 0.025):
        tpr, tnr = float(np.mean(pos >= threshold)), float(np.mean(neg < threshold))
        best = max(best, ((tpr + tnr) / 2, threshold))
        print(f"{threshold:9.3f}  {tpr:8.2f}  {tnr:8.2f}  {(tpr + tnr) / 2:17.3f}")
    print(f"best: {best[1]:.3f} (balanced accuracy {best[0]:.3f}); in use: {judge.threshold}")


if __name__ == "__main__":
    main()
