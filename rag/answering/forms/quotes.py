"""The extractive answer to a lookup, how/why, result or yes/no question: quotes chosen for it.

Papers are chosen first: those whose best sentence comes close to the best of all (a wider
margin when the question asks for several papers), or only the papers the question names. Then
sentences within each: the best, and further ones close to it that do not repeat it. Each is
quoted, attributed to its paper and cited, grouped by paper in the papers' order and, within a
paper, in the abstract's order. A result question whose measure no abstract reports quotes no
number: it gets what the paper does, and the chain says what is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from rag.answering.forms.writing import label, quote
from rag.answering.request import AnswerRequest
from rag.answering.roles import Role
from rag.answering.selection import Scored, asked_role, scored
from rag.index.embeddings import SentenceVectors

__all__ = ["write_quotes"]

# Tuned on eval/sets/seed.jsonl: a wider paper margin lets in off-topic papers' boilerplate
# (gold-citation precision 0.96 at 0.08, 0.90 at 0.15), unless the question asks for several
# papers ("Which papers ...", "Are there works on ..."), where missing one costs more.
_PAPER_MARGIN = 0.08
_PLURAL_MARGIN = 0.15
_PLURAL = re.compile(r"\b(papers|works|studies|approaches|methods|articles|compare|comparison|differ|versus|vs)\b", re.I)
_MAX_PAPERS = 4
_SENTENCE_MARGIN = 0.15
_PER_PAPER = 2
_SOLO_SENTENCES = 3
_REDUNDANT = 0.85
# A sentence plays a role when its cue score reaches this (rag.answering.roles).
_ROLE_BAR = 0.3


def _choose(candidates: list[Scored], vectors: np.ndarray, *, plural: bool) -> list[int]:
    """Indices of the chosen candidates: papers by their best sentence, then sentences within each.

    A paper is quoted when its best sentence is within the paper margin of the best of all (at
    most `_MAX_PAPERS`); within it, further sentences follow when they are within
    `_SENTENCE_MARGIN` of that paper's best and do not repeat one already picked. One paper alone
    gets room for more sentences than each of several.
    """
    relevance = np.asarray([c.score for c in candidates])
    papers = [c.paper.number for c in candidates]
    best_of: dict[int, int] = {}
    for i, paper in enumerate(papers):
        if paper not in best_of or relevance[i] > relevance[best_of[paper]]:
            best_of[paper] = i
    top = float(relevance.max())
    margin = _PLURAL_MARGIN if plural else _PAPER_MARGIN
    if plural:
        # A clear leader should not crowd out a second paper that stands as clearly above the
        # rest: the bar then sits halfway between the leader and the typical retrieved paper.
        background = float(np.median([relevance[i] for i in best_of.values()]))
        margin = max(margin, (top - background) / 2)
    quoted = sorted((i for i in best_of.values() if relevance[i] >= top - margin), key=lambda i: -relevance[i])
    quoted = quoted[:_MAX_PAPERS]
    per_paper = _SOLO_SENTENCES if len(quoted) == 1 else _PER_PAPER
    chosen: list[int] = []
    for lead in quoted:
        picked = [lead]
        for i in np.argsort(-relevance, kind="stable"):
            if len(picked) >= per_paper:
                break
            if papers[i] != papers[lead] or i in picked or relevance[i] < relevance[lead] - _SENTENCE_MARGIN:
                continue
            if max(float(vectors[i] @ vectors[j]) for j in picked) < _REDUNDANT:
                picked.append(int(i))
        chosen += picked
    return chosen


def write(picked: list[Scored]) -> Iterator[str]:
    """Group picked sentences by paper (papers in source order), each a cited quote."""
    by_paper: dict[int, list[Scored]] = {}
    for c in sorted(picked, key=lambda c: (c.paper.number, c.sentence.position)):
        by_paper.setdefault(c.paper.number, []).append(c)
    for n, (number, group) in enumerate(by_paper.items()):
        yield ("\n\n" if n else "") + f"{label(group[0].paper.paper)}: "
        for i, c in enumerate(group):
            yield ("" if i == 0 else " ") + quote(c.sentence.text, number)


def write_quotes(request: AnswerRequest, vectors: SentenceVectors) -> Iterator[str]:
    evidence = request.evidence
    # Only the papers the question names, or a best match's: the others are not what it asks about.
    named = set(request.analysis.named_papers) | set(request.answerability.best)
    papers = [p for p in evidence.papers if p.paper.id in named] or list(evidence.papers)
    candidates = scored(evidence, papers)
    if request.answerability.unreported:
        # Never another number in place of the one asked for.
        candidates = [c for c in candidates if not c.sentence.has_number] or candidates
    if not candidates:
        return
    sentence_vectors = vectors([c.sentence.text for c in candidates])
    plural = bool(_PLURAL.search(request.analysis.cleaned))
    chosen = _choose(candidates, sentence_vectors, plural=plural)
    chosen += _role_sentences(candidates, chosen, asked_role(evidence))
    yield from write([candidates[i] for i in chosen])


def _role_sentences(candidates: list[Scored], chosen: list[int], role: Role | None) -> list[int]:
    """For each quoted paper, one more sentence that plays the asked role: a how question gets the
    method, a why question the reason, a result question the result, as well as the closest
    sentence. The best by closeness and role together, among those that play it at all."""
    if role is None:
        return []
    added = []
    for paper in dict.fromkeys(candidates[i].paper.number for i in chosen):
        playing = [
            i
            for i, c in enumerate(candidates)
            if c.paper.number == paper and i not in chosen and c.sentence.roles.get(role, 0.0) >= _ROLE_BAR
        ]
        if playing:
            added.append(max(playing, key=lambda i: candidates[i].score + 0.5 * candidates[i].sentence.roles[role]))
    return added
