"""The typed records that cross module boundaries: papers, chunks, sources, citations, answers.

Plain data with no behaviour beyond derived fields, after paper-qa's docs/contexts/answers.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, computed_field

from rag.markup import to_plain
from rag.naming import method_name, opening_words, short_name
from rag.text import in_cjk, language_of


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
        """The title; for an untitled record (the seed listing) the method its abstract introduces,
        else its first author and opening words. Plain text: LaTeX is turned into Unicode."""
        if self.title:
            return to_plain(self.title)
        name = method_name(self.abstract)
        if name:
            return name
        return f"{self.short_name}: {opening_words(self.abstract, 8)}"

    @property
    def short_name(self) -> str:
        """What an answer calls the paper: "MoH", "DragSolver", or the title (`rag.naming`)."""
        return short_name(self.title, self.abstract, self.authors)

    @property
    def content_hash(self) -> str:
        """Changes when anything shown or embedded changes; drives update-vs-unchanged on ingest."""
        return stable_id(
            self.title,
            "; ".join(self.authors),
            self.abstract,
            self.category,
            self.venue,
            str(self.year or ""),
            self.url,
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


class Limits(Record):
    """How much a corpus may hold (`Settings.limits`), checked while a file is read, before
    anything of it is indexed."""

    max_abstract_tokens: int
    max_upload_mb: int
    max_upload_records: int


class Chunk(Record):
    """A piece of one paper's abstract, as embedded. `text` starts with the title."""

    id: str
    paper_id: str
    position: int
    n_chunks: int
    text: str


@lru_cache(maxsize=64)
def _name_words(name: str) -> re.Pattern[str]:
    """A name as whole words of an author's name, any case."""
    return re.compile(rf"(?<!\w){re.escape(name.strip())}(?!\w)", re.IGNORECASE)


class Filters(Record):
    """Metadata filters, case-insensitive: category and venue by substring; an author by whole
    words of a name ("Chen" is Xilin Chen, not Cheng or Xingcheng)."""

    category: str | None = None
    venue: str | None = None
    author: str | None = None
    year_min: int | None = None
    year_max: int | None = None

    @property
    def active(self) -> bool:
        return any(v not in (None, "") for v in self.model_dump().values())

    @property
    def description(self) -> str:
        """The active filters in words: "venue ICML 2025, author Yuan, years 2023–…"."""
        return ", ".join(self.parts)

    @property
    def parts(self) -> list[str]:
        """Each active filter in words: ["venue ICML 2025", "author Yuan", "years 2023–…"]."""
        parts = [
            f"{name} {value}"
            for name, value in (("venue", self.venue), ("category", self.category), ("author", self.author))
            if value
        ]
        if self.year_min and self.year_min == self.year_max:
            parts.append(f"year {self.year_min}")
        elif self.year_min or self.year_max:
            parts.append(f"years {self.year_min or '…'}–{self.year_max or '…'}")
        return parts

    def matches(self, paper: Paper) -> bool:
        return self.admits_place(paper.category, paper.venue, paper.year) and self.admits_authors(paper.authors)

    def admits_place(self, category: str, venue: str, year: int | None) -> bool:
        """Whether a paper of this category, venue and year passes (the author aside)."""

        def has(needle: str | None, haystack: str) -> bool:
            return not needle or needle.casefold() in haystack.casefold()

        if not has(self.category, category) or not has(self.venue, venue):
            return False
        if self.year_min is not None and (year is None or year < self.year_min):
            return False
        return self.year_max is None or (year is not None and year <= self.year_max)

    def admits_authors(self, authors: Sequence[str]) -> bool:
        return not self.author or any(_name_words(self.author).search(a) for a in authors)


@dataclass(frozen=True)
class CorpusProfile:
    """What question analysis needs to know of the corpus: its size, term counts and metadata."""

    papers: int = 0
    document_frequency: Mapping[str, int] = field(default_factory=dict)
    venues: Sequence[str] = ()
    authors: Sequence[str] = ()
    categories: Sequence[str] = ()
    years: Sequence[int] = ()
    names: Mapping[str, str] = field(default_factory=dict)  # short name -> paper id

    def idf(self, stem: str) -> float:
        """Inverse document frequency in [0, 1]: 1 for a word no paper has, 0 for one all have."""
        if self.papers <= 1:
            return 1.0
        df = self.document_frequency.get(stem, 0)
        return math.log((self.papers + 1) / (df + 0.5)) / math.log((self.papers + 1) / 0.5)


