"""Build a generated known-item retrieval set (BEIR layout) from the shared scale corpus.

Known-item search is the standard proxy for "find the paper I mean": the query is a paper's
title and the only relevant document is that paper. The corpus is indexed from abstracts with
the titles removed, so a query can never match its own title verbatim and retrieval has to work
from what the paper is about.

    python eval/make_known_item.py [--n 1000] [--seed 0] [--source PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "scale_corpus.jsonl.gz"
DEFAULT_OUT = Path(__file__).resolve().parent / "sets" / "known-item"
MIN_TITLE_WORDS = 4  # shorter titles ("Attention Is All") are too generic to name one paper


def normalize(title: str) -> str:
    return re.sub(r"[\W_]+", " ", title.casefold()).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--n", type=int, default=1000, help="number of queries")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.source.is_file():
        print(f"error: source corpus not found: {args.source}", file=sys.stderr)
        return 1

    raw = args.source.read_bytes()
    lines = gzip.decompress(raw).decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    papers = [r for r in records if (r.get("abstract") or "").strip()]
    # Counted over every source record: a title shared by two papers has no single right answer.
    title_counts = Counter(normalize(r.get("title") or "") for r in records)
    candidates = [
        r for r in papers
        if len(normalize(r.get("title") or "").split()) >= MIN_TITLE_WORDS
        and title_counts[normalize(r["title"])] == 1
    ]
    picked = random.Random(args.seed).sample(candidates, min(args.n, len(candidates)))

    def jsonl(rows: list[dict]) -> bytes:
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")

    out = args.out
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = [{"_id": r["id"], "title": "", "text": r["abstract"].strip()} for r in papers]
    # mtime=0 and no embedded file name keep reruns byte-identical.
    (out / "corpus.jsonl.gz").write_bytes(gzip.compress(jsonl(corpus), mtime=0))
    queries = [{"_id": f"ki-{i}", "text": r["title"].strip()} for i, r in enumerate(picked)]
    (out / "queries.jsonl").write_bytes(jsonl(queries))
    qrels = ["query-id\tcorpus-id\tscore"] + [f"ki-{i}\t{r['id']}\t1" for i, r in enumerate(picked)]
    (out / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    source = args.source.resolve()
    shown = source.relative_to(ROOT.parent) if source.is_relative_to(ROOT.parent) else source
    (out / "README.md").write_text(
        f"""# known-item (generated)

Known-item retrieval set in BEIR layout: each query is a paper's title, the single relevant
document (score 1) is that paper, and the corpus holds abstracts only (`title` is empty) so a
query cannot match its own title verbatim. Generated, not hand-labelled; do not edit by hand.

- Command: `python eval/make_known_item.py --n {args.n} --seed {args.seed}`
- Source: `{shown}` (sha256 {hashlib.sha256(raw).hexdigest()[:16]}), {len(records)} records
- Corpus: {len(papers)} papers with a non-empty abstract (`corpus.jsonl.gz`)
- Queries: {len(queries)} (`queries.jsonl`, `qrels/test.tsv`), sampled with
  `random.Random({args.seed})` from {len(candidates)} papers whose title has at least
  {MIN_TITLE_WORDS} words and is unique in the source after casefolding and collapsing
  non-alphanumerics
""",
        encoding="utf-8",
    )
    print(f"corpus: {len(papers)} papers; queries: {len(queries)}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
