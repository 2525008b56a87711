"""`paperchat`: the command line, a thin layer over the library (parsing here, printing in `rag.terminal`)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rag.errors import PaperChatError
from rag.markup import terminal_safe, to_plain
from rag.models.prompts import say
from rag.outputs import checked_output, write_output
from rag.terminal import err, out, print_paper, print_stream, progress_bar, safe, terminal_language
from rag.text import language_of

if TYPE_CHECKING:
    from rag.records import Answer


class _Group(click.Group):
    """Prints our errors as a short message (no traceback) and exits non-zero."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PaperChatError as exc:
            _print_error(exc, _language(ctx))
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            err.print(f"[dim]{say('cli.interrupted', _language(ctx))}[/]")
            sys.exit(130)


def _language(ctx: click.Context) -> str:
    """The language of the command line's own words (`rag.terminal.terminal_language`); settings
    that failed to load leave the locale's."""
    return terminal_language(getattr(ctx.obj, "language", "auto"))


def _print_error(exc: PaperChatError, language: str) -> None:
    err.print(f"[bold red]{say('cli.error', language)}[/] {safe(exc.message)}")
    if exc.hint:
        err.print(f"[dim]{say('cli.hint', language)} {safe(exc.hint)}[/]")


@click.group(cls=_Group)
@click.option("--data-dir", type=click.Path(path_type=Path), help="Where the index lives (PAPERCHAT_DATA_DIR).")
@click.option(
    "--backend",
    type=click.Choice(["auto", "extractive", "openai", "local"]),
    help="Who writes answers (PAPERCHAT_BACKEND); auto: openai with a key, else extractive.",
)
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None, backend: str | None) -> None:
    """Chat with research-paper abstracts; every claim cites its paper."""
    from rag.settings import Settings

    overrides = {k: v for k, v in {"data_dir": data_dir, "backend": backend}.items() if v is not None}
    ctx.obj = Settings(**overrides)


def _index(ctx: click.Context):
    from rag.index.store import Index

    return Index.open(ctx.obj)


def _busy(text: str) -> None:
    """Said when a write waits for another process writing to the index."""
    err.print(f"[dim]{escape(text)}[/]")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--skip-invalid", is_flag=True, help="Load the valid records and report the invalid ones.")
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[Path, ...], skip_invalid: bool) -> None:
    """Load corpus files (listing .txt, .jsonl[.gz], BEIR corpus.jsonl, .csv, .bib) into the index."""
    from rag.corpus.reading import count_papers, read_corpus
    from rag.errors import IngestInterruptedError
    from rag.index.ingestprogress import IngestStopped

    # Every file is read through and checked before anything is written, so a bad file changes
    # nothing; then each is read again as it is indexed, never held whole.
    limits = ctx.obj.limits
    sizes = [(path, count_papers(path, skip_invalid=skip_invalid, limits=limits)) for path in paths]
    index = _index(ctx)
    language = _language(ctx)
    table = Table(*say("cli.ingest_columns", language).split("|"))
    for path, size in sizes:
        with progress_bar() as bar:
            task = bar.add_task(escape(say("cli.indexing", language, name=path.name)), total=size)
            try:
                report = index.ingest(
                    read_corpus(path, skip_invalid=skip_invalid, limits=limits),
                    total=size,
                    progress=lambda done, total, task=task: bar.update(task, completed=done, total=total),
                    waiting=_busy,
                )
            except KeyboardInterrupt as stop:
                # What is written whole: the bar runs ahead of it, within a batch.
                raise IngestInterruptedError(str(path), stop.indexed if isinstance(stop, IngestStopped) else 0, size) from None
        table.add_row(
            str(path),
            str(report.added),
            str(report.updated),
            str(report.unchanged),
            str(len(report.skipped)),
            str(report.chunks_written),
            f"{report.seconds:.1f}",
        )
        for skipped in report.skipped:
            err.print(f"[yellow]{say('cli.skipped', language)}[/] {safe(str(skipped))}")
    out.print(table)
    out.print(escape(say("cli.in_index", language, n=len(index), location=index.location)))


def _filters(category, venue, author, year_from, year_to):
    from rag.records import Filters

    return Filters(category=category, venue=venue, author=author, year_min=year_from, year_max=year_to)


def _filter_options(f):
    for option in reversed(
        [
            click.option("--category", help="Only papers whose category contains this."),
            click.option("--venue", help="Only papers whose venue contains this."),
            click.option("--author", help='Only papers with an author whose name has these words ("Chen", "Li Yuan").'),
            click.option("--year-from", type=int, help="Only papers from this year on."),
            click.option("--year-to", type=int, help="Only papers up to this year."),
        ]
    ):
        f = option(f)
    return f


