"""One evaluation run, wired once for the CLI and the app: set -> index -> assistant -> judge ->
`run_eval` -> the report's folder under `Settings.reports_dir`.

`paperchat eval` and the Evaluate page both call `evaluate`, so a run from either is the same run
and lands in the same place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag.chain import Assistant
from rag.evalsets import eval_index, missing_gold
from rag.evaluate import run_eval
from rag.judges import make_judge
from rag.records import EvalReport, EvalSet
from rag.report import write_report
from rag.retrieval import with_retriever
from rag.settings import Settings

__all__ = ["Run", "evaluate"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Run:
    """A finished run: its report, its folder, and the gold papers its index lacks."""

    report: EvalReport
    folder: Path
    index_location: str
    missing_gold: frozenset[str]


def evaluate(
    eval_set: EvalSet,
    settings: Settings,
    *,
    assistant: Assistant | None = None,
    judge: str = "auto",
    retriever: str = "hybrid",
    answers: bool = True,
    k: int | None = None,
    depth: int | None = None,
    limit: int | None = None,
    out: Path | None = None,
    indexing: Progress | None = None,
    asking: Progress | None = None,
    describe: Callable[[str], None] | None = None,
) -> Run:
    """Evaluate `eval_set`; `assistant` (the app's) lends its index, model and backend when given."""
    settings = with_retriever(settings, retriever)
    index = eval_index(
        eval_set, settings,
        index=assistant.index if assistant else None,
        embeddings=assistant.index.embeddings if assistant else None,
        progress=indexing,
    )
    if assistant is None or index is not assistant.index or retriever != "hybrid":
        assistant = Assistant(index, settings, backend=assistant.backend if assistant else None)
    chosen = make_judge(judge, assistant.vectors, settings) if answers else None
    if describe:
        what = "ranking only" if not answers else f"backend {assistant.backend.label}, judge {chosen.name}"
        describe(f"{eval_set.name}: {len(eval_set.items)} questions over {len(index)} papers; {what}")
    report = run_eval(
        assistant, eval_set, judge=chosen, k=k, depth=depth or eval_set.depth,
        answers=answers, retriever=retriever, limit=limit, progress=asking,
    )
    folder = write_report(report, out or settings.reports_dir)
    return Run(report, folder, index.location, frozenset(missing_gold(eval_set, index)))
