"""Follow-ups made standalone: references resolved by rule, a model's rewrite accepted only when
it is a plausible question, and a reference the previous answer does not settle asked back.

References are read against what the previous answer showed. "[2]" is source 2 of the sources it
numbered (cited or not, a decline's closest papers, a clarification's choices). "The second one"
counts the papers it gave, in the order a reader meets them: those it cites, by first citation
(a collection's list order); for a decline its closest papers, for a clarification its choices;
"the last one" is the last of them. "It" or "this paper" after an answer that cited one paper is
that paper. Each settled reference becomes the paper's title. A reference the answer does not
settle ("the third one" when it cited two papers, "[7]" when it showed no [7], "it" when it cited
several) is unclear: the chain asks which paper is meant, offering the papers it gave, rather
than guessing. A reply to that question naming a choice ("2", or words of one title) is the
clarified question, asked again with that paper.

Any other follow-up that leans on a pronoun ("what about its results?") is joined to the previous
standalone question so retrieval keeps the topic. With a model, the explicit references go
first: one the rules resolve is never sent to the model, and the pronoun rule is the fallback
when the model's rewrite is not kept. A model's rewrite is kept only when it reads as one
question: one line, not much longer than the question and the previous one, with no prompt text
leaked into it ("Conversation:", "User:").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.records import Answer, Source

__all__ = [
    "SUMMARY_REQUEST",
    "Reading",
    "acceptable_rewrite",
    "listed_papers",
    "read_references",
    "resolve_by_rule",
    "resolve_references",
    "with_choice",
]

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}
_EXPLICIT_REF = re.compile(
    r"\[(?P<number>\d{1,2})\]|\bthe (?P<ordinal>first|second|third|fourth|fifth|sixth|last) (one|paper|source|work)\b",
    re.I,
)
# "The paper that ..." describes a paper rather than pointing back at one.
_SINGLE_REF = re.compile(
    r"\b(it|this paper|that paper|this one|that one|"
    r"the paper(?!\s+(that|which|who|whose|on|about|by|from|where|with|introducing|proposing|titled|called)\b))\b",
    re.I,
)
_PRONOUN = re.compile(r"\b(it|its|this|that|these|those|they|them|their|the paper|the papers)\b", re.I)
# A title the user or a rule quoted holds no reference, whatever its words.
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
# "Is it true that ...", "it is possible to ...": an "it" that points at nothing.
_EXPLETIVE_IT = re.compile(
    r"\b(is it|was it|it is|it was|it['’]s)\s+(not\s+)?"
    r"(true|possible|known|the case|worth|better|necessary|common|clear|feasible|important|likely|hard|easy)\b",
    re.I,
)
_CHOICE_NUMBER = re.compile(r"^\[?(\d{1,2})\]?$")
SUMMARY_REQUEST = re.compile(r"^\s*(summari[sz]e|give (me )?a summary of|tl;?dr( of)?)\s+(?P<ref>.+?)\s*[?.!]*\s*$", re.I)
_LEAKED = re.compile(r"\b(conversation|user|assistant|last message|standalone question|rewrite|system)\s*:", re.I)


@dataclass(frozen=True)
class Reading:
    """A follow-up read against the previous answer."""

    question: str  # with each reference the previous answer settles replaced by the paper's quoted title
    unclear: str = ""  # the first reference it does not settle, as written ("the third one", "[7]", "it")
    choices: tuple[Source, ...] = ()  # what an unclear reference may mean, numbered 1.. as offered
    why: str = ""  # what the previous answer showed, which leaves the reference unclear

    @property
    def ask_back(self) -> str:
        """The clarifying question: which paper the unclear reference means."""
        return f"Which paper do you mean by “{self.unclear}”? {self.why}"


def _blanked(pattern: re.Pattern[str], text: str) -> str:
    """The text with `pattern`'s matches blanked out, so positions in it are positions in `text`."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _searchable(question: str) -> str:
    """Where references are looked for: outside quoted titles and expletive "it"s."""
    return _blanked(_EXPLETIVE_IT, _blanked(_QUOTED, question))


def _cited(answer: Answer) -> tuple[Source, ...]:
    by_number = {s.number: s for s in answer.sources}
    order = dict.fromkeys(c.number for c in answer.citations)
    return tuple(by_number[n] for n in order if n in by_number)


