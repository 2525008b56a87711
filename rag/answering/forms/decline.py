"""What an answer says when the corpus does not answer, answers only part of the question, or has
only a closest match in other words.

The wording lives in prompts/ (`not_covered`, `unclear`, `beyond_abstracts`, `partly_covered`,
`not_reported`, `weak_match`, `best_match*`). A decline cites nothing; the closest papers go beside it, as papers that do not
answer the question, never as support: closest first, by the similarity shown beside each.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.markup import escape_markdown
from rag.models.prompts import listed, listing_words, load_prompt
from rag.records import Answerability, Coverage, Relevance, Source

__all__ = ["CLOSEST", "closest_papers", "decline_text", "partial_note"]

# Papers shown beside a decline as the closest, which do not answer the question.
CLOSEST = 3


def _listing(items: Sequence[str], language: str) -> str:
    return listed([escape_markdown(i) for i in items], language)


def decline_text(answerability: Answerability, *, example: str = "", language: str = "en") -> str:
    """The whole answer when the corpus does not answer the question, in `language`."""
    if answerability.coverage == Coverage.UNCLEAR:
        return load_prompt("unclear", language=language).format(
            example=escape_markdown(example) or load_prompt("unclear_example", language=language)
        )
    if answerability.coverage == Coverage.BEYOND:
        return load_prompt("beyond_abstracts", language=language)
    missing = (
        load_prompt("not_covered_missing", language=language).format(missing=_listing(answerability.missing[:4], language))
        if answerability.missing
        else ""
    )
    return load_prompt("not_covered", language=language).format(missing=missing)


def _best_match_note(answerability: Answerability, sources: Sequence[Source], language: str) -> str:
    """What a best match leads with: what no abstract uses, what only abstracts other than the
    closest do, the paper or papers it quotes, and that it could not confirm them."""
    best = [s for s in sources if s.paper.id in answerability.best]
    papers = listing_words(language)["and"].join(f"{escape_markdown(s.paper.short_name)} [{s.number}]" for s in best)
    leads = []
    if answerability.missing:
        missing = _listing(answerability.missing[:4], language)
        leads.append(load_prompt("best_match_missing", language=language).format(missing=missing))
    if answerability.elsewhere:
        elsewhere = _listing(answerability.elsewhere[:4], language)
        leads.append(load_prompt("best_match_elsewhere", language=language).format(elsewhere=elsewhere))
    lead = " ".join(leads) or load_prompt("best_match_other_words", language=language)
    return load_prompt("best_match", language=language).format(lead=lead, papers=papers)


def partial_note(answerability: Answerability, sources: Sequence[Source] = (), *, language: str = "en") -> str:
    """What an answer that is not sure adds before its quotes, in `language`: for a best match,
    what no abstract uses and which paper is the closest; for a partly covered one, what no
    abstract reports or mentions ("" if nothing). `sources`: the answer's, numbered as it cites
    them."""
    if answerability.coverage == Coverage.BEST_MATCH:
        return _best_match_note(answerability, sources, language)
    notes = []
    if answerability.unreported:
        measures = _listing(answerability.unreported, language)
        notes.append(load_prompt("not_reported", language=language).format(measures=measures))
    missing = [m for m in answerability.missing if m not in answerability.unreported]
    if missing:
        notes.append(load_prompt("partly_covered", language=language).format(missing=_listing(missing[:4], language)))
    if not notes and answerability.coverage == Coverage.PARTLY:
        notes.append(load_prompt("weak_match", language=language))
    return " ".join(notes)


def closest_papers(sources: Sequence[Source], found: Sequence[Relevance], count: int = CLOSEST) -> tuple[Source, ...]:
    """The papers shown beside a decline: the ranking's first `count` (`sources` is in its order),
    closest first by the similarity a reader is shown for each (`found`), the ranking's order among
    equals, and numbered 1.. in that order so "[2]" and "the second one" are the second one sees."""
    similarity = {r.paper_id: r.similarity for r in found}
    ordered = sorted(sources[:count], key=lambda s: -similarity.get(s.paper.id, 0.0))
    return tuple(s.model_copy(update={"number": n}) for n, s in enumerate(ordered, 1))
