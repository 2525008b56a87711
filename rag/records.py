"""The typed records that cross module boundaries: papers, chunks, sources, citations, answers.

Plain data with no behaviour beyond derived fields, after paper-qa's docs/contexts/answers.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    model_config = ConfigDict(frozen=True)


def stable_id(*parts: str) -> str:
    """A short id that is the same for the same content on every machine and run."""
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:16]


class Paper(Record):
    """One paper: what a corpus file says of it."""

    id: str
    title: str = ""
    authors: tuple[str, ...] = ()
    abstract: str
    category: str = ""
    venue: str = ""
    year: int | None = None
    url: str = ""
    extra: dict[str, str] = Field(default_factory=dict)

    @property
    def display_title(self) -> str:
        """The title, or for untitled records (the seed listing) the abstract's opening words."""
        if self.title:
            return self.title
        words = self.abstract.split()
        opening = " ".join(words[:12])
        return f"[untitled] {opening}…" if len(words) > 12 else f"[untitled] {opening}"

    @property
    def content_hash(self) -> str:
        """Changes when anything shown or embedded changes; drives update-vs-unchanged on ingest."""
        return stable_id(
            self.title, "; ".join(self.authors), self.abstract, self.category, self.venue,
            str(self.year or ""), self.url,
        )

    @property
    def author_line(self) -> str:
        if len(self.authors) > 4:
            return f"{', '.join(self.authors[:3])} et al."
        return ", ".join(self.authors)


class SkippedRecord(Record):
    """A record left out of a load, and why (`file:line: reason`)."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


class LoadResult(Record):
    papers: tuple[Paper, ...]
    skipped: tuple[SkippedRecord, ...] = ()


class Chunk(Record):
    """A piece of one paper's abstract, as embedded. `text` starts with the title."""

    id: str
    paper_id: str
    position: int
    n_chunks: int
    text: str


class Filters(Record):
    """Metadata filters; matching is case-insensitive and by substring for text fields."""

    category: str | None = None
    venue: str | None = None
    author: str | None = None
    year_min: int | None = None
    year_max: int | None = None

    @property
    def active(self) -> bool:
        return any(v not in (None, "") for v in self.model_dump().values())

    def matches(self, paper: Paper) -> bool:
        def has(needle: str | None, haystack: str) -> bool:
            return not needle or needle.casefold() in haystack.casefold()

        if not has(self.category, paper.category) or not has(self.venue, paper.venue):
            return False
        if self.author and not any(has(self.author, a) for a in paper.authors):
            return False
        if self.year_min is not None and (paper.year is None or paper.year < self.year_min):
            return False
        if self.year_max is not None and (paper.year is None or paper.year > self.year_max):
            return False
        return True


class Source(Record):
    """A retrieved paper, numbered as the model sees it ([1]..[k])."""

    number: int
    paper: Paper
    score: float
    dense_similarity: float | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    bm25_rank: int | None = None
    passage: str = ""


class Citation(Record):
    """One [n] in an answer, resolved to its paper and the abstract sentence that supports it."""

    number: int
    paper_id: str
    title: str
    authors: tuple[str, ...]
    url: str = ""
    citing_sentence: str
    support: str
    support_score: float


class CitationReport(Record):
    """What checking an answer's citations found."""

    text: str
    citations: tuple[Citation, ...]
    invalid: tuple[int, ...] = ()
    uncited: bool = False


class IngestReport(Record):
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: tuple[SkippedRecord, ...] = ()
    chunks_written: int = 0
    seconds: float = 0.0


class Answer(Record):
    """A finished answer: the text, its checked citations, every source, timings per stage."""

    question: str
    standalone_question: str
    text: str
    citations: tuple[Citation, ...]
    sources: tuple[Source, ...]
    invalid_citations: tuple[int, ...] = ()
    uncited: bool = False
    covered: bool = True
    backend: str
    timings: dict[str, float] = Field(default_factory=dict)

    @property
    def cited_sources(self) -> tuple[Source, ...]:
        numbers = {c.number for c in self.citations}
        return tuple(s for s in self.sources if s.number in numbers)


_WS = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    return _WS.sub(" ", text).strip()


class EvalItem(Record):
    """One question of an evaluation set, and which papers a right answer rests on."""

    id: str
    question: str
    # Graded relevance by paper id (BEIR qrels); a set that lists only gold ids grades each 1.
    relevance: dict[str, int] = Field(default_factory=dict)
    reference: str = ""
    type: str = "lookup"

    @property
    def gold(self) -> tuple[str, ...]:
        return tuple(pid for pid, grade in self.relevance.items() if grade > 0)

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


class EvalSet(Record):
    """A question set and, for benchmarks that bring their own papers, the corpus it is judged over."""

    name: str
    path: str
    items: tuple[EvalItem, ...]
    # None: the questions are about the configured index (the user's own corpus).
    corpus: str | None = None

    @property
    def depth(self) -> int:
        """How deep rankings are scored by default: benchmarks report Recall@100, and a set over
        the user's corpus, often a few dozen papers, needs no more than the top 10."""
        return 100 if self.corpus else 10


class ItemResult(Record):
    """What one question got: the ranking, the answer, and every score that applies to it."""

    id: str
    question: str
    type: str
    gold: tuple[str, ...]
    retrieved: tuple[str, ...]
    answer: str | None = None
    covered: bool | None = None
    citations: tuple[Citation, ...] = ()
    scores: dict[str, float] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)

    @property
    def cited(self) -> tuple[str, ...]:
        """The ids of the papers the answer cites, each once, in order."""
        return tuple(dict.fromkeys(c.paper_id for c in self.citations))


class EvalReport(Record):
    """A whole evaluation run: what ran, the aggregate metrics, and every item."""

    set_name: str
    set_path: str
    backend: str
    model: str = ""
    judge: str = ""
    retriever: str = "hybrid"
    k: int
    depth: int
    created: str
    metrics: dict[str, float]
    counts: dict[str, int]
    by_type: dict[str, dict[str, float]]
    latency: dict[str, dict[str, float]]
    judge_agreement: dict[str, float] | None = None
    items: tuple[ItemResult, ...]
