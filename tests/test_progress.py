"""Progress lines for output that is not a terminal (`rag.progress`)."""

from __future__ import annotations

import io
import threading

from rag.progress import PlainProgress, duration, progress_line


def test_a_line_says_done_of_total_the_rate_and_the_time_left():
    assert (
        progress_line("indexing corpus.jsonl", 1200, 13687, 100.0)
        == "indexing corpus.jsonl: 1,200/13,687, 12.0/s, about 17 min left"
    )
    assert progress_line("asking", 0, 76, 3.0) == "asking: 0/76"
    assert progress_line("asking", 76, 76, 38.0) == "asking: 76/76, 2.0/s"
    assert progress_line("indexing", 40, None, 0.0) == "indexing: 40"
    assert progress_line("indexing seed", 0, None, 5.0) == "indexing seed…"  # not "indexing seed: 0"
    assert progress_line("asking", 30, 76, 10.0, since=20) == "asking: 30/76, 1.0/s, about 46 s left"
    assert [duration(s) for s in (4.4, 59, 61, 3600 + 5 * 60)] == ["4 s", "59 s", "1 min", "1 h 05 min"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_task_says_when_it_starts_and_where_it_ended():
    out, clock = io.StringIO(), Clock()
    with PlainProgress(out, every=3600, clock=clock) as progress:
        indexing = progress.add_task("indexing", total=20)
        hidden = progress.add_task("asking", total=None, visible=False)
        clock.now = 10.0
        progress.update(indexing, completed=20)
        progress.update(indexing, visible=False)
        progress.update(hidden, completed=0, total=4, visible=True)
        clock.now = 12.0
        progress.advance(hidden, 4)
    assert out.getvalue().splitlines() == [
        "indexing: 0/20",
        "asking: 0/4",  # shown when it becomes visible
        "asking: 4/4, 2.0/s",  # at the end, only the visible task
    ]


def test_a_task_shown_at_its_first_update_claims_no_rate_for_it_and_nothing_is_said_twice():
    # The eval's "asking" is shown when its first question is done: that question took the
    # seconds before it, not the instant since ("asking: 1/76, 295421.0/s" before).
    out, clock = io.StringIO(), Clock()
    with PlainProgress(out, every=3600, clock=clock) as progress:
        progress.add_task("indexing seed", total=None)
        asking = progress.add_task("asking", total=None, visible=False)
        clock.now = 40.0
        progress.update(asking, completed=1, total=76, visible=True)
        clock.now = 50.0
        progress.update(asking, completed=11)
    assert out.getvalue().splitlines() == [
        "indexing seed…",
        "asking: 1/76",
        "asking: 11/76, 1.0/s, about 1 min left",  # at the end; "indexing seed…" is not said again
    ]


class Lines(io.StringIO):
    """Output that signals when a line holding `wanted` is written."""

    def __init__(self, wanted: str) -> None:
        super().__init__()
        self.wanted, self.seen = wanted, threading.Event()

    def write(self, text: str) -> int:
        if self.wanted in text:
            self.seen.set()
        return super().write(text)


def test_a_running_task_is_said_again_without_any_update():
    # A long step between two updates still shows: the timer says the state, not an update.
    out = Lines("5/10")
    with PlainProgress(out, every=0.01) as progress:
        task = progress.add_task("embedding", total=10)
        progress.advance(task, 5)
        # A bound far above need: the timer fires every 10 ms.
        assert out.seen.wait(60), out.getvalue()
