"""Follow-ups made standalone: references resolved by rule, a model's rewrite accepted only when
it is a plausible question.

"[2]" and "the second one" become the title of source 2 of the previous answer ("the last one"
its last source); "it" or "this paper", after an answer that cited one paper, becomes that
paper's title; any other follow-up that leans on a pronoun ("what about its results?") is joined
to the previous standalone question so retrieval keeps the topic. With a model, the explicit
references go first: one the rules resolve is never sent to the model, and the pronoun rule is
the fallback when the model's rewrite is not kept. A model's rewrite is kept only when it
reads as one question: one line, not much longer than the question and the previous one, with no
prompt text leaked into it ("Conversation:", "User:").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.records import Answer

__all__ = ["SUMMARY_REQUEST", "acceptable_rewrite", "resolve_by_rule", "resolve_references"]

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}
_ORDINAL_REF = re.compile(r"\bthe (first|second|third|fourth|fifth|sixth|last) (one|paper|source|work)\b", re.I)
_NUMBER_REF = re.compile(r"\[(\d{1,2})\]")
_SINGLE_REF = re.compile(r"\b(it|this paper|that paper|this one|that one|the paper)\b", re.I)
_PRONOUN = re.compile(r"\b(it|its|this|that|these|those|they|them|their|the paper|the papers)\b", re.I)
SUMMARY_REQUEST = re.compile(r"^\s*(summari[sz]e|give (me )?a summary of|tl;?dr( of)?)\s+(?P<ref>.+?)\s*[?.!]*\s*$", re.I)
_LEAKED = re.compile(r"\b(conversation|user|assistant|last message|standalone question|rewrite|system)\s*:", re.I)


def resolve_references(question: str, history: Sequence[Answer]) -> str:
    """The follow-up with its explicit references ("[2]", "the second one", "it" after one cited
    paper) replaced by titles; unchanged when it has none."""
    if not history:
        return question
    last = history[-1]
    titles = {s.number: s.paper.display_title for s in last.sources}

    def title_of(number: int, fallback: str) -> str:
        return f'"{titles[number]}"' if number in titles else fallback

    resolved = _NUMBER_REF.sub(lambda m: title_of(int(m.group(1)), m.group(0)), question)
    resolved = _ORDINAL_REF.sub(
        lambda m: title_of(
            max(titles) if m.group(1).lower() == "last" and titles else _ORDINALS.get(m.group(1).lower(), 0), m.group(0)
        ),
        resolved,
    )
    if resolved != question:
        return resolved
    cited = {c.number for c in last.citations}
    if len(cited) == 1 and _SINGLE_REF.search(question):
        # "Summarize it" after an answer from one paper means that paper.
        return _SINGLE_REF.sub(title_of(cited.pop(), "it"), question, count=1)
    return question


def resolve_by_rule(question: str, history: Sequence[Answer]) -> str:
    """The follow-up made standalone by the rules above; unchanged when none applies."""
    resolved = resolve_references(question, history)
    if resolved != question or not history:
        return resolved
    if _PRONOUN.search(question) and len(question.split()) <= 15:
        return f"{question} (following up on: {history[-1].standalone_question})"
    return question


def acceptable_rewrite(rewrite: str, question: str, history: Sequence[Answer]) -> bool:
    """Whether a model's rewrite of a follow-up is a plausible standalone question."""
    text = rewrite.strip()
    if not text or "\n" in text or _LEAKED.search(text):
        return False
    previous = history[-1].standalone_question if history else ""
    limit = max(40, 2 * (len(question.split()) + len(previous.split())))
    if len(text.split()) > limit:
        return False
    known = set(re.findall(r"\w{4,}", f"{question} {previous}".casefold()))
    return not known or bool(known & set(re.findall(r"\w{4,}", text.casefold())))
