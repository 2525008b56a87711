"""The answering chain. It only orchestrates; each stage is its own module in `rag.answering`.

    condense (rag.question.followup), or ask back which paper an unclear reference means
      -> analyze (question) -> retrieve (rag.search.retrieval)
      -> gather evidence (evidence) -> assess answerability (answerability)
      -> decline (decline), or plan the form (forms: quotes, collection, comparison) and stream
         the backend's answer through the stream guard (check) -> check citations and their support

`Assistant` is what the CLI, the UI and the evaluation call. `stream()` yields typed events as
the answer is produced; `ask()` returns the finished `Answer`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate

from rag.answering.answerability import assess, for_model
from rag.answering.backends import ModelBackend, choose_backend
from rag.answering.check import DeclineOpening, StreamGuard, check_support, mark_unsupported
from rag.answering.citations import check_citations
from rag.answering.evidence import Evidence, gather, verify
from rag.answering.extractive import ExtractiveBackend
from rag.answering.forms.choice import plan
from rag.answering.forms.collection import SHOWN, admitted
from rag.answering.forms.decline import closest_papers, decline_text, partial_note
from rag.answering.papersearch import paper_matches, relevance
from rag.answering.request import AnswerRequest, Backend, Task
from rag.answering.research import MAX_COLUMNS, MAX_ROWS, paraphrased, research_rows
from rag.errors import AnswerCutOff, BackendError, InputError, PaperNotFoundError, QuestionTooLongError
from rag.index.embeddings import SentenceVectors
from rag.index.store import Index
from rag.markup import defuse_markdown
from rag.models.modelcall import Retrying
from rag.models.prompts import load_prompt
from rag.models.verifier import Verifier, load_verifier
from rag.question.analysis import analyze
from rag.question.followup import (
    SUMMARY_REQUEST,
    Reading,
    acceptable_rewrite,
    read_references,
    resolve_by_rule,
    resolve_references,
    stands_alone,
)
from rag.question.searchquery import acceptable_query
from rag.records import (
    Answer,
    Answerability,
    Coverage,
    Filters,
    Paper,
    PaperMatch,
    QuestionAnalysis,
    QuestionType,
    ResearchRow,
    Source,
)
from rag.search.rerank import rank
from rag.settings import Settings
from rag.text import in_cjk, language_of

__all__ = ["Assistant", "DoneEvent", "Event", "SourcesEvent", "StatusEvent", "TokenEvent", "about_selection"]

# A corpus this small has its sentences embedded when the app starts, not at the first question.
_WARM_PAPERS = 50


@dataclass(frozen=True)
class SourcesEvent:
    """Retrieval is done: these sources will be cited by number. A partly covered answer's `note`
    (what no abstract holds) is shown before its text."""

    standalone_question: str
    sources: tuple[Source, ...]
    analysis: QuestionAnalysis | None = None
    note: str = ""


@dataclass(frozen=True)
class TokenEvent:
    text: str


@dataclass(frozen=True)
class StatusEvent:
    """No answer text yet, and why: the model server failed and is being asked again."""

    text: str


@dataclass(frozen=True)
class DoneEvent:
    answer: Answer


Event = SourcesEvent | TokenEvent | StatusEvent | DoneEvent


def merge_filters(chosen: Filters | None, stated: Filters) -> Filters:
    """The filters set in the UI or on the command line, with those the question states added."""
    base = chosen or Filters()
    return base.model_copy(update={k: v for k, v in stated.model_dump().items() if v not in (None, "")})


def about_selection(analysis: QuestionAnalysis, scope: Filters) -> bool:
    """Whether the question is about the papers the filters leave ("What do these papers
    propose?", "papers by Yuan"): each of them answers it."""
    return scope.active and analysis.about_selection


class Assistant:
    """Answers questions over an `Index` with the backend the settings choose."""

    def __init__(self, index: Index, settings: Settings, *, backend: Backend | None = None) -> None:
        self.index = index
        self.settings = settings
        self.vectors = SentenceVectors(index.embeddings, store=index)
        self.backend = backend or choose_backend(settings, self.vectors)
        self._verifier: Verifier | None = None

    @property
    def verifier(self) -> Verifier:
        """The verifier (`rag.models.verifier`), loaded at the first question that needs it."""
        if self._verifier is None:
            self._verifier = load_verifier(threads=self.settings.threads)
        return self._verifier

    def offline(self) -> Assistant:
        """This assistant answering from the abstracts alone: what the app offers when the model fails."""
        twin = copy.copy(self)
        twin.backend = ExtractiveBackend(self.vectors, reason=f"asked for after {self.backend.label} failed")
        return twin

    def warm_up(self) -> None:
        """Load what the first question would otherwise wait for: the embedding model, the
        sentence splitter, the word frequencies, the corpus profile and the BM25 index, and for
        a small corpus its papers and the vectors of their sentences and words."""
        size = self.index.profile().papers
        if size:
            self.index.lexical.search("warm up", 1)
        papers = list(self.index.papers.values()) if size <= _WARM_PAPERS else []
        sources = [Source(number=n, paper=p, score=0.0) for n, p in enumerate(papers, 1)]
        gather(analyze("How does attention warm up?", self.index.profile()), sources, self.vectors)
        self.vectors.similarities("warm up", ["One sentence.", "Another one."])
        self.verifier.judge("How does attention warm up?", ["One sentence."])

    # -- stages -------------------------------------------------------------------------------

    def condense(self, question: str, history: Sequence[Answer]) -> str:
        """The question made standalone: by rule first; a model's rewrite only when plausible."""
        resolved = resolve_references(question, history)
        profile = self.index.profile()
        if (
            not history
            or resolved != question
            or not isinstance(self.backend, ModelBackend)
            or stands_alone(question, history, profile)
        ):
            return resolve_by_rule(question, history, profile)
        transcript = "\n".join(f"User: {t.question}\nAssistant: {t.text}" for t in history[-3:])
        chain = PromptTemplate.from_template(load_prompt("condense")) | self.backend.chat_model | StrOutputParser()
        kept = acceptable_rewrite(self.backend.text(chain, {"history": transcript, "question": question}), question, history)
        return kept if kept is not None else resolve_by_rule(question, history, profile)

    def search_query(self, standalone: str, timings: dict[str, float]) -> str:
        """What retrieval reads for `standalone`: itself, or, for a question in Chinese (or
        Japanese, Korean) with a model, the English query the model writes, when it is a
        plausible one (`rag.question.searchquery`); the model's time is `timings["translate"]`."""
        if not in_cjk(standalone) or not isinstance(self.backend, ModelBackend):
            return standalone
        clock = time.perf_counter()
        chain = PromptTemplate.from_template(load_prompt("search_query")) | self.backend.chat_model | StrOutputParser()
        kept = acceptable_query(self.backend.text(chain, {"question": standalone}), standalone)
        timings["translate"] = time.perf_counter() - clock
        return kept if kept is not None else standalone

    def prepare(
        self, standalone: str, *, filters: Filters | None = None, k: int | None = None, widen: bool = True
    ) -> tuple[QuestionAnalysis, Filters, Evidence, Answerability]:
        """Analyze, retrieve, gather evidence and assess answerability: everything before writing.
        A collection or comparison retrieves `collection_depth` papers unless `widen` is off."""
        # Another client of a shared server may have ingested since the last question.
        self.index.refresh()
        analysis = analyze(standalone, self.index.profile())
        scope = merge_filters(filters, analysis.filters)
        k = k or self.settings.k
        selection = about_selection(analysis, scope)
        several = selection or analysis.type in (QuestionType.COLLECTION, QuestionType.COMPARISON)
        depth = max(k, self.settings.collection_depth) if widen and several else k
        sources = rank(self.index, analysis, self.settings, self.vectors, self.verifier, k=depth, filters=scope)
        evidence = gather(analysis, sources, self.vectors)
        # The verifier reads the sentences of the papers an answer may quote: the top k, or the
        # papers a collection admits (those it shows); the first paper, and any the question
        # names, whole.
        numbers = (
            [p.number for p in admitted(evidence, selection=selection)][:SHOWN]
            if several
            else [p.number for p in evidence.papers[:k]]
        )
        whole = {p.number for p in evidence.about(1)}
        evidence = verify(evidence, self.verifier, numbers, whole=whole)
        answerability = assess(evidence, min_similarity=self.settings.min_relevance, selection=selection)
        return analysis, scope, evidence, answerability

    def bounded(self, text: str, what: str) -> str:
        """`text` as typed, where it enters (a question, a query, a table column): one within the
        length a user may type, else our error. Not said back: a pasted document would fill the
        screen (and a model's window)."""
        limit = self.settings.max_question_chars
        if len(text) > limit:
            raise QuestionTooLongError(
                f"the {what} is {len(text):,} characters long, past the limit of {limit:,}",
                hint="ask it in a few sentences (a passage's key claim, not the passage), or raise PAPERCHAT_MAX_QUESTION_CHARS",
            )
        return text

    def table_columns(self, columns: Sequence[str]) -> tuple[str, ...]:
        """The research table's columns as typed: each a question within the length limit, and no
        more than a table can show."""
        if len(columns) > MAX_COLUMNS:
            raise InputError(
                f"{len(columns)} columns asked for; a research table has at most {MAX_COLUMNS}",
                hint="split the questions over two tables",
            )
        for number, column in enumerate(columns, 1):
            if not column.strip():
                raise InputError(f"column {number} is empty", hint="give each column a question, e.g. --column 'What data?'")
            self.bounded(column, f"column {number}")
        return tuple(columns)

    def table_papers(self, query: str = "", *, ids: Sequence[str] = (), filters: Filters | None = None) -> list[Paper]:
        """The rows of a research table: the papers named by id, in that order; else the papers a
        collection answer to `query` lists (every one above the collection bar, not only the first
        few it shows); else, with no query, the papers the filters let through, the first
        `MAX_ROWS` of them in the library's order."""
        self.bounded(query, "query")
        if ids:
            return [self.index.get(i) for i in dict.fromkeys(ids)]
        if not query.strip():
            chosen = self.index.matching(filters or Filters())[:MAX_ROWS]
            fetched = self.index.fetch(chosen)
            return [fetched[i] for i in chosen if i in fetched]
        _, _, evidence, _ = self.prepare(query, filters=filters, k=self.settings.collection_depth, widen=False)
        return [p.paper for p in admitted(evidence)]

    def research_table(self, papers: Sequence[Paper], columns: Sequence[str]) -> Iterator[ResearchRow]:
        """The research table's rows (`rag.answering.research`), one paper at a time, for progress.
        With a model backend each quoted cell is also said short, where its quote bears that out;
        a model that fails leaves the cells after it quotes alone rather than the table unmade."""
        columns = self.table_columns(columns)
        rows = research_rows(papers, columns, self.verifier)
        if not isinstance(self.backend, ModelBackend):
            yield from rows
            return
        backend, down = self.backend, False

        def write(title: str, question: str, quote: str) -> str:
            nonlocal down
            if not down:
                try:
                    return backend.cell(title, question, quote)
                except BackendError:
                    down = True
            return ""

        for paper, row in zip(papers, rows, strict=True):
            yield paraphrased(row, columns, paper, write)

    def search_papers(self, query: str, *, filters: Filters | None = None, k: int | None = None) -> list[PaperMatch]:
        """The papers the hybrid ranking finds for `query`, under the filters (and any the query
        states), each with its best matching sentence."""
        _, _, evidence, _ = self.prepare(self.bounded(query, "query"), filters=filters, k=k, widen=False)
        return paper_matches(evidence, min_similarity=self.settings.min_relevance)

    def stream(
        self,
        question: str,
        *,
        history: Sequence[Answer] = (),
        filters: Filters | None = None,
        k: int | None = None,
    ) -> Iterator[Event]:
        self.bounded(question, "question")
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        reading = read_references(question, history)
        if reading.unclear:
            yield from self._clarify(question, reading)
            return
        standalone = self.condense(question, history)
        timings["condense"] = time.perf_counter() - clock
        paper = self.summary_target(standalone)
        if paper is not None:
            yield from self.stream_summary(paper.id, question=question)
            return

        query = self.search_query(standalone, timings)
        clock = time.perf_counter()
        analysis, scope, evidence, answerability = self.prepare(query, filters=filters, k=k)
        timings["retrieve"] = time.perf_counter() - clock
        if isinstance(self.backend, ModelBackend):
            answerability = for_model(answerability, floor=self.settings.model_floor)
        planned = plan(evidence, answerability, k=k or self.settings.k, selection=about_selection(analysis, scope))
        request = AnswerRequest(
            task=planned.task,
            question=standalone,
            analysis=analysis,
            evidence=planned.evidence,
            answerability=planned.answerability,
            history=tuple(history),
            matches=planned.matches,
            table=planned.table,
        )
        yield from self._answer(question, request, scope, timings)

    def _answer(self, question: str, request: AnswerRequest, scope: Filters, timings: dict[str, float]) -> Iterator[Event]:
        """Stream the answer, or the decline, then check the citations. A model that finds the
        sources do not answer says so in a form of its own (`model_declined`), shown as a decline."""
        answerability = request.answerability
        sources = tuple(request.sources) if answerability.answers else ()
        # The question as asked: retrieval may have read an English query written for it.
        language = language_of(request.question)
        note = partial_note(answerability, sources, language=language) if answerability.answers else ""
        yield SourcesEvent(request.question, sources, request.analysis, note=note)
        clock = time.perf_counter()
        guard = StreamGuard({s.number for s in sources})
        opening = DeclineOpening() if self.backend.chat_model is not None and answerability.answers else None
        pieces: list[str] = []
        cut_off = ""
        if not answerability.answers:
            example = next(iter(self.index.profile().names), "")
            pieces.append(decline_text(answerability, example=example, language=language))
            yield TokenEvent(pieces[0])
        else:
            try:
                for piece in self.backend.stream(request):
                    if isinstance(piece, Retrying):
                        yield StatusEvent(piece.text)
                        continue
                    shown = guard.feed(piece)
                    if opening is not None:
                        shown = opening.feed(shown)
                    if shown:
                        if not pieces:
                            # From the question, not from the start of generation: what a reader waits.
                            timings["first_token"] = sum(timings.values()) + time.perf_counter() - clock
                        pieces.append(shown)
                        yield TokenEvent(shown)
                rest = guard.flush()
                if opening is not None:
                    rest = opening.feed(rest, final=True)
                if rest:
                    pieces.append(rest)
                    yield TokenEvent(rest)
            except AnswerCutOff as exc:
                # What was shown stays, marked as cut off; what the guard held back is dropped
                # (a half-written marker).
                if not pieces and not (opening and opening.declined):
                    raise
                cut_off = exc.message
        timings["generate"] = time.perf_counter() - clock
        if opening is not None and opening.declined:
            # The model read the sources and found they do not answer: a decline, citing nothing.
            answerability = answerability.model_copy(
                update={"coverage": Coverage.NOT_COVERED, "reason": f"{self.backend.label} found the sources do not answer it"}
            )
            sources, note, cut_off = (), "", ""
            pieces = [
                load_prompt("model_declined", language=language).format(
                    reason=defuse_markdown(opening.reason) or load_prompt("model_declined_reason", language=language)
                )
            ]
            yield TokenEvent(pieces[0])

        clock = time.perf_counter()
        text = "".join(pieces).strip()
        if self.backend.chat_model is not None:
            text = defuse_markdown(text)
        report = check_citations(text, sources, scorer=self.vectors.similarities) if sources else None
        citations = check_support(report.citations) if report else ()
        timings["check"] = time.perf_counter() - clock
        timings["total"] = sum(v for key, v in timings.items() if key != "first_token")
        found = tuple(relevance(request.evidence, min_similarity=self.settings.min_relevance))
        closest = () if answerability.answers else closest_papers(request.sources, found)
        if not answerability.answers:
            form = answerability.coverage.value
        else:
            form = Coverage.CONTRADICTED.value if answerability.coverage == Coverage.CONTRADICTED else request.task.value
        yield DoneEvent(
            Answer(
                question=question,
                standalone_question=request.question,
                text=mark_unsupported(report.text, citations) if report else text,
                note=note,
                cut_off=cut_off,
                citations=citations,
                invalid_citations=tuple(sorted(guard.dropped | set(report.invalid if report else ()))),
                uncited=report.uncited if report else False,
                sources=sources,
                backend=self.backend.name,
                form=form,
                analysis=request.analysis,
                answerability=answerability,
                closest=closest,
                matches=tuple(request.matches) if answerability.answers else (),
                table=request.table if answerability.answers else None,
                filters=scope,
                corpus=self.index.scope_summary(scope),
                relevance=found,
                created=datetime.now(UTC).isoformat(timespec="seconds"),
                timings=timings,
            )
        )

    def _clarify(self, question: str, reading: Reading) -> Iterator[Event]:
        """Ask which paper an unclear reference means, offering the papers it may mean: no
        retrieval and no model, as the answer would rest on a guess."""
        yield SourcesEvent(reading.question, ())
        yield TokenEvent(reading.ask_back)
        yield DoneEvent(
            Answer(
                question=question,
                standalone_question=reading.question,
                text=reading.ask_back,
                citations=(),
                sources=(),
                backend=self.backend.name,
                form="clarify",
                choices=reading.choices,
                created=datetime.now(UTC).isoformat(timespec="seconds"),
            )
        )

    def ask(self, question: str, **kwargs) -> Answer:
        return _final(self.stream(question, **kwargs))

    # -- summaries ----------------------------------------------------------------------------

    def summary_target(self, standalone: str) -> Paper | None:
        """The paper a "Summarize <title>" request names, when the title words name one."""
        request = SUMMARY_REQUEST.match(standalone)
        if request is None:
            return None
        try:
            return self.index.find(request["ref"].strip(" \"'“”"))
        except PaperNotFoundError:
            return None

    def stream_summary(self, ref: str, *, question: str | None = None) -> Iterator[Event]:
        """A cited summary of one paper, found by id or title words."""
        paper = self.index.find(ref)
        source = Source(number=1, paper=paper, score=1.0)
        standalone = f"Summarize “{paper.display_title}”"
        analysis = analyze(standalone, self.index.profile()).model_copy(update={"named_papers": (paper.id,)})
        evidence = gather(analysis, [source], self.vectors)
        request = AnswerRequest(
            task=Task.SUMMARY,
            question=standalone,
            analysis=analysis,
            evidence=evidence,
            answerability=Answerability(coverage=Coverage.COVERED, best_similarity=evidence.best_similarity),
        )
        yield from self._answer(question or standalone, request, Filters(), {})

    def summarize(self, ref: str) -> Answer:
        return _final(self.stream_summary(ref))


def _final(events: Iterator[Event]) -> Answer:
    for event in events:
        if isinstance(event, DoneEvent):
            return event.answer
    raise RuntimeError("the answer stream ended without a final answer")
