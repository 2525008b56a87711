"""Evidence: the retrieved abstracts' sentences, scored once against the question.

`gather` reads every retrieved paper once and records, for each sentence, how close it is to the
question's focus (MiniLM cosine), which of the question's key terms it meets, and the role it
plays (`rag.answering.roles`); for each paper, which key terms it meets anywhere (title, abstract,
category, venue, authors, keywords) and the share of the question's term weight that makes (its
coverage). Every answer form and the answerability check read this one record.

A key term is met by its own stems ("tokenized" meets "tokenize"), by a word of the paper that
the embedding model puts close to it (its paraphrase: "cheaper" ~ "costs", 0.74; "video" ~
"image" is 0.62, below the bar), or, for an entity ("ImageNet", "top-1"), only as written.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from functools import lru_cache
from os.path import commonprefix

import numpy as np

from rag.answering.roles import NUMBER, Role, is_boilerplate, role_scores
from rag.index.embeddings import SentenceVectors
from rag.index.papertext import paper_text, paper_words
from rag.markup import to_plain
from rag.models.verifier import Verifier
from rag.question.terms import is_entity, term_stems
from rag.records import KeyTerm, Paper, QuestionAnalysis, Source
from rag.text import english_zipf, split_sentences, tokenize_terms

__all__ = ["PARAPHRASE_BAR", "Evidence", "PaperEvidence", "SentenceEvidence", "gather", "verify"]

# Word-to-word cosine at which a paper's word stands for a key term. Calibrated on the
# calibration halves of the seed sets (eval/calibrate_answerability.py): morphology and near
# synonyms score 0.7-0.95 ("molecules" ~ "molecular" 0.83, "speed" ~ "fast" 0.72), related but
# different topics 0.4-0.65 ("video" ~ "image" 0.62, "forgetting" ~ "continual" 0.55).
PARAPHRASE_BAR = 0.7
# Phrase-to-sentence cosine at which a sentence says what a question's phrase says in other
# words ("tied comparisons" ~ "incorporating a certain proportion of tied samples"). Calibrated
# with the bar above.
PHRASE_BAR = 0.55
# Word paraphrases are looked for in the best-ranked papers only: embedding every word of the
# 30 papers a collection considers costs seconds, and lower-ranked papers meet a question by
# its own words or not at all.
PARAPHRASED_PAPERS = 10
# A code-availability line is quoted only when the verifier gives it this much as an answer.
QUOTED_BOILERPLATE = 0.5


@dataclass(frozen=True)
class SentenceEvidence:
    number: int  # the source's number
    position: int
    text: str
    similarity: float
    terms: frozenset[int]  # indices into the analysis's terms that this sentence meets
    roles: dict[Role, float]
    has_number: bool
    boilerplate: bool
    # The verifier's probabilities (rag.models.verifier) that this sentence answers the question, and
    # that it contradicts what the question takes for granted; None where it was not asked.
    answers: float | None = None
    contradicts: float | None = None

    @property
    def plain(self) -> str:
        return to_plain(self.text)

    @property
    def verified(self) -> bool:
        return self.answers is not None


@dataclass(frozen=True)
class PaperEvidence:
    source: Source
    sentences: tuple[SentenceEvidence, ...]
    met: dict[int, str]  # term index -> the word of the paper that meets it
    coverage: float  # share of the question's term weight this paper meets
    # Terms its title (or short name) meets: they say which paper the question is about, the
    # others what it asks of it ("What did experiments show for CDVI?": experiments).
    in_title: frozenset[int] = frozenset()

    @property
    def number(self) -> int:
        return self.source.number

    @property
    def paper(self) -> Paper:
        return self.source.paper

    @property
    def best_similarity(self) -> float:
        return max((s.similarity for s in self.sentences), default=0.0)

    @property
    def best_answer(self) -> float:
        """The verifier's highest probability that one of its sentences answers the question."""
        return max((s.answers or 0.0 for s in self.sentences), default=0.0)

    @property
    def best_contradiction(self) -> float:
        return max((s.contradicts or 0.0 for s in self.sentences), default=0.0)

    def quotable(self) -> list[SentenceEvidence]:
        """Sentences worth quoting: not fragments, and not code-availability lines unless the
        verifier finds one answers the question ("Which papers release their code?")."""
        return [
            s
            for s in self.sentences
            if (not s.boilerplate or (s.answers or 0.0) >= QUOTED_BOILERPLATE) and len(s.text.split()) >= 4
        ]


