"""Progress where no bar can be drawn: output to a file, a pipe or a scheduler's log.

Rich draws a progress bar only on a terminal; redirected, a 35-minute ingest wrote one line. Here
each task says a plain line when it starts, at least every `every` seconds while it runs (from a
timer, so a long step between two updates still shows), and when it ends: done/total, the rate
and the time left. `PlainProgress` offers the part of `rich.progress.Progress` the CLI uses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from rich.progress import TaskID

__all__ = ["EVERY", "PlainProgress", "duration", "progress_line"]

# The bound: a line at least every 30 s.
EVERY = 30.0


def duration(seconds: float) -> str:
    """ "45 s", "12 min", "2 h 05 min"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def progress_line(description: str, done: float, total: float | None, elapsed: float, since: float = 0.0) -> str:
    """ "indexing corpus.jsonl: 1,200/13,687, 11.2/s, about 19 min left"; the rate counts what was
    done in `elapsed` seconds, from `since` done when they began."""
    if not total and not done:
        return f"{description}…"  # nothing to count yet: "indexing seed: 0" read as a result
    parts = [f"{description}: {done:,.0f}/{total:,.0f}" if total else f"{description}: {done:,.0f}"]
    rate = (done - since) / elapsed if done > since and elapsed > 0 else 0.0
    if rate:
        parts.append(f"{rate:.1f}/s")
        if total and done < total:
            parts.append(f"about {duration((total - done) / rate)} left")
    return ", ".join(parts)


@dataclass
class _Task:
    description: str
    total: float | None
    visible: bool
    started: float
    completed: float = 0.0
    # Done when it started: a task first shown at its first update (the eval's "asking"), or a
    # resumed run, would otherwise claim that work for the first instant ("1/76, 295421.0/s").
    since: float = 0.0
    said: str = ""


@dataclass
class PlainProgress:
    """Plain progress lines for each visible task, written to `out`."""

    out: TextIO
    every: float = EVERY
    clock: Callable[[], float] = time.monotonic
    tasks: dict[TaskID, _Task] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopped: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> PlainProgress:
        threading.Thread(target=self._tick, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self.say(changed=True)  # where each task ended, unless its last line says it already

    def add_task(self, description: str, total: float | None = None, visible: bool = True) -> TaskID:
        with self._lock:
            number = TaskID(len(self.tasks))
            self.tasks[number] = _Task(description, total, visible, self.clock())
        if visible:
            self.say(number)
        return number

    def update(
        self, task: TaskID, *, completed: float | None = None, total: float | None = None, visible: bool | None = None
    ) -> None:
        with self._lock:
            state = self.tasks[task]
            shown = state.visible
            if completed is not None:
                state.completed = completed
            if total is not None:
                state.total = total
            if visible is not None:
                state.visible = visible
            if visible and not shown:
                state.started, state.since = self.clock(), state.completed  # its rate counts from here
        if visible and not shown:
            self.say(task)

    def advance(self, task: TaskID, by: float = 1) -> None:
        with self._lock:
            self.tasks[task].completed += by

    def say(self, *numbers: TaskID, changed: bool = False) -> None:
        """A line for each of these tasks (every visible one if none is named); with `changed`,
        only for those whose line differs from the last it said."""
        now = self.clock()
        lines = []
        with self._lock:
            chosen = [self.tasks[n] for n in numbers] if numbers else [t for t in self.tasks.values() if t.visible]
            for task in chosen:
                line = progress_line(task.description, task.completed, task.total, now - task.started, task.since)
                if not (changed and line == task.said):
                    lines.append(line)
                    task.said = line
        for line in lines:
            self.out.write(line + "\n")
        self.out.flush()

    def _tick(self) -> None:
        while not self._stopped.wait(self.every):
            self.say()
