"""Follow-ups made standalone: references resolved by rule, a model's rewrite accepted only when
it is a plausible question, and a reference the previous answer does not settle asked back.

References are read against what the previous answer showed. "[2]" is source 2 of the sources it
numbered (cited or not, a decline's closest papers, a clarification's choices). "The second one"
("the 2nd paper", "the tenth", up to "the twentieth") counts the papers it gave, in the order a
reader meets them: those it cites, by first citation (a collection's list order), then a
collection's further matches (its "and N more"); for a decline its closest papers, for a
clarification its choices. "The last one" ("the final one", "the second-to-last one") counts
from the end. "The one by Yuan" ("the paper by Li Yuan", "the one by Jin et al.") is the paper
among them with an author of that name, whole words of it, any case or accent: the cited ones
first, then the further matches. "It" or "this paper" after an answer that cited one paper (or a
clarification that offered one) is that paper. Each settled reference becomes the paper's title.

A reference the answer does not settle ("the third one" when it cited two papers, "[7]" when it
showed no [7], "it" when it cited several, "the one by Chen" when none or two of its papers are by
Chen) is unclear: the chain asks which paper is meant, offering the papers it may mean, rather
than guessing. "The paper by Smith" when none is by Smith is no reference: it describes a paper to
search for. A reference to one of a decline's closest papers is clear but not taken: they do not
answer the last question, so the chain says so, names the paper and offers it. A reply to either
question naming a choice ("2", words of one title, or "yes" to an offer of one paper) is the
question asked again with that paper.

A question that names its own subject is answered on its own, whatever came before: one that
asks for papers ("Which paper predicts the air resistance of a car from its shape?", "is there
work on ..."), or one with no pronoun whose specific words the last answer's papers do not have
("what about bandits with interference?"). Any other follow-up that leans on a pronoun ("what
about its results?"; in "How does MoH pick its heads?" the "its" is MoH's), or has no subject of its own ("any limitations?", "and on ImageNet?" after
an answer from a paper that reports ImageNet), is joined to the previous real question so
retrieval keeps the topic: to the question a follow-up to a follow-up leaned on, once, never
nested (question analysis reads the two apart, `rag.question.analysis`). With a
model, the explicit references go first: one the rules resolve is never sent to the model, and
the pronoun rule is the fallback when the model's rewrite is not kept. A model's rewrite is kept
only when it reads as one question: one line, not much longer than the question and the
previous one, with no prompt text leaked into it ("Conversation:", "User:") and no tags (those
wrapped around it are dropped), and, for a follow-up that leans on the last answer, still about
what that answer was about.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from rag.markup import escape_markdown
from rag.question.references import split_context, with_context
from rag.question.terms import key_terms, term_stems
from rag.question.vocabulary import ASPECTS
from rag.records import Answer, CorpusProfile, Source

__all__ = [
    "SUMMARY_REQUEST",
    "Reading",
    "acceptable_rewrite",
    "listed_papers",
    "one_line",
    "read_references",
    "resolve_by_rule",
    "resolve_references",
    "stands_alone",
    "with_choice",
]

_ORDINAL_WORDS: tuple[str, ...] = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
_ORDINAL_WORDS += ("tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth")
_ORDINAL_WORDS += ("eighteenth", "nineteenth", "twentieth")
# Positions counted from the end are negative: -1 is the last.
_ORDINALS = {word: n for n, word in enumerate(_ORDINAL_WORDS, 1)} | {"last": -1, "final": -1, "penultimate": -2}
_TO_LAST = r"(?:second|next)[- ]to[- ]last"
_NUMERAL = r"(\d{1,2})(?:st|nd|rd|th)"
_ORDINAL = "|".join([_TO_LAST, _NUMERAL, *sorted(_ORDINALS, key=len, reverse=True)])
_NOUN = r"one|paper|work|study|article"
# A name: its first word in any case ("the one by yuan") but no determiner ("the one by the
# authors of ..."), any further ones capitalized, so the words after it ("... by Yuan about
# bandits") are not taken for the name.
_NAME = (
    r"(?!(?i:the|a|an|its|their|this|that|these|those|same)\b)[^\W\d_](?:[^\W\d_]|['’\-])*(?:\s+[A-Z](?:[^\W\d_]|['’\-])*){0,2}"
)
_EXPLICIT_REF = re.compile(
    r"\[(?P<number>\d{1,2})\]"
    # "the seventh one", "the 7th paper", "the last source"; "the seventh" alone before "?" or the
    # end, or before another ordinal it is joined to ("the first and the third one").
    rf"|(?i:\bthe (?P<ordinal>{_ORDINAL})(?: (?:{_NOUN}|source)\b|(?=\s*(?:[?.!,;]|$)"
    rf"|\s+(?:and|or|with|to|vs\.?|versus)\s+(?:the\s+)?(?:{_ORDINAL})\b)))"
    rf"|(?i:\bthe (?P<noun>{_NOUN})(?: written| authored)? by )(?P<name>{_NAME})(?P<et_al>\s+et al\b\.?)?"
)
# "The paper that ..." describes a paper rather than pointing back at one.
_SINGLE_REF = re.compile(
    r"\b(it|this paper|that paper|this one|that one|"
    r"the paper(?!\s+(that|which|who|whose|on|about|by|from|where|with|introducing|proposing|titled|called)\b))\b",
    re.I,
)
# "Which paper ...", "is there work on ...", "papers on ...", "looking for ...": the question asks
# for papers, so it says what they are about.
_ASKS_FOR_PAPERS = re.compile(
    r"(?:^|[.?!;]\s+)\W*(?:(?:and|also|ok|okay|so|now|then|but|what about|how about)\b[,\s]*)*"
    r"(?:(?:which|what) (?:papers?|works?|studies|articles)\b"
    r"|(?:is|are) there (?:also |maybe |perhaps )?(?:a |an |any |another |other )?(?:papers?|works?|studies|articles|research)\b"
    r"|(?:any|find|list|show me|search for|give me)(?: me)? (?:a |an |the |some |other )?(?:papers?|works?|studies|articles|research)\b"
    r"|anything (?:on|about)\b|(?:i'?m |i am )?looking for\b|(?:the |a )?papers? (?:on|about|that|which|using|for|from)\b)"
    # "the music one", "the drag paper": a paper described by its topic, not pointed back at.
    rf"|\bthe (?!(?:{_ORDINAL}|other|same|previous|next|latter|former|above|cited|first|this|that)\b)[a-z][\w-]* (?:one|paper)\b",
    re.I,
)
# A word of a follow-up this specific (rag.question.terms), absent from the last answer, names a
# subject of its own.
_SUBJECT_WEIGHT = 0.15
_PRONOUN = re.compile(
    r"\b(it|its|this|that|these|those|they|them|their|the paper|the papers|"
    r"the (?:authors|method|approach|model|results|experiments|dataset|datasets|algorithm|framework))\b",
    re.I,
)
# A name the question gives before an "its" or "their", which is then the name's ("How does MoH
# pick its heads?"): a word after the first with a capital, not "I".
_GIVEN_NAME = re.compile(r"(?<=\s)(?:[A-Z][\w-]+|[\w-]*[a-z][A-Z][\w-]*)")
_POSSESSIVES = frozenset({"its", "their"})
# A title the user or a rule quoted holds no reference, whatever its words.
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
# "Is it true that ...", "it is possible to ...": an "it" that points at nothing.
_EXPLETIVE_IT = re.compile(
    r"\b(is it|was it|it is|it was|it['’]s)\s+(not\s+)?"
    r"(true|possible|known|the case|worth|better|necessary|common|clear|feasible|important|likely|hard|easy)\b",
    re.I,
)
_CHOICE_NUMBER = re.compile(r"^\[?(\d{1,2})\]?$")
# A yes to a clarification that offers one paper.
_YES = re.compile(r"^(yes|yeah|yep|sure|ok|okay|go ahead|do it|please do|please)(,?\s+(please|thanks|thank you))?$")
SUMMARY_REQUEST = re.compile(r"^\s*(summari[sz]e|give (me )?a summary of|tl;?dr( of)?)\s+(?P<ref>.+?)\s*[?.!]*\s*$", re.I)
_LEAKED = re.compile(r"\b(conversation|user|assistant|last message|standalone question|rewrite|system)\s*:", re.I)
# A tag a model wraps its reply in ("<question>", a stray "</summary>"), at either end of it ...
_EDGE_TAG = re.compile(r"^\s*</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>|</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>\s*$")
# ... or anywhere.
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")

Span = tuple[int, int]


@dataclass(frozen=True)
class Reading:
    """A follow-up read against the previous answer."""

    question: str  # with each reference the previous answer settles replaced by the paper's quoted title
    # The first reference it does not take, as written ("the third one", "[7]", "it"): unclear, or
    # naming a paper the last answer said does not answer.
    unclear: str = ""
    choices: tuple[Source, ...] = ()  # what that reference may mean, numbered 1.. as offered
    why: str = ""  # what the previous answer showed, which leaves the reference unclear or the paper not taken
    # For a paper the last answer said does not answer: what the chain offers to do with it.
    offer: str = ""

    @property
    def ask_back(self) -> str:
        """The clarifying question: which paper the unclear reference means, or whether to go on
        with the paper it names that does not answer."""
        if self.offer:
            return f"{self.why} {self.offer}"
        return f"Which paper do you mean by “{self.unclear}”? {self.why}"


@dataclass(frozen=True)
class _Reference:
    """An explicit reference found in a follow-up and what the previous answer makes of it."""

    span: Span
    text: str
    papers: tuple[Source, ...]  # the papers it may mean: one when settled
    why: str  # when not one: what the previous answer showed


def _blanked(pattern: re.Pattern[str], text: str) -> str:
    """The text with `pattern`'s matches blanked out, so positions in it are positions in `text`."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _searchable(question: str) -> str:
    """Where references are looked for: outside quoted titles and expletive "it"s."""
    return _blanked(_EXPLETIVE_IT, _blanked(_QUOTED, question))