@dataclass(frozen=True)
class Evidence:
    analysis: QuestionAnalysis
    papers: tuple[PaperEvidence, ...]
    term_weight: float = field(default=0.0)

    @property
    def sentences(self) -> list[SentenceEvidence]:
        return [s for p in self.papers for s in p.sentences]

    @property
    def best_similarity(self) -> float:
        return max((p.best_similarity for p in self.papers), default=0.0)

    @property
    def best_answer(self) -> float:
        return max((p.best_answer for p in self.papers), default=0.0)

    def about(self, papers: int) -> list[PaperEvidence]:
        """The papers the question is about: those it names, else the first `papers` of the ranking."""
        named = [p for p in self.papers if p.paper.id in self.analysis.named_papers]
        return named or list(self.papers[:papers])

    def contradicting(self, papers: int) -> tuple[PaperEvidence, SentenceEvidence] | None:
        """The sentence of a paper the question is about (`about`) that the verifier finds most
        surely contradicts what the question takes for granted, with its paper."""
        found = [(p, s) for p in self.about(papers) for s in p.sentences if s.contradicts is not None]
        return max(found, key=lambda ps: ps[1].contradicts or 0.0, default=None)

    def paper(self, number: int) -> PaperEvidence:
        return next(p for p in self.papers if p.number == number)

    def renumbered(self, first: Sequence[int]) -> Evidence:
        """The same evidence with the papers numbered `first` moved to the front, all renumbered 1..n."""
        order = [n for n in first] + [p.number for p in self.papers if p.number not in set(first)]
        by_number = {p.number: p for p in self.papers}
        papers = []
        for new, old in enumerate(order, 1):
            paper = by_number[old]
            papers.append(
                replace(
                    paper,
                    source=paper.source.model_copy(update={"number": new}),
                    sentences=tuple(replace(s, number=new) for s in paper.sentences),
                )
            )
        return replace(self, papers=tuple(papers))

    def truncated(self, n: int) -> Evidence:
        return replace(self, papers=self.papers[:n])


@lru_cache(maxsize=4096)
def _paper_terms(text: str) -> frozenset[str]:
    return frozenset(tokenize_terms(text))


def _written(text: str, word: str) -> bool:
    """`word` occurs in `text` as written (any case), not inside a longer name."""
    return bool(re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text, re.IGNORECASE))


def _initials(text: str, acronym: str) -> bool:
    """An acronym spelled out by the initials of consecutive words ("SAM": "sharpness-aware
    minimization", "RL": "reinforcement learning")."""
    letters = [c for c in acronym if c.isalpha()]
    if not 2 <= len(letters) <= 6 or not acronym.isupper():
        return False
    pattern = r"[\s-]+".join(rf"{c}[A-Za-z]*" for c in letters)
    return bool(re.search(rf"\b{pattern}\b", text, re.IGNORECASE))


def _part_met(part: str, text: str, stems: frozenset[str]) -> bool:
    if is_entity(part):
        return _written(text, part) or _initials(text, part)
    part_stems = term_stems(part)
    return bool(part_stems) and all(s in stems for s in part_stems)


def _meets(term: KeyTerm, text: str, stems: frozenset[str]) -> bool:
    """Whether `text` (with its term `stems`) meets the key term: as written, or for a compound
    ("LLaMA-style", "linear-bandit") each of its parts, or for a name its spelled-out initials."""
    if _written(text, term.text):
        return True
    parts = [p for p in term.text.split("-") if p]
    if len(parts) > 1 and not (term.entity and is_entity(term.text.replace("-", ""))):
        return all(_part_met(p, text, stems) for p in parts if len(p) > 1 and (is_entity(p) or term_stems(p)))
    if term.entity:
        return _initials(text, term.text)
    return all(s in stems for s in term.stems)