def _assistant(ctx: click.Context):
    from rag.answering.chain import Assistant

    assistant = Assistant(_index(ctx), ctx.obj)
    err.print(f"[dim]backend: {escape(assistant.backend.label)}: {escape(assistant.backend.reason)}[/]")
    return assistant


def _model(assistant) -> str | None:
    """The model a question waits for, if a model writes the answers."""
    return assistant.backend.who if assistant.backend.chat_model is not None else None


def _export(answer, path: Path, language: str) -> None:
    """Write the answer to `path`: .md (the turn), .csv or .table.md (a comparison's table), .bib."""
    from rag.export import bibtex, conversation_markdown, table_csv, table_markdown_text

    name = path.name.lower()
    if name.endswith((".csv", ".table.md")):
        if answer.table is None:
            raise click.UsageError("only a comparison answer has a table to export as .csv")
        text = table_csv(answer.table) if name.endswith(".csv") else table_markdown_text(answer.table)
    elif name.endswith(".bib"):
        text = bibtex(s.paper for s in answer.cited_sources)
    else:
        text = conversation_markdown([answer])
    write_output(path, text)
    _wrote(path, language)


def _wrote(path: Path, language: str) -> None:
    err.print(f"[dim]{escape(say('cli.wrote', language, path=terminal_safe(str(path))))}[/]")


@cli.command()
@click.argument("question")
@click.option("--k", type=click.IntRange(1, 50), help="How many papers to retrieve.")
@_filter_options
@click.option("--json", "as_json", is_flag=True, help="Print the whole answer record as JSON.")
@click.option("--all", "show_all", is_flag=True, help="List every paper a collection answer matches, with its key sentence.")
@click.option(
    "--export",
    "export_path",
    type=click.Path(path_type=Path),
    help="Also write the answer: .md (with references), .bib (cited papers), .csv or .table.md (a comparison's table).",
)
@click.pass_context
def ask(ctx, question, k, category, venue, author, year_from, year_to, as_json, show_all, export_path) -> None:
    """Answer a question from the indexed abstracts, with citations."""
    if export_path is not None:
        checked_output(export_path)
    assistant = _assistant(ctx)
    filters = _filters(category, venue, author, year_from, year_to)
    answer = print_stream(
        assistant.stream(question, k=k, filters=filters), as_json=as_json, show_all=show_all, model=_model(assistant)
    )
    if export_path is not None:
        _export(answer, export_path, _language(ctx))
    if answer.cut_off:
        sys.exit(1)


@cli.command()
@click.argument("query")
@click.option("--k", type=click.IntRange(1, 100), default=10, show_default=True, help="How many papers to list.")
@_filter_options
@click.option("--json", "as_json", is_flag=True, help="Print the matches as JSON.")
@click.pass_context
def search(ctx, query, k, category, venue, author, year_from, year_to, as_json) -> None:
    """List the papers the hybrid ranking finds, each with its best matching sentence."""
    from rag.answering.chain import Assistant
    from rag.answering.papersearch import lacking_note

    filters = _filters(category, venue, author, year_from, year_to)
    matches = Assistant(_index(ctx), ctx.obj).search_papers(query, filters=filters, k=k)
    if as_json:
        out.print_json(json.dumps([m.model_dump(mode="json") for m in matches]))
        return
    # What the search says follows the query's language, as an answer's words follow its question.
    language = language_of(query)
    if not matches:
        err.print(f"[yellow]{say('cli.no_match', language)}[/]")
    if note := lacking_note(matches, language):
        out.print(f"[yellow]{safe(note)}[/]")
    for match in matches:
        print_paper(match.source)
        why = [say("cli.score", language, score=f"{match.source.score:.2f}")]
        why += [say("cli.matched", language, terms=", ".join(match.matched))] if match.matched else []
        why += [say("cli.lacks", language, terms=", ".join(match.lacks))] if match.lacks else []
        out.print(f"    [dim]{safe(' · '.join(why))}[/]" + (f"  [yellow]{say('cli.weak', language)}[/]" if match.weak else ""))
        sentence = Text("    “" + terminal_safe(to_plain(match.sentence)) + "”")
        sentence.highlight_words(match.matched, style="bold yellow", case_sensitive=False)
        out.print(sentence)