def _points_back(text: str) -> bool:
    """Whether a pronoun of `text` points outside it: not an "its" or "their" after a name the
    text gives."""
    return any(
        m.group(0).casefold() not in _POSSESSIVES or not _GIVEN_NAME.search(text, 0, m.start()) for m in _PRONOUN.finditer(text)
    )


def _cited(answer: Answer) -> tuple[Source, ...]:
    by_number = {s.number: s for s in answer.sources}
    order = dict.fromkeys(c.number for c in answer.citations)
    return tuple(by_number[n] for n in order if n in by_number)


def _declined(answer: Answer) -> bool:
    """Whether the answer said the corpus does not answer, listing its closest papers instead."""
    return bool(answer.closest) and not answer.citations


def _groups(answer: Answer) -> tuple[tuple[Source, ...], ...]:
    """The papers an answer gives, in the order a reader meets them, nearest first: those it cites,
    then a collection's further matches; else a decline's closest papers or a clarification's choices."""
    cited = _cited(answer)
    if not cited:
        return (answer.closest or answer.choices,)
    by_number = {s.number: s for s in answer.sources}
    numbers = {s.number for s in cited}
    more = tuple(by_number[m.number] for m in answer.matches if m.number in by_number and m.number not in numbers)
    return (cited, more)


def listed_papers(answer: Answer) -> tuple[Source, ...]:
    """The papers an answer gives, in the order a reader meets them: those it cites, by first
    citation, then a collection's further matches; else a decline's closest papers or a
    clarification's choices."""
    return tuple(s for group in _groups(answer) for s in group)


