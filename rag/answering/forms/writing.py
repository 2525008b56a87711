"""How extractive answers quote: a paper's short name, then its own sentences in quotation marks,
each cited, so a quote never reads as the assistant's own voice ("**MoH**: “...” [1]").

Quotes are plain text: LaTeX becomes Unicode and the abstract's Markdown emphasis is dropped, then
the result is escaped, so a quote shows exactly the abstract's words in every view.
"""

from __future__ import annotations

import re

from rag.markup import escape_markdown, to_plain
from rag.records import Paper

__all__ = ["clip", "label", "quote"]

_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)\*(?=\w)|(?<=\w)\*(?!\w)")


def label(paper: Paper) -> str:
    """The paper's short name in bold, escaped; without a closing full stop, which would split the
    label from its quote ("**Foo.**: ...")."""
    return f"**{escape_markdown(paper.short_name.rstrip(' .!?'))}**"


def plain_sentence(sentence: str) -> str:
    return _EMPHASIS.sub("", to_plain(sentence)).strip()


def quote(sentence: str, number: int, *, words: int | None = None) -> str:
    """“sentence” [n], or its first `words` words and "…" when it is longer."""
    text = plain_sentence(sentence)
    if words is not None:
        text = clip(text, words)
    return f"“{escape_markdown(text)}” [{number}]"


def clip(text: str, words: int) -> str:
    tokens = text.split()
    return text if len(tokens) <= words else " ".join(tokens[:words]).rstrip(",;:") + " …"
