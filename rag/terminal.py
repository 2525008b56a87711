"""What the command line prints: answers streamed as they come, their sources, tables and
unsupported claims, progress bars, and every corpus or model text made safe for a terminal."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.style import Style
from rich.table import Table
from rich.text import Text

from rag.markup import terminal_safe, to_plain
from rag.models.prompts import say
from rag.progress import PlainProgress
from rag.records import Grade
from rag.text import language_of

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def safe(text: str) -> str:
    """Corpus or model text for a line of Rich markup: shown as written, never acted on."""
    return escape(terminal_safe(text))


class Rate(ProgressColumn):
    """Items per second (papers, questions), once there is a rate to show."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:.1f}/s" if task.speed else "", style="progress.data.speed")


def progress_bar() -> Progress | PlainProgress:
    """A bar on a terminal; else (a log, a pipe) a plain line at least every 30 s."""
    if not err.is_terminal:
        return PlainProgress(sys.stderr)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    )


def terminal_text(markdown: str) -> Text:
    """An answer's Markdown as terminal text: bold and italic styled, escapes undone."""
    from rag.markup import styled_segments

    return Text.assemble(*styled_segments(terminal_safe(markdown)))


def terminal_language(setting: str) -> str:
    """The language of the command line's own words: the setting (PAPERCHAT_LANG), or where it
    is auto, the locale's, as POSIX ranks its variables (LC_ALL, then LC_MESSAGES, then LANG).
    An answer's words follow its question instead."""
    if setting != "auto":
        return setting
    locale = next((os.environ[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if os.environ.get(name)), "")
    return "zh" if locale.casefold().startswith("zh") else "en"


class Waiting:
    """'waiting for MODEL at URL (N s)', its seconds counting while a status spinner shows it."""

    def __init__(self, who: str, language: str = "en") -> None:
        self.who = who
        self.language = language
        self.since = time.monotonic()

    def __rich__(self) -> Text:
        return Text(
            f"{say('terminal.waiting', self.language, who=self.who)} ({time.monotonic() - self.since:.0f} s)", style="dim"
        )


@contextmanager
def waiting_for(who: str | None, language: str = "en"):
    """While a model has not answered: a live count on a terminal, one line elsewhere."""
    if who is not None and err.is_terminal:
        with err.status(Waiting(who, language)):
            yield
        return
    if who is not None:
        err.print(f"[dim]{escape(say('terminal.waiting', language, who=who))}…[/]")
    yield


_GRADE_STYLES = {Grade.ANSWERS: "green", Grade.BEST_MATCH: "yellow", Grade.NOT_FOUND: "red"}


def print_stream(events: Iterator, *, as_json: bool, show_all: bool = False, model: str | None = None):
    """Stream tokens to stdout as they come, then the cited papers; returns the Answer. `model`
    names the model (and where it runs) that a status line waits for, if one writes the answer."""
    from rag.answering.answerability import grade_label
    from rag.answering.chain import DoneEvent, SourcesEvent, StatusEvent, TokenEvent

    answer = None
    table = False
    waiting = ExitStack()
    with waiting:
        for event in events:
            if isinstance(event, SourcesEvent):
                language = language_of(event.standalone_question)
                if not as_json and event.analysis is not None:
                    searched = say(
                        "terminal.searched_for", language, what=event.analysis.search_text, how=event.analysis.summary_line
                    )
                    err.print(f"[dim]{safe(searched)}[/]")
                if event.note and not as_json:
                    # What no abstract holds comes first: the quotes after it are what they do say.
                    out.print(Text(terminal_safe(event.note), style="yellow"))
                if event.sources:
                    waiting.enter_context(waiting_for(model, language))
            elif isinstance(event, StatusEvent):
                err.print(f"[yellow]{safe(event.text)}[/]")
            elif isinstance(event, TokenEvent):
                waiting.close()
                if as_json:
                    continue
                # A comparison's Markdown table is printed as a table once the answer is done.
                if event.text.lstrip().startswith("|"):
                    table = True
                    continue
                out.print(terminal_text(event.text), end="")
            elif isinstance(event, DoneEvent):
                answer = event.answer
    if answer is None:
        raise RuntimeError("the answer stream ended without a final answer")
    if as_json:
        out.print_json(answer.model_dump_json())
        return answer
    out.print()
    if answer.grade is not None:
        out.print(Text(f"[{grade_label(answer.grade, answer.language)}]", style=_GRADE_STYLES[answer.grade]))
    if answer.cut_off:
        err.print(f"[bold red]{say('terminal.cut_off', answer.language)}[/] {safe(answer.cut_off)}")
    if table and answer.table is not None:
        print_table(answer)
    print_references(answer, show_all=show_all)
    return answer


def print_table(answer) -> None:
    from rag.answering.forms.comparison import table_plain_rows

    rows = table_plain_rows(answer.table)
    table = Table(*(safe(c) for c in rows[0]), show_lines=True)
    for row in rows[1:]:
        table.add_row(*(safe(c) for c in row))
    out.print(table)


def print_unsupported(answer) -> None:
    """Each sentence the checks found unsupported, with the mark the app and the export put in the
    answer: the stream showed it before its citations were checked."""
    from rag.answering.check import UNSUPPORTED_MARK
    from rag.answering.citations import held_back_claims
    from rag.answering.markers import HELD_BACK_MARK

    marked = []
    for citation in answer.unsupported:
        why = (
            say("terminal.lacks_numbers", answer.language, numbers=", ".join(citation.unsupported_numbers))
            if citation.unsupported_numbers
            else say("terminal.not_said", answer.language)
        )
        marked.append((f"“{citation.citing_sentence}” [{citation.number}]", UNSUPPORTED_MARK, why))
    if answer.invalid_citations:
        held = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        why = say("terminal.cited_unknown", answer.language, numbers=held)
        marked += [(f"“{claim}”", HELD_BACK_MARK, why) for claim in held_back_claims(answer.text)]
    if marked:
        out.print(f"\n[bold]{say('terminal.unsupported', answer.language)}[/]")
    for sentence, mark, why in marked:
        out.print(Text.assemble("  ", terminal_safe(sentence), terminal_text(mark), f": {terminal_safe(why)}"))


def print_references(answer, *, show_all: bool = False) -> None:
    print_unsupported(answer)
    if answer.invalid_citations:
        numbers = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        err.print(f"[yellow]{say('terminal.held_back', answer.language, numbers=numbers)}[/]")
    if answer.covered and answer.uncited:
        err.print(f"[yellow]{say('terminal.uncited', answer.language)}[/]")
    cited = answer.cited_sources
    if cited:
        out.print(f"\n[bold]{say('terminal.sources', answer.language)}[/]")
    for s in cited:
        print_paper(s)
    matched = {m.number for m in answer.matches}
    more = [s for s in answer.sources if s.number in matched and s not in cited]
    if more:
        out.print(
            f"\n[bold]{say('terminal.more', answer.language, n=len(more))}[/]"
            + ("" if show_all else f" [dim]{escape(say('terminal.more_all', answer.language))}[/]")
        )
        sentences = {m.number: m.sentence for m in answer.matches}
        # All of them: the answer says they are all listed with the sources.
        for s in more:
            print_paper(s)
            if show_all:
                out.print(Text("    “" + terminal_safe(to_plain(sentences[s.number])) + "”", style="dim"))
    if answer.closest:
        out.print(f"\n[bold]{say('terminal.closest', answer.language)}[/]")
        for s in answer.closest:
            print_paper(s)
    if answer.choices:
        out.print()
        for s in answer.choices:
            print_paper(s)
        out.print(f"[dim]{say('terminal.choose', answer.language)}[/]")
    others = [s for s in answer.sources if s not in cited and s.number not in matched]
    if others and answer.covered and answer.form != "summary":
        out.print(
            f"[dim]{say('terminal.also', answer.language)} "
            + "; ".join(f"[{s.number}] {safe(s.paper.display_title)}" for s in others)
            + "[/]"
        )


def print_paper(source) -> None:
    p = source.paper
    where = " · ".join(x for x in (p.venue, p.category, str(p.year or "")) if x)
    out.print(f"[bold][{source.number}][/] {safe(p.display_title)}")
    out.print(f"    {safe(p.author_line)}" + (f" · {safe(where)}" if where else ""))
    if p.url:
        # The address as a style, not markup: markup cannot hold every address ("?ids[]=42").
        url = terminal_safe(p.url)
        out.print(Text.assemble("    ", (url, Style(link=url))))
