"""Changing a large index: adding, changing and removing a few papers, and the first answer
after each (`make bench-update`, on the index `make bench-scale` grows; minutes).

Each step is `paperchat` in a new process, timed from start to exit, with that process's peak
RSS (os.wait4's rusage: this bench imports nothing large, so a child carries over little). The
reference, from the same run, is what each write cost before the catalog was updated in place
(`rag.index.catalog`): making the catalog again from the paper table, in a new process. The bench
leaves the index as it found it: the papers it adds it removes.

    python bench/bench_update.py --data-dir DIR     # an index of any size; DIR as for bench-scale
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest_ask import ROOT, SCALE, table

FIRST = "How does mixture-of-head attention select heads?"
ADDED = 10
REBUILD = (
    "from rag.index.catalog import Catalog; from rag.settings import Settings; from rag.index.store import Index;"
    "index = Index.open(Settings()); Catalog.empty().updated((), index._table_entries())"
)


def run(data_dir: Path, *args: str) -> tuple[float, int]:
    """Seconds from start to exit and peak RSS (MB) of one new process."""
    clock = time.perf_counter()
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(data_dir), "PAPERCHAT_BACKEND": "extractive"}
    child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - clock
    if status:
        raise SystemExit(f"{' '.join(args[:3])} failed: {child.stderr.read() if child.stderr else ''}")
    return seconds, usage.ru_maxrss // 1024


def new_papers(folder: Path, changed: bool) -> Path:
    """The first scale abstracts under new ids; `changed`: with a sentence added to each."""
    path = folder / ("changed.jsonl" if changed else "added.jsonl")
    with gzip.open(SCALE, "rt", encoding="utf-8") as corpus, path.open("w", encoding="utf-8") as out:
        for n, line in zip(range(ADDED), corpus, strict=False):
            record = json.loads(line)
            record.update(id=f"bench-update-{n}", title=f"{record.get('title', '')} (added)")
            if changed:
                record["abstract"] += " This version adds a sentence."
            out.write(json.dumps(record) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True, help="an index, e.g. the one make bench-scale grew")
    args = parser.parse_args()
    if not (args.data_dir / "chroma").is_dir():
        raise SystemExit(f"no index at {args.data_dir}: make bench-scale grows one there")
    exe = str(Path(sys.executable).with_name("paperchat"))
    stats = subprocess.run([exe, "stats", "--json"], env={**os.environ, "PAPERCHAT_DATA_DIR": str(args.data_dir)},
                           capture_output=True, text=True, check=True)
    papers = json.loads(stats.stdout)["papers"]
    ids = [f"bench-update-{n}" for n in range(ADDED)]
    with tempfile.TemporaryDirectory() as tmp:
        steps = [
            (f"add {ADDED} papers (paperchat ingest)", [exe, "ingest", str(new_papers(Path(tmp), False))]),
            ("first answer after it (paperchat ask)", [exe, "ask", FIRST]),
            ("change their abstracts (paperchat ingest)", [exe, "ingest", str(new_papers(Path(tmp), True))]),
            ("first answer after it", [exe, "ask", FIRST]),
            ("remove them (paperchat remove)", [exe, "remove", *ids]),
            ("first answer after it", [exe, "ask", FIRST]),
            ("reference: the catalog made from the paper table", [sys.executable, "-c", REBUILD]),
        ]
        measured = [(what, *run(args.data_dir, *command)) for what, command in steps]
    rebuild = measured[-1][1]
    rows = [
        {"step": what, "papers": papers, "seconds": round(seconds, 2), "peak RSS MB": rss,
         "seconds / reference": round(seconds / rebuild, 2)}
        for what, seconds, rss in measured
    ]
    print(table(rows))


if __name__ == "__main__":
    main()