def _spelling_variant(word: str, words: Sequence[str]) -> str:
    """The paper's word that is this one spelt otherwise: a typo ("aproach"), a hyphen
    ("pre-processing"), or another form of a long technical word sharing its stem's first eight
    letters ("reparameterizing" / "reparametrization")."""
    bare = word.replace("-", "")
    for candidate in words:
        other = candidate.replace("-", "")
        if other == bare:
            return candidate
        prefix = len(commonprefix([bare, other]))  # noqa: RUF071 (two words: their common letters)
        if prefix >= 8 and prefix >= 0.5 * min(len(bare), len(other)):
            return candidate
    # A word English does not know is often a typo of one the paper has.
    if english_zipf(word) == 0:
        close = get_close_matches(word, words, n=1, cutoff=0.85)
        if close:
            return close[0]
    return ""


def _paraphrases(
    terms: Sequence[KeyTerm], missing: Sequence[int], words: Sequence[str], vectors: SentenceVectors
) -> dict[int, str]:
    """For each missing (non-entity) term, the paper word close enough to stand for it."""
    wanted = [i for i in missing if not terms[i].entity]
    if not wanted or not words:
        return {}
    found = {}
    for i in wanted:
        variant = _spelling_variant(terms[i].text.casefold(), words)
        if variant:
            found[i] = variant
    wanted = [i for i in wanted if i not in found]
    if not wanted:
        return found
    term_vectors = vectors([terms[i].text.casefold() for i in wanted])
    word_vectors = vectors(list(words))
    cosine = term_vectors @ word_vectors.T
    for row, i in enumerate(wanted):
        best = int(np.argmax(cosine[row]))
        if cosine[row, best] >= PARAPHRASE_BAR:
            found[i] = words[best]
    return found


def _restated(
    analysis: QuestionAnalysis, missing: Sequence[int], sentences: Sequence[str], vectors: SentenceVectors
) -> dict[int, set[int]]:
    """For each missing term, the sentences that restate its phrase in other words."""
    wanted = [i for i in missing if not analysis.terms[i].entity]
    if not wanted or not sentences:
        return {}
    phrases = [analysis.phrase_of(analysis.terms[i]) for i in wanted]
    cosine = vectors(phrases) @ vectors(list(sentences)).T
    found: dict[int, set[int]] = {}
    for row, i in enumerate(wanted):
        positions = {int(j) for j in np.flatnonzero(cosine[row] >= PHRASE_BAR)}
        if positions:
            found[i] = positions
    return found


def gather(analysis: QuestionAnalysis, sources: Sequence[Source], vectors: SentenceVectors) -> Evidence:
    """Score every sentence of every source against the question (see the module docstring)."""
    terms = analysis.terms
    total_weight = sum(group_weights(terms).values())
    # The sentences and their vectors as ingest stored them: one read for all the sources.
    vectors.read([s.paper for s in sources])
    split = [(s, split_sentences(s.paper.abstract)) for s in sources]
    texts = [sentence for _, sentences in split for sentence in sentences]
    similarities = iter(vectors.similarities(analysis.focus, texts) if texts else [])
    if any(not t.entity for t in terms):
        # The words paraphrases are looked for among, in one look-up rather than one a paper.
        vectors([w for s in sources[:PARAPHRASED_PAPERS] for w in paper_words(paper_text(s.paper))])
    papers = []
    for rank, (source, sentences) in enumerate(split):
        text = paper_text(source.paper)
        stems = _paper_terms(text)
        met = {i: t.text for i, t in enumerate(terms) if _meets(t, text, stems)}
        missing = [i for i in range(len(terms)) if i not in met]
        if rank < PARAPHRASED_PAPERS:
            met.update(_paraphrases(terms, missing, paper_words(text), vectors))
        restated = _restated(analysis, [i for i in missing if i not in met], sentences, vectors)
        met.update({i: "" for i in restated})
        scored = []
        for position, sentence in enumerate(sentences):
            plain = to_plain(sentence)
            sentence_stems = _paper_terms(plain)
            lowered = sentence.casefold()
            hits = frozenset(
                i
                for i, t in enumerate(terms)
                if _meets(t, plain, sentence_stems)
                or (i in met and met[i] and met[i] != t.text and met[i] in lowered)
                or position in restated.get(i, ())
            )
            scored.append(
                SentenceEvidence(
                    number=source.number,
                    position=position,
                    text=sentence,
                    similarity=float(next(similarities)),
                    terms=hits,
                    roles=role_scores(sentence, position, len(sentences)),
                    has_number=bool(NUMBER.search(plain)) or "$" in sentence,
                    boilerplate=is_boilerplate(sentence),
                )
            )
        coverage = weight_met(terms, met) / total_weight if total_weight else 0.0
        name = to_plain(f"{source.paper.title} {source.paper.short_name}")
        in_title = frozenset(i for i, t in enumerate(terms) if _meets(t, name, _paper_terms(name)))
        papers.append(PaperEvidence(source=source, sentences=tuple(scored), met=met, coverage=coverage, in_title=in_title))
    return Evidence(analysis=analysis, papers=tuple(papers), term_weight=total_weight)


