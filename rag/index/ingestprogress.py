"""How far an ingest has come: within a batch, as its texts are embedded, and, when Ctrl+C stops
it, how many papers are in the index whole.

A batch of 256 papers takes a minute or more on a loaded laptop, too long for a counter to stand
still (issue 38): its texts are embedded a slice at a time, and each slice moves the count by
the share of the batch's texts it holds. That count runs ahead of what is written, so a stop
says the papers of the batches written whole instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["SLICE", "BatchProgress", "IngestStopped"]

# Texts embedded at a time, the count moving after each: 32 chunks are about a second of the
# model on a loaded 2-core machine (abstract chunks at ~30/s; sentences and words run faster).
SLICE = 32


class IngestStopped(KeyboardInterrupt):
    """Ctrl+C during an ingest, with the papers it had written whole: the batches before the one
    it stopped in."""

    def __init__(self, indexed: int) -> None:
        super().__init__()
        self.indexed = indexed


class BatchProgress:
    """A batch of `size` papers after `before`, told to `progress` (if any) as its texts are embedded:
    every text is expected (`expect`), then each slice embedded (`embedded`) moves the count by
    its share of them, never back (unchanged papers' sentences may be expected after the rest)."""

    def __init__(
        self, progress: Callable[[int, int], None] | None = None, *, before: int = 0, size: int = 0, total: int | None = None
    ) -> None:
        self.progress, self.before, self.size = progress, before, size
        self.total = max(total or 0, before + size)
        self.texts = self.done = 0
        self.shown = 0.0

    def expect(self, texts: int) -> None:
        self.texts += texts

    def embedded(self, texts: int) -> None:
        self.done += texts
        self.shown = max(self.shown, self.done / max(self.texts, 1))
        if self.progress:
            self.progress(self.before + int(self.size * self.shown), self.total)

    def slices(self, count: int) -> Iterator[slice]:
        """The slices of `count` expected texts, each counted as embedded once the caller is done
        with it."""
        for start in range(0, count, SLICE):
            yield slice(start, min(start + SLICE, count))
            self.embedded(min(SLICE, count - start))
