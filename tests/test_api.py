"""The library's public surface: what `import rag` gives."""

from __future__ import annotations

import rag
from rag.errors import PaperChatError


def test_every_error_we_raise_is_exported_from_rag():
    def subclasses(cls):
        return {cls} | {s for c in cls.__subclasses__() for s in subclasses(c)}

    ours = {c for c in subclasses(PaperChatError) if c.__module__ == "rag.errors"}
    assert len(ours) > 10
    assert {c.__name__ for c in ours} <= set(rag.__all__)
    assert all(getattr(rag, c.__name__) is c for c in ours)
