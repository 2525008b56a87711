"""Checks on an answer's text, as it streams and once it is done.

- `StreamGuard` holds back what could still turn out wrong until it is known: a citation marker
  until its closing bracket and the character after it, so a number that names no retrieved
  source is dropped before it is shown (nothing shown is retracted; a marker cut whole leaves
  HELD_BACK_MARK), and a tag until its closing
  ">", so a model's stray "</summary>" never reaches the answer. However the stream is cut into
  pieces, it shows what checking the whole answer at once gives.
- `check_support` asks, of every citation, whether the cited sentence supports the claim (the
  calibrated similarity judge's bar, its own for a claim in Chinese, or a copy of the sentence) and whether every number the
  claim states is in that sentence. `mark_unsupported` marks the markers that fail in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from rag.answering.citations import CROSSLINGUAL_SUPPORT_THRESHOLD, SUPPORT_THRESHOLD, marker_owners
from rag.answering.markers import HELD_BACK_MARK, drop_invalid, settled, settled_head
from rag.markup import to_plain
from rag.records import Citation
from rag.text import in_cjk

__all__ = ["DECLINE_MARK", "UNSUPPORTED_MARK", "DeclineOpening", "StreamGuard", "check_support", "mark_unsupported"]

# How a model says the sources do not answer (prompts/answer_system.md): the reply opens with it.
DECLINE_MARK = "NOT COVERED"

UNSUPPORTED_MARK = " *(unsupported)*"
# Tags a model may wrap its answer in, echoing the prompt ("<summary>", "</answer>").
_TAG = re.compile(r"</?\s*(summary|answer|response|output|sources?|abstract|question|context|final)\s*/?>", re.I)
# What may follow a "<" that still opens a tag, once the whole tags after it are cut.
_TAG_SO_FAR = re.compile(r"[\s/a-z<]*", re.I)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?:\s?%)?")


class StreamGuard:
    """Filters streamed text: drops citations of unknown numbers and stray tags (see above). Where
    a marker is cut whole, `mark` says so, so the app, the terminal and the export all show it."""

    def __init__(self, valid: Collection[int], *, mark: str = HELD_BACK_MARK) -> None:
        self.valid = set(valid)
        self.mark = mark
        self.dropped: set[int] = set()  # the numbers held back because they name no source
        self._tags = _Settling(_untag, _tags_settled, len)
        self._markers = _Settling(self._drop, settled, settled_head)

    def _drop(self, text: str) -> str:
        text, invalid = drop_invalid(text, self.valid, mark=self.mark)
        self.dropped.update(invalid)
        return text

    def feed(self, piece: str) -> str:
        return self._markers.feed(self._tags.feed(piece))

    def flush(self) -> str:
        return self._markers.feed(self._tags.feed("", final=True), final=True)


class DeclineOpening:
    """Holds a model's reply back until its opening tells whether it is a decline ("NOT COVERED:
    ..."), so a decline is never shown as an answer; after that, what it is fed passes through,
    or, for a decline, is kept as its `reason`."""

    def __init__(self) -> None:
        self.held = ""
        self.decided = False
        self.declined = False

    def feed(self, piece: str, *, final: bool = False) -> str:
        if self.decided:
            if self.declined:
                self.held += piece
                return ""
            return piece
        self.held += piece
        opening = self.held.lstrip(' \n*_#>`"“').upper()
        if len(opening) < len(DECLINE_MARK) and DECLINE_MARK.startswith(opening) and not final:
            return ""
        self.decided = True
        self.declined = opening.startswith(DECLINE_MARK)
        if self.declined:
            return ""
        shown, self.held = self.held, ""
        return shown

    @property
    def reason(self) -> str:
        """What the model said after its mark: why the sources do not answer."""
        text = self.held.lstrip(' \n*_#>`"“')[len(DECLINE_MARK) :]
        return text.strip(" :.-*_\n").strip()


class _Settling:
    """A change to a text applied as it streams in, and passed on as far as no text still to come
    can alter it (`settled`). What a marker or tag becomes depends on what is around it, so the
    change is made to the text back to the last point before which it is done for good (`head`:
    the change of the text before it and after it, made apart, is its change of the whole)."""

    def __init__(self, change: Callable[[str], str], settled: Callable[[str], int], head: Callable[[str], int]) -> None:
        self._change, self._settled, self._head = change, settled, head
        self._text = ""  # the text since the last head
        self._passed = 0  # how much of its change has been passed on

    def feed(self, piece: str, *, final: bool = False) -> str:
        self._text += piece
        end = len(self._text) if final else self._settled(self._text)
        head = self._head(self._text[:end])
        done, rest = self._change(self._text[:head]), self._change(self._text[head:end])
        new = (done + rest)[self._passed :]
        self._text, self._passed = self._text[head:], len(rest)
        return new


def _untag(text: str) -> str:
    # Cutting a tag joins the text around it, which can spell another ("<sum<summary>mary>").
    while (untagged := _TAG.sub("", text)) != text:
        text = untagged
    return text


def _tags_settled(text: str) -> int:
    """How much of `text` loses the same tags whatever follows: up to a "<" that may open one."""
    return next(
        (i for i, char in enumerate(text) if char == "<" and _TAG_SO_FAR.fullmatch(_untag(text[i + 1 :]))),
        len(text),
    )


def _numbers(text: str) -> set[str]:
    return {n.replace(" ", "").rstrip("%").replace(",", "") for n in _NUMBER.findall(to_plain(text))}


def check_support(citations: Sequence[Citation]) -> tuple[Citation, ...]:
    """The citations, each marked supported or not (see the module docstring)."""
    checked = []
    for citation in citations:
        support = to_plain(citation.support)
        missing = sorted(_numbers(citation.citing_sentence) - _numbers(support))
        bar = CROSSLINGUAL_SUPPORT_THRESHOLD if in_cjk(citation.citing_sentence) else SUPPORT_THRESHOLD
        supported = citation.support_score >= bar and not missing
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
