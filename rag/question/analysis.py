"""Question analysis, with no model: what a question asks, about what, and within which papers.

`analyze` turns a question into a `QuestionAnalysis`, computed once per turn and kept on the
answer:

- the question cleaned of what does not change what it asks: a greeting, "please", stray
  characters, and words in another script around an English question ("Hi! How does MoH work?
  ñ é" asks "How does MoH work?");
- its type (`QuestionType`): lookup, how/why, result, collection ("which papers ..."), summary,
  comparison or yes/no, from its wording;
- the filters it states ("at ICML 2025", "by Yuan", "since 2023"), matched against the corpus's
  own venues and authors and taken out of the text that is searched;
- its key terms (`KeyTerm`): the content words an answer must address, weighted by how specific
  they are, both in English at large (wordfreq's frequencies: "federated" is rarer than "plain")
  and in this corpus (a word every abstract has tells no paper apart). Coined names ("MoH",
  "ImageNet", "top-1") are entities, met only as written;
- its focus, the question without its framing words, which is what the embedding model matches.

A follow-up the rules join to the question it follows up on ("what about its results? (following
up on: How does MoH work?)", `with_context`) is read as two questions: the joining words are
never key terms (see `_follow_up`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.question.filters import stated_filters
from rag.question.gloss import english_gloss
from rag.question.kind import about_selection, clean_question, is_statement, question_focus, question_type
from rag.question.references import named_papers, names_used, split_context
from rag.question.terms import key_terms
from rag.records import CorpusProfile, KeyTerm, QuestionAnalysis, QuestionType
from rag.text import in_cjk

# A comparison of two sides: "compare X to / with / and Y", "the difference between X and Y", "X
# versus Y", "is X faster than Y" ("rather than", "other than" compare nothing).
_SIDES = re.compile(
    r"\b(?:compar|contrast|differ)\w*\b.*\b(?:to|with|and|from|against)\b|\b(?:versus|vs)\b"
    r"|\b(?!(?:rather|other)\b)(?:\w+er|more|less|worse)\s+than\b",
    re.IGNORECASE,
)
# Only comparisons and yes/no questions are read as two sides, and answered as comparisons ("Is
# X better than the bandits work?" is answered by each side's own sentences): "How much faster
# is X than Y?" asks for X's result, and "Y" is what X's abstract should name.
_TWO_SIDED = (QuestionType.COMPARISON, QuestionType.YES_NO)
# A side is a topic when a term this specific names it ("bandits"), not a wish ("faster").
_SIDE_WEIGHT = 0.5
_QUOTED_TITLE = re.compile(r'"[^"\n]*"|“[^”\n]*”')


def _names_a_topic(terms: Sequence[KeyTerm]) -> bool:
    return any(not t.measure and t.weight >= _SIDE_WEIGHT for t in terms)


def _either_side(topic: Sequence[KeyTerm], other: Sequence[KeyTerm]) -> tuple[KeyTerm, ...]:
    """A comparison's two sides as alternatives, so a paper about either side meets the question
    and neither is missing from the other's papers: the other side's terms, as one run, join the
    group of the topic's heaviest term."""
    side = max((t for t in topic if not t.measure), key=lambda t: t.weight).group
    run = max(t.run for t in topic) + 1
    said = {t.stems for t in topic}
    joined = [*topic, *(t.model_copy(update={"group": side, "run": run}) for t in other if t.stems not in said)]
    return tuple(sorted(joined, key=lambda t: -t.weight))


def _paper_and_topic(text: str, kind: QuestionType, profile: CorpusProfile) -> tuple[tuple[KeyTerm, ...], tuple[str, ...]] | None:
    """The terms and phrases of a comparison of the one paper it names (by short name or quoted
    title) with a topic ("How does MoH compare to the bandits work?"), the two as either side;
    None for any other question."""
    if kind not in _TWO_SIDED or not _SIDES.search(text) or len(named_papers(text, profile.names)) != 1:
        return None
    quoted = _QUOTED_TITLE.findall(text)
    rest = _QUOTED_TITLE.sub(" ", text)
    names = names_used(rest, profile.names)
    for name in names:
        rest = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", " ", rest)
    topic, topic_phrases = key_terms(rest, profile)
    if not _names_a_topic(topic):
        return None
    paper, paper_phrases = key_terms(" ".join([*quoted, *names]), profile)
    return _either_side(topic, paper), topic_phrases + paper_phrases


def _follow_up(question: str, own: str, context: str, profile: CorpusProfile) -> QuestionAnalysis:
    """A follow-up joined to the question it follows up on. What it asks (its type, the premise
    it states) is read from its own words; what it is about from both, searched together. One
    that compares what it leans on with something it names ("How does this compare to the
    bandits work?") has two sides, and a paper about either side meets it: neither is missing
    from the other's papers."""
    asked, earlier = analyze(own, profile), analyze(context, profile)
    kind, asks_how = (earlier.type, earlier.asks_how) if asked.type == QuestionType.LOOKUP else (asked.type, asked.asks_how)
    search_text = f"{asked.search_text} {earlier.search_text}"
    if asked.type in _TWO_SIDED and _SIDES.search(asked.cleaned) and _names_a_topic(asked.terms):
        terms, phrases = _either_side(asked.terms, earlier.terms), asked.phrases + earlier.phrases
        kind = QuestionType.COMPARISON
    else:
        terms, phrases = key_terms(search_text, profile)
    return QuestionAnalysis(
        question=question,
        cleaned=asked.cleaned,
        search_text=search_text,
        focus=question_focus(search_text),
        type=kind,
        asks_how=asks_how,
        terms=terms,
        phrases=phrases,
        filters=asked.filters if asked.filters.active else earlier.filters,
        named_papers=tuple(dict.fromkeys(earlier.named_papers + asked.named_papers)),
        about_selection=asked.about_selection,
        statement=asked.statement,
    )


def analyze(question: str, profile: CorpusProfile = CorpusProfile()) -> QuestionAnalysis:
    """Everything the answering stages need to know of a question (see the module docstring)."""
    own, context = split_context(question)
    if context:
        return _follow_up(question, own, context, profile)
    cleaned = clean_question(question)
    filters, search_text = stated_filters(cleaned, profile)
    if not search_text.strip(" ?.!"):
        search_text = cleaned
    focus = question_focus(search_text)
    if in_cjk(cleaned):
        # The word rules read the English senses of its words (rag.question.gloss); its meaning
        # is read from the question as asked (the focus).
        search_text = f"{search_text} {english_gloss(search_text)}"
    terms, phrases = key_terms(search_text, profile)
    # Read without its stated filters ("Which AutoML 2023 papers ..." asks "Which papers ..."), and
    # as asked when that says more ("papers since 2023 on bandits").
    names_measure = any(t.measure for t in terms)
    kind, asks_how = question_type(search_text, names_measure=names_measure)
    if kind == QuestionType.LOOKUP:
        kind, asks_how = question_type(cleaned, names_measure=names_measure)
    two_sided = _paper_and_topic(search_text, kind, profile)
    if two_sided:
        (terms, phrases), kind = two_sided, QuestionType.COMPARISON
    return QuestionAnalysis(
        question=question,
        cleaned=cleaned,
        search_text=search_text,
        focus=focus,
        type=kind,
        asks_how=asks_how,
        terms=terms,
        phrases=phrases,
        filters=filters,
        named_papers=named_papers(search_text, profile.names),
        # "these papers", or a question all of whose content is a filter ("papers by Yuan").
        about_selection=about_selection(search_text) or (filters.active and not terms),
        statement=is_statement(cleaned),
    )
