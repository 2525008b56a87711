"""The next batch of an ingest read (and split) while this one is written (`rag.index.readahead`)."""

from __future__ import annotations

import pytest

from rag.errors import CorpusError
from rag.index import readahead
from rag.index.readahead import ReadAhead
from rag.records import Paper, SkippedRecord


def _papers(n: int) -> list[Paper]:
    return [Paper(id=f"p{i}", title=f"Paper {i}", abstract=f"We study problem {i}. It is hard.") for i in range(n)]


def test_batches_come_in_order_and_only_a_batch_asked_to_be_split_is_split(monkeypatch):
    split: list[str] = []
    monkeypatch.setattr(readahead, "evidence_texts", lambda paper: split.append(paper.id))
    bad = SkippedRecord(path="papers.jsonl", line=3, reason="missing abstract")
    papers = _papers(5)
    got = []
    with ReadAhead([*papers[:2], bad, *papers[2:]], 2) as batches:
        for number, batch in enumerate(batches):
            got.append([getattr(r, "id", "skipped") for r in batch])
            # The first batch's papers are written: split the next; the second's are not.
            batches.ahead(split=number == 0)
    assert got == [["p0", "p1"], ["skipped", "p2"], ["p3", "p4"]]
    assert split == ["p2"]


def test_an_error_reading_the_stream_reaches_the_ingest():
    def stream():
        yield from _papers(3)
        raise CorpusError("papers.jsonl: line 4 is not JSON", hint="fix the line")

    with pytest.raises(CorpusError, match="line 4"), ReadAhead(stream(), 2) as batches:
        for _ in batches:
            batches.ahead(split=False)
