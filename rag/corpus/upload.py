"""A corpus or a question set sent as bytes (the app's upload), never used as a path.

An upload (`load_upload`) is refused whole, before it is parsed, above ``max_upload_mb`` (a .gz
decompressed), and when it holds more than ``max_upload_records`` records; a file given to
`paperchat ingest` is streamed and has neither cap. Its name is never used as a path
(`read_upload`): the bytes are written under a safe name in a temporary folder.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from rag.corpus.reading import DEFAULT_LIMITS, collect, read_corpus
from rag.errors import CorpusError, RecordError
from rag.records import Limits, LoadResult

T = TypeVar("T")

_MB = 1 << 20  # as Streamlit's server.maxUploadSize counts a megabyte

# The extensions that tell the format (".jsonl.gz").
_EXTENSIONS = re.compile(r"(\.[A-Za-z0-9]{1,10}){1,2}$")


def _copy_name(filename: str) -> str:
    """An upload's name made one safe file name: its last part, with only letters, digits, "_"
    and "-" kept before its extensions (so no "..", "/", NUL or leading dot), and short enough
    for any file system. A question set is named by it."""
    base = re.split(r"[/\\]", filename)[-1]
    extensions = _EXTENSIONS.search(base)
    extension = extensions[0] if extensions else ""
    stem = re.sub(r"[^\w-]", "_", base.removesuffix(extension))[:50]
    return (stem or "upload") + extension


def read_upload(filename: str, data: bytes, load: Callable[[Path], T]) -> T:
    """`load` run on bytes sent as a file of that name (an upload in the chat).

    The name is never used as a path: the copy is written under `_copy_name` in a temporary
    folder, so no name ("../../x.jsonl", "/etc/x", "..", a NUL) can place it anywhere else or
    keep it from being written. Errors name the file as the user knows it, not the copy.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / _copy_name(filename)
        path.write_bytes(data)
        try:
            return load(path)
        except RecordError as exc:
            raise RecordError(filename, exc.line, exc.reason, hint=exc.hint) from None
        except CorpusError as exc:
            raise CorpusError(exc.message.replace(str(path), filename), hint=exc.hint) from None


def load_upload(filename: str, data: bytes, *, skip_invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> LoadResult:
    """A corpus sent as bytes (the chat's upload), within the upload limits; skipped records name
    the file too."""
    _check_upload_size(filename, data, limits.max_upload_mb)
    result = read_upload(
        filename,
        data,
        lambda path: collect(
            _at_most(read_corpus(path, skip_invalid=skip_invalid, limits=limits), filename, limits.max_upload_records)
        ),
    )
    skipped = tuple(s.model_copy(update={"path": filename}) for s in result.skipped)
    return result.model_copy(update={"skipped": skipped})


_UPLOAD_HINT = "ingest it with `paperchat ingest FILE`, which streams a file of any size, or raise"


def _check_upload_size(filename: str, data: bytes, max_mb: int) -> None:
    limit = max_mb * _MB
    if len(data) > limit:
        what = ""
    elif filename.lower().endswith(".gz") and _inflated_size(data, limit) > limit:
        what = " decompressed"  # a few kB of gzip can inflate to gigabytes
    else:
        return
    raise CorpusError(
        f"{filename} is over {max_mb:,} MB{what}, the most an upload may be (PAPERCHAT_MAX_UPLOAD_MB)",
        hint=f"{_UPLOAD_HINT} PAPERCHAT_MAX_UPLOAD_MB",
    )


def _inflated_size(data: bytes, limit: int) -> int:
    """The size of gzipped bytes decompressed, counted up to just past `limit`."""
    size = 0
    # A broken gzip file is reported by the loader, which reads it next.
    with contextlib.suppress(OSError, EOFError, zlib.error), gzip.open(io.BytesIO(data)) as inflating:
        while size <= limit and (block := inflating.read(_MB)):
            size += len(block)
    return size


def _at_most(records: Iterator[T], filename: str, limit: int) -> Iterator[T]:
    """The records, or an error on reading the one past `limit` (not after reading them all)."""
    for count, record in enumerate(records, 1):
        if count > limit:
            raise CorpusError(
                f"{filename} holds over {limit:,} records, the most an upload may hold (PAPERCHAT_MAX_UPLOAD_RECORDS)",
                hint=f"{_UPLOAD_HINT} PAPERCHAT_MAX_UPLOAD_RECORDS",
            )
        yield record