class QuestionType(StrEnum):
    LOOKUP = "lookup"
    HOW = "how"
    RESULT = "result"
    COLLECTION = "collection"
    SUMMARY = "summary"
    COMPARISON = "comparison"
    YES_NO = "yes/no"


class KeyTerm(Record):
    """A word or name an answer must address, and how much it weighs (0-1)."""

    text: str
    stems: tuple[str, ...]
    weight: float
    entity: bool = False  # a coined name or a token with digits: met only as written
    measure: bool = False  # what a result question asks to be reported as a number (accuracy, ...)
    run: int = 0  # the phrase (run of adjacent key words) it is in
    group: int = 0  # runs of one group are alternatives ("A or B"): meeting one meets the group


class QuestionAnalysis(Record):
    """What a question asks (`rag.question.analysis`): computed once per turn, kept on the answer."""

    question: str
    cleaned: str
    search_text: str
    focus: str
    type: QuestionType
    asks_how: bool = False
    terms: tuple[KeyTerm, ...] = ()
    phrases: tuple[str, ...] = ()
    filters: Filters = Filters()
    named_papers: tuple[str, ...] = ()
    about_selection: bool = False  # "these papers", "them": the papers the filters leave
    # A statement, not a question: a claim to check, a title, keywords. It states more detail
    # than any abstract words the same way.
    statement: bool = False

    @property
    def in_cjk(self) -> bool:
        """Asked in Chinese, Japanese or Korean (`rag.text.in_cjk`): read by its meaning, not by
        the word rules, which see only the Latin names in it."""
        return in_cjk(self.cleaned)

    @property
    def language(self) -> str:
        """The language the answer's own words are in (`rag.text.language_of`)."""
        return language_of(self.cleaned)

    @property
    def measures(self) -> tuple[KeyTerm, ...]:
        """What a result question asks to be reported ("accuracy", "long caption-image pairs")."""
        return tuple(t for t in self.terms if t.measure)

    def phrase_of(self, term: KeyTerm) -> str:
        """The question's phrase a term stands in ("federated" -> "federated learning")."""
        return next((p for p in self.phrases if re.search(rf"(?<![\w-]){re.escape(term.text)}(?![\w-])", p)), term.text)

    @property
    def summary_line(self) -> str:
        """What was searched for, in a line: the type, the key terms and stated filters."""
        parts = [self.type.value]
        if self.terms:
            parts.append("key terms: " + ", ".join(t.text for t in sorted(self.terms, key=lambda t: -t.weight)))
        stated = self.filters.description
        if stated:
            parts.append(stated)
        return " · ".join(parts)


class Coverage(StrEnum):
    COVERED = "covered"
    PARTLY = "partly covered"
    NOT_COVERED = "not covered"
    UNCLEAR = "unclear"
    BEYOND = "beyond the abstracts"
    # An abstract says the opposite of what the question takes for granted: answered by that sentence.
    CONTRADICTED = "contradicted"
    # The abstracts do not use the question's words, but retrieval has a clear best paper: it is
    # quoted as the closest match, and the answer says it could not be confirmed.
    BEST_MATCH = "best match"


class Grade(StrEnum):
    """How sure an answer is, as every surface shows it (`Answerability.grade`)."""

    ANSWERS = "answers"  # the evidence is judged to answer: the question's terms met, or the verifier sure
    BEST_MATCH = "best match"  # the closest paper in other words, or part of the question missing: not confirmed
    NOT_FOUND = "not found"  # nothing retrieved is near, or what it asks is checkably absent


_GRADES = {
    Coverage.COVERED: Grade.ANSWERS,
    Coverage.CONTRADICTED: Grade.ANSWERS,
    Coverage.PARTLY: Grade.BEST_MATCH,
    Coverage.BEST_MATCH: Grade.BEST_MATCH,
}