@cli.command()
@click.argument("query", required=False, default="")
@click.option(
    "--column", "columns", multiple=True, help="A question for every paper (repeatable); default: problem, method, data, result."
)
@click.option(
    "--ids", "ids", multiple=True, help="The papers' ids, instead of the papers a collection answer to QUERY lists (repeatable)."
)
@_filter_options
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), help="Also write the table as CSV.")
@click.option("--markdown", "md_path", type=click.Path(path_type=Path), help="Also write it as Markdown, with references.")
@click.option("--bib", "bib_path", type=click.Path(path_type=Path), help="Also write its papers as BibTeX.")
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@click.pass_context
def table(ctx, query, columns, ids, category, venue, author, year_from, year_to, csv_path, md_path, bib_path, as_json) -> None:
    """A research table: a row per paper, a column per question, each cell the abstract's sentence
    that answers it (cited) or "not in the abstract"."""
    from rich.table import Table

    from rag.answering.chain import Assistant
    from rag.answering.research import MAX_ROWS, PRESET, cell_text, rows_source
    from rag.export import bibtex, research_csv, research_markdown
    from rag.records import ResearchTable

    filters = _filters(category, venue, author, year_from, year_to)
    language = _language(ctx)
    if not query and not ids and not filters.active:
        raise click.UsageError(
            f"give a QUERY (its collection answer's papers are the rows), --ids, or a filter (its first {MAX_ROWS} papers)"
        )
    for path in (csv_path, md_path, bib_path):
        if path is not None:
            checked_output(path)
    assistant = Assistant(_index(ctx), ctx.obj)
    columns = assistant.table_columns(columns or tuple(PRESET))
    papers = assistant.table_papers(query, ids=ids, filters=filters)
    if not papers:
        err.print(f"[yellow]{say('cli.no_rows', language)}[/]")
        sys.exit(1)
    rows = []
    with progress_bar() as progress:
        task = progress.add_task(say("cli.cells", language), total=len(papers) * len(columns))
        for row in assistant.research_table(papers, columns):
            rows.append(row)
            progress.advance(task, len(columns))
    source = rows_source(query, picked=len(papers) if ids else 0, filters=filters)
    result = ResearchTable(columns=tuple(columns), rows=tuple(rows), source=source)
    for path, write in (
        (csv_path, research_csv),
        (md_path, lambda t: research_markdown(t, papers)),
        (bib_path, lambda _: bibtex(papers)),
    ):
        if path is not None:
            write_output(path, write(result))
            _wrote(path, language)
    if as_json:
        out.print_json(json.dumps(result.model_dump(mode="json")))
        return
    shown = Table(say("cli.paper", language), *(safe(c) for c in columns), show_lines=True)
    for number, row in enumerate(rows, 1):
        cells = [
            safe(cell_text(c, number, language=language)) if c.quote else f"[dim]{safe(cell_text(c, language=language))}[/]"
            for c in row.cells
        ]
        shown.add_row(f"{safe(to_plain(row.title))} [{number}]", *cells)
    out.print(shown)


@cli.command()
@click.argument("paper")
@click.option("--json", "as_json", is_flag=True, help="Print the whole answer record as JSON.")
@click.pass_context
def summarize(ctx, paper: str, as_json: bool) -> None:
    """Summarize one paper (by id or words of its title), citing it."""
    assistant = _assistant(ctx)
    if print_stream(assistant.stream_summary(paper), as_json=as_json, model=_model(assistant)).cut_off:
        sys.exit(1)


@cli.command()
@click.option("--k", type=click.IntRange(1, 50), help="How many papers to retrieve.")
@_filter_options
@click.pass_context
def chat(ctx, k, category, venue, author, year_from, year_to) -> None:
    """A conversation in the terminal: follow-ups use the earlier answers. Empty line or /quit ends;
    Ctrl+C stops an answer."""
    assistant = _assistant(ctx)
    filters = _filters(category, venue, author, year_from, year_to)
    language = _language(ctx)
    out.print(f"[dim]{escape(say('cli.chat_intro', language, n=len(assistant.index)))}[/]")
    history: list[Answer] = []
    while True:
        try:
            question = click.prompt("\n" + say("cli.you", language), prompt_suffix="> ", default="", show_default=False).strip()
        except (EOFError, click.Abort):
            break
        if question in ("", "/quit", "/exit"):
            break
        try:
            answer = print_stream(
                assistant.stream(question, history=history, k=k, filters=filters), as_json=False, model=_model(assistant)
            )
        except PaperChatError as exc:
            _print_error(exc, language)
            continue
        except KeyboardInterrupt:
            # Ctrl+C stops this answer, as in a shell, not the conversation; at the prompt it leaves.
            out.print()
            err.print(f"[dim]{say('cli.stopped', language)}[/]")
            continue
        history.append(answer)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def stats(ctx, as_json: bool) -> None:
    """What the index holds."""
    s = _index(ctx).stats()
    if as_json:
        out.print_json(json.dumps(s.__dict__, default=str))
        return
    language = _language(ctx)
    out.print(escape(say("cli.stats", language, papers=s.papers, chunks=s.chunks, model=s.embedding_model, location=s.location)))
    for label, counts in (("cli.venues", s.venues), ("cli.categories", s.categories), ("cli.years", s.years)):
        if counts:
            out.print(f"{say(label, language)}: " + ", ".join(f"{safe(str(k))} ({v})" for k, v in list(counts.items())[:15]))


