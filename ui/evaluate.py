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
from rag.evaluation.report import PLOTS, agreement_text, incomplete, judge_note, list_reports, read_report
from rag.evaluation.run import Run, evaluate
from rag.evaluation.sets import SetFile, load_eval_set, load_upload, question_sets
from rag.markup import defuse_markdown, escape_markdown, marked, to_markdown, to_plain
from rag.records import Grade
from rag.search.retrieval import RETRIEVERS
from ui.common import backend_label, language, load_assistant, show_error, t

UPLOAD = "Upload a question set…"  # the set choice's last option, shown as t("evaluate.upload")
MAX_K = 50  # as `paperchat eval --k`


# --- running ----------------------------------------------------------------------------------


def unavailable(sets: list[SetFile]) -> None:
    """The sets not offered, as the corpus each is judged over is not here."""
    needs: dict[Path | None, list[str]] = {}
    for s in sets:
        needs.setdefault(s.corpus, []).append(s.name)
    for corpus, names in needs.items():
        st.caption(escape_markdown(t("evaluate.not_offered", corpus=corpus, names=", ".join(names))))


def run_form(assistant: Assistant) -> None:
    """The set and the options; Run evaluates and keeps the run in the session."""
    listed = question_sets()
    sets = {s.name: s.path for s in listed if s.available}
    # The first is the default: a set of the papers that ship with PaperChat.
    choice = st.selectbox(
        t("evaluate.set"),
        [*sets, UPLOAD],
        format_func=lambda c: t("evaluate.upload") if c == UPLOAD else c,
        help=t("evaluate.set_help"),
    )
    unavailable([s for s in listed if not s.available])
    upload = None
    if choice == UPLOAD:
        upload = st.file_uploader(t("evaluate.set_file"), type=["jsonl"], help=t("evaluate.set_file_help"))
    st.markdown(t("evaluate.backend", label=escape_markdown(backend_label(assistant.backend.name, assistant.backend.model))))
    left, middle, right = st.columns(3)
    k = left.number_input(t("evaluate.k"), 1, MAX_K, min(assistant.settings.k, MAX_K))
    retriever = middle.selectbox(t("evaluate.retriever"), RETRIEVERS)
    limit = right.number_input(
        t("evaluate.limit"), min_value=1, value=None, placeholder=t("evaluate.limit_hint"), help=t("evaluate.limit_help")
    )
    ranking_only = st.checkbox(t("evaluate.ranking_only"), help=t("evaluate.ranking_only_help"))
    if not st.button(t("evaluate.run"), type="primary", disabled=choice == UPLOAD and upload is None):
        return
    try:
        eval_set = load_upload(upload.name, upload.getvalue()) if upload else load_eval_set(sets[choice])
        st.session_state.eval_run = run_set(assistant, eval_set, k=k, retriever=retriever, answers=not ranking_only, limit=limit)
    except PaperChatError as error:
        show_error(error)


