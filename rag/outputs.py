"""Files the CLI writes on request (`--export`, `--csv`, `--markdown`, `--bib`): checked before any
work is done, and written whole or not at all.

A path fails the check when its folder is missing, when it is a folder or a special file (a pipe,
a device, `/proc`), or when its folder cannot be written. The text goes to a temporary file
beside it, renamed over the path once complete, so a full disk or Ctrl+C never leaves half a file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from rag.errors import OutputPathError

__all__ = ["checked_output", "write_output", "write_whole"]

_HINT = "give a file path in a folder that exists and that you can write to"


def checked_output(path: Path) -> Path:
    """`path` if a file can be written there; else our error saying why."""
    folder = path.parent
    if not folder.is_dir():
        reason = "is not a folder" if folder.exists() else "does not exist"
        raise OutputPathError(f"cannot write {path}: its folder {folder} {reason}", hint=_HINT)
    if path.is_dir():
        raise OutputPathError(f"cannot write {path}: it is a folder", hint=_HINT)
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise OutputPathError(f"cannot write {path}: it is not a regular file", hint=_HINT)
    if not os.access(folder, os.W_OK):
        raise OutputPathError(f"cannot write {path}: the folder {folder} is not writable", hint=_HINT)
    return path


def write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` whole: a temporary file beside it (a dot-name, out of a listing's
    sight), flushed to disk, then renamed over it; the temporary file is gone whatever fails.
    Raises OSError."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_output(path: Path, text: str) -> None:
    """Write `text` to a path the user gave, whole (`write_whole`), or our error saying why not."""
    checked_output(path)
    try:
        write_whole(path, text)
    except OSError as exc:
        raise OutputPathError(f"cannot write {path}: {exc.strerror or exc}", hint=_HINT) from exc
