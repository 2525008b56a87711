"""PaperChat's Evaluate page: the answer-quality evaluation of `paperchat eval`, from the browser.

Presentation only: `rag.evaluation.sets.question_sets` lists the sets that can run here (the seed set,
of the bundled papers, first), `rag.evaluation.run.evaluate` runs one as `paperchat eval` does (index,
judge, `run_eval`, the report's folder under `Settings.reports_dir`, in the user's data dir), and
`rag.evaluation.report` reads it back. The page draws a report from its folder, so a run just made and a
past one look the same.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rag import Assistant, PaperChatError
from rag.evaluation.evaluate import compare
from rag.evaluation.metrics import LOWER_IS_BETTER, METRICS, description, label, verdicts
from rag.evaluation.outcomes import checked_metrics, failing, outcomes, reasons
from rag.evaluation.records import EvalReport, EvalSet, QuestionOutcome
from rag.evaluation.report import PLOTS, agreement_text, incomplete, list_reports, read_report
from rag.evaluation.run import Run, evaluate
from rag.evaluation.sets import SetFile, load_eval_set, load_upload, question_sets
from rag.markup import defuse_markdown, escape_markdown, marked, to_markdown, to_plain
from rag.search.retrieval import RETRIEVERS
from ui.common import load_assistant, show_error

UPLOAD = "Upload a question set…"
MAX_K = 50  # as `paperchat eval --k`


# --- running ----------------------------------------------------------------------------------


def unavailable(sets: list[SetFile]) -> None:
    """The sets not offered, as the corpus each is judged over is not here."""
    needs: dict[Path | None, list[str]] = {}
    for s in sets:
        needs.setdefault(s.corpus, []).append(s.name)
    for corpus, names in needs.items():
        st.caption(escape_markdown(f"Not offered, as {corpus} is not on this machine: {', '.join(names)}."))


def run_form(assistant: Assistant) -> None:
    """The set and the options; Run evaluates and keeps the run in the session."""
    listed = question_sets()
    sets = {s.name: s.path for s in listed if s.available}
    # The first is the default: a set of the papers that ship with PaperChat.
    choice = st.selectbox("Question set", [*sets, UPLOAD], help="The .jsonl question sets and BEIR folders in eval/sets/")
    unavailable([s for s in listed if not s.available])
    upload = None
    if choice == UPLOAD:
        upload = st.file_uploader(
            "Question set file",
            type=["jsonl"],
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
        st.session_state.eval_run = run_set(assistant, eval_set, k=k, retriever=retriever, answers=not ranking_only, limit=limit)
    except PaperChatError as error:
        show_error(error)


def run_set(assistant: Assistant, eval_set: EvalSet, *, k: int, retriever: str, answers: bool, limit: int | None) -> Run:
    """As `paperchat eval` does (`rag.evaluation.run.evaluate`), with the chat's index, model and backend."""
    with st.status(f"Evaluating {escape_markdown(eval_set.name)}…", expanded=True) as status:
        bar = st.progress(0.0)

        def progress(what: str):
            return lambda done, total: bar.progress(done / total if total else 1.0, text=f"{what} {done}/{total}")

        run = evaluate(
            eval_set,
            assistant.settings,
            assistant=assistant,
            retriever=retriever,
            answers=answers,
            k=k,
            limit=limit,
            indexing=progress(f"Indexing {eval_set.name}"),
            asking=progress("Asking"),
        )
        report = run.report
        scored = (
            f"{len(report.items) - report.failed} of {len(report.question_ids)} questions scored"
            if incomplete(report)
            else f"{len(report.items)} questions"
        )
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
    """A report's metrics, per-type scores, questions, latency, judge agreement, plots and downloads."""
    try:
        report = report_in(folder)
    except PaperChatError as error:
        show_error(error)
        return
    model = f" ({report.model})" if report.model else ""
    st.subheader(escape_markdown(folder.name))
    st.caption(
        escape_markdown(
            f"{report.set_name}: {len(report.question_ids)} questions · backend {report.backend}{model} · "
            f"judge {report.judge or 'none (ranking only)'} · retriever {report.retriever} · "
            f"answers see {report.k} papers, rankings scored {report.depth} deep · {report.created}"
        )
    )
    shortfall = incomplete(report)
    if shortfall:
        st.warning(escape_markdown(f"Incomplete: {shortfall}.") + f" `paperchat eval --resume {folder}` asks them again.")
    if report.judge_note:
        st.warning(escape_markdown(report.judge_note))
    for line in verdicts(report.metrics):
        st.markdown(escape_markdown(line))
    st.dataframe(
        [
            {
                "metric": label(m),
                "value": v,
                "better": "lower" if m in LOWER_IS_BETTER else "higher",
                "items": report.counts[m],
                "what it measures": description(m),
            }
            for m, v in report.metrics.items()
        ],
        column_config={
            "value": st.column_config.NumberColumn(
                format="%.3f", width="small", help="The mean over the questions it applies to"
            ),
            "items": st.column_config.NumberColumn(width="small", help="How many questions it applies to"),
            "what it measures": st.column_config.TextColumn(width="large"),
        },
        hide_index=True,
        height="content",
    )
    failed = [{"failed question": i.id, "question": i.question, "error": i.error} for i in report.items if i.error]
    if failed:
        st.dataframe(failed, hide_index=True)
    if report.judge_agreement:
        st.markdown(escape_markdown(agreement_text(report)))
    if len(report.by_type) > 1:
        st.markdown("**By question type**")
        # A row per metric, as in the table above; the types are few, the metrics many.
        st.dataframe(
            [
                {"metric": label(m), **{kind: metrics.get(m) for kind, metrics in report.by_type.items()}}
                for m in report.metrics
                if any(m in metrics for metrics in report.by_type.values())
            ],
            column_config={kind: st.column_config.NumberColumn(format="%.3f") for kind in report.by_type},
            hide_index=True,
            height="content",
            placeholder="",
        )
    render_questions(report, key=f"{key}-{folder.name}")
    st.markdown("**Latency**")
    st.dataframe(
        [{"stage": s, "p50 (ms)": v["p50"] * 1000, "p95 (ms)": v["p95"] * 1000} for s, v in report.latency.items()],
        column_config={c: st.column_config.NumberColumn(format="%.0f") for c in ("p50 (ms)", "p95 (ms)")},
        hide_index=True,
        width="content",
    )
    plots = [p for p in PLOTS if (folder / p).is_file()]
    # A folder may hold report.json alone (copied, or plots deleted), and st.tabs needs a tab.
    if plots:
        for tab, plot in zip(st.tabs([p.removesuffix(".png").replace("_", " ") for p in plots]), plots, strict=True):
            tab.image(str(folder / plot))
    json_col, md_col, _ = st.columns([1, 1, 3])
    json_col.download_button(
        "report.json",
        (folder / "report.json").read_bytes(),
        file_name=f"{folder.name}.json",
        mime="application/json",
        key=f"{key}-json",
        icon=":material/download:",
    )
    md_col.download_button(
        "report.md",
        (folder / "report.md").read_bytes(),
        file_name=f"{folder.name}.md",
        mime="text/markdown",
        key=f"{key}-md",
        icon=":material/download:",
    )


