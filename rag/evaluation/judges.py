"""Support judges: does this evidence support this claim, and how relevant is this answer?

The citation and faithfulness metrics (`rag.evaluation.evaluate`) ask a judge, so the judge is pluggable:

- `SimilarityJudge`, the offline default: a claim is supported when it copies a sentence of the
  evidence or when its cosine similarity (the bundled MiniLM) to the closest evidence sentence
  reaches a threshold calibrated on labelled claims (`eval/calibrate_judge.py`).
- `LLMJudge`: asks the configured chat model (`prompts/judge_support.md`), after ALCE's use of an
  NLI model and RAGAS's use of an LLM.
- `PairedJudge`: runs both, answers with the first, and keeps both verdicts; `agreement` measures
  how often they agree.

A judge knows nothing of answers or metrics; it only decides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate

from rag.answering.backends import ModelBackend, openai_backend
from rag.answering.citations import SUPPORT_THRESHOLD, find_support
from rag.errors import ConfigError
from rag.index.embeddings import SentenceVectors
from rag.models.prompts import load_prompt, say
from rag.question.kind import question_focus
from rag.settings import Settings

_VERDICT = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class Judge(Protocol):
    name: str

    def supports(self, claim: str, evidence: Sequence[str]) -> bool:
        """Whether the evidence passages, read together, support the claim."""
        ...

    def relevance(self, question: str, answer: str) -> float:
        """How closely the answer addresses the question, in [0, 1] (RAGAS answer relevance)."""
        ...


class SimilarityJudge:
    """Offline: the claim's best match among the evidence sentences, against a calibrated bar."""

    name = "similarity"

    def __init__(self, vectors: SentenceVectors, *, threshold: float = SUPPORT_THRESHOLD) -> None:
        self.vectors = vectors
        self.threshold = threshold

    def score(self, claim: str, evidence: Sequence[str]) -> float:
        """The support score: a copied sentence scores its similarity, which is near 1."""
        return max((find_support(claim, p, scorer=self.vectors.similarities)[1] for p in evidence), default=0.0)

    def supports(self, claim: str, evidence: Sequence[str]) -> bool:
        return bool(claim.strip()) and self.score(claim, evidence) >= self.threshold

    def relevance(self, question: str, answer: str) -> float:
        # The question's focus, not its framing words, is what MiniLM can match (see rag.text).
        return max(0.0, self.vectors.similarities(question_focus(question), [answer])[0]) if answer.strip() else 0.0


class LLMJudge:
    """The configured chat model decides support; relevance after RAGAS: the model writes the
    question the answer responds to, scored by its similarity to the question asked."""

    name = "llm"

    def __init__(self, model: ModelBackend, vectors: SentenceVectors) -> None:
        self.vectors = vectors
        self.model = model
        self._support = PromptTemplate.from_template(load_prompt("judge_support")) | model.chat_model | StrOutputParser()
        self._question = PromptTemplate.from_template(load_prompt("judge_question")) | model.chat_model | StrOutputParser()
        # ALCE's precision test asks about the same claim and passages more than once.
        self._verdicts: dict[tuple[str, tuple[str, ...]], bool] = {}

    def supports(self, claim: str, evidence: Sequence[str]) -> bool:
        key = (claim, tuple(evidence))
        if key not in self._verdicts:
            text = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(evidence, 1))
            reply = self.model.text(self._support, {"claim": claim, "evidence": text})
            verdict = _VERDICT.search(reply)
            self._verdicts[key] = verdict is not None and verdict.group(1).lower() == "yes"
        return self._verdicts[key]

    def relevance(self, question: str, answer: str) -> float:
        if not answer.strip():
            return 0.0
        generated = self.model.text(self._question, {"answer": answer}).strip()
        return max(0.0, self.vectors.similarities(question, [generated])[0]) if generated else 0.0


class PairedJudge:
    """Answers with `primary` and also asks `secondary`, keeping every pair of verdicts."""

    def __init__(self, primary: Judge, secondary: Judge) -> None:
        self.primary = primary
        self.secondary = secondary
        self.name = f"{primary.name} (+{secondary.name} for agreement)"
        self.verdicts: list[tuple[bool, bool]] = []

    def supports(self, claim: str, evidence: Sequence[str]) -> bool:
        first = self.primary.supports(claim, evidence)
        self.verdicts.append((first, self.secondary.supports(claim, evidence)))
        return first

    def relevance(self, question: str, answer: str) -> float:
        return self.primary.relevance(question, answer)


def agreement(pairs: Sequence[tuple[bool, bool]]) -> dict[str, float]:
    """Raw agreement and Cohen's kappa (agreement beyond chance) of two judges' verdicts."""
    n = len(pairs)
    if not n:
        return {"pairs": 0.0, "agreement": 0.0, "kappa": 0.0}
    observed = sum(a == b for a, b in pairs) / n
    yes_a = sum(a for a, _ in pairs) / n
    yes_b = sum(b for _, b in pairs) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    kappa = 1.0 if chance == 1 else (observed - chance) / (1 - chance)
    return {"pairs": float(n), "agreement": observed, "kappa": kappa}


# Below this Cohen's kappa between the LLM judge and the calibrated similarity judge, the model
# judge's figures are not the headline: 0.4 is where agreement stops being "fair" and starts to
# be "moderate" (Landis and Koch, 1977).
KAPPA_BAR = 0.4


def below_the_bar(kappa: float, language: str = "en") -> str:
    """Why a report leads with the similarity judge's figures, the LLM judge having agreed with it
    at `kappa`, below `KAPPA_BAR`, in `language`; in English it is the report's `judge_note`."""
    return say("evaluation.judge_note", language, kappa=f"{kappa:.3f}", bar=KAPPA_BAR)


def make_judge(name: str, vectors: SentenceVectors, settings: Settings) -> Judge:
    """`similarity`, `llm` (the configured OpenAI-compatible model), or `auto`: the LLM judge,
    checked against the similarity judge, when a model is configured; else the similarity judge."""
    offline = SimilarityJudge(vectors)
    if name == "similarity" or (name == "auto" and not settings.uses_openai):
        return offline
    if not settings.uses_openai:
        raise ConfigError(
            "the llm judge needs an OpenAI-compatible model, and neither OPENAI_API_KEY nor OPENAI_BASE_URL is set",
            hint="set one of them, or use --judge similarity (offline)",
        )
    return PairedJudge(LLMJudge(openai_backend(settings), vectors), offline)
