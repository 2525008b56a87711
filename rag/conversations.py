"""Saved conversations: one readable JSON file per conversation, `<id>.json` in
`Settings.conversations_dir`.

A file holds a format number, the id, a title, when the conversation was started and when its
last turn was added, and its turns: the `Answer` records whole (text, citations, sources), so a
reopened conversation is drawn and exported as it was first shown. A file is written whole or
not at all, so a crash mid-save leaves the version before it.

Titles, ids and adding a turn are pure; `ConversationStore` reads and writes the folder.
"""

from __future__ import annotations

import re
import secrets
import stat
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import AwareDatetime, ValidationError

from rag.errors import ConversationError, ConversationNotFoundError
from rag.markup import to_plain
from rag.outputs import write_whole
from rag.records import Answer, Record, ResearchTable

__all__ = [
    "FORMAT",
    "Conversation",
    "ConversationList",
    "ConversationStore",
    "ConversationSummary",
    "SkippedFile",
    "added",
    "row_dates",
    "row_titles",
    "started",
    "tabled",
    "title_for",
    "when",
]

# The file format's version: a later PaperChat that changes the layout raises it, and this one
# refuses a file of a newer format instead of misreading it.
FORMAT = 1
# The most a conversation's file may hold: a long conversation with a research table is well
# under 1 MB.
MAX_BYTES = 32_000_000
# Ids come back from a URL (?c=<id>), so they are checked to be plain file names: no separator,
# no dot, nothing a file system treats specially.
_ID = re.compile(r"[0-9a-z][0-9a-z-]{0,63}")
# What fits a line of the sidebar.
TITLE_CHARS = 48
# What a row of the sidebar's list shows at its default width, its date included: the button
# cuts the rest ("05:44 (2) List papers on optimi…" is 31). The open conversation's row, a
# filled button with an icon, shows less ("05:45 List papers on o…").
ROW_CHARS = 30
OPEN_ROW_CHARS = 21


class Conversation(Record):
    """A saved conversation. `updated` is when its last turn (or its table) was added, and orders
    the list (a rename leaves it). Times carry their zone (ISO 8601 in the file), so any two
    compare."""

    format: int = FORMAT
    id: str
    title: str
    created: AwareDatetime
    updated: AwareDatetime
    turns: tuple[Answer, ...] = ()
    # The research table built beside it (the Table page), reopened with it.
    table: ResearchTable | None = None


class ConversationSummary(Record):
    """A conversation as the list shows it."""

    id: str
    title: str
    updated: AwareDatetime
    turns: int