class Answerability(Record):
    """Whether the corpus answers a question, and what of it no abstract meets (`rag.answering.answerability`)."""

    coverage: Coverage
    missing: tuple[str, ...] = ()  # what the question asks that no retrieved abstract meets
    unreported: tuple[str, ...] = ()  # measures a result question asks for that no sentence reports
    best_coverage: float = 0.0
    best_similarity: float = 0.0
    # The verifier's (rag.models.verifier) best probabilities over the evidence: that a sentence answers
    # the question, and that one contradicts what it takes for granted.
    best_answer: float = 0.0
    best_contradiction: float = 0.0
    # Contradicted: what the question takes for granted, in its own words.
    premise: str = ""
    # A best match: the ids of the papers retrieval clearly ranks best, quoted as the closest match,
    # and what of the question other retrieved abstracts meet but theirs do not.
    best: tuple[str, ...] = ()
    elsewhere: tuple[str, ...] = ()
    # Of a question about a paper it names: what it asks that the paper's whole abstract does not
    # hold, checked: the answer quotes what is near, but does not answer.
    absent: tuple[str, ...] = ()
    reason: str = ""

    @property
    def answers(self) -> bool:
        """Whether an answer is written from the abstracts (covered, partly, a best match, or
        correcting the question)."""
        return self.coverage in _GRADES

    @property
    def grade(self) -> Grade:
        if self.absent and self.coverage == Coverage.PARTLY:
            return Grade.NOT_FOUND
        return _GRADES.get(self.coverage, Grade.NOT_FOUND)


class Source(Record):
    """A retrieved paper, numbered as the model sees it ([1]..[k])."""

    number: int
    paper: Paper
    score: float
    dense_similarity: float | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    bm25_rank: int | None = None
    # The verifier's probability that the paper is about what the question asks (rag.search.rerank).
    verified: float | None = None


class Relevance(Record):
    """How a retrieved paper meets a question: the abstract sentence that matches it best, that
    sentence's similarity to it, the share of its key-term weight the paper meets, the paper's
    words that meet them, the question's phrases it does not meet, and whether all that is weak
    (a hit the reader should discount)."""

    paper_id: str
    sentence: str
    similarity: float
    coverage: float = 0.0
    matched: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    weak: bool = False


class PaperMatch(Relevance):
    """One paper a search found: its source (rank and scores) and how it meets the query."""

    source: Source


class Citation(Record):
    """One [n] in an answer, resolved to its paper and the abstract sentence that supports it.

    `supported` is False when that sentence does not support the claim (the calibrated judge), or
    when the claim states a number the sentence does not hold (`unsupported_numbers`)."""

    number: int
    paper_id: str
    title: str
    authors: tuple[str, ...]
    url: str = ""
    citing_sentence: str
    support: str
    support_score: float
    supported: bool = True
    unsupported_numbers: tuple[str, ...] = ()


class CitationReport(Record):
    """What checking an answer's citations found."""

    text: str
    citations: tuple[Citation, ...]
    invalid: tuple[int, ...] = ()
    uncited: bool = False


class CollectionMatch(Record):
    """A paper that answers a collection question ("which papers ..."), with its key sentence."""

    number: int
    sentence: str
    relevance: float
    group: str = ""
    how: str = ""  # for "..., and how?": the sentence that states its method


class TableCell(Record):
    """One cell of a comparison: a quote cited to its paper, or `None` where the abstract is silent."""

    text: str | None = None


class TableRow(Record):
    number: int
    paper: str
    cells: tuple[TableCell, ...]


class ComparisonTable(Record):
    """Papers x aspects (problem, method, data, reported result); each filled cell quotes its paper."""

    aspects: tuple[str, ...]
    rows: tuple[TableRow, ...]


class CellGrade(StrEnum):
    """How sure a research table's cell is, as the table, its exports and its evidence show it."""

    ANSWERS = "answers"  # the quote answers the column: no wrong cell of the calibration half scored so high
    CLOSEST = "closest sentence"  # quoted, as the paper's closest sentence, not confirmed to answer
    NOT_IN_ABSTRACT = "not in the abstract"


class ResearchCell(Record):
    """One paper's answer to one column's question: the abstract's sentence that answers it,
    exactly as the abstract has it, or `None` where no sentence does (`covered` False). The
    closest sentence and its score are kept either way, for the reader to check the verdict."""

    quote: str | None = None
    covered: bool = False
    closest: str | None = None
    score: float = 0.0  # the verifier's probability that `closest` answers the column
    # With a model backend, the quote said short ("MoH: 50-90% of heads"), kept only where the
    # quote bears it out (`rag.answering.research.checked_paraphrase`).
    paraphrase: str | None = None
    # Whether the quote scored as high as only right cells do (`rag.answering.research.SURE_BAR`).
    sure: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def grade(self) -> CellGrade:
        if not self.covered:
            return CellGrade.NOT_IN_ABSTRACT
        return CellGrade.ANSWERS if self.sure else CellGrade.CLOSEST


