"""PaperChat's Evaluate page: the answer-quality evaluation of `paperchat eval`, from the browser.

Presentation only: `rag.evalrun.evaluate` runs the set as `paperchat eval` does (index, judge,
`run_eval`, the report's folder under `Settings.reports_dir`), and `rag.report` reads it back. The page draws a report from
its folder, so a run just made and a past one look the same.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rag import Assistant, PaperChatError
from rag.evalrun import Run, evaluate
from rag.evalsets import load_eval_set, load_upload
from rag.evaluate import LOWER_IS_BETTER, compare
from rag.markup import escape_markdown
from rag.records import EvalReport, EvalSet
from rag.report import PLOTS, incomplete, list_reports, read_report
from rag.retrieval import RETRIEVERS
from ui.common import load_assistant, show_error

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "eval" / "sets"
UPLOAD = "Upload a question set…"
MAX_K = 50  # as `paperchat eval --k`


# --- running ----------------------------------------------------------------------------------


def question_sets() -> dict[str, Path]:
    """The sets under eval/sets: each question set (.jsonl) and each BEIR folder (queries.jsonl)."""
    files = {p.name: p for p in sorted(SETS.glob("*.jsonl"))}
    folders = {f"{q.parent.name}/ (BEIR)": q.parent for q in sorted(SETS.glob("*/queries.jsonl"))}
    return files | folders


def run_form(assistant: Assistant) -> None:
    """The set and the options; Run evaluates and keeps the run in the session."""
    sets = question_sets()
    choice = st.selectbox("Question set", [*sets, UPLOAD], help="The .jsonl question sets and BEIR folders in eval/sets/")
    upload = None
    if choice == UPLOAD:
        upload = st.file_uploader(
            "Question set file", type=["jsonl"],
            help='One JSON object per line: {"id": ..., "question": ..., "gold": [paper ids], "type": ...}',
        )
    st.markdown(f"**Backend:** {escape_markdown(assistant.backend.label)}")
    left, middle, right = st.columns(3)
    k = left.number_input("Papers per answer (k)", 1, MAX_K, min(assistant.settings.k, MAX_K))
    retriever = middle.selectbox("Retriever", RETRIEVERS)
    limit = right.number_input("Limit", min_value=1, value=None, placeholder="all questions", help="Only the first N questions")
    ranking_only = st.checkbox("Ranking only", help="Score the rankings only; write no answers (fast)")
    if not st.button("Run", type="primary", disabled=choice == UPLOAD and upload is None):
        return
    try:
        eval_set = load_upload(upload.name, upload.getvalue()) if upload else load_eval_set(sets[choice])
        st.session_state.eval_run = run_set(
            assistant, eval_set, k=k, retriever=retriever, answers=not ranking_only, limit=limit
        )
    except PaperChatError as error:
        show_error(error)


def run_set(assistant: Assistant, eval_set: EvalSet, *, k: int, retriever: str, answers: bool, limit: int | None) -> Run:
    """As `paperchat eval` does (`rag.evalrun.evaluate`), with the chat's index, model and backend."""
    with st.status(f"Evaluating {escape_markdown(eval_set.name)}…", expanded=True) as status:
        bar = st.progress(0.0)

        def progress(what: str):
            return lambda done, total: bar.progress(done / total if total else 1.0, text=f"{what} {done}/{total}")

        run = evaluate(
            eval_set, assistant.settings, assistant=assistant, retriever=retriever, answers=answers, k=k,
            limit=limit, indexing=progress(f"Indexing {eval_set.name}"), asking=progress("Asking"),
        )
        report = run.report
        scored = f"{len(report.items) - report.failed} of {len(report.question_ids)} questions scored" if incomplete(report) else f"{len(report.items)} questions"
        status.update(
            label=f"{escape_markdown(eval_set.name)}: {scored}", state="error" if report.stopped else "complete", expanded=False
        )
    return run


# --- reports ----------------------------------------------------------------------------------


def report_in(folder: Path) -> EvalReport:
    file = folder / "report.json"
    # `paperchat eval --resume` completes a run's folder in place: the file's time is in the key.
    return _parsed_report(folder, file.stat().st_mtime_ns if file.is_file() else 0)


@st.cache_data(show_spinner=False, max_entries=16)
def _parsed_report(folder: Path, modified: int) -> EvalReport:
    # Parse each version of a report.json once, not on every rerun.
    return read_report(folder)


