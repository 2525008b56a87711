"""Calibrate the support bar for a claim written in Chinese
(rag.answering.citations.CROSSLINGUAL_SUPPORT_THRESHOLD).

eval/sets/zh-claims.jsonl holds Chinese claims, each a paraphrase of one sentence of an English
abstract ("own"), with a near abstract that does not say it ("near"). Each claim is scored as the
citation check scores it (rag.answering.citations.find_support, through the cross-lingual map)
against both. The calibration half (scale-corpus papers) picks the bar: the midpoint of the
widest gap with the best balanced accuracy. The report half (the bundled papers) is scored at
that bar and at the English one.

    python eval/calibrate_chinese_support.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from rag.answering.citations import SUPPORT_THRESHOLD, find_support
from rag.corpus.reading import load_corpus
from rag.index.embeddings import LazyEmbeddings, SentenceVectors
from rag.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT.parent / "shared" / "data" / "scale_corpus.jsonl.gz"


def abstracts() -> dict[str, str]:
    found = {p.id: p.abstract for p in load_corpus(ROOT / "data" / "papers.jsonl").papers}
    with gzip.open(SCALE, "rt", encoding="utf-8") as lines:
        found.update((row["id"], row["abstract"]) for row in map(json.loads, lines))
    return found


def balanced_accuracy(supported: np.ndarray, wrong: np.ndarray, bar: float) -> float:
    return float(((supported >= bar).mean() + (wrong < bar).mean()) / 2)


def best_bar(supported: np.ndarray, wrong: np.ndarray) -> float:
    cuts = np.unique(np.concatenate([supported, wrong]))
    mids = (cuts[:-1] + cuts[1:]) / 2
    return float(max(mids, key=lambda bar: (balanced_accuracy(supported, wrong, bar), -abs(bar - np.median(mids)))))


def main() -> None:
    texts = abstracts()
    scorer = SentenceVectors(LazyEmbeddings(Settings())).similarities
    claims = [json.loads(line) for line in (ROOT / "eval" / "sets" / "zh-claims.jsonl").open(encoding="utf-8")]
    scores: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for half in ("calibration", "report"):
        rows = [c for c in claims if c["half"] == half]
        own = np.array([find_support(c["claim"], texts[c["own"]], scorer=scorer)[1] for c in rows])
        near = np.array([find_support(c["claim"], texts[c["near"]], scorer=scorer)[1] for c in rows])
        scores[half] = (own, near)
    bar = best_bar(*scores["calibration"])
    print("| half | bar | supported, kept | not supported, let through | balanced accuracy |")
    print("|---|---:|---:|---:|---:|")
    for half, (own, near) in scores.items():
        for at in (SUPPORT_THRESHOLD, round(bar, 2)):
            kept, through = int((own >= at).sum()), int((near >= at).sum())
            print(f"| {half} | {at} | {kept}/{len(own)} | {through}/{len(near)} | {balanced_accuracy(own, near, at):.2f} |")


if __name__ == "__main__":
    main()
