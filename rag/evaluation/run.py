"""One evaluation run, wired once for the CLI and the app: set -> index -> assistant -> judge ->
`run_eval` -> the report's folder under `Settings.reports_dir` (``<data_dir>/eval-reports``
unless set).

`paperchat eval` and the Evaluate page both call `evaluate`, so a run from either is the same run
and lands in the same place. `resume` (`paperchat eval --resume`) asks again what a stopped or
partial run did not score, and completes its report in place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag.answering.chain import Assistant
from rag.errors import ConfigError, CorpusError, PaperChatError
from rag.evaluation.evaluate import run_eval
from rag.evaluation.judges import SimilarityJudge, make_judge
from rag.evaluation.records import EvalReport, EvalSet
from rag.evaluation.report import read_report, save_report, write_report
from rag.evaluation.sets import eval_index, load_eval_set, missing_gold
from rag.search.retrieval import with_retriever
from rag.settings import Settings

__all__ = ["Run", "evaluate", "resume"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Run:
    """A run that ended, complete or not (`report.failed`, `report.stopped`): its report, its
    folder, and the gold papers its index lacks."""

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
    earlier: EvalReport | None = None,
    folder: Path | None = None,
) -> Run:
    """Evaluate `eval_set`; `assistant` (the app's) lends its index, model and backend when given.

    `earlier`: a report of this set whose scored questions are kept, not asked again; `folder`:
    where the report is written, in place of a new folder under `out`.
    """
    settings = with_retriever(settings, retriever)
    index = eval_index(
        eval_set,
        settings,
        index=assistant.index if assistant else None,
        embeddings=assistant.index.embeddings if assistant else None,
        progress=indexing,
    )
    if assistant is None or index is not assistant.index or retriever != "hybrid":
        assistant = Assistant(index, settings, backend=assistant.backend if assistant else None)
    if earlier is not None and answers and (assistant.backend.name, assistant.backend.model) != (earlier.backend, earlier.model):
        # One report's answers come from one model, or its figures describe neither.
        raise ConfigError(
            f"{earlier.set_name} was answered by {earlier.backend}{f' ({earlier.model})' if earlier.model else ''}, "
            f"and this run would answer with {assistant.backend.label}",
            hint="configure the backend the run used (OPENAI_BASE_URL, PAPERCHAT_OPENAI_MODEL, PAPERCHAT_LOCAL_MODEL_PATH), or start a new run",
        )
    chosen = make_judge(judge, assistant.vectors, settings) if answers else None
    if describe:
        what = "ranking only" if chosen is None else f"backend {assistant.backend.label}, judge {chosen.name}"
        describe(f"{eval_set.name}: {len(eval_set.items)} questions over {len(index)} papers; {what}")
    report = run_eval(
        assistant,
        eval_set,
        judge=chosen,
        k=k,
        depth=depth or eval_set.depth,
        answers=answers,
        retriever=retriever,
        limit=limit,
        progress=asking,
        kept=earlier.items if earlier else (),
        max_failures=settings.eval_max_failures,
    )
    folder = save_report(report, folder) if folder else write_report(report, out or settings.reports_dir)
    return Run(report, folder, index.location, frozenset(missing_gold(eval_set, index)))


def resume(
    path: Path,
    settings: Settings,
    *,
    indexing: Progress | None = None,
    asking: Progress | None = None,
    describe: Callable[[str], None] | None = None,
) -> Run:
    """Ask the failed and unasked questions of the run in `path` (its folder or report.json) with
    its set, split, backend, judge, retriever, k and depth, keep its scored ones, and write the
    report anew in its folder."""
    earlier = read_report(path)
    folder = path if path.is_dir() else path.parent
    if not earlier.failed and not earlier.unasked:
        raise PaperChatError(
            f"{folder}: every question of this run was scored; nothing to resume", hint="start a new run with --set"
        )
    eval_set = load_eval_set(earlier.set_path, split=earlier.split)
    known = {i.id: i for i in eval_set.items}
    gone = [q for q in earlier.question_ids if q not in known]
    if gone:
        raise CorpusError(
            f"{earlier.set_path} no longer has {len(gone)} question(s) of {folder}: {', '.join(gone[:5])}",
            hint="resume with the set the run used, or start a new run",
        )
    eval_set = eval_set.model_copy(update={"corpus": earlier.corpus, "items": tuple(known[q] for q in earlier.question_ids)})
    answers = earlier.backend != "retrieval"
    if answers:
        settings = settings.model_copy(update={"backend": earlier.backend})
    if describe:
        kept = len(earlier.items) - earlier.failed
        describe(f"resuming {folder.name}: {kept} scored questions kept, {len(eval_set.items) - kept} to ask")
    return evaluate(
        eval_set,
        settings,
        # The judge the run ended up with: the similarity judge alone, or the LLM judge paired with it.
        judge="similarity" if earlier.judge == SimilarityJudge.name else "llm",
        retriever=earlier.retriever,
        answers=answers,
        k=earlier.k,
        depth=earlier.depth,
        indexing=indexing,
        asking=asking,
        describe=describe,
        earlier=earlier,
        folder=folder,
    )
