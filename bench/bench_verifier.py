"""The verifier's cost: its throughput on the pairs it reads, and `ask` latency over the 13,687 scale
abstracts with the reranking and the sentence verdicts, against the same questions without the
reranking and against retrieval alone.

    python bench/bench_verifier.py                  # the scale sets' index (made once, as `make eval-forms` does)
    python bench/bench_verifier.py --data-dir DIR   # another index, with --sets of questions over it

All rows come from one run, so their ratios hold on a shared machine. Every question starts with
an empty verdict cache and sentence memo, as the first question of a session does.
"""

from __future__ import annotations

import statistics
import time

from bench_ask import first_asks, prepared, row
from bench_ingest_ask import table

from rag.answering.chain import Assistant
from rag.index.store import Index
from rag.models.verifier import Verdict
from rag.search.retrieval import search
from rag.text import split_sentences


class NoVerdicts:
    """A verifier that reads nothing: `ask` as it was before the verifier, for its cost."""

    _cache: dict = {}

    def judge(self, question: str, passages: list[str]) -> list[Verdict]:
        return [Verdict(answers=0.0, contradicts=0.0) for _ in passages]


def throughput(assistant: Assistant, asked: list[str], index: Index) -> list[dict]:
    """Pairs a second: a question with each sentence of its top papers, and with each paper's passage."""
    rows = []
    for kind in ("sentence", "paper"):
        pairs = 0
        clock = time.perf_counter()
        for question in asked:
            papers = [s.paper for s in search(index, question, assistant.settings, k=5)]
            if kind == "sentence":
                passages = [t for p in papers for t in split_sentences(p.abstract)]
            else:
                passages = [f"{p.title}. " + " ".join(split_sentences(p.abstract)[:2]) for p in papers]
            assistant.verifier._cache.clear()
            assistant.verifier.probabilities(question, passages)
            pairs += len(passages)
        seconds = time.perf_counter() - clock
        rows.append({"what": f"verifier, (question, {kind}) pairs", "pairs": pairs, "pairs / s": round(pairs / seconds, 1)})
    return rows


def main() -> None:
    index, assistant, asked, retrieval = prepared(__doc__)
    reference = statistics.median(retrieval)
    rows = [row("retrieval alone (fused)", retrieval, reference, questions=len(asked))]
    settings, verifier = assistant.settings, assistant.verifier
    for what, depth, judge in (
        ("ask, verifier reranks the top 30", 30, verifier),
        ("ask, as configured (no reranking)", settings.rerank_depth, verifier),
        ("ask, no verifier (no sentence verdicts)", 0, NoVerdicts()),
    ):
        assistant.settings = settings.model_copy(update={"rerank_depth": depth})
        assistant._verifier = judge
        rows.append(row(what, first_asks(assistant, asked), reference, questions=len(asked)))
    print(f"{len(index)} papers")
    print(table(rows))
    assistant.settings, assistant._verifier = settings, verifier
    print(table(throughput(assistant, asked, index)))


if __name__ == "__main__":
    main()
