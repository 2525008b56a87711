"""How often a research-table cell is right (`rag.answering.research`), on
`eval/sets/table-cells.jsonl`: for each bundled paper and column, the abstract's sentences a
reader accepts as the cell (none where the abstract is silent), split by paper (odd positions of
the sorted ids calibration, even report). Written for issue 25 by one of the session's agents from
the abstracts alone, before any cell was scored against it and without running any model;
"data" counts unnamed datasets ("real-world datasets"), "sample size" only counts of examples.

    python eval/eval_table_cells.py [--split calibration|report]

A cell is right when it quotes an accepted sentence, or says "not in the abstract" where none is
accepted. Also: precision of the filled cells, recall of the answerable ones. Each way of choosing
the sentence is scored at each bar, so the bar is chosen on the calibration half and read on the
report half.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.answering.research import COVERED_BAR, MIN_WORDS, research_rows, scored  # noqa: E402
from rag.corpus.reading import load_corpus  # noqa: E402
from rag.index.offline import prepare  # noqa: E402
from rag.models.verifier import load_verifier  # noqa: E402
from rag.text import split_sentences  # noqa: E402

SET = ROOT / "eval" / "sets" / "table-cells.jsonl"
BARS = (0.3, 0.4, 0.5, 0.6, 0.7)


def choose(candidates, way: str, bar: float) -> str | None:
    if not candidates:
        return None
    if way == "verifier":
        key = [a for _, a, _ in candidates]
    elif way == "roles":
        key = [c for _, _, c in candidates]
    else:  # the mean of the two: the verifier's meaning, the role's place in the abstract
        key = [(a + c) / 2 for _, a, c in candidates]
    best = max(range(len(candidates)), key=key.__getitem__)
    return candidates[best][0] if key[best] >= bar else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("calibration", "report"), default="calibration")
    args = parser.parse_args()
    prepare()
    papers = {p.id: p for p in load_corpus(ROOT / "data" / "papers.jsonl").papers}
    cells = [c for c in map(json.loads, SET.read_text(encoding="utf-8").splitlines()) if c["split"] == args.split]
    verifier = load_verifier(threads=2)
    candidates = [
        scored(
            c["column"],
            papers[c["paper_id"]],
            [s for s in split_sentences(papers[c["paper_id"]].abstract) if len(s.split()) >= MIN_WORDS],
            verifier,
        )
        for c in cells
    ]
    print(f"{args.split} half: {len(cells)} cells, {sum(bool(c['answers']) for c in cells)} answerable")
    print(f"{'way':<9} {'bar':>4} {'right':>6} {'precision':>9} {'recall':>6}   right by column")
    for way in ("verifier", "roles", "mean"):
        for bar in BARS:
            right, filled, filled_ok, answerable_ok = 0, 0, 0, 0
            by_column = defaultdict(list)
            for cell, cands in zip(cells, candidates, strict=True):
                quote = choose(cands, way, bar)
                ok = quote in cell["answers"] if quote else not cell["answers"]
                right += ok
                by_column[cell["column"]].append(ok)
                filled += quote is not None
                filled_ok += quote is not None and ok
                answerable_ok += bool(cell["answers"]) and quote is not None and ok
            answerable = sum(bool(c["answers"]) for c in cells)
            columns = " ".join(f"{sum(v) / len(v):.2f}" for v in by_column.values())
            print(
                f"{way:<9} {bar:>4} {right / len(cells):>6.3f} {filled_ok / max(filled, 1):>9.3f} "
                f"{answerable_ok / max(answerable, 1):>6.3f}   {columns}"
            )
    print("columns:", " | ".join(dict.fromkeys(c["column"] for c in cells)))
    # The grade a filled cell shows (rag.answering.research.SURE_BAR): "answers" only at a score
    # where no wrong cell reaches, else "closest sentence".
    print(f"{'sure bar':>8} {'graded answers':>14} {'of them wrong':>13}")
    for sure in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9):
        graded = [
            (quote in cell["answers"])
            for cell, cands in zip(cells, candidates, strict=True)
            if (quote := choose(cands, "mean", max(sure, COVERED_BAR))) is not None
        ]
        print(f"{sure:>8} {len(graded):>14} {graded.count(False):>13}")
    # The cells as the product makes them (`research_rows`, rules included): what the table shows.
    made = [next(research_rows([papers[c["paper_id"]]], [c["column"]], verifier)).cells[0] for c in cells]
    right = [(m.quote in c["answers"]) if m.quote else not c["answers"] for m, c in zip(made, cells, strict=True)]
    sure = [ok for m, ok in zip(made, right, strict=True) if m.sure]
    print(f"as made: {sum(right)} of {len(cells)} cells right; {len(sure)} graded answers, {sure.count(False)} of them wrong")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