def _run_weights(terms: Sequence[KeyTerm]) -> dict[int, float]:
    weights: dict[int, float] = {}
    for t in terms:
        weights[t.run] = weights.get(t.run, 0.0) + t.weight
    return weights


def group_weights(terms: Sequence[KeyTerm]) -> dict[int, float]:
    """Each group's weight: that of its heaviest run (alternatives count once)."""
    runs = _run_weights(terms)
    weights: dict[int, float] = {}
    for t in terms:
        weights[t.group] = max(weights.get(t.group, 0.0), runs[t.run])
    return weights


def weight_met(terms: Sequence[KeyTerm], met: Collection[int]) -> float:
    """The weight the met terms (indices) meet: per group, the best-met run's share of its own
    weight, times the group's weight. Within a run every word counts; among runs of one group,
    the best one does ("A or B" asks for either)."""
    runs = _run_weights(terms)
    met_in_run: dict[int, float] = {}
    for i in met:
        met_in_run[terms[i].run] = met_in_run.get(terms[i].run, 0.0) + terms[i].weight
    share: dict[int, float] = {}
    for t in terms:
        if runs[t.run]:
            share[t.group] = max(share.get(t.group, 0.0), met_in_run.get(t.run, 0.0) / runs[t.run])
    return sum(weight * share.get(group, 0.0) for group, weight in group_weights(terms).items())


def sentence_coverage(sentence: SentenceEvidence, terms: Sequence[KeyTerm]) -> float:
    """The share of the question's term weight one sentence meets."""
    total = sum(group_weights(terms).values())
    return weight_met(terms, sentence.terms) / total if total else 0.0


# Of a paper that is not read whole, the sentences the verifier reads: the closest to the question.
VERIFIED_SENTENCES = 3


def verify(evidence: Evidence, verifier: Verifier, numbers: Collection[int], *, whole: Collection[int] = ()) -> Evidence:
    """The evidence with the verifier's verdicts on the sentences of the papers numbered `numbers`:
    every quotable sentence of those in `whole`, the `VERIFIED_SENTENCES` closest to the question
    of the others. A sentence that is not read keeps no verdict."""
    wanted: list[tuple[int, int]] = []
    for p, paper in enumerate(evidence.papers):
        if paper.number not in numbers:
            continue
        candidates = list(range(len(paper.sentences)))
        if paper.number not in whole:
            candidates = sorted(candidates, key=lambda i: -paper.sentences[i].similarity)[:VERIFIED_SENTENCES]
        wanted += [(p, i) for i in candidates if not paper.sentences[i].verified]
    if not wanted:
        return evidence
    verdicts = verifier.judge(evidence.analysis.search_text, [evidence.papers[p].sentences[i].plain for p, i in wanted])
    papers = list(evidence.papers)
    for (p, i), verdict in zip(wanted, verdicts, strict=True):
        sentences = list(papers[p].sentences)
        sentences[i] = replace(sentences[i], answers=round(verdict.answers, 4), contradicts=round(verdict.contradicts, 4))
        papers[p] = replace(papers[p], sentences=tuple(sentences))
    return replace(evidence, papers=tuple(papers))