def render_report(folder: Path, *, key: str) -> None:
    """A report's metrics, per-type scores, latency, judge agreement, plots and downloads."""
    try:
        report = report_in(folder)
    except PaperChatError as error:
        show_error(error)
        return
    model = f" ({report.model})" if report.model else ""
    st.subheader(escape_markdown(folder.name))
    st.caption(escape_markdown(
        f"{report.set_name}: {len(report.question_ids)} questions · backend {report.backend}{model} · "
        f"judge {report.judge or 'none (ranking only)'} · retriever {report.retriever} · "
        f"answers see {report.k} papers, rankings scored {report.depth} deep · {report.created}"
    ))
    shortfall = incomplete(report)
    if shortfall:
        st.warning(escape_markdown(f"Incomplete: {shortfall}.") + f" `paperchat eval --resume {folder}` asks them again.")
    if report.judge_note:
        st.warning(escape_markdown(report.judge_note))
    st.dataframe(
        [
            {"metric": f"{m} (lower is better)" if m in LOWER_IS_BETTER else m, "value": v, "items": report.counts[m]}
            for m, v in report.metrics.items()
        ],
        column_config={"value": st.column_config.NumberColumn(format="%.3f")},
        hide_index=True, height="content",
    )
    failed = [{"failed question": i.id, "question": i.question, "error": i.error} for i in report.items if i.error]
    if failed:
        st.dataframe(failed, hide_index=True)
    if report.judge_agreement:
        a = report.judge_agreement
        st.markdown(
            f"Judge agreement (LLM vs offline similarity judge) on {int(a['pairs'])} support decisions: "
            f"{a['agreement']:.3f} raw, Cohen's kappa {a['kappa']:.3f}."
        )
    if len(report.by_type) > 1:
        st.markdown("**By question type**")
        # A row per metric, as in the table above; the types are few, the metrics many.
        st.dataframe(
            [
                {"metric": m, **{kind: metrics.get(m) for kind, metrics in report.by_type.items()}}
                for m in report.metrics
                if any(m in metrics for metrics in report.by_type.values())
            ],
            column_config={kind: st.column_config.NumberColumn(format="%.3f") for kind in report.by_type},
            hide_index=True, height="content", placeholder="",
        )
    st.markdown("**Latency**")
    st.dataframe(
        [{"stage": s, "p50 (ms)": v["p50"] * 1000, "p95 (ms)": v["p95"] * 1000} for s, v in report.latency.items()],
        column_config={c: st.column_config.NumberColumn(format="%.0f") for c in ("p50 (ms)", "p95 (ms)")},
        hide_index=True, width="content",
    )
    plots = [p for p in PLOTS if (folder / p).is_file()]
    for tab, plot in zip(st.tabs([p.removesuffix(".png").replace("_", " ") for p in plots]), plots, strict=True):
        tab.image(str(folder / plot))
    json_col, md_col, _ = st.columns([1, 1, 3])
    json_col.download_button(
        "report.json", (folder / "report.json").read_bytes(), file_name=f"{folder.name}.json",
        mime="application/json", key=f"{key}-json", icon=":material/download:",
    )
    md_col.download_button(
        "report.md", (folder / "report.md").read_bytes(), file_name=f"{folder.name}.md",
        mime="text/markdown", key=f"{key}-md", icon=":material/download:",
    )


def past_reports() -> None:
    st.header("Past reports")
    reports = load_assistant().settings.reports_dir
    folders = list_reports(reports)
    if not folders:
        st.caption(escape_markdown(f"No reports under {reports} yet."))
        return
    names = {f.name: f for f in folders}
    shown = st.selectbox("View a report", names, index=None, placeholder="Choose a report")
    if shown:
        render_report(names[shown], key="past")

    st.subheader("Compare two reports")
    left, right = st.columns(2)
    before = left.selectbox("A", names, index=None, placeholder="Choose a report")
    after = right.selectbox("B", names, index=None, placeholder="Choose a report")
    if before and after:
        try:
            render_deltas(report_in(names[before]), report_in(names[after]))
        except PaperChatError as error:
            show_error(error)


def render_deltas(before: EvalReport, after: EvalReport) -> None:
    """Each metric of A and B and the change, green where B is better and red where worse."""
    deltas = compare(before, after)
    table = pd.DataFrame(
        [{"metric": d.metric, "A": d.before, "B": d.after, "B − A": d.change} for d in deltas]
    )
    colours = [{True: "color: #1a7f37", False: "color: #cf222e"}.get(d.better, "") for d in deltas]
    styled = (
        table.style.format("{:.3f}", subset=["A", "B"], na_rep="")
        .format("{:+.3f}", subset=["B − A"], na_rep="")
        .apply(lambda _: colours, subset=["B − A"])
    )
    st.dataframe(styled, hide_index=True, height="content")


# --- page -------------------------------------------------------------------------------------


def main() -> None:
    st.title("Evaluate")
    st.markdown(
        "Ask a question set, score retrieval, citations, faithfulness and refusals, "
        "and write a report, as `paperchat eval` does."
    )
    try:
        assistant = load_assistant()
    except PaperChatError as error:
        show_error(error)
        st.stop()
    run_form(assistant)
    run: Run | None = st.session_state.get("eval_run")
    if run is not None:
        if run.missing_gold:
            st.warning(escape_markdown(f"{len(run.missing_gold)} gold papers of {run.report.set_name} are not in the index at {run.index_location}"))
        render_report(run.folder, key="run")
    past_reports()


main()
