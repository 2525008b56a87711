"""The corpus map kept beside the index, one file per store generation (`Index.corpus_map`): written
whole or not at all, the older generations' removed, a damaged one read as none and made again."""

from __future__ import annotations

import os
from pathlib import Path

from rag.index.maprecords import CorpusMap


def read_map(path: Path | None) -> CorpusMap | None:
    """The map saved at `path`; None when there is none, or it is damaged (it is made again)."""
    if path is None:
        return None
    try:
        return CorpusMap.model_validate_json(path.read_bytes())
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None


def save_map(path: Path, corpus_map: CorpusMap) -> None:
    """Save whole or not at all, and remove the maps of older generations beside it."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(corpus_map.model_dump_json(), encoding="utf-8")
        partial.replace(path)
    except OSError:  # a read-only place only costs the next process the making
        partial.unlink(missing_ok=True)
        return
    for older in path.parent.glob("*.json"):
        if older != path:
            older.unlink(missing_ok=True)
