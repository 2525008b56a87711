"""`ask` latency over the 13,687 scale abstracts: the abstract sentences' vectors read from the
store (as ingest wrote them) against embedded at question time, with retrieval alone as the
reference.

    python bench/bench_ask.py                  # the scale sets' index (made once, as `make eval-forms` does)
    python bench/bench_ask.py --data-dir DIR   # another index, with --sets of questions over it

Every question starts with an empty sentence memo, as the first question of a session does, and
is answered by the extractive backend in this process; retrieval alone is the same questions'
`search`. All rows come from one run, so their ratios hold on a shared machine.

The last rows are a new process's first question, every ninth question asked in a process of its
own: the index opened, the models loaded and the question answered, and the whole command with
Python and its imports, as a user who runs `paperchat ask` right after ingest waits for it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_ingest_ask import ROOT, table

from rag import text
from rag.answering.chain import Assistant
from rag.evaluation.sets import eval_index, load_eval_set
from rag.index.store import Index
from rag.search.retrieval import search
from rag.settings import Settings

SETS = ("scale-how-result", "scale-collection", "scale-unanswerable")


def questions(paths: list[Path]) -> list[str]:
    return [
        record["question"]
        for path in paths
        for record in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if "question" in record
    ]


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def first_asks(assistant: Assistant, asked: list[str]) -> list[float]:
    """Each question's `ask` in ms, as a session's first question: no sentence vectors, splits,
    papers or verdicts remembered from the last one."""
    totals = []
    for question in asked:
        assistant.vectors.forget()
        assistant.verifier._cache.clear()
        text._KNOWN_SPLITS.clear()
        text._sentence_spans.cache_clear()
        clock = time.perf_counter()
        assistant.ask(question)
        totals.append((time.perf_counter() - clock) * 1000)
    return totals


def prepared(doc: str | None) -> tuple[Index, Assistant, list[str], list[float]]:
    """The index the command line names, a warmed assistant over it, its questions, and the
    retrieval alone of each (ms), the reference every row is divided by."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, help="an index (default: the scale sets' own)")
    parser.add_argument("--sets", type=Path, nargs="+", default=[ROOT / "eval" / "sets" / f"{s}.jsonl" for s in SETS])
    parser.add_argument("--cold", metavar="QUESTION", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold:
        cold(args.data_dir, args.cold)
        raise SystemExit
    if args.data_dir:
        index = Index.open(Settings(data_dir=args.data_dir, backend="extractive"))
    else:
        index = eval_index(load_eval_set(args.sets[0]), Settings(backend="extractive"))
    assistant = Assistant(index, index.settings)
    asked = questions(args.sets)
    assistant.warm_up()
    assistant.ask(asked[0])
    retrieval = []
    for question in asked:
        clock = time.perf_counter()
        search(index, question, index.settings)
        retrieval.append((time.perf_counter() - clock) * 1000)
    return index, assistant, asked, retrieval


def cold_asks(data_dir: Path, asked: list[str]) -> tuple[list[float], list[float]]:
    """Every ninth question in a new process: its first `ask` with the index opening and the
    models loading (ms, as that process times it), and the whole process (ms, imports included)."""
    first, whole = [], []
    for question in asked[::9]:
        clock = time.perf_counter()
        done = subprocess.run(
            [sys.executable, __file__, "--cold", question, "--data-dir", str(data_dir)],
            check=True, capture_output=True, text=True,
        )
        whole.append((time.perf_counter() - clock) * 1000)
        first.append(float(done.stdout.split()[-1]))
    return first, whole


def cold(data_dir: Path, question: str) -> None:
    clock = time.perf_counter()
    index = Index.open(Settings(data_dir=data_dir, backend="extractive"))
    Assistant(index, index.settings).ask(question)
    print((time.perf_counter() - clock) * 1000)


def row(what: str, totals: list[float], reference: float, **more) -> dict:
    return {
        "what": what, **more, "p50 ms": round(statistics.median(totals), 1), "p95 ms": round(p95(totals), 1),
        "p50 / retrieval": round(statistics.median(totals) / reference, 1),
    }


def main() -> None:
    index, assistant, asked, retrieval = prepared(__doc__)
    reference = statistics.median(retrieval)
    counts = {"papers": len(index), "questions": len(asked)}
    rows = [row("retrieval alone", retrieval, reference, **counts)]
    for stored in (True, False):
        assistant.vectors.store = index if stored else None
        what = "ask, sentence vectors " + ("stored at ingest" if stored else "embedded per question")
        rows.append(row(what, first_asks(assistant, asked), reference, **counts))
    first, whole = cold_asks(index.settings.data_dir, asked)
    counts["questions"] = len(first)
    rows.append(row("a new process's first ask (index opened, models loaded)", first, reference, **counts))
    rows.append(row("the same, the whole process (imports included)", whole, reference, **counts))
    print(table(rows))


if __name__ == "__main__":
    main()
