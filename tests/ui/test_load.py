"""Issue 11's load: 8 browser sessions at once against one `paperchat ui`, 5 questions each,
driven by bench/load_ui.py (`make bench-load` prints its timings and memory)."""

from __future__ import annotations

import pytest
from conftest import BROWSER_ARTIFACTS
from load_ui import QUESTIONS, run_load

pytestmark = pytest.mark.slow


def test_eight_sessions_asking_at_once_all_get_their_answers(server):
    run = run_load(server, 8, QUESTIONS, screenshot=BROWSER_ARTIFACTS / "load-session-1.png")
    assert run.errors == []
    # Each finished answer has its source cards drawn (the driver waits for them).
    assert [s.answers for s in run.sessions] == [len(QUESTIONS)] * 8
    # The same questions get the same (extractive) answers in every session: nothing of one
    # session's conversation reaches another's.
    assert run.differences() == {}
