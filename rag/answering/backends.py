"""Answering backends, chosen by settings: openai(-compatible), local GGUF, or extractive.

Every backend takes the same typed `AnswerRequest` (`rag.answering.request`) and streams text, so
the chain, streaming and citation checking are one code path whichever backend answers. A chat
model gets one prompt pair per task, from prompts/: answers, collections, comparison tables and
summaries, each with the rules for citing, declining and saying what the abstracts lack.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate
from langchain_core.runnables import Runnable

from rag.answering.answerability import Bars
from rag.answering.forms.decline import partial_note
from rag.answering.request import AnswerRequest, Backend, Task
from rag.index.embeddings import SentenceVectors
from rag.models.chat import local_chat, openai_chat, translate_error
from rag.models.modelcall import CallBounds, Retrying, bounded
from rag.models.prompts import load_prompt
from rag.records import Answer, Coverage, Source
from rag.settings import Settings

# The system prompt of each task; all share the user prompt (sources, coverage note, question).
_SYSTEM = {
    Task.ANSWER: "answer_system",
    Task.COLLECTION: "collection_system",
    Task.COMPARISON: "comparison_system",
    Task.SUMMARY: "summarize_system",
}


# A source's fence tag, wherever a paper's own text spells it: the text cannot close its fence
# and pose as the prompt, or open a source of its own.
_FENCE = re.compile(r"<(/?\s*source)", re.I)


def _fenced(text: str) -> str:
    return _FENCE.sub(r"&lt;\1", text)


def format_sources(sources: Sequence[Source]) -> str:
    """The numbered source blocks the model reads, one per paper, each fenced as data."""
    block = load_prompt("source_block")
    return "\n\n".join(
        block.format(
            number=s.number,
            title=_fenced(s.paper.display_title),
            authors=_fenced(", ".join(s.paper.authors) or "unknown"),
            venue=_fenced(" ".join(x for x in (s.paper.venue, s.paper.category) if x) or "unknown"),
            abstract=_fenced(s.paper.abstract),
        )
        for s in sources
    )


def history_messages(history: Sequence[Answer]) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for turn in history:
        messages += [HumanMessage(turn.question), AIMessage(turn.text)]
    return messages


def model_note(request: AnswerRequest) -> str:
    """What the model is told of the evidence beside the sources: what no abstract holds, or the
    sentence that contradicts what the question takes for granted."""
    answerability = request.answerability
    if answerability.coverage == Coverage.CONTRADICTED:
        found = request.evidence.contradicting(Bars().premise_papers)
        if found is not None:
            paper, sentence = found
            return load_prompt("contradicted_note").format(
                number=paper.number, premise=answerability.premise, sentence=_fenced(sentence.plain)
            )
    return partial_note(answerability, request.sources)


def request_sources(request: AnswerRequest) -> list[Source]:
    """What the model reads: a collection's matches, a comparison's rows, else every source."""
    if request.task == Task.COLLECTION and request.matches:
        wanted = {m.number for m in request.matches}
        return [s for s in request.sources if s.number in wanted]
    if request.task == Task.COMPARISON and request.table is not None:
        wanted = {r.number for r in request.table.rows}
        return [s for s in request.sources if s.number in wanted]
    return request.sources


@dataclass
class ModelBackend:
    """A backend around any LangChain chat model (OpenAI, llama.cpp, or a fake in tests), its
    calls bounded in time (rag.models.modelcall)."""

    name: str
    model: str
    reason: str
    chat_model: BaseChatModel
    where: str  # the server's URL, or the model file: what a message about a failure names
    bounds: CallBounds
    translate: Callable[[Exception], Exception]

    @classmethod
    def wrapping(cls, chat_model: BaseChatModel, settings: Settings, *, name: str, reason: str) -> ModelBackend:
        """A backend around a chat model of one's own (any LangChain chat model), with the
        settings' bounds: `Assistant(index, settings, backend=ModelBackend.wrapping(...))`."""
        return cls(
            name, "", reason, chat_model, f"the {type(chat_model).__name__} chat model", CallBounds.of(settings), lambda exc: exc
        )

    @property
    def label(self) -> str:
        return f"{self.name} ({self.model})" if self.model else self.name

    @property
    def who(self) -> str:
        return f"{self.model} at {self.where}" if self.model else self.where

    def call(self, runnable: Runnable, inputs: dict) -> Iterator[str | Retrying]:
        """`runnable`'s streamed text for `inputs`, within the bounds."""
        return bounded(lambda: runnable.stream(inputs), self.bounds, who=self.who, translate=self.translate)

    def text(self, runnable: Runnable, inputs: dict) -> str:
        """`runnable`'s whole text for `inputs`, within the bounds (for a rewrite or a verdict)."""
        return "".join(p for p in self.call(runnable, inputs) if isinstance(p, str))

    def cell(self, title: str, question: str, quote: str) -> str:
        """A research table's cell said short: `question` answered from `quote` alone."""
        chain = PromptTemplate.from_template(load_prompt("table_cell")) | self.chat_model | StrOutputParser()
        return self.text(chain, {"title": title, "question": question, "quote": quote})

    def stream(self, request: AnswerRequest) -> Iterator[str | Retrying]:
        prompt = ChatPromptTemplate.from_messages(
            [
                ("system", load_prompt(_SYSTEM[request.task])),
                MessagesPlaceholder("history"),
                ("human", load_prompt("answer_user")),
            ]
        )
        note = model_note(request)
        inputs = {
            "question": request.question,
            "sources": format_sources(request_sources(request)),
            "coverage": load_prompt("coverage_note").format(note=note) if note else "",
            "history": history_messages(request.history if request.task != Task.SUMMARY else ()),
        }
        return self.call(prompt | self.chat_model | StrOutputParser(), inputs)


def openai_backend(settings: Settings) -> ModelBackend:
    """The OpenAI(-compatible) model the settings name, and why it answers."""
    key = "OPENAI_API_KEY is set" if settings.has_openai_key else "OPENAI_BASE_URL is set"
    return ModelBackend(
        "openai",
        settings.openai_model,
        f"{key}; {settings.openai_model} at {settings.openai_server}",
        openai_chat(settings),
        settings.openai_server,
        CallBounds.of(settings),
        partial(translate_error, settings=settings),
    )


def choose_backend(settings: Settings, vectors: SentenceVectors) -> Backend:
    """The backend the settings ask for, or the offline one, with the reason in words."""
    from rag.answering.extractive import ExtractiveBackend

    wanted = settings.backend
    if wanted == "openai" or (wanted == "auto" and settings.uses_openai):
        if settings.uses_openai:
            return openai_backend(settings)
        return ExtractiveBackend(vectors, reason="backend 'openai' was asked for but no OPENAI_API_KEY is set")
    if wanted == "local" or (wanted == "auto" and settings.local_model_path):
        why = "backend 'local' was asked for" if wanted == "local" else "PAPERCHAT_LOCAL_MODEL_PATH is set"
        path = settings.local_model_path
        return ModelBackend(
            "local",
            path.name if path else "",
            why,
            local_chat(settings),
            f"the local file {path}",
            CallBounds.of(settings),
            partial(translate_error, settings=settings),
        )
    if wanted == "extractive":
        return ExtractiveBackend(vectors, reason="backend 'extractive' was asked for")
    return ExtractiveBackend(vectors, reason="no OPENAI_API_KEY")
