"""Checks on an answer's text, as it streams and once it is done.

- `StreamGuard` holds back what could still turn out wrong until it is known: a citation marker
  until its closing bracket, so a number that names no retrieved source is dropped before it is
  shown (nothing shown is retracted), and a tag until its closing ">", so a model's stray
  "</summary>" never reaches the answer.
- `check_support` asks, of every citation, whether the cited sentence supports the claim (the
  calibrated similarity judge's bar, or a copy of the sentence) and whether every number the
  claim states is in that sentence. `mark_unsupported` marks the markers that fail in the text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from rag.citations import drop_invalid, marker_owners
from rag.judges import SUPPORT_THRESHOLD
from rag.markup import to_plain
from rag.records import Citation

__all__ = ["StreamGuard", "check_support", "mark_unsupported", "UNSUPPORTED_MARK"]

UNSUPPORTED_MARK = " *(unsupported)*"
# Tags a model may wrap its answer in, echoing the prompt ("<summary>", "</answer>").
_TAG = re.compile(r"</?\s*(summary|answer|response|output|sources?|abstract|question|context|final)\s*/?>", re.I)
_HOLD = re.compile(r"\s*\[[^\]\n]{0,24}$|\s*<[^>\n]{0,24}$|\s+$")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?:\s?%)?")


class StreamGuard:
    """Filters streamed text: drops citations of unknown numbers and stray tags (see above)."""

    def __init__(self, valid: Collection[int]) -> None:
        self.valid = set(valid)
        self.dropped: set[int] = set()  # the numbers held back because they name no source
        self._pending = ""

    def _clean(self, text: str) -> str:
        text, invalid = drop_invalid(_TAG.sub("", text), self.valid)
        self.dropped.update(invalid)
        return text

    def feed(self, piece: str) -> str:
        text = self._pending + piece
        held = _HOLD.search(text)
        cut = held.start() if held else len(text)
        self._pending = text[cut:]
        return self._clean(text[:cut])

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return self._clean(text)


def _numbers(text: str) -> set[str]:
    return {n.replace(" ", "").rstrip("%").replace(",", "") for n in _NUMBER.findall(to_plain(text))}


def check_support(citations: Sequence[Citation]) -> tuple[Citation, ...]:
    """The citations, each marked supported or not (see the module docstring)."""
    checked = []
    for citation in citations:
        support = to_plain(citation.support)
        missing = sorted(_numbers(citation.citing_sentence) - _numbers(support))
        supported = citation.support_score >= SUPPORT_THRESHOLD and not missing
        checked.append(citation.model_copy(update={"supported": supported, "unsupported_numbers": tuple(missing)}))
    return tuple(checked)


def mark_unsupported(text: str, citations: Sequence[Citation]) -> str:
    """`text` with UNSUPPORTED_MARK after each marker citing a paper that does not support its sentence."""
    bad = {(c.number, c.citing_sentence) for c in citations if not c.supported}
    if not bad:
        return text
    out, cursor = "", 0
    for marker, claim in marker_owners(text):
        out += text[cursor : marker.end]
        cursor = marker.end
        if any((n, claim) in bad for n in marker.numbers):
            out += UNSUPPORTED_MARK
    return out + text[cursor:]
