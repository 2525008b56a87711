"""The extractive backend: answers made of the retrieved abstracts' own sentences, each cited.

No language model: for a question it picks, from the retrieved abstracts, the sentences most
similar to the question (MiniLM cosine, with a little lexical overlap), with maximal marginal
relevance for diversity and a cap per paper, and writes them grouped by paper in the papers'
order and, within a paper, in the abstract's order. Every sentence is a quotation followed by
its citation, so the answer is grounded by construction. Summaries work the same way over one
abstract, scoring sentences by centrality and by the cues of contributions and results.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableLambda

from rag.embeddings import SentenceVectors
from rag.llm import Backend
from rag.records import Source
from rag.text import lexical_similarity, split_sentences

# A sentence must be this close to the best one to be quoted, so weak matches are left out.
_RELATIVE_FLOOR = 0.72
_MAX_SENTENCES = 6
_PER_PAPER = 2
_MMR_LAMBDA = 0.75
_CONTRIBUTION = re.compile(r"\b(we|this (paper|work))\s+(propose|introduce|present|develop|design)", re.I)
_RESULT = re.compile(r"\b(outperform|achiev|improv|surpass|state-of-the-art|demonstrat|show that)", re.I)


@dataclass(frozen=True)
class Candidate:
    source: Source
    position: int
    text: str


def _candidates(sources: Sequence[Source]) -> list[Candidate]:
    return [
        Candidate(s, i, sentence)
        for s in sources
        for i, sentence in enumerate(split_sentences(s.paper.abstract))
        if len(sentence.split()) >= 4
    ]


def _mmr(relevance: np.ndarray, vectors: np.ndarray, papers: list[str], limit: int) -> list[int]:
    """Maximal marginal relevance with at most `_PER_PAPER` picks from one paper."""
    chosen: list[int] = []
    per_paper: dict[str, int] = {}
    floor = _RELATIVE_FLOOR * float(relevance.max())
    while len(chosen) < limit:
        best, best_score = -1, -np.inf
        for i in range(len(relevance)):
            if i in chosen or per_paper.get(papers[i], 0) >= _PER_PAPER or relevance[i] < floor:
                continue
            redundancy = max((float(vectors[i] @ vectors[j]) for j in chosen), default=0.0)
            score = _MMR_LAMBDA * relevance[i] - (1 - _MMR_LAMBDA) * redundancy
            if score > best_score:
                best, best_score = i, score
        if best < 0:
            break
        chosen.append(best)
        per_paper[papers[best]] = per_paper.get(papers[best], 0) + 1
    return chosen


def _write(picked: list[Candidate]) -> Iterator[str]:
    """Group picked sentences by paper (papers in source order), each sentence cited."""
    by_paper: dict[int, list[Candidate]] = {}
    for c in sorted(picked, key=lambda c: (c.source.number, c.position)):
        by_paper.setdefault(c.source.number, []).append(c)
    for n, (number, group) in enumerate(by_paper.items()):
        title = group[0].source.paper.display_title
        yield ("\n\n" if n else "") + f"**{title}**: "
        for i, c in enumerate(group):
            yield ("" if i == 0 else " ") + f"{c.text.rstrip()} [{number}]"


class ExtractiveAnswerer:
    def __init__(self, vectors: SentenceVectors) -> None:
        self.vectors = vectors

    def answer(self, inputs: dict) -> Iterator[str]:
        question: str = inputs["question"]
        candidates = _candidates(inputs["sources"])
        if not candidates:
            return
        texts = [c.text for c in candidates]
        vectors = self.vectors(texts)
        similarity = np.asarray(self.vectors.similarities(question, texts))
        lexical = np.asarray([lexical_similarity(question, t) for t in texts])
        relevance = similarity + 0.15 * lexical
        chosen = _mmr(relevance, vectors, [c.source.paper.id for c in candidates], _MAX_SENTENCES)
        yield from _write([candidates[i] for i in chosen])

    def summarize(self, inputs: dict) -> Iterator[str]:
        source: Source = inputs["sources"][0]
        candidates = _candidates([source])
        if len(candidates) <= 3:
            yield from _write(candidates)
            return
        vectors = self.vectors([c.text for c in candidates])
        centroid = vectors.mean(axis=0)
        centrality = vectors @ (centroid / np.linalg.norm(centroid))
        cues = np.asarray(
            [0.15 * bool(_CONTRIBUTION.search(c.text)) + 0.1 * bool(_RESULT.search(c.text)) for c in candidates]
        )
        # The opening sentence states the problem; keep it in view.
        cues[0] += 0.1
        order = np.argsort(-(centrality + cues), kind="stable")[: min(4, max(3, len(candidates) // 3))]
        yield from _write([candidates[i] for i in sorted(order)])


def extractive_backend(embeddings: Embeddings, *, reason: str, vectors: SentenceVectors | None = None) -> Backend:
    answerer = ExtractiveAnswerer(vectors or SentenceVectors(embeddings))
    return Backend(
        name="extractive",
        model="quotes from the abstracts",
        reason=reason,
        answer=RunnableLambda(answerer.answer, name="extractive_answer"),
        summarize=RunnableLambda(answerer.summarize, name="extractive_summary"),
    )
