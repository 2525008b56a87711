"""Summaries of one paper from its abstract: the problem, the method, the result, in that order.

Each part is the sentence that best plays its role (`rag.answering.roles`), weighed with its
centrality in the abstract (its similarity to the abstract's mean sentence vector), so a summary
reads as the abstract's own arc. A second method sentence joins when it is as strong as the
first. Every part is a quote, cited.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rag.answering.forms.writing import quote
from rag.answering.request import AnswerRequest
from rag.answering.roles import Role
from rag.index.embeddings import SentenceVectors

__all__ = ["write_summary"]

_PARTS = ((Role.PROBLEM, "Problem"), (Role.METHOD, "Method"), (Role.RESULT, "Result"))


def write_summary(request: AnswerRequest, vectors: SentenceVectors) -> Iterator[str]:
    paper = request.evidence.papers[0]
    sentences = paper.quotable() or list(paper.sentences)
    if not sentences:
        return
    matrix = vectors([s.text for s in sentences])
    centroid = matrix.mean(axis=0)
    centrality = matrix @ (centroid / (np.linalg.norm(centroid) or 1.0))
    used: set[int] = set()
    for role, name in _PARTS:
        ranked = sorted(
            (i for i in range(len(sentences)) if i not in used),
            key=lambda i: -(sentences[i].roles.get(role, 0.0) + 0.5 * float(centrality[i])),
        )
        if not ranked:
            break
        picked = [ranked[0]]
        if (
            role == Role.METHOD
            and len(ranked) > 1
            and sentences[ranked[1]].roles.get(role, 0.0) >= sentences[ranked[0]].roles.get(role, 0.0)
        ):
            picked.append(ranked[1])
        used.update(picked)
        quotes = " ".join(quote(sentences[i].text, paper.number) for i in sorted(picked, key=lambda i: sentences[i].position))
        yield f"{'' if role == Role.PROBLEM else chr(10)}- **{name}**: {quotes}"