@cli.command()
@click.argument("paper_ids", nargs=-1, required=True)
@click.pass_context
def remove(ctx, paper_ids: tuple[str, ...]) -> None:
    """Delete papers (by id) and their chunks from the index."""
    for paper in _index(ctx).remove(paper_ids, waiting=_busy):
        out.print(safe(say("cli.removed", _language(ctx), id=paper.id, title=paper.display_title)))


@cli.command()
@click.confirmation_option(prompt="Delete every paper from the index?")
@click.pass_context
def reset(ctx) -> None:
    """Empty the index."""
    _index(ctx).reset(waiting=_busy)
    out.print(say("cli.emptied", _language(ctx)))


@cli.command("eval")
@click.option("--set", "set_path", type=click.Path(path_type=Path), help="A .jsonl question set or a BEIR folder.")
@click.option("--compare", nargs=2, type=click.Path(path_type=Path), help="Print the metric deltas of two reports: A B.")
@click.option("--backend", type=click.Choice(["auto", "extractive", "openai", "local"]), help="Who writes the answers.")
@click.option("--k", type=click.IntRange(1, 50), help="How many papers each answer sees.")
@click.option(
    "--judge",
    type=click.Choice(["auto", "similarity", "llm"]),
    default="auto",
    show_default=True,
    help="Who decides support; auto: the LLM judge (checked against similarity) with a model, else similarity.",
)
@click.option(
    "--retriever",
    type=click.Choice(["hybrid", "fused", "dense", "bm25"]),
    default="hybrid",
    show_default=True,
    help="Rank by the fusion reranked by the verifier, by the fusion alone (fused), or by one signal alone.",
)
@click.option("--retrieval-only", is_flag=True, help="Score the rankings only; write no answers.")
@click.option("--depth", type=click.IntRange(10, 1000), help="How deep rankings are scored [100 for BEIR sets, else 10].")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions.")
@click.option(
    "--skip",
    type=click.IntRange(0),
    default=0,
    help="Leave out the first N questions (with --limit, a slice: questions not looked at while building).",
)
@click.option("--split", help="A BEIR qrels split [test, or the only one], or a question set's half (calibration, report).")
@click.option(
    "--corpus",
    type=click.Path(path_type=Path),
    help="Judge the set over this corpus file (indexed once) instead of the configured index.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Where each run's report folder is written [PAPERCHAT_REPORTS_DIR, or <data dir>/eval-reports].",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path),
    help="A stopped or partial run's report folder: ask its failed and unasked questions with the run's own "
    "set and options (so with no other option), keep its scored ones, and complete its report in place.",
)
@click.pass_context
def eval_(
    ctx, set_path, compare, backend, k, judge, retriever, retrieval_only, depth, limit, skip, split, corpus, out_dir, resume
) -> None:
    """Measure retrieval, citations, faithfulness and refusals on a question set; write a report.

    A question the backend fails is recorded as failed and the run goes on; after
    PAPERCHAT_EVAL_MAX_FAILURES (3) failures in a row it stops. Either way the report is written,
    and the exit status is 1 unless every question was scored: --resume asks the rest. Ctrl+C
    stops it the same way, with the questions scored so far kept (exit status 130).
    """
    from rag.errors import EvalIncompleteError
    from rag.evaluation.evaluate import INTERRUPTED
    from rag.evaluation.report import incomplete, read_report

    if compare:
        _print_comparison(read_report(compare[0]), read_report(compare[1]))
        return
    if resume is not None:
        given = [
            p.opts[0]
            for p in ctx.command.params
            if p.name != "resume" and ctx.get_parameter_source(p.name) is not ParameterSource.DEFAULT
        ]
        if given:
            raise click.UsageError(f"--resume runs with the options of the run it resumes: leave out {', '.join(given)}")
    elif set_path is None:
        raise click.UsageError("pass --set (a question set or BEIR folder), --resume FOLDER or --compare A B")
    from rag.evaluation.run import evaluate
    from rag.evaluation.run import resume as resume_run
    from rag.evaluation.sets import load_eval_set

    settings = ctx.obj.model_copy(update={"backend": backend} if backend else {})
    if resume is None:
        eval_set = load_eval_set(set_path, split=split)
        if corpus is not None:
            eval_set = eval_set.model_copy(update={"corpus": str(corpus.resolve())})
        if skip:
            eval_set = eval_set.model_copy(update={"items": eval_set.items[skip:]})
    with progress_bar() as bar:
        indexing = bar.add_task(f"indexing {resume.name if resume else eval_set.name}", total=None)
        asking = bar.add_task("asking", total=None, visible=False)

        def ask_progress(done: int, total: int) -> None:
            bar.update(asking, completed=done, total=total, visible=True)
            bar.update(indexing, visible=False)

        hooks: dict[str, Any] = {
            "indexing": lambda done, total: bar.update(indexing, completed=done, total=total),
            "asking": ask_progress,
            "describe": lambda text: err.print(f"[dim]{escape(text)}[/]"),
        }
        run = (
            resume_run(resume, settings, **hooks)
            if resume
            else evaluate(
                eval_set,
                settings,
                judge=judge,
                retriever=retriever,
                answers=not retrieval_only,
                k=k,
                depth=depth,
                limit=limit,
                out=out_dir,
                **hooks,
            )
        )
    if run.missing_gold:
        err.print(
            f"[yellow]warning: {len(run.missing_gold)} gold papers of {run.report.set_name} are not in the index at {run.index_location}[/]"
        )
    _print_report(run.report)
    out.print(f"report: {run.folder / 'report.md'}")
    shortfall = incomplete(run.report)
    if shortfall:
        raise EvalIncompleteError(
            f"evaluation incomplete: {shortfall}; partial report: {run.folder / 'report.md'}",
            folder=run.folder,
            interrupted=run.report.stopped == INTERRUPTED,
        )