def run_set(assistant: Assistant, eval_set: EvalSet, *, k: int, retriever: str, answers: bool, limit: int | None) -> Run:
    """As `paperchat eval` does (`rag.evaluation.run.evaluate`), with the chat's index, model and backend."""
    with st.status(t("evaluate.evaluating", name=escape_markdown(eval_set.name)), expanded=True) as status:
        bar = st.progress(0.0)

        def progress(what: str, **fields: object):
            # `what`'s words, counting: "Asking 3/10".
            return lambda done, total: bar.progress(
                done / total if total else 1.0, text=t(what, done=done, total=total, **fields)
            )

        run = evaluate(
            eval_set,
            assistant.settings,
            assistant=assistant,
            retriever=retriever,
            answers=answers,
            k=k,
            limit=limit,
            indexing=progress("evaluate.indexing", name=eval_set.name),
            asking=progress("evaluate.asking"),
        )
        report = run.report
        scored = (
            t("evaluate.scored", scored=len(report.items) - report.failed, total=len(report.question_ids))
            if incomplete(report)
            else t("evaluate.questions", n=len(report.items))
        )
        status.update(
            label=t("evaluate.done", name=escape_markdown(eval_set.name), scored=scored),
            state="error" if report.stopped else "complete",
            expanded=False,
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


# The stages of `Answer.timings` the latency table names in the app's language; another as it is.
STAGES = {
    "condense": "evaluate.stage_condense",
    "translate": "evaluate.stage_translate",
    "retrieve": "evaluate.stage_retrieve",
    "first_token": "evaluate.stage_first_token",
    "generate": "evaluate.stage_generate",
    "check": "evaluate.stage_check",
    "total": "evaluate.stage_total",
}


def stage_name(stage: str) -> str:
    return t(STAGES[stage]) if stage in STAGES else stage


def render_report(folder: Path, *, key: str) -> None:
    """A report's metrics, per-type scores, questions, latency, judge agreement, plots and downloads."""
    try:
        report = report_in(folder)
    except PaperChatError as error:
        show_error(error)
        return
    st.subheader(escape_markdown(folder.name))
    st.caption(
        escape_markdown(
            t(
                "evaluate.report_caption",
                set=report.set_name,
                n=len(report.question_ids),
                backend=backend_label(report.backend, report.model),
                judge=report.judge or t("evaluate.no_judge"),
                retriever=report.retriever,
                k=report.k,
                depth=report.depth,
                created=report.created,
            )
        )
    )
    lang = language()
    shortfall = incomplete(report, lang)
    if shortfall:
        st.warning(t("evaluate.incomplete", shortfall=escape_markdown(shortfall), folder=folder))
    if report.judge_note:
        st.warning(escape_markdown(judge_note(report, lang)))
    for line in verdicts(report.metrics, lang):
        st.markdown(escape_markdown(line))
    metric, value, items, measures = t("evaluate.metric"), t("evaluate.value"), t("evaluate.items"), t("evaluate.measures")
    st.dataframe(
        [
            {
                metric: label(m, lang),
                value: v,
                t("evaluate.better"): t("evaluate.lower") if m in LOWER_IS_BETTER else t("evaluate.higher"),
                items: report.counts[m],
                measures: description(m, lang),
            }
            for m, v in report.metrics.items()
        ],
        column_config={
            value: st.column_config.NumberColumn(format="%.3f", width="small", help=t("evaluate.value_help")),
            items: st.column_config.NumberColumn(width="small", help=t("evaluate.items_help")),
            measures: st.column_config.TextColumn(width="large"),
        },
        hide_index=True,
        height="content",
    )
    failed = [
        {t("evaluate.failed_question"): i.id, t("evaluate.question"): i.question, t("evaluate.error"): i.error}
        for i in report.items
        if i.error
    ]
    if failed:
        st.dataframe(failed, hide_index=True)
    if report.judge_agreement:
        st.markdown(escape_markdown(agreement_text(report, lang)))
    if len(report.by_type) > 1:
        st.markdown(f"**{t('evaluate.by_type')}**")
        # A row per metric, as in the table above; the types are few, the metrics many.
        st.dataframe(
            [
                {metric: label(m, lang), **{kind: metrics.get(m) for kind, metrics in report.by_type.items()}}
                for m in report.metrics
                if any(m in metrics for metrics in report.by_type.values())
            ],
            column_config={kind: st.column_config.NumberColumn(format="%.3f") for kind in report.by_type},
            hide_index=True,
            height="content",
            placeholder="",
        )
    render_questions(report, key=f"{key}-{folder.name}")
    st.markdown(f"**{t('evaluate.latency')}**")
    st.dataframe(
        [
            {t("evaluate.stage"): stage_name(s), "p50 (ms)": v["p50"] * 1000, "p95 (ms)": v["p95"] * 1000}
            for s, v in report.latency.items()
        ],
        column_config={c: st.column_config.NumberColumn(format="%.0f") for c in ("p50 (ms)", "p95 (ms)")},
        hide_index=True,
        width="content",
    )
    plots = [p for p in PLOTS if (folder / p).is_file()]
    # A folder may hold report.json alone (copied, or plots deleted), and st.tabs needs a tab.
    if plots:
        names = {
            "metrics.png": t("evaluate.plot_metrics"),
            "latency.png": t("evaluate.plot_latency"),
            "by_type.png": t("evaluate.plot_by_type"),
        }
        tabs = st.tabs([names.get(p) or p.removesuffix(".png").replace("_", " ") for p in plots])
        for tab, plot in zip(tabs, plots, strict=True):
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
    lang = language()
    counts = {ALL: len(rows), FAILED: len(failing(rows))} | {m: len(failing(rows, m)) for m in metrics}
    names = {ALL: t("evaluate.all_questions"), FAILED: t("evaluate.failures")} | {
        m: t("evaluate.failed_check", metric=label(m, lang)) for m in metrics
    }
    st.markdown(f"**{t('evaluate.questions_heading')}**")
    shown_by = st.selectbox(
        t("evaluate.show"),
        list(counts),
        format_func=lambda c: f"{names[c]} ({counts[c]})",
        key=f"{key}-show",
        help=t("evaluate.show_help"),
    )
    shown = rows if shown_by == ALL else failing(rows, None if shown_by == FAILED else shown_by)
    if not shown:
        st.success(t("evaluate.none_failed"))
        return
    question, kind, result = t("evaluate.question"), t("evaluate.type"), t("evaluate.result")
    grade, cited, gold = t("evaluate.grade"), t("evaluate.cited"), t("evaluate.gold")
    results = {"error": t("evaluate.result_error"), "fail": t("evaluate.result_fail"), "pass": t("evaluate.result_pass")}
    event = st.dataframe(
        [
            {
                "id": row.item.id,
                question: row.item.question,
                kind: row.item.group,
                result: results["error" if row.item.error else "fail" if row.failures else "pass"],
                grade: grade_word(row.item.grade),
                **check_marks(row, metrics),
                cited: list(row.item.cited),
                gold: list(row.item.gold),
            }
            for row in shown
        ],
        column_config={
            question: st.column_config.TextColumn(width="large"),
            kind: st.column_config.TextColumn(help=t("evaluate.type_help")),
            result: st.column_config.TextColumn(help=t("evaluate.result_help")),
            grade: st.column_config.TextColumn(help=t("evaluate.grade_help")),
            **{label(m, lang): st.column_config.TextColumn(help=METRICS[m].check_help_in(lang)) for m in metrics},
            cited: st.column_config.ListColumn(help=t("evaluate.cited_help")),
            gold: st.column_config.ListColumn(help=t("evaluate.gold_help")),
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
        st.caption(t("evaluate.select_row"))


def grade_word(grade: str) -> str:
    """A question's grade as the chat's badge says it, in the app's language; blank as it is."""
    known = {g.value: g for g in Grade}
    return t(f"grade.{known[grade].name.lower()}") if grade in known else grade


def check_marks(row: QuestionOutcome, metrics: list[str]) -> dict[str, str]:
    """A column per metric: passed or failed, blank where the check does not apply."""
    marks = {c.metric: PASS_MARKS[c.passed] for c in row.checks}
    lang = language()
    return {label(m, lang): marks.get(m, "") for m in metrics}


def render_question(row: QuestionOutcome, *, ranking_only: bool) -> None:
    """One question: why it failed, the answer, each citation with its supporting sentence, and
    the gold, cited and top retrieved papers."""
    item = row.item
    with st.container(border=True):
        st.markdown(f"**{escape_markdown(item.question)}**")
        st.caption(escape_markdown(f"{item.id} · {item.group}"))
        lang = language()
        why = reasons(row, lang)
        if why:
            st.error("\n".join(f"- {escape_markdown(reason)}" for reason in why))
        elif row.checks:
            st.success(t("evaluate.passed"))
        scored = [m for m in METRICS if m in row.scores]
        if scored:
            st.caption(t("evaluate.scores", scores=" · ".join(f"{label(m, lang)} {row.scores[m]:.2f}" for m in scored)))
        st.markdown(f"**{t('evaluate.answer')}**")
        if item.answer is not None:
            # The backend's Markdown, as the chat shows it; a model's links and images defused.
            st.markdown(defuse_markdown(item.answer))
        elif not item.error:
            st.caption(t("evaluate.no_answer_ranking") if ranking_only else t("evaluate.no_answer_kept"))
        titles = {p.id: p.title for p in row.papers}
        if item.citations:
            st.markdown(f"**{t('evaluate.citations')}**")
        # A source cited by several sentences is named once, with each sentence and its support.
        by_number = {c.number: [d for d in item.citations if d.number == c.number] for c in item.citations}
        for number, citations in by_number.items():
            paper = citations[0].paper_id
            gold = f" · :green[{t('evaluate.gold_mark')}]" if paper in item.gold else ""
            st.markdown(f"**[{number}]** {paper_title(paper, titles)}{gold}")
            for citation in citations:
                st.caption(t("evaluate.cited_for", sentence=defuse_markdown(citation.citing_sentence)))
                if citation.support:
                    st.markdown(t("evaluate.support", sentence=marked(citation.support)))
                if not citation.supported:
                    st.caption(f":red[{t('evaluate.marked_unsupported')}]")
        st.markdown(f"**{t('evaluate.papers')}**")
        # "listed" says more than "cited" only for a collection's further matches.
        listing = any(p.listed != p.cited for p in row.papers)
        listed, rank = t("evaluate.listed"), t("evaluate.rank")
        st.dataframe(
            [
                {
                    t("evaluate.paper"): to_plain(p.title) or p.id,
                    "id": p.id,
                    t("evaluate.gold"): p.gold,
                    t("evaluate.cited"): p.cited,
                }
                | ({listed: p.listed} if listing else {})
                | {rank: p.rank}
                for p in row.papers
            ],
            column_config={
                rank: st.column_config.NumberColumn(help=t("evaluate.rank_help")),
                listed: st.column_config.CheckboxColumn(help=t("evaluate.listed_help")),
            },
            hide_index=True,
            height="content",
        )


def paper_title(paper_id: str, titles: dict[str, str]) -> str:
    """A paper's title as Markdown with its math rendered; its id when the report lacks the title."""
    title = titles.get(paper_id)
    return to_markdown(title, emphasis=False) if title else f"`{paper_id}`"


def past_reports() -> None:
    st.header(t("evaluate.past"))
    reports = load_assistant().settings.reports_dir
    folders = list_reports(reports)
    if not folders:
        st.caption(escape_markdown(t("evaluate.no_reports", folder=reports)))
        return
    names = {f.name: f for f in folders}
    shown = st.selectbox(t("evaluate.view"), names, index=None, placeholder=t("evaluate.choose_report"))
    if shown:
        render_report(names[shown], key="past")

    st.subheader(t("evaluate.compare"))
    left, right = st.columns(2)
    before = left.selectbox("A", names, index=None, placeholder=t("evaluate.choose_report"))
    after = right.selectbox("B", names, index=None, placeholder=t("evaluate.choose_report"))
    if before and after:
        try:
            render_deltas(report_in(names[before]), report_in(names[after]))
        except PaperChatError as error:
            show_error(error)


def render_deltas(before: EvalReport, after: EvalReport) -> None:
    """Each metric of A and B and the change, green where B is better and red where worse."""
    deltas = compare(before, after)
    lang = language()
    table = pd.DataFrame(
        [{t("evaluate.metric"): label(d.metric, lang), "A": d.before, "B": d.after, "B − A": d.change} for d in deltas]
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
    st.title(t("evaluate.title"))
    st.markdown(t("evaluate.intro"))
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
                    t("evaluate.missing_gold", n=len(run.missing_gold), set=run.report.set_name, location=run.index_location)
                )
            )
        render_report(run.folder, key="run")
    past_reports()


main()
