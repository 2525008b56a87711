"""Evaluation reports on disk: ``report.json`` (everything), ``report.md`` and PNG plots.

A run is written to ``<root>/<set>-<backend>-<timestamp>/``; ``report.json`` is the whole
`EvalReport`, so two runs can be compared later (`rag.evaluation.evaluate.compare`). A run with failed or
unasked questions is written too, saying so; resuming it rewrites the same folder (`save_report`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rag.errors import PaperChatError
from rag.evaluation.judges import below_the_bar
from rag.evaluation.metrics import LOWER_IS_BETTER, description, label, verdicts
from rag.evaluation.records import EvalReport, ItemResult
from rag.markup import escape_markdown
from rag.models.prompts import say

PLOTS = ("metrics.png", "latency.png", "by_type.png")
# The metrics the per-type plot compares: one each for retrieval, citing and refusing.
_TYPE_METRICS = (
    "recall@5",
    "ndcg@10",
    "gold_citation_recall",
    "gold_citation_precision",
    "faithfulness",
    "unanswerable_declined",
    "gold_sentence_quoted",
    "collection_recall",
)
_LISTED = 25


def run_name(report: EvalReport) -> str:
    backend = report.backend if report.retriever == "hybrid" else f"{report.backend}-{report.retriever}"
    stamp = datetime.fromisoformat(report.created).strftime("%Y%m%d-%H%M%S")
    return f"{report.set_name}-{backend}-{stamp}"


def list_reports(root: Path) -> list[Path]:
    """The run folders under `root`, newest first (by the time that ends each folder's name)."""
    folders = [f.parent for f in root.glob("*/report.json")]
    return sorted(folders, key=lambda f: f.name[-len("YYYYmmdd-HHMMSS") :], reverse=True)


def write_report(report: EvalReport, root: Path) -> Path:
    """Write the run's folder under `root` and return it."""
    return save_report(report, root / run_name(report))


def save_report(report: EvalReport, folder: Path) -> Path:
    """Write the report's files into `folder` (a resumed run's replace its partial ones) and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    (folder / "report.md").write_text(markdown(report), encoding="utf-8")
    _plot_metrics(report, folder / "metrics.png")
    _plot_latency(report, folder / "latency.png")
    _plot_by_type(report, folder / "by_type.png")
    return folder


def read_report(path: Path) -> EvalReport:
    """A report from its folder or its ``report.json``."""
    file = path / "report.json" if path.is_dir() else path
    try:
        return EvalReport.model_validate_json(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PaperChatError(
            f"{file}: no such report",
            hint="pass a report folder (under <data dir>/eval-reports/ unless --out said otherwise) or its report.json",
        ) from None
    except ValueError as exc:
        raise PaperChatError(f"{file} is not a PaperChat report: {exc}", hint="was it written by paperchat eval?") from None


def incomplete(report: EvalReport, language: str = "en") -> str:
    """What the run left without scores, in a sentence in `language`; empty when it scored every
    question. Why it stopped is said as the run recorded it."""
    if not report.failed and not report.unasked:
        return ""
    total = len(report.question_ids)
    scored = len(report.items) - report.failed
    if not report.stopped:
        return say("evaluation.some_failed", language, failed=report.failed, total=total, scored=scored)
    return say(
        "evaluation.stopped",
        language,
        reason=report.stopped,
        scored=scored,
        total=total,
        failed=report.failed,
        unasked=len(report.unasked),
    )


def agreement_text(report: EvalReport, language: str = "en") -> str:
    """The two judges' agreement in a sentence in `language` (report.md, `paperchat eval`, the
    Evaluate page); "" for a run with one judge."""
    a = report.judge_agreement
    if not a:
        return ""
    if not a["pairs"]:
        # Agreement and kappa over no decisions are no figures at all, not zeros.
        return say("evaluation.no_agreement", language)
    return say(
        "evaluation.agreement",
        language,
        pairs=int(a["pairs"]),
        agreement=f"{a['agreement']:.3f}",
        kappa=f"{a['kappa']:.3f}",
    )


def judge_note(report: EvalReport, language: str = "en") -> str:
    """Why the report leads with the similarity judge's figures (`EvalReport.judge_note`), in
    `language`; "" when it does not. A note without the agreement it rests on is as written."""
    a = report.judge_agreement
    if not report.judge_note or not a:
        return report.judge_note
    return below_the_bar(a["kappa"], language)


def rerank_words(report: EvalReport) -> str:
    """Whether the verifier reordered the fused ranking, and how, as report.md says it."""
    if not report.rerank_depth:
        return "no verifier rerank"
    return f"the verifier reorders the top {report.rerank_depth}, the fused score weighing {report.rerank_weight:g}"


def markdown(report: EvalReport) -> str:
    shortfall = incomplete(report)
    lines = [
        f"# Evaluation: {report.set_name}",
        "",
        *(
            [f"> **Incomplete: {escape_markdown(shortfall)}.** `paperchat eval --resume` asks them again.", ""]
            if shortfall
            else []
        ),
        *([f"> **{report.judge_note}**", ""] if report.judge_note else []),
        f"- set: `{report.set_path}` ({len(report.question_ids)} questions)",
        f"- backend: {report.backend}" + (f" ({report.model})" if report.model else ""),
        f"- retriever: {report.retriever} ({rerank_words(report)}); answers see the top {report.k}; rankings scored {report.depth} deep",
        f"- judge: {report.judge or 'none (retrieval only)'}",
        f"- run: {report.created}",
        "",
        "## Metrics",
        "",
        *(f"- {line}" for line in verdicts(report.metrics)),
        "",
        "| metric | value | items | what it measures |",
        "|---|---:|---:|---|",
        *(f"| {label(m)} | {v:.3f} | {report.counts[m]} | {description(m)} |" for m, v in report.metrics.items()),
        "",
    ]
    if report.alternative_metrics:
        title = "LLM judge's figures" if report.judge_note else "Similarity judge's figures, for comparison"
        lines += [f"### {title}", "", "| metric | value |", "|---|---:|"]
        lines += [f"| {label(m)} | {v:.3f} |" for m, v in report.alternative_metrics.items()]
        lines.append("")
    if report.judge_agreement:
        lines += [agreement_text(report), ""]
    if len(report.by_type) > 1:
        names = [m for m in report.metrics if any(m in t for t in report.by_type.values())]
        header = " | ".join(label(m) for m in names)
        lines += ["## By question type", "", f"| type | {header} |", "|---|" + "---:|" * len(names)]
        for kind, metrics in report.by_type.items():
            lines.append(f"| {kind} | " + " | ".join(f"{metrics[m]:.3f}" if m in metrics else "" for m in names) + " |")
        lines.append("")
    lines += ["## Latency (seconds)", "", "| stage | p50 | p95 |", "|---|---:|---:|"]
    lines += [f"| {s} | {v['p50']:.3f} | {v['p95']:.3f} |" for s, v in report.latency.items()]
    lines += ["", *(f"![{p}]({p})" for p in PLOTS), ""]
    lines += _failures(report.items)
    lines += _misses(report.items)
    return "\n".join(lines) + "\n"


def _failures(items: tuple[ItemResult, ...]) -> list[str]:
    """Every failed question with its error: each one is what a resumed run asks again."""
    failed = [i for i in items if i.error]
    if not failed:
        return []
    lines = [f"## Failed ({len(failed)})", ""]
    lines += [f"- `{i.id}` {escape_markdown(i.question)}: {escape_markdown(i.error)}" for i in failed]
    return [*lines, ""]


def _misses(items: tuple[ItemResult, ...]) -> list[str]:
    """The items worth reading first: what retrieval missed, and refusals that went wrong."""
    groups = {
        "Relevant paper not in the top 5": [i for i in items if i.scores.get("recall@5", 1.0) < 1.0],
        "Answerable, but refused": [i for i in items if i.gold and i.scores.get("refused")],
        "Unanswerable, but answered as covered": [i for i in items if not i.gold and i.scores.get("declined") == 0.0],
        "Answerable, but graded not found with a gold paper in the top 3": [i for i in items if i.scores.get("gold_not_found")],
        "Answering sentence not quoted": [i for i in items if i.scores.get("gold_sentence_quoted") == 0.0],
        "Collection: a gold paper not listed": [i for i in items if i.scores.get("collection_recall", 1.0) < 1.0],
        "Gold paper not cited": [
            i for i in items if i.scores.get("gold_citation_recall", 1.0) < 1.0 and not i.scores.get("refused")
        ],
    }
    lines = []
    for title, group in groups.items():
        if not group:
            continue
        lines += [f"## {title} ({len(group)})", ""]
        for item in group[:_LISTED]:
            graded = f"graded {item.grade}; " if item.grade else ""
            lines.append(
                f"- `{item.id}` {escape_markdown(item.question)} ({graded}gold: {', '.join(item.gold) or 'none'}; "
                f"top 5: {', '.join(item.retrieved[:5])})"
            )
        if len(group) > _LISTED:
            lines.append(f"- … and {len(group) - _LISTED} more in report.json")
        lines.append("")
    return lines


def _pyplot():
    # Imported when plotting, not with the module: it is slow to import and only plots need it.
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server or in CI
    import matplotlib.pyplot as plt

    return plt


def _plot_metrics(report: EvalReport, path: Path) -> None:
    plt = _pyplot()
    names = list(report.metrics)
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 1.2))
    # A lower-is-better metric says so on its bar, in another colour: it shares the axis.
    labels = [f"{label(n)} (lower is better)" if n in LOWER_IS_BETTER else label(n) for n in names[::-1]]
    colours = ["#c44e52" if n in LOWER_IS_BETTER else "#4c72b0" for n in names[::-1]]
    bars = ax.barh(labels, [report.metrics[n] for n in names[::-1]], color=colours)
    ax.bar_label(bars, fmt="%.3f", padding=3, fontsize=8)
    ax.set_xlim(0, 1.12)
    ax.set_title(f"{report.set_name} · {report.backend} · {report.retriever}", fontsize=10)
    _save(fig, path)


def _plot_latency(report: EvalReport, path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for stage in ("total", "retrieve", "generate"):
        values = [i.timings[stage] * 1000 for i in report.items if stage in i.timings]
        if values:
            ax.hist(values, bins=30, alpha=0.55, label=stage)
    ax.set_xlabel("milliseconds per question")
    ax.set_ylabel("questions")
    _legend(ax)
    ax.set_title("Latency per stage", fontsize=10)
    _save(fig, path)


def _plot_by_type(report: EvalReport, path: Path) -> None:
    metrics = [m for m in _TYPE_METRICS if m in report.metrics]
    kinds = list(report.by_type)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / max(len(metrics), 1)
    for j, metric in enumerate(metrics):
        xs = [i + j * width for i in range(len(kinds))]
        ax.bar(xs, [report.by_type[k].get(metric, 0.0) for k in kinds], width, label=label(metric))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(kinds))], kinds)
    ax.set_ylim(0, 1.05)
    _legend(ax, fontsize=7, loc="lower right")
    ax.set_title("By question type", fontsize=10)
    _save(fig, path)


def _legend(ax, **options) -> None:
    # A run that scored no question has no series to name, and matplotlib warns of an empty legend.
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**options)


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