def _count(papers: Sequence[Source], kind: str = "") -> str:
    return f"no {kind}paper" if not papers else f"one {kind}paper" if len(papers) == 1 else f"{len(papers)} {kind}papers"


def _gave(answer: Answer, papers: Sequence[Source], *, name: str = "") -> str:
    """What the last answer showed of `papers` (those by `name`, if given)."""
    by = f" by {name}" if name else ""
    if _declined(answer):
        return f"The last answer cites no paper; it lists {_count(papers, 'closest ')}{by}."
    cited = {s.number for s in _cited(answer)}
    listing = (not answer.citations and answer.choices) or any(s.number not in cited for s in papers)
    return f"The last answer {'lists' if listing else 'cites'} {_count(papers)}{by}."


def _fold(text: str) -> str:
    """Text as names are compared: any case, accents dropped ("Serrà" is "serra")."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


def _by_name(match: re.Match[str], papers: Sequence[Source]) -> tuple[Span, tuple[Source, ...]]:
    """The span of an author reference ("the one by Li Yuan et al.") and the papers with an author
    of that name: the most of its first words that are whole words of an author's name."""
    words = list(re.finditer(r"\S+", match["name"]))
    for n in range(len(words), 0, -1):
        name = re.compile(rf"(?<!\w){re.escape(_fold(' '.join(w.group(0) for w in words[:n])))}(?!\w)")
        found = tuple(s for s in papers if any(name.search(_fold(a)) for a in s.paper.authors))
        if found:
            end = match.end() if n == len(words) else match.start("name") + words[n - 1].end()
            return (match.start(), end), found
    return match.span(), ()


def _position(ordinal: str) -> int:
    numeral = re.fullmatch(_NUMERAL, ordinal, re.I)
    if numeral:
        return int(numeral.group(1))
    return -2 if re.fullmatch(_TO_LAST, ordinal, re.I) else _ORDINALS[ordinal.lower()]


