"""One writer at a time per collection of the embedded store: an inter-process lock beside it.

Chroma's embedded store is not safe with two writing processes: each keeps the collection's
vector index (HNSW) in memory and writes it back over the other's. Measured with chromadb 1.5.9:
two `paperchat ingest`s of 1,500 papers each into one folder at once both reported success, and
998 of the 3,900 chunks were gone from the vector index (reading their vectors raised "Error
finding id"); two raw chromadb writers of 3,000 rows each left a collection whose next read
crashed the process. Every write (ingest, remove, reset) therefore holds this lock; reads never
take it: 321 reads during a 1,500-paper ingest failed none and changed nothing.

The lock is the operating system's (flock, through `filelock`): it dies with its process, so a
writer that was killed leaves no lock behind, only the file naming its pid, which the next writer
overwrites. A Chroma server orders its clients' writes itself, so an index there takes none.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from rag.errors import IndexBusyError, StoreError

# Told, once, that the write waits for another process, and why.
Waiting = Callable[[str], None]

# How often a waiting writer tries again: nothing beside an ingest, and the try costs a system call.
_POLL = 0.1


class WriteLock:
    """The write lock of one collection, in the file `path`; `where` names the index in messages."""

    def __init__(self, path: Path, where: str, timeout: float) -> None:
        self.path = path
        self.holder_path = path.with_suffix(".holder")
        self.where = where
        self.timeout = timeout

    def holder(self) -> int | None:
        """The pid of the last process that took the lock: while it is held, the one holding it."""
        try:
            return int(self.holder_path.read_text(encoding="ascii"))
        except (OSError, ValueError):
            return None

    def _who(self) -> str:
        pid = self.holder()
        if pid is None:
            return "another paperchat process"
        # The app's sessions share one process.
        return f"another session of this process (pid {pid})" if pid == os.getpid() else f"another paperchat process (pid {pid})"

    @contextmanager
    def held(self, waiting: Waiting | None = None) -> Iterator[None]:
        """Hold the lock for the block. If another process holds it, tell `waiting` and wait for
        it up to the timeout, then raise IndexBusyError."""
        lock = FileLock(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                if waiting is not None and self.timeout > 0:
                    waiting(f"waiting for another ingest to finish: {self._who()} is writing to {self.where}…")
                lock.acquire(timeout=self.timeout, poll_interval=_POLL)
            self.holder_path.write_text(str(os.getpid()), encoding="ascii")
        except Timeout:
            raise IndexBusyError(
                f"index busy: {self._who()} is writing to {self.where}",
                hint=f"try again when it finishes, or wait longer: PAPERCHAT_LOCK_TIMEOUT is {self.timeout:g} s",
            ) from None
        except OSError as exc:
            lock.release()
            raise StoreError(
                f"cannot lock the index at {self.where} for writing: {exc}",
                hint="set PAPERCHAT_DATA_DIR to a writable folder",
            ) from exc
        try:
            yield
        finally:
            lock.release()
