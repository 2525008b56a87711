"""The records of an evaluation: a question set and its items, what each question got, how it was
checked, and the whole run's report (`report.json`)."""

from __future__ import annotations

from pydantic import Field, computed_field

from rag.records import Citation, Record


class EvalItem(Record):
    """One question of an evaluation set, and which papers a right answer rests on."""

    id: str
    question: str
    # Graded relevance by paper id (BEIR qrels); a set that lists only gold ids grades each 1.
    relevance: dict[str, int] = Field(default_factory=dict)
    reference: str = ""
    type: str = "lookup"
    # how/result questions: the abstract sentences that answer them, as written.
    gold_sentences: tuple[str, ...] = ()
    # unanswerable questions: which kind (out_of_corpus, false_presupposition, underspecified, ...)
    kind: str = ""
    # false_premise questions: what the question wrongly takes for granted; gold_sentences hold
    # the sentences that contradict it.
    premise: str = ""
    # calibration or report: sets written for tuning keep their report half apart
    split: str = ""
    # How the question is written, where a set says: "lay" (everyday words), "terse" (a search
    # box's few words), "short"; a false premise's form ("use": "How does X use Y?").
    style: str = ""

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
    # The split it was loaded with (a BEIR qrels split, or a half); None: the default.
    split: str | None = None

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
    kind: str = ""
    style: str = ""
    gold: tuple[str, ...]
    retrieved: tuple[str, ...]
    answer: str | None = None
    covered: bool | None = None
    grade: str = ""  # rag.records.Grade's value; empty for a clarification, or a report written before grades
    form: str = ""
    citations: tuple[Citation, ...] = ()
    listed: tuple[str, ...] = ()  # every paper the answer gives (cited, or a collection's further matches)
    # Paper id -> title (as written, LaTeX and all) of the gold papers, the top k retrieved and
    # those the answer gives, so a report shows what they are without the index. Empty in a
    # report written before reports kept them.
    titles: dict[str, str] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    # With a paired judge (`rag.evaluation.judges.PairedJudge`): `scores` are the primary judge's, these the
    # secondary's, and `verdicts` each support decision as (primary, secondary). Kept per item so
    # a resumed run measures the judges' agreement over every item, not just those it asked.
    second_scores: dict[str, float] = Field(default_factory=dict)
    verdicts: tuple[tuple[bool, bool], ...] = ()
    # Why the question failed (a PaperChatError's message): the item has no answer and no scores.
    error: str = ""

    @property
    def cited(self) -> tuple[str, ...]:
        """The ids of the papers the answer cites, each once, in order."""
        return tuple(dict.fromkeys(c.paper_id for c in self.citations))

    @property
    def group(self) -> str:
        """The question's type, and for unanswerable questions their kind, and the style it is
        written in where its set says: "unanswerable/out_of_corpus", "lookup/lay"."""
        return "/".join(x for x in (self.type, self.kind, self.style) if x)


class MetricCheck(Record):
    """A question checked on one metric by its pass rule (`rag.evaluation.metrics`): its score, and whether it passed."""

    metric: str
    value: float
    passed: bool


class PaperMark(Record):
    """A paper an evaluated question names (gold, cited, listed or retrieved near the top), and
    what the run did with it."""

    id: str
    title: str = ""  # as written; empty when the report does not hold it
    gold: bool = False
    cited: bool = False
    listed: bool = False  # given by the answer: cited, or a collection's further match
    rank: int | None = None  # its place in the ranking scored, from 1; None when not in it


class QuestionOutcome(Record):
    """One question of a report, checked (`rag.evaluation.outcomes`): what it got, the scores its report
    leads with, each check that applies, and the papers it names."""

    item: ItemResult
    scores: dict[str, float]
    checks: tuple[MetricCheck, ...]
    papers: tuple[PaperMark, ...]

    @property
    def failures(self) -> tuple[MetricCheck, ...]:
        return tuple(c for c in self.checks if not c.passed)

    @property
    def failed(self) -> bool:
        """Whether it failed a check, or failed to run at all."""
        return bool(self.item.error or self.failures)


class EvalReport(Record):
    """A whole evaluation run: what ran, the aggregate metrics, and every item."""

    set_name: str
    set_path: str
    backend: str
    model: str = ""
    judge: str = ""
    retriever: str = "hybrid"
    # The verifier's reordering of the fused ranking (Settings.rerank_depth, rerank_weight): the
    # papers it reorders, 0 when off, and how much the fused score counts beside it.
    rerank_depth: int = 0
    rerank_weight: float = 0.0
    k: int
    depth: int
    created: str
    metrics: dict[str, float]
    counts: dict[str, int]
    by_type: dict[str, dict[str, float]]
    latency: dict[str, dict[str, float]]
    judge_agreement: dict[str, float] | None = None
    # Set when the judges' agreement is below rag.evaluation.evaluate.KAPPA_BAR: the metrics are then the
    # calibrated similarity judge's, and `alternative_metrics` the LLM judge's.
    judge_note: str = ""
    alternative_metrics: dict[str, float] | None = None
    # The metrics are over the items without an error; `items` lack the questions a stopped run
    # did not reach. What `paperchat eval --resume` needs to ask the rest: the set (`set_path`,
    # `split`, `corpus`), the run's questions, and its options (backend, judge, retriever, k, depth).
    items: tuple[ItemResult, ...]
    questions: tuple[str, ...] = ()
    split: str | None = None
    corpus: str | None = None
    # Why the run stopped before its last question; empty when it did not.
    stopped: str = ""

    @property
    def question_ids(self) -> tuple[str, ...]:
        """Every question of the run, in order (a report written before runs could stop has only its items)."""
        return self.questions or tuple(i.id for i in self.items)

    # Pydantic's documented form, which mypy does not know.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def failed(self) -> int:
        """How many questions failed."""
        return sum(bool(i.error) for i in self.items)

    @property
    def unasked(self) -> tuple[str, ...]:
        """The questions a stopped run did not reach."""
        asked = {i.id for i in self.items}
        return tuple(q for q in self.question_ids if q not in asked)