ALL, FAILED = "all", "failed"  # the question filter's first two choices; the others are metric ids
PASS_MARKS = {True: "✓", False: "✗"}


def render_questions(report: EvalReport, *, key: str) -> None:
    """A row per question: each check passed or failed, the papers cited and the gold ones; the
    row selected shows the answer, its citations and why the question failed."""
    rows = outcomes(report)
    if not rows:
        return
    metrics = checked_metrics(rows)
    counts = {ALL: len(rows), FAILED: len(failing(rows))} | {m: len(failing(rows, m)) for m in metrics}
    names = {ALL: "All questions", FAILED: "Failures (any check)"} | {m: f"Failed: {label(m)}" for m in metrics}
    st.markdown("**Questions**")
    shown_by = st.selectbox(
        "Show",
        list(counts),
        format_func=lambda c: f"{names[c]} ({counts[c]})",
        key=f"{key}-show",
        help="Every question, those that failed any check or failed to run, or those that failed one check",
    )
    shown = rows if shown_by == ALL else failing(rows, None if shown_by == FAILED else shown_by)
    if not shown:
        st.success("No question failed.")
        return
    event = st.dataframe(
        [
            {
                "id": row.item.id,
                "question": row.item.question,
                "type": row.item.group,
                "result": "error" if row.item.error else "fail" if row.failures else "pass",
                "grade": row.item.grade,
                **check_marks(row, metrics),
                "cited": list(row.item.cited),
                "gold": list(row.item.gold),
            }
            for row in shown
        ],
        column_config={
            "question": st.column_config.TextColumn(width="large"),
            "type": st.column_config.TextColumn(help="The question's type; for unanswerable questions, their kind"),
            "result": st.column_config.TextColumn(help="fail: a check failed; error: the question failed to run"),
            "grade": st.column_config.TextColumn(help="How sure the answer said it was: answers, best match or not found"),
            **{label(m): st.column_config.TextColumn(help=METRICS[m].check_help) for m in metrics},
            "cited": st.column_config.ListColumn(help="The papers the answer cites"),
            "gold": st.column_config.ListColumn(help="The papers a right answer rests on"),
        },
        # A selection is of a row of this very list: each filter keeps its own.
        key=f"{key}-questions-{shown_by}",
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
    )
    selected = event.selection.rows
    if selected:
        render_question(shown[selected[0]], ranking_only=report.backend == "retrieval")
    else:
        st.caption("Select a row to see its answer, its evidence and why it failed.")


