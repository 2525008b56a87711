"""What a question refers to beyond its own words: the papers it names by their short names, and
the earlier question a follow-up is joined to."""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAME_TOKEN = re.compile(r"[^\s,;:!?()\[\]\"“”]+")


def names_used(text: str, names: Mapping[str, str]) -> list[str]:
    """The papers' short names the question uses ("MoH", "Flat-LoRA"), as written: a lookup of
    the question's one- to three-word spans, so it costs the same for 20 names or 20,000."""
    tokens = [t.strip(".'’") for t in _NAME_TOKEN.findall(text)]
    tokens = [re.sub(r"['’]s$", "", t) for t in tokens]
    spans = (" ".join(tokens[start : start + size]) for size in (3, 2, 1) for start in range(len(tokens) - size + 1))
    return list(dict.fromkeys(span for span in spans if span in names))


def named_papers(text: str, names: Mapping[str, str]) -> tuple[str, ...]:
    """The papers whose short name the question uses."""
    return tuple(dict.fromkeys(names[name] for name in names_used(text, names)))


# How `rag.question.followup` joins a follow-up that leans on the last question to it, when no
# rule or model makes it standalone; read back here, so the joining words are never key terms.
_CONTEXT_MARK = " (following up on: "


def with_context(question: str, context: str) -> str:
    """The follow-up `question` joined to the real question it follows up on."""
    return f"{question}{_CONTEXT_MARK}{context})"


def split_context(text: str) -> tuple[str, str]:
    """A question's own words and the real question it follows up on ("" when it follows up on
    none). Records saved before follow-ups stopped nesting may join several: the innermost is the
    real question."""
    own, mark, rest = text.partition(_CONTEXT_MARK)
    if not mark or not rest.endswith(")"):
        return text, ""
    inner = rest[:-1]
    return own, split_context(inner)[1] or inner