def _print_report(report) -> None:
    from rag.evaluation.report import agreement_text

    if report.judge_note:
        err.print(f"[bold yellow]{escape(report.judge_note)}[/]")
    from rag.evaluation.metrics import label

    # The id beside each name: what report.json and scripts reading it call the metric.
    table = Table("metric", "id", "value", "items", title=f"{report.set_name} · {report.backend} · {report.retriever}")
    for metric, value in report.metrics.items():
        table.add_row(label(metric), f"[dim]{escape(metric)}[/]", f"{value:.3f}", str(report.counts[metric]))
    out.print(table)
    if report.judge_agreement:
        out.print(escape(agreement_text(report)))
    latency = Table("stage", "p50 (ms)", "p95 (ms)", title="latency")
    for stage, v in report.latency.items():
        latency.add_row(stage, f"{v['p50'] * 1000:.0f}", f"{v['p95'] * 1000:.0f}")
    out.print(latency)


def _print_comparison(before, after) -> None:
    from rag.evaluation.evaluate import compare
    from rag.evaluation.metrics import label

    table = Table(
        "metric",
        "A",
        "B",
        "B - A",
        title=f"A: {before.set_name} {before.backend} {before.created}\nB: {after.set_name} {after.backend} {after.created}",
    )
    for delta in compare(before, after):
        digits = 1 if delta.metric.endswith("(ms)") else 3

        def cell(value, sign="", digits=digits):
            return "" if value is None else f"{value:{sign}.{digits}f}"

        colour = "" if delta.better is None else "green" if delta.better else "red"
        change = cell(delta.change, "+")
        table.add_row(label(delta.metric), cell(delta.before), cell(delta.after), f"[{colour}]{change}[/]" if colour else change)
    out.print(table)


@cli.command()
@click.option("--port", type=int, default=8501, show_default=True)
@click.pass_context
def ui(ctx, port: int) -> None:
    """Open the chat in the browser (Streamlit) on this index."""
    import os

    app = Path(__file__).resolve().parents[1] / "ui" / "app.py"
    env = {**os.environ, "PAPERCHAT_DATA_DIR": str(ctx.obj.data_dir), "PAPERCHAT_BACKEND": ctx.obj.backend}
    out.print(say("cli.open", _language(ctx), url=f"http://127.0.0.1:{port}"))
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "minimal",
    ]
    # Become the server, so Ctrl+C and a terminate reach it directly.
    sys.stdout.flush()
    os.execve(sys.executable, command, env)


def main() -> None:
    # bibtexparser logs each bad block itself, with 0-based lines; our error already names it.
    logging.getLogger("bibtexparser").setLevel(logging.ERROR)
    cli(prog_name="paperchat")


if __name__ == "__main__":
    main()