def listed_papers(answer: Answer) -> tuple[Source, ...]:
    """The papers an answer gives, in the order a reader meets them: those it cites, by first
    citation; else a decline's closest papers or a clarification's choices."""
    return _cited(answer) or answer.closest or answer.choices


def _count(papers: Sequence[Source]) -> str:
    return "no paper" if not papers else "one paper" if len(papers) == 1 else f"{len(papers)} papers"


def _gave(answer: Answer, papers: Sequence[Source]) -> str:
    verb = "lists" if not answer.citations and (answer.closest or answer.choices) else "cites"
    return f"The last answer {verb} {_count(papers)}."


def _titled(question: str, spans: Sequence[tuple[re.Match[str], Source]]) -> str:
    """The question with each matched reference replaced by its paper's quoted title."""
    for match, source in sorted(spans, key=lambda pair: -pair[0].start()):
        question = f'{question[: match.start()]}"{source.paper.display_title}"{question[match.end() :]}'
    return question


def _numbered(sources: Sequence[Source]) -> tuple[Source, ...]:
    return tuple(s.model_copy(update={"number": n}) for n, s in enumerate(sources, 1))


def _picked(reply: str, choices: Sequence[Source]) -> Source | None:
    """The choice a reply to a clarification names: its number, or words of its title and no other's."""
    text = reply.strip().strip(" .?!\"'“”").casefold()
    number = _CHOICE_NUMBER.match(text)
    if number:
        return next((c for c in choices if c.number == int(number.group(1))), None)
    named = [c for c in choices if len(text) >= 3 and text in c.paper.display_title.casefold()]
    return named[0] if len(named) == 1 else None


def read_references(question: str, history: Sequence[Answer]) -> Reading:
    """The follow-up's references to the previous answer's papers: settled ones replaced by
    titles, and the first unclear one with the papers it may mean."""
    if not history:
        return Reading(question)
    last = history[-1]
    if last.choices:
        chosen = _picked(question, last.choices)
        if chosen is not None:
            return Reading(with_choice(last, chosen))
    shown = {s.number: s for s in (*last.sources, *last.closest, *last.choices)}
    listed = listed_papers(last)
    searchable = _searchable(question)
    explicit = list(_EXPLICIT_REF.finditer(searchable))
    if explicit:
        settled: list[tuple[re.Match[str], Source]] = []
        unclear: tuple[re.Match[str], str] | None = None
        for match in explicit:
            if match["number"]:
                source = shown.get(int(match["number"]))
                why = f"The last answer shows no source {match.group(0)}."
            else:
                position = len(listed) if match["ordinal"].lower() == "last" else _ORDINALS[match["ordinal"].lower()]
                source = listed[position - 1] if 0 < position <= len(listed) else None
                why = _gave(last, listed)
            if source is not None:
                settled.append((match, source))
            elif unclear is None:
                unclear = (match, why)
        resolved = _titled(question, settled)
        choices = listed or tuple(shown.values())
        if unclear is not None and choices:
            match, why = unclear
            return Reading(resolved, unclear=match.group(0), choices=_numbered(choices), why=why)
        return Reading(resolved)
    single = _SINGLE_REF.search(searchable)
    cited = _cited(last)
    if single is None or not cited:
        return Reading(question)
    if len(cited) == 1:
        # "Summarize it" after an answer from one paper means that paper.
        return Reading(_titled(question, [(single, cited[0])]))
    return Reading(question, unclear=single.group(0), choices=_numbered(cited), why=_gave(last, cited))


def with_choice(clarification: Answer, choice: Source) -> str:
    """The question a clarification asked about, with the chosen paper in place of its unclear
    reference: the first reference it left as written (those it settled are quoted titles)."""
    question = clarification.standalone_question
    searchable = _searchable(question)
    reference = _EXPLICIT_REF.search(searchable) or _SINGLE_REF.search(searchable)
    if reference is None:
        raise ValueError(f"{question!r} holds no reference to replace: it is not a clarification's question")
    return _titled(question, [(reference, choice)])


def resolve_references(question: str, history: Sequence[Answer]) -> str:
    """The follow-up with the references the previous answer settles replaced by titles;
    unchanged when it has none."""
    return read_references(question, history).question


def resolve_by_rule(question: str, history: Sequence[Answer]) -> str:
    """The follow-up made standalone by the rules above; unchanged when none applies."""
    resolved = resolve_references(question, history)
    if resolved != question or not history:
        return resolved
    if _PRONOUN.search(_blanked(_QUOTED, question)) and len(question.split()) <= 15:
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