class ResearchRow(Record):
    paper_id: str
    title: str
    cells: tuple[ResearchCell, ...]


class ResearchTable(Record):
    """Papers x the user's own questions (issue 25's research table); each covered cell quotes
    its row's paper."""

    columns: tuple[str, ...]
    rows: tuple[ResearchRow, ...]
    # What chose the rows, in words ("papers a collection answer to “…” lists"): shown above the
    # table, and a column asked in the chat is asked of them.
    source: str = ""


class ExampleQuestion(Record):
    """A question the corpus can answer, offered on the first screen; a summary names its paper."""

    text: str
    paper_id: str | None = None


@dataclass(frozen=True)
class IndexStats:
    papers: int
    chunks: int
    embedding_model: str
    location: str
    categories: dict[str, int]
    venues: dict[str, int]
    years: dict[int, int]

    @property
    def summary(self) -> str:
        """What is loaded, for a newcomer: "20 ICML 2025 papers", "13,687 papers from 31 venues,
        2013-2024", "340 papers"."""
        if not self.papers:
            return "no papers"
        if len(self.venues) == 1 and sum(self.venues.values()) == self.papers:
            return f"{self.papers:,} {next(iter(self.venues))} papers"
        head = f"{self.papers:,} papers" + (f" from {len(self.venues)} venues" if len(self.venues) > 1 else "")
        years = "–".join(dict.fromkeys(str(y) for y in (min(self.years), max(self.years)))) if self.years else ""
        return f"{head}, {years}" if years else head


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
    # What a partly covered answer adds: what no abstract reports or mentions. Not a claim.
    note: str = ""
    # Why the answer stops short, when the model's stream broke after part of it was shown.
    cut_off: str = ""
    citations: tuple[Citation, ...]
    sources: tuple[Source, ...]
    invalid_citations: tuple[int, ...] = ()
    uncited: bool = False
    backend: str
    form: str = "answer"
    analysis: QuestionAnalysis | None = None
    answerability: Answerability | None = None
    # Papers shown when the corpus does not answer: the closest, which do not answer it (not cited).
    closest: tuple[Source, ...] = ()
    # A clarification (form "clarify") asks which paper a follow-up means: these, numbered 1.. as offered.
    choices: tuple[Source, ...] = ()
    matches: tuple[CollectionMatch, ...] = ()
    table: ComparisonTable | None = None
    filters: Filters = Filters()
    # What was searched: "20 ICML 2025 papers" (rag.records.IndexStats.summary) when it was asked.
    corpus: str = ""
    # How each retrieved (or closest) paper meets the question, by paper id.
    relevance: tuple[Relevance, ...] = ()
    created: str = ""
    timings: dict[str, float] = Field(default_factory=dict)

    @property
    def language(self) -> str:
        """The language its own words are in: the question's (`rag.text.language_of`)."""
        return language_of(self.question)

    @property
    def covered(self) -> bool:
        """Whether the answer is written from the abstracts (covered or partly covered)."""
        return self.answerability is None or self.answerability.answers

    @computed_field  # type: ignore[prop-decorator]
    @property
    def grade(self) -> Grade | None:
        """How sure the answer is; none for a clarification, which asks back rather than answers."""
        if self.form == "clarify":
            return None
        return self.answerability.grade if self.answerability is not None else Grade.ANSWERS

    @property
    def unsupported(self) -> tuple[Citation, ...]:
        return tuple(c for c in self.citations if not c.supported)

    @property
    def cited_sources(self) -> tuple[Source, ...]:
        numbers = {c.number for c in self.citations}
        return tuple(s for s in self.sources if s.number in numbers)

    @property
    def answered_by(self) -> str:
        """The backend that wrote the answer; none for a clarification, asked back by rule."""
        return "" if self.form == "clarify" else self.backend

    def relevance_of(self, paper_id: str) -> Relevance | None:
        return next((r for r in self.relevance if r.paper_id == paper_id), None)


_WS = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    return _WS.sub(" ", text).strip()
