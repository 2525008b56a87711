"""The research table's cost: 50 papers x 4 columns (the preset), offline, over the 13,687 scale
abstracts, each table from an empty verdict cache, as a new table is.

    python bench/bench_table.py                  # the scale sets' index (made once, as `make eval-forms` does)
    python bench/bench_table.py --data-dir DIR   # another index

The rows are the papers a collection answer to each query lists, topped up from the hybrid
ranking to 50, so the table is the size the issue names whatever the bar admits.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench_ask import SETS
from bench_ingest_ask import ROOT, table

from rag.answering.chain import Assistant
from rag.answering.research import PRESET
from rag.evaluation.sets import eval_index, load_eval_set
from rag.index.store import Index
from rag.search.retrieval import search
from rag.settings import Settings

QUERIES = ("Which papers work on robot grasping?", "papers on federated learning with privacy", "Which papers study LLM reasoning?")
ROWS = 50
ADDED = "What is the sample size?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="an index (default: the scale sets' own)")
    args = parser.parse_args()
    if args.data_dir:
        index = Index.open(Settings(data_dir=args.data_dir, backend="extractive"))
    else:
        index = eval_index(load_eval_set(ROOT / "eval" / "sets" / f"{SETS[0]}.jsonl"), Settings(backend="extractive"))
    assistant = Assistant(index, index.settings)
    assistant.warm_up()
    rows = []
    for query in QUERIES:
        clock = time.perf_counter()
        papers = assistant.table_papers(query)
        admitted = len(papers)
        known = {p.id for p in papers}
        papers += [s.paper for s in search(index, query, index.settings, k=ROWS * 2) if s.paper.id not in known]
        papers = papers[:ROWS]
        chosen = time.perf_counter() - clock
        assistant.verifier._cache.clear()
        clock = time.perf_counter()
        cells = list(assistant.research_table(papers, PRESET))
        filled = time.perf_counter() - clock
        covered = [c.covered for r in cells for c in r.cells]
        # A column added later: only its cells are judged.
        clock = time.perf_counter()
        list(assistant.research_table(papers, [ADDED]))
        added = time.perf_counter() - clock
        rows.append({
            "query": query, "admitted": admitted, "rows x columns": f"{len(cells)} x {len(PRESET)}",
            "rows chosen s": round(chosen, 2), "cells s": round(filled, 2), "cells / s": round(len(covered) / filled, 1),
            "covered": round(statistics.mean(covered), 2), "+1 column s": round(added, 2),
            "+1 / all": round(added / filled, 2),
        })
    print(f"{len(index)} papers")
    print(table(rows))


if __name__ == "__main__":
    main()