class SkippedFile(Record):
    """A file of the folder the list left out, why, and what to do about it."""

    path: str
    reason: str
    hint: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class ConversationList(Record):
    """The saved conversations, newest first, and the files that could not be read."""

    conversations: tuple[ConversationSummary, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()


# --- pure -------------------------------------------------------------------------------------


def title_for(question: str) -> str:
    """A conversation's title from its first question: its words in plain text, cut at a word
    to fit a line, with "…" when cut."""
    words = to_plain(question).split()
    title = ""
    for word in words:
        longer = f"{title} {word}" if title else word
        if len(longer) > TITLE_CHARS:
            return (title or word[:TITLE_CHARS]) + "…"
        title = longer
    return title or "Untitled"


def _check_id(folder: Path, id: str) -> str:
    """`id` if a conversation can have it; else ConversationNotFoundError (no file is looked for)."""
    if not _ID.fullmatch(id):
        raise ConversationNotFoundError(
            folder,
            f"{id!r} is not a conversation id (lowercase letters, digits and dashes)",
            hint="open one from the list of saved conversations (a file is listed when its name is such an id)",
        )
    return id


def _new_id(now: datetime) -> str:
    # The time first, so the folder lists the files in the order they were started.
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def started(answer: Answer, now: datetime) -> Conversation:
    """A new conversation whose first turn is `answer`, titled after its question."""
    now = now.astimezone(UTC)
    return Conversation(
        id=_new_id(now),
        title=title_for(answer.question),
        created=now,
        updated=now,
        turns=(answer,),
    )


def tabled(table: ResearchTable, now: datetime) -> Conversation:
    """A new conversation holding only `table`, titled after what chose its rows."""
    now = now.astimezone(UTC)
    return Conversation(
        id=_new_id(now),
        title=title_for(f"Table: {table.source or ', '.join(table.columns)}"),
        created=now,
        updated=now,
        table=table,
    )


def added(conversation: Conversation, answer: Answer, now: datetime) -> Conversation:
    """`conversation` with `answer` as its next turn."""
    return conversation.model_copy(update={"turns": (*conversation.turns, answer), "updated": now.astimezone(UTC)})


def _summary(conversation: Conversation) -> ConversationSummary:
    return ConversationSummary(
        id=conversation.id, title=conversation.title, updated=conversation.updated, turns=len(conversation.turns)
    )


def when(moment: datetime, now: datetime) -> str:
    """When `moment` was, as a list says it in `now`'s time zone: "14:02" today, "Dec 5" earlier
    this year, "Dec 5, 2024" before."""
    moment = moment.astimezone(now.tzinfo)
    if moment.date() == now.date():
        return f"{moment:%H:%M}"
    day = f"{moment:%b} {moment.day}"
    return day if moment.year == now.year else f"{day}, {moment.year}"


def _to_the_minute(moment: datetime, now: datetime) -> str:
    day = when(moment, now)
    return day if moment.astimezone(now.tzinfo).date() == now.date() else f"{day}, {moment.astimezone(now.tzinfo):%H:%M}"


def row_dates(summaries: Sequence[ConversationSummary], now: datetime) -> list[str]:
    """The date each row of the list shows beside its title (`when` its last turn was), such that
    no two rows read alike: conversations of one title on one day show the time too, and those
    of the same minute a number, oldest first ("14:02 (2)")."""
    dates = [when(s.updated, now) for s in summaries]
    for rows in _alike(summaries, dates):
        for i in rows:
            dates[i] = _to_the_minute(summaries[i].updated, now)
    for rows in _alike(summaries, dates):
        for number, i in enumerate(sorted(rows, key=lambda i: (summaries[i].updated, summaries[i].id)), start=1):
            dates[i] = f"{dates[i]} ({number})"
    return dates


def row_titles(summaries: Sequence[ConversationSummary], dates: Sequence[str], *, open_id: str | None = None) -> list[str]:
    """The title each row shows after its date, such that two titles that read alike up to where
    the row is cut (ROW_CHARS, the date's included; OPEN_ROW_CHARS in the row of `open_id`, the
    open conversation) do not: each keeps its first word and goes on where the two part
    ("Table: … graph neural networks?"). The whole title is the row's tooltip."""
    shown = []
    for i, (summary, date) in enumerate(zip(summaries, dates, strict=True)):
        title = summary.title
        room = OPEN_ROW_CHARS if summary.id == open_id else ROW_CHARS
        # The differing letter must come before the row's end and its "…".
        visible = room - len(date) - 2
        shared = max(
            (_shared_start(title, other.title) for j, other in enumerate(summaries) if j != i and other.title != title),
            default=0,
        )
        first = title.find(" ")
        parting = title.rfind(" ", 0, shared + 1)
        if shared < visible or first < 0 or parting <= first:
            shown.append(title)
        else:
            shown.append(f"{title[:first]} …{title[parting:]}")
    return shown


def _shared_start(a: str, b: str) -> int:
    """How many characters `a` and `b` start with alike."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _alike(summaries: Sequence[ConversationSummary], dates: Sequence[str]) -> list[list[int]]:
    """The groups (two or more) of rows with the same title and date."""
    groups: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (summary, date) in enumerate(zip(summaries, dates, strict=True)):
        groups[summary.title, date].append(i)
    return [rows for rows in groups.values() if len(rows) > 1]


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {problem['msg']}{more}" if where else f"{problem['msg']}{more}"


# --- files ------------------------------------------------------------------------------------


class ConversationStore:
    """The conversations saved in `folder` (made at the first save)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, id: str) -> Path:
        return self.folder / f"{_check_id(self.folder, id)}.json"

    def list(self) -> ConversationList:
        """Every conversation the folder holds, newest first; a file that cannot be read is left
        out and named in `skipped`, so one bad file does not hide the others."""
        found, skipped = [], []
        for path in sorted(self.folder.glob("*.json")):
            try:
                found.append(_summary(self._read(path)))
            except ConversationError as error:
                # A file deleted meanwhile is just gone; any other (a name no id can have, bad
                # contents) is named.
                if path.exists():
                    skipped.append(SkippedFile(path=str(path), reason=error.reason, hint=error.hint))
        found.sort(key=lambda c: (c.updated, c.id), reverse=True)
        return ConversationList(conversations=tuple(found), skipped=tuple(skipped))

    def load(self, id: str) -> Conversation:
        return self._read(self.path(id))

    def save(self, conversation: Conversation) -> Path:
        """Write `conversation` to its file, replacing it whole: a temporary file beside it is
        renamed over it, which no crash can leave half done."""
        path = self.path(conversation.id)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # The list reads *.json only, so a crash's leftover stays out of sight.
            write_whole(path, conversation.model_dump_json(indent=2) + "\n")
        except OSError as exc:
            raise ConversationError(
                path,
                f"cannot save the conversation: {exc.strerror or exc}",
                hint="make the folder writable, or set PAPERCHAT_DATA_DIR to a folder that is",
            ) from None
        return path

    def add_turn(self, answer: Answer, to: str | None = None, *, now: datetime | None = None) -> Conversation:
        """Save `answer` as the next turn of conversation `to`, read afresh so a rename made
        meanwhile (another tab) is kept; or as the first turn of a new conversation when `to` is
        None or was deleted. Returns the conversation as saved."""
        now = now or datetime.now(UTC)
        try:
            conversation = added(self.load(to), answer, now) if to is not None else started(answer, now)
        except ConversationNotFoundError:
            conversation = started(answer, now)
        self.save(conversation)
        return conversation

    def save_table(self, table: ResearchTable, to: str | None = None, *, now: datetime | None = None) -> Conversation:
        """Keep `table` with conversation `to` (read afresh, its turns kept; a table saved before
        is replaced), or with a new conversation of its own when `to` is None or was deleted."""
        now = now or datetime.now(UTC)
        try:
            conversation = (
                self.load(to).model_copy(update={"table": table, "updated": now.astimezone(UTC)})
                if to is not None
                else tabled(table, now)
            )
        except ConversationNotFoundError:
            conversation = tabled(table, now)
        self.save(conversation)
        return conversation

    def rename(self, id: str, title: str) -> Conversation:
        title = " ".join(title.split())
        if not title:
            raise ConversationError(self.path(id), "a conversation's title cannot be blank", hint="type a title")
        conversation = self.load(id).model_copy(update={"title": title})
        self.save(conversation)
        return conversation

    def delete(self, id: str) -> None:
        """Remove the conversation's file; one already gone (deleted from another tab) is no error."""
        path = self.path(id)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ConversationError(
                path, f"cannot delete the conversation: {exc.strerror or exc}", hint="make the folder writable"
            ) from None

    def _read(self, path: Path) -> Conversation:
        id = _check_id(self.folder, path.stem)
        try:
            # Looked at before it is opened: opening a named pipe waits for a writer forever, and
            # a huge file would be read whole into memory.
            found = path.stat()
            if not stat.S_ISREG(found.st_mode):
                raise ConversationError(path, "not a regular file", hint="remove it from the conversations folder")
            if found.st_size > MAX_BYTES:
                raise ConversationError(
                    path,
                    f"{found.st_size / 1e6:,.0f} MB, past the {MAX_BYTES // 1_000_000} MB a conversation may take",
                    hint="move it out of the conversations folder",
                )
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConversationNotFoundError(
                path, "no such saved conversation", hint="it was deleted: open another, or start a new one"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise ConversationError(
                path, f"cannot read the saved conversation: {reason}", hint="make the file readable, or delete it"
            ) from None
        try:
            conversation = Conversation.model_validate_json(text)
        except ValidationError as exc:
            raise ConversationError(
                path,
                f"not a PaperChat conversation: {_first_problem(exc)}",
                hint="fix the file (it is JSON), or delete it to drop the conversation",
            ) from None
        if conversation.format > FORMAT:
            raise ConversationError(
                path,
                f"written by a newer PaperChat (format {conversation.format}; this one reads format {FORMAT})",
                hint="upgrade PaperChat to open it",
            )
        # The file's name is the id a URL and the list use: a copied file is a conversation of its own.
        return conversation.model_copy(update={"id": id})
