"""Collection answers ("which papers ...", "papers on ...", "list ..."): every paper that fits.

Not a fixed top k: every retrieved candidate whose coverage of the question's key terms clears a
calibrated bar, and whose relevance (coverage plus its best sentence's similarity) is close
enough to the most relevant paper's, counts. Metadata counts as text
does (a category, venue or author meets a term; see `rag.answering.evidence`). Each match is
shown with its one key sentence, cited; many matches are grouped by category, up to a cap, with
"and N more" and the whole list kept on the answer. When filters leave a handful of papers and
the question asks about "these papers", each of them is a match, with its contribution.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rag.answering.evidence import Evidence, PaperEvidence
from rag.answering.forms.writing import label, quote
from rag.answering.request import AnswerRequest
from rag.answering.roles import Role
from rag.answering.selection import best_sentence
from rag.markup import escape_markdown
from rag.records import CollectionMatch, Paper

__all__ = ["SHOWN", "CollectionBars", "admitted", "find_matches", "write_collection"]

# How many matches the answer text shows; the rest are listed after "and N more".
SHOWN = 8
# Group the matches by category once there are more than this many.
GROUP_FROM = 6
# Up to this many matches, a "..., and how?" question gets each paper's method sentence too.
FEW = 3


@dataclass(frozen=True)
class CollectionBars:
    """Calibrated on the calibration half of eval/sets/seed-collection.jsonl
    (eval/calibrate_answerability.py)."""

    min_coverage: float = 0.4  # share of the question's term weight a paper must meet
    similarity_weight: float = 1.0  # relevance = coverage + this x its best sentence's similarity
    relative: float = 0.7  # relevance at least this share of the most relevant paper's
    min_similarity: float = 0.15  # its best sentence at least this close to the question ...
    complete: float = 0.95  # ... unless it meets this much of the question's terms


def _relevance(paper: PaperEvidence, bars: CollectionBars = CollectionBars()) -> float:
    return paper.coverage + bars.similarity_weight * paper.best_similarity


def admitted(evidence: Evidence, *, selection: bool = False, bars: CollectionBars = CollectionBars()) -> list[PaperEvidence]:
    """The papers that fit the collection question, most relevant first.

    The verifier's paper verdicts were tried as the bar (issue 24): on the calibration halves of
    the collection sets they reached precision 0.57 and recall 0.44 at their best bar, against
    0.85 and 0.83 for the bars below; as a filter on top of these they bought 0.04 of precision
    for 0.16 of recall. They choose each match's key sentence instead (`best_sentence`)."""
    if not evidence.papers:
        return []
    best = max(_relevance(p, bars) for p in evidence.papers)
    fitting = [
        p
        for p in evidence.papers
        if selection
        or (
            p.coverage >= bars.min_coverage
            and _relevance(p, bars) >= bars.relative * best
            # Metadata questions ("papers by Chen") meet every term far from any one sentence.
            and (p.best_similarity >= bars.min_similarity or p.coverage >= bars.complete)
        )
    ]
    return sorted(fitting, key=lambda p: (-_relevance(p), p.number))


def find_matches(
    evidence: Evidence, *, selection: bool = False, bars: CollectionBars = CollectionBars()
) -> list[CollectionMatch]:
    """The papers that answer the collection question, most relevant first, each with its key
    sentence, the one the verifier finds answers it best.

    `selection`: the question is about the papers the filters leave; every one is a match.
    """
    prefer = Role.METHOD if (evidence.analysis.asks_how or selection) else None
    matches = []
    for paper in admitted(evidence, selection=selection, bars=bars):
        sentence = best_sentence(evidence, paper, prefer=prefer)
        if sentence is not None:
            group = paper.paper.category.split(" · ")[-1] if paper.paper.category else paper.paper.venue
            matches.append(
                CollectionMatch(number=paper.number, sentence=sentence.text, relevance=round(_relevance(paper), 4), group=group)
            )
    if evidence.analysis.asks_how and len(matches) <= FEW:
        # "Which papers ..., and how?" with few answers: each also says how, in its method sentence.
        matches = [_with_how(evidence, m) for m in matches]
    return matches


def _with_how(evidence: Evidence, match: CollectionMatch) -> CollectionMatch:
    paper = next(p for p in evidence.papers if p.number == match.number)
    how = max(
        (s for s in paper.quotable() if s.text != match.sentence and s.roles.get(Role.METHOD, 0.0) > 0),
        key=lambda s: s.roles[Role.METHOD] + s.similarity,
        default=None,
    )
    return match if how is None else match.model_copy(update={"how": how.text})


def _line(paper: Paper, match: CollectionMatch) -> str:
    sentences = [match.sentence, match.how] if match.how else [match.sentence]
    return f"{label(paper)}: " + " ".join(quote(s, match.number) for s in sentences)


def write_collection(request: AnswerRequest, matches: list[CollectionMatch]) -> Iterator[str]:
    """ "N papers match:", then each shown match as "- **Name**: “key sentence” [n]"."""
    if not matches:
        return
    papers = {p.number: p.paper for p in request.evidence.papers}
    shown = matches[:SHOWN]
    yield f"{len(matches)} paper{'s' if len(matches) != 1 else ''} match{'es' if len(matches) == 1 else ''}:"
    if len(matches) > GROUP_FROM:
        groups: dict[str, list[CollectionMatch]] = {}
        for match in shown:
            groups.setdefault(match.group or "Other", []).append(match)
        for group, members in groups.items():
            yield f"\n\n**{escape_markdown(group)}**"
            for match in members:
                yield f"\n- {_line(papers[match.number], match)}"
    else:
        yield "\n"
        for match in shown:
            yield f"\n- {_line(papers[match.number], match)}"
    if len(matches) > SHOWN:
        more = len(matches) - SHOWN
        yield f"\n\n…and {more} more paper{'s' if more != 1 else ''} (all {len(matches)} are listed with the sources)."