def _reference(match: re.Match[str], answer: Answer) -> _Reference | None:
    """What the previous answer makes of an explicit reference; None for "the paper by X" when
    none of its papers is by X (a description of a paper, not a reference to one)."""
    listed = listed_papers(answer)
    if match["number"]:
        shown = {s.number: s for s in (*answer.sources, *answer.closest, *answer.choices)}
        source = shown.get(int(match["number"]))
        return _Reference(
            match.span(), match.group(0), (source,) if source else (), f"The last answer shows no source {match.group(0)}."
        )
    if match["ordinal"]:
        position = _position(match["ordinal"])
        index = position - 1 if position > 0 else len(listed) + position
        papers = (listed[index],) if 0 <= index < len(listed) else ()
        return _Reference(match.span(), match.group(0), papers, _gave(answer, listed))
    for group in _groups(answer):
        span, found = _by_name(match, group)
        if found:
            name = match.string[match.start("name") : span[1]].removesuffix(match["et_al"] or "")
            return _Reference(span, match.string[slice(*span)], found, _gave(answer, found, name=name.strip()))
    if match["noun"].lower() != "one":
        return None
    return _Reference(match.span(), match.group(0), (), _gave(answer, (), name=match["name"]))


def _titled(question: str, spans: Sequence[tuple[Span, Source]]) -> str:
    """The question with each span replaced by its paper's quoted title."""
    for (start, end), source in sorted(spans, key=lambda pair: -pair[0][0]):
        question = f'{question[:start]}"{source.paper.display_title}"{question[end:]}'
    return question


def _numbered(sources: Sequence[Source]) -> tuple[Source, ...]:
    return tuple(s.model_copy(update={"number": n}) for n, s in enumerate(sources, 1))


def _picked(reply: str, choices: Sequence[Source]) -> Source | None:
    """The choice a reply to a clarification names: its number, words of its title and no other's,
    or a yes when it offered one."""
    text = reply.strip().strip(" .?!\"'“”").casefold()
    number = _CHOICE_NUMBER.match(text)
    if number:
        return next((c for c in choices if c.number == int(number.group(1))), None)
    if len(choices) == 1 and _YES.match(text):
        return choices[0]
    named = [c for c in choices if len(text) >= 3 and text in c.paper.display_title.casefold()]
    return named[0] if len(named) == 1 else None


def _offered(question: str, reference: _Reference, answer: Answer) -> Reading:
    """A reference to a paper the last answer said does not answer: said so, and offered."""
    title = escape_markdown(reference.papers[0].paper.display_title)
    why = (
        f"By “{reference.text}” you mean “{title}”, one of the closest papers to the last "
        f"question (“{escape_markdown(answer.standalone_question)}”), which it does not cite."
    )
    offer = "Summarize it anyway?" if SUMMARY_REQUEST.match(question) else "Ask about it anyway?"
    return Reading(question, unclear=reference.text, choices=_numbered(reference.papers), why=why, offer=offer)


def read_references(question: str, history: Sequence[Answer]) -> Reading:
    """The follow-up's references to the previous answer's papers: settled ones replaced by
    titles, and the first one not taken with the papers it may mean."""
    if not history:
        return Reading(question)
    last = history[-1]
    if last.choices:
        chosen = _picked(question, last.choices)
        if chosen is not None:
            return Reading(with_choice(last, chosen))
    references = [r for m in _EXPLICIT_REF.finditer(_searchable(question)) if (r := _reference(m, last)) is not None]
    if references:
        # A decline's closest papers do not answer it: a reference to one is offered, not taken.
        settled = [(r.span, r.papers[0]) for r in references if len(r.papers) == 1 and r.papers[0] not in last.closest]
        resolved = _titled(question, settled)
        taken = {span for span, _ in settled}
        kept = next((r for r in references if r.span not in taken), None)
        if kept is None:
            return Reading(resolved)
        if len(kept.papers) == 1:
            return _offered(resolved, kept, last)
        choices = kept.papers or listed_papers(last) or (*last.sources, *last.closest, *last.choices)
        return Reading(resolved, unclear=kept.text, choices=_numbered(choices), why=kept.why) if choices else Reading(resolved)
    single = _SINGLE_REF.search(_searchable(question))
    meant = _cited(last) or last.choices
    if single is None or not meant:
        return Reading(question)
    if len(meant) == 1:
        # "Summarize it" after an answer from one paper means that paper.
        return Reading(_titled(question, [(single.span(), meant[0])]))
    return Reading(question, unclear=single.group(0), choices=_numbered(meant), why=_gave(last, meant))


