"""Calibrate the "not covered" bar (Settings.min_relevance) across corpora, not on one set.

The coverage check refuses a question when its focus is less similar than the bar to every
sentence of the retrieved abstracts. This script measures, for each bar, the share refused of:

- answerable questions: the seed set's on the bundled papers; SciFact claims on SciFact; known-item
  titles on their corpus (the last two never tuned on);
- unanswerable ones: the seed set's; and questions from one field put to another field's corpus
  (SciFact's biomedical claims to the 20 ML papers; the seed set's ML questions to SciFact).

The right bar refuses no answerable question anywhere and as many unanswerable ones as it can.
SciFact and the known-item set are indexed as `paperchat eval` indexes them (reused if present).

    python eval/calibrate_coverage.py [--sample 150]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from rag.chain import Assistant
from rag.corpus import load_corpus
from rag.evalsets import eval_index, load_eval_set
from rag.records import EvalItem
from rag.retrieval import search
from rag.settings import Settings
from rag.store import Index
from rag.text import question_focus, split_sentences

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def best_similarity(assistant: Assistant, question: str) -> float:
    """The statistic the coverage check compares with the bar (rag.chain.Assistant.covers)."""
    sources = search(assistant.index, question, assistant.settings)
    sentences = [x for s in sources for x in split_sentences(s.paper.abstract)]
    return max(assistant.vectors.similarities(question_focus(question), sentences), default=0.0)


def sample(items: tuple[EvalItem, ...], n: int) -> list[str]:
    questions = [i.question for i in items]
    random.Random(0).shuffle(questions)
    return questions[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=150, help="questions drawn from each large set")
    args = parser.parse_args()
    settings = Settings(backend="extractive")
    seed_settings = settings.model_copy(update={"data_dir": settings.data_dir / "eval" / "calibrate-seed"})
    seed_index = Index.open(seed_settings)
    seed_index.ingest(load_corpus(ROOT / "data" / "papers.jsonl"))
    seed = load_eval_set(ROOT / "eval" / "sets" / "seed.jsonl")
    scifact = load_eval_set(SHARED / "benchmarks" / "scifact")
    known = load_eval_set(ROOT / "eval" / "sets" / "known-item")
    on = {
        "seed": Assistant(seed_index, seed_settings),
        "scifact": Assistant(eval_index(scifact, settings, embeddings=seed_index.embeddings), settings),
        "known-item": Assistant(eval_index(known, settings, embeddings=seed_index.embeddings), settings),
    }
    cases = [
        ("answerable", "seed questions", "seed", [i.question for i in seed.items if i.answerable]),
        ("answerable", "SciFact claims", "scifact", sample(scifact.items, args.sample)),
        ("answerable", "known-item titles", "known-item", sample(known.items, args.sample)),
        ("unanswerable", "seed questions", "seed", [i.question for i in seed.items if not i.answerable]),
        ("unanswerable", "SciFact claims", "seed", sample(scifact.items, args.sample)),
        ("unanswerable", "seed questions", "scifact", [i.question for i in seed.items]),
    ]
    scores = [np.asarray([best_similarity(on[corpus], q) for q in questions]) for _, _, corpus, questions in cases]
    names = [f"{kind[:2]}: {what} on {corpus} ({len(q)})" for kind, what, corpus, q in cases]
    print("share refused at each bar (an: answerable, lower is better; un: unanswerable, higher is better)")
    print("bar   " + " | ".join(names))
    for bar in np.arange(0.30, 0.461, 0.01):
        print(f"{bar:.2f}  " + " | ".join(f"{np.mean(s < bar):>{len(n)}.3f}" for s, n in zip(scores, names)))
    print(f"in use: {settings.min_relevance}")


if __name__ == "__main__":
    main()
