"""The typed request every answering backend receives, and what a backend is.

A backend (`rag.answering.extractive`, or a chat model through `rag.answering.backends`) turns an `AnswerRequest` into
streamed text. The task says which answer form is wanted, so a collection or a comparison is a
new task for every backend rather than a new pair of runnables on each.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from langchain_core.language_models import BaseChatModel

from rag.answering.evidence import Evidence
from rag.models.modelcall import Retrying
from rag.records import Answer, Answerability, CollectionMatch, ComparisonTable, QuestionAnalysis, Source

__all__ = ["AnswerRequest", "Backend", "Task"]


class Task(StrEnum):
    ANSWER = "answer"  # lookup, how/why, result, yes/no: quotes chosen for the question's role
    COLLECTION = "collection"  # every paper that fits, each with its key sentence
    COMPARISON = "comparison"  # a papers x aspects table
    SUMMARY = "summary"  # one paper: problem, method, result


@dataclass(frozen=True)
class AnswerRequest:
    task: Task
    question: str  # standalone
    analysis: QuestionAnalysis
    evidence: Evidence
    answerability: Answerability
    history: Sequence[Answer] = ()
    matches: Sequence[CollectionMatch] = ()  # a collection's papers, most relevant first
    table: ComparisonTable | None = None  # a comparison's table, from the abstracts

    @property
    def sources(self) -> list[Source]:
        return [p.source for p in self.evidence.papers]


class Backend(Protocol):
    """Who writes answers: its name and model, why it was chosen, and the writing itself."""

    name: str
    model: str
    reason: str

    @property
    def chat_model(self) -> BaseChatModel | None:
        """The chat model that writes, if a model does (it also rewrites follow-ups)."""
        ...

    @property
    def who(self) -> str:
        """What writes the answers, for messages: a model and where it runs."""
        ...

    @property
    def label(self) -> str: ...

    def stream(self, request: AnswerRequest) -> Iterator[str | Retrying]:
        """The answer's text, streamed, with [n] citations to `request.sources`; a model's
        backend also says when it is about to try again."""
        ...
