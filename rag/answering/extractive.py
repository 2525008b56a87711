"""The extractive backend: answers made of the retrieved abstracts' own sentences, each cited.

No language model. Each task has its answer form in `rag.answering.forms`: quotes chosen for the
question's role (`quotes`), the sentence that contradicts the question's premise (`correction`),
every fitting paper with its key sentence (`collection`), a papers x aspects table
(`comparison`), a problem-method-result summary (`summary`). Every sentence is a quotation
attributed to its paper and followed by its citation, so the answer is grounded by construction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from rag.answering.forms.collection import write_collection
from rag.answering.forms.comparison import write_table
from rag.answering.forms.correction import write_correction
from rag.answering.forms.quotes import write_quotes
from rag.answering.forms.summary import write_summary
from rag.answering.request import AnswerRequest, Task
from rag.index.embeddings import SentenceVectors
from rag.records import Coverage

__all__ = ["ExtractiveBackend"]


@dataclass
class ExtractiveBackend:
    vectors: SentenceVectors
    reason: str
    name: str = "extractive"
    model: str = "quotes from the abstracts"
    chat_model: BaseChatModel | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ({self.model})"

    @property
    def who(self) -> str:
        return "the extractive backend"

    def stream(self, request: AnswerRequest) -> Iterator[str]:
        if request.task == Task.COLLECTION:
            yield from write_collection(request, list(request.matches))
        elif request.task == Task.COMPARISON and request.table is not None:
            yield from write_table(request.evidence, request.table)
        elif request.task == Task.SUMMARY:
            yield from write_summary(request, self.vectors)
        elif request.answerability.coverage == Coverage.CONTRADICTED:
            yield from write_correction(request)
        else:
            yield from write_quotes(request, self.vectors)
