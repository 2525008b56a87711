"""A question asked in another language, searched in the abstracts' English: with a model, the
model writes the English search query, and the query is kept only when it is a plausible one.

The model sees the question as asked, so a query it writes is checked as a follow-up's rewrite is
(`rag.question.followup.one_line`): one line, no prompt text leaked, no tags inside. On top of
that it must be English (no CJK letter left in it), short (a query, not an answer), and keep every
name, acronym and number the question wrote in Latin letters or digits ("MoH", "LoRA", "2024"):
those are what BM25 finds a paper by, and a model that drops or "corrects" one searches for
something else. A query that fails is not searched; the question is then read by its meaning
offline (`rag.index.crosslingual`), as without a model.
"""

from __future__ import annotations

import re

from rag.question.followup import one_line
from rag.text import CJK

__all__ = ["MAX_QUERY_WORDS", "acceptable_query", "written_names"]

# An English search query for one question; a reply longer than this is an answer or an essay.
MAX_QUERY_WORDS = 40
_CJK_LETTER = re.compile(f"[{CJK}]")
# A run of Latin letters or digits inside a CJK question: a name, an acronym, a number.
_WRITTEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+\-]*[A-Za-z0-9]|[A-Za-z0-9]")


def written_names(question: str) -> tuple[str, ...]:
    """The names, acronyms and numbers `question` writes in Latin letters or digits, in order."""
    return tuple(dict.fromkeys(_WRITTEN.findall(question)))


def acceptable_query(reply: str, question: str) -> str | None:
    """A model's English search query for `question`, as kept, or None (see the module docstring)."""
    text = one_line(reply)
    if text is None or _CJK_LETTER.search(text) or len(text.split()) > MAX_QUERY_WORDS:
        return None
    if not re.search(r"[A-Za-z]{2,}", text):
        return None
    words = {w.casefold() for w in _WRITTEN.findall(text)}
    if any(name.casefold() not in words for name in written_names(question)):
        return None
    return text
