"""The next batch of an ingest read, and its abstracts split into sentences, while the model
embeds this one.

Splitting is Python (pysbd: about 4 ms an abstract, a fifth of what int8 MiniLM spends on a
paper), and done between the model's runs it leaves a core idle while the other works. In a
thread it runs while onnxruntime, which lets go of the GIL, keeps both cores busy; the results
are memoised (`rag.text.split_sentences`, `rag.index.papertext.paper_words`), so ingest's own
split of the batch finds them done.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice

from rag.index.papertext import evidence_texts
from rag.records import Paper, SkippedRecord

Batch = list[Paper | SkippedRecord]


class ReadAhead:
    """Batches of a paper stream, each read (and split, when asked) while the last is written."""

    def __init__(self, papers: Iterable[Paper | SkippedRecord], size: int) -> None:
        self._stream = iter(papers)
        self._size = size
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="paperchat-read-ahead")
        self._coming: Future[Batch] | None = None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *_: object) -> None:
        # On an error or Ctrl+C the batch being read is left to finish on its own.
        self._pool.shutdown(wait=False, cancel_futures=True)

    def ahead(self, *, split: bool) -> None:
        """Start reading the next batch; `split`: its papers will be written, so split them too
        (a batch of papers already indexed is only compared by hash: splitting it is waste)."""
        if self._coming is None:
            self._coming = self._pool.submit(self._read, split)

    def __iter__(self) -> Iterator[Batch]:
        while True:
            self.ahead(split=False)
            assert self._coming is not None
            batch, self._coming = self._coming.result(), None
            if not batch:
                return
            yield batch

    def _read(self, split: bool) -> Batch:
        batch = list(islice(self._stream, self._size))
        if split:
            for paper in batch:
                if isinstance(paper, Paper):
                    evidence_texts(paper)
        return batch