def with_choice(clarification: Answer, choice: Source) -> str:
    """The question a clarification asked about, with the chosen paper in place of its unclear
    reference: the first reference it left as written (those it settled are quoted titles) that
    the choice may fill ("the paper by X" only when the choice is by X)."""
    question = clarification.standalone_question
    searchable = _searchable(question)
    for match in _EXPLICIT_REF.finditer(searchable):
        if not match["name"]:
            return _titled(question, [(match.span(), choice)])
        span, found = _by_name(match, (choice,))
        if found or match["noun"].lower() == "one":
            return _titled(question, [(span, choice)])
    single = _SINGLE_REF.search(searchable)
    if single is None:
        raise ValueError(f"{question!r} holds no reference to replace: it is not a clarification's question")
    return _titled(question, [(single.span(), choice)])


def resolve_references(question: str, history: Sequence[Answer]) -> str:
    """The follow-up with the references the previous answer settles replaced by titles;
    unchanged when it has none."""
    return read_references(question, history).question


def _stems(text: str) -> set[str]:
    return {stem for word in re.findall(r"[^\W_]+(?:-[^\W_]+)*", text) for stem in term_stems(word)}


def stands_alone(question: str, history: Sequence[Answer], profile: CorpusProfile) -> bool:
    """Whether a question that resolves no reference names its own subject (see the module
    docstring): it asks for papers, or it has no pronoun and a specific word that neither the
    last question nor the papers the last answer gave have. `profile` weighs the words."""
    if not history or _ASKS_FOR_PAPERS.search(question) or _QUOTED.search(question):
        return True
    # "Is it better than ...?" leans on the last answer, though "is it better" can be expletive.
    if _points_back(_blanked(_QUOTED, question)):
        return False
    terms = [
        t
        for t in key_terms(question, profile)[0]
        if t.weight >= _SUBJECT_WEIGHT and not t.measure and t.text.casefold() not in ASPECTS
    ]
    if not terms:
        return False
    last = history[-1]
    known = _stems(" ".join(split_context(last.standalone_question)))
    for source in listed_papers(last) or last.sources[:1]:
        known |= _stems(f"{source.paper.title} {source.paper.abstract}")
    return any(not set(t.stems) & known for t in terms)


def resolve_by_rule(question: str, history: Sequence[Answer], profile: CorpusProfile | None = None) -> str:
    """The follow-up made standalone by the rules above; unchanged when none applies, or when it
    names its own subject."""
    resolved = resolve_references(question, history)
    if resolved != question or not history:
        return resolved
    if stands_alone(question, history, profile or CorpusProfile()) or len(question.split()) > 15:
        return question
    # A follow-up to a follow-up leans on the real question that one leaned on, joined once.
    own, context = split_context(history[-1].standalone_question)
    return with_context(question, context or own)


def _content(*texts: str) -> set[str]:
    """The stems of the texts' content words (their key terms, read with no corpus)."""
    return {stem for text in texts for term in key_terms(text, CorpusProfile())[0] for stem in term.stems}


def _subject(answer: Answer) -> set[str]:
    """What an answer was about, as word stems: its question's content words (the real question's
    too, for a follow-up) and the titles of the papers it cites."""
    return _content(*split_context(answer.standalone_question), *(s.paper.display_title for s in _cited(answer)))


def one_line(reply: str) -> str | None:
    """A model's reply as one line of text: the tags wrapped around it dropped; None when it is
    empty, spans lines, leaks the prompt ("User:") or keeps a tag inside."""
    text = reply.strip()
    while (unwrapped := _EDGE_TAG.sub("", text, count=1).strip()) != text:
        text = unwrapped
    if not text or "\n" in text or _LEAKED.search(text) or _TAG.search(text):
        return None
    return text


def acceptable_rewrite(rewrite: str, question: str, history: Sequence[Answer]) -> str | None:
    """A model's rewrite of a follow-up as kept, or None when it is no plausible standalone
    question. Tags wrapped around it are dropped and the question inside kept; a tag left inside
    it rejects it. A follow-up that leans on the last answer ("how does this compare ...", "its
    results") must keep what that answer was about: a rewrite that drops it searches for
    something else."""
    text = one_line(rewrite)
    if text is None:
        return None
    previous = history[-1].standalone_question if history else ""
    limit = max(40, 2 * (len(question.split()) + len(previous.split())))
    if len(text.split()) > limit:
        return None
    words = set(re.findall(r"\w{4,}", text.casefold()))
    known = set(re.findall(r"\w{4,}", f"{question} {previous}".casefold()))
    if known and not known & words:
        return None
    if history and _points_back(_searchable(question)):
        subject = _subject(history[-1])
        if subject and not subject & _content(text):
            return None
    return text