def check_marks(row: QuestionOutcome, metrics: list[str]) -> dict[str, str]:
    """A column per metric: passed or failed, blank where the check does not apply."""
    marks = {c.metric: PASS_MARKS[c.passed] for c in row.checks}
    return {label(m): marks.get(m, "") for m in metrics}


def render_question(row: QuestionOutcome, *, ranking_only: bool) -> None:
    """One question: why it failed, the answer, each citation with its supporting sentence, and
    the gold, cited and top retrieved papers."""
    item = row.item
    with st.container(border=True):
        st.markdown(f"**{escape_markdown(item.question)}**")
        st.caption(escape_markdown(f"{item.id} · {item.group}"))
        why = reasons(row)
        if why:
            st.error("\n".join(f"- {escape_markdown(reason)}" for reason in why))
        elif row.checks:
            st.success("Passed every check.")
        scored = [m for m in METRICS if m in row.scores]
        if scored:
            st.caption("Scores: " + " · ".join(f"{label(m)} {row.scores[m]:.2f}" for m in scored))
        st.markdown("**Answer**")
        if item.answer is not None:
            # The backend's Markdown, as the chat shows it; a model's links and images defused.
            st.markdown(defuse_markdown(item.answer))
        elif not item.error:
            st.caption("None: the run ranked papers only." if ranking_only else "Not available: this report does not hold it.")
        titles = {p.id: p.title for p in row.papers}
        if item.citations:
            st.markdown("**Citations**")
        # A source cited by several sentences is named once, with each sentence and its support.
        by_number = {c.number: [d for d in item.citations if d.number == c.number] for c in item.citations}
        for number, citations in by_number.items():
            paper = citations[0].paper_id
            gold = " · :green[gold]" if paper in item.gold else ""
            st.markdown(f"**[{number}]** {paper_title(paper, titles)}{gold}")
            for citation in citations:
                st.caption(f"Cited for: {defuse_markdown(citation.citing_sentence)}")
                if citation.support:
                    st.markdown(f"Supporting sentence: {marked(citation.support)}")
                if not citation.supported:
                    st.caption(":red[Marked unsupported when the answer was checked: this sentence does not bear out the claim.]")
        st.markdown("**Papers**")
        # "listed" says more than "cited" only for a collection's further matches.
        listing = any(p.listed != p.cited for p in row.papers)
        st.dataframe(
            [
                {"paper": to_plain(p.title) or p.id, "id": p.id, "gold": p.gold, "cited": p.cited}
                | ({"listed": p.listed} if listing else {})
                | {"rank": p.rank}
                for p in row.papers
            ],
            column_config={
                "rank": st.column_config.NumberColumn(help="Its place in the ranking scored; blank when not in it"),
                "listed": st.column_config.CheckboxColumn(
                    help="Given by the answer: cited, or among a collection's further matches"
                ),
            },
            hide_index=True,
            height="content",
        )


def paper_title(paper_id: str, titles: dict[str, str]) -> str:
    """A paper's title as Markdown with its math rendered; its id when the report lacks the title."""
    title = titles.get(paper_id)
    return to_markdown(title, emphasis=False) if title else f"`{paper_id}`"


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
    table = pd.DataFrame([{"metric": label(d.metric), "A": d.before, "B": d.after, "B − A": d.change} for d in deltas])
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
        "Ask a question set, score retrieval, citations, faithfulness and refusals, and write a report, as `paperchat eval` does."
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
            st.warning(
                escape_markdown(
                    f"{len(run.missing_gold)} gold papers of {run.report.set_name} are not in the index at {run.index_location}"
                )
            )
        render_report(run.folder, key="run")
    past_reports()


main()
