"""The answering chain: condense -> retrieve -> generate (streamed) -> check citations.

`Assistant` is what the CLI, the UI and the evaluation call. `stream()` yields typed events as
the answer is produced; `ask()` returns the finished `Answer`. Retrieval, prompting and
citation checking are the same whichever backend generates.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import Runnable

from rag.citations import check_citations
from rag.embeddings import SentenceVectors
from rag.errors import PaperChatError, PaperNotFoundError
from rag.llm import Backend, choose_backend, translate_error
from rag.prompts import load_prompt
from rag.records import Answer, Filters, Paper, Source
from rag.retrieval import search
from rag.settings import Settings
from rag.store import Index
from rag.text import question_focus, split_sentences

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}
_ORDINAL_REF = re.compile(r"\bthe (first|second|third|fourth|fifth|sixth|last) (one|paper|source|work)\b", re.I)
_NUMBER_REF = re.compile(r"\[(\d{1,2})\]")
_SINGLE_REF = re.compile(r"\b(it|this paper|that paper|this one|that one|the paper)\b", re.I)
_SUMMARY_REQUEST = re.compile(r"^\s*(summari[sz]e|give (me )?a summary of|tl;?dr( of)?)\s+(?P<ref>.+?)\s*[?.!]*\s*$", re.I)
_PRONOUN = re.compile(r"\b(it|its|this|that|these|those|they|them|their|the paper|the papers)\b", re.I)


@dataclass(frozen=True)
class SourcesEvent:
    """Retrieval is done: these sources will be cited by number."""

    standalone_question: str
    sources: tuple[Source, ...]


@dataclass(frozen=True)
class TokenEvent:
    text: str


@dataclass(frozen=True)
class DoneEvent:
    answer: Answer


Event = SourcesEvent | TokenEvent | DoneEvent


def condense_by_rule(question: str, history: Sequence[Answer]) -> str:
    """Make a follow-up standalone without a language model.

    "[2]" and "the second one" become the title of source 2 of the previous answer ("the last
    one" its last source); "it" or "this paper", after an answer that cited one paper, becomes
    that paper's title; any other follow-up that leans on a pronoun ("what about its results?")
    is joined to the previous standalone question so retrieval keeps the topic.
    """
    if not history:
        return question
    last = history[-1]
    titles = {s.number: s.paper.display_title for s in last.sources}

    def title_of(number: int, fallback: str) -> str:
        return f'"{titles[number]}"' if number in titles else fallback

    resolved = _NUMBER_REF.sub(lambda m: title_of(int(m.group(1)), m.group(0)), question)
    resolved = _ORDINAL_REF.sub(
        lambda m: title_of(max(titles) if m.group(1).lower() == "last" and titles else _ORDINALS.get(m.group(1).lower(), 0), m.group(0)),
        resolved,
    )
    if resolved != question:
        return resolved
    cited = {c.number for c in last.citations}
    if len(cited) == 1 and _SINGLE_REF.search(question):
        # "Summarize it" after an answer from one paper means that paper.
        return _SINGLE_REF.sub(title_of(cited.pop(), "it"), question, count=1)
    if _PRONOUN.search(question) and len(question.split()) <= 15:
        return f"{question} (following up on: {last.standalone_question})"
    return question


class Assistant:
    """Answers questions over an `Index` with the backend the settings choose."""

    def __init__(self, index: Index, settings: Settings, *, backend: Backend | None = None) -> None:
        self.index = index
        self.settings = settings
        self.vectors = SentenceVectors(index.embeddings)
        self.backend = backend or choose_backend(settings, self.vectors)

    def warm_up(self) -> None:
        """Load what the first question would otherwise wait for: the embedding model, the
        sentence splitter, the paper table and the BM25 index."""
        self.vectors.similarities("warm up", split_sentences("One sentence. Another one."))
        if len(self.index):
            self.index.lexical.search("warm up", 1)

    def condense(self, question: str, history: Sequence[Answer]) -> str:
        if not history or self.backend.chat_model is None:
            return condense_by_rule(question, history)
        transcript = "\n".join(f"User: {t.question}\nAssistant: {t.text}" for t in history[-3:])
        chain = PromptTemplate.from_template(load_prompt("condense")) | self.backend.chat_model | StrOutputParser()
        try:
            rewritten = chain.invoke({"history": transcript, "question": question}).strip()
        except Exception as exc:
            raise translate_error(exc, self.settings) from exc
        return rewritten or question

    def covers(self, question: str, sources: Sequence[Source]) -> bool:
        """Whether any sentence retrieved is close enough to answer from (calibrated threshold)."""
        sentences = [x for s in sources for x in split_sentences(s.paper.abstract)]
        best = max(self.vectors.similarities(question_focus(question), sentences), default=0.0)
        return best >= self.settings.min_relevance

    def stream(
        self,
        question: str,
        *,
        history: Sequence[Answer] = (),
        filters: Filters | None = None,
        k: int | None = None,
    ) -> Iterator[Event]:
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        standalone = self.condense(question, history)
        timings["condense"] = time.perf_counter() - clock
        paper = self.summary_target(standalone)
        if paper is not None:
            yield from self.stream_summary(paper.id, question=question)
            return

        clock = time.perf_counter()
        sources = search(self.index, standalone, self.settings, k=k, filters=filters)
        timings["retrieve"] = time.perf_counter() - clock
        yield SourcesEvent(standalone, tuple(sources))

        clock = time.perf_counter()
        covered = bool(sources) and self.covers(standalone, sources)
        timings["coverage"] = time.perf_counter() - clock
        yield from self._generate(
            question, standalone, sources, self.backend.answer if covered else None, history, timings
        )

    def _generate(
        self,
        question: str,
        standalone: str,
        sources: Sequence[Source],
        runnable: Runnable | None,
        history: Sequence[Answer],
        timings: dict[str, float],
    ) -> Iterator[Event]:
        """Stream `runnable` (None: the corpus does not cover it), then check the citations."""
        inputs = {"question": standalone, "sources": list(sources), "history": list(history)}
        clock = time.perf_counter()
        pieces: list[str] = []
        if runnable is None:
            pieces.append(load_prompt("not_covered"))
            yield TokenEvent(pieces[0])
        else:
            try:
                for piece in runnable.stream(inputs):
                    if piece:
                        if not pieces:
                            # From the question, not from the start of generation: what a reader waits.
                            timings["first_token"] = sum(timings.values()) + time.perf_counter() - clock
                        pieces.append(piece)
                        yield TokenEvent(piece)
            except PaperChatError:
                raise
            except Exception as exc:
                raise translate_error(exc, self.settings) from exc
        timings["generate"] = time.perf_counter() - clock

        clock = time.perf_counter()
        text = "".join(pieces).strip()
        report = check_citations(text, sources, scorer=self.vectors.similarities) if runnable else None
        timings["check"] = time.perf_counter() - clock
        timings["total"] = sum(v for key, v in timings.items() if key != "first_token")
        yield DoneEvent(
            Answer(
                question=question,
                standalone_question=standalone,
                text=report.text if report else text,
                citations=report.citations if report else (),
                invalid_citations=report.invalid if report else (),
                uncited=report.uncited if report else False,
                covered=runnable is not None,
                sources=tuple(sources),
                backend=self.backend.name,
                timings=timings,
            )
        )

    def ask(self, question: str, **kwargs) -> Answer:
        return _final(self.stream(question, **kwargs))

    def summary_target(self, standalone: str) -> Paper | None:
        """The paper a "Summarize <title>" request names, when the title words name one."""
        request = _SUMMARY_REQUEST.match(standalone)
        if request is None:
            return None
        try:
            return self.index.find(request["ref"].strip(" \"'“”"))
        except PaperNotFoundError:
            return None

    def stream_summary(self, ref: str, *, question: str | None = None) -> Iterator[Event]:
        """A cited summary of one paper, found by id or title words."""
        paper = self.index.find(ref)
        source = Source(number=1, paper=paper, score=1.0, passage=paper.abstract)
        standalone = f"Summarize “{paper.display_title}”"
        yield SourcesEvent(standalone, (source,))
        yield from self._generate(question or standalone, standalone, [source], self.backend.summarize, (), {})

    def summarize(self, ref: str) -> Answer:
        return _final(self.stream_summary(ref))


def _final(events: Iterator[Event]) -> Answer:
    for event in events:
        if isinstance(event, DoneEvent):
            return event.answer
    raise RuntimeError("the answer stream ended without a final answer")
