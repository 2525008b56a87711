"""Answer-quality evaluation: retrieval, citations, faithfulness, refusals and latency.

`run_eval` asks every question of an `EvalSet` through an `Assistant`, scores each item and
aggregates the scores into an `EvalReport`. The metrics, each a mean over the items it applies to:

Retrieval, at the paper level, on the ranking of the question (answerable items only), computed
by trec_eval's own code (pytrec_eval) so the figures match published BEIR tables:

- ``recall@k`` (k = 1, 5, 10, and 100 when the depth allows): the share of the relevant papers
  that are in the top k.
- ``mrr@10``: 1 / the rank of the first relevant paper, 0 if none is in the top 10.
- ``ndcg@10``: discounted cumulative gain of the top 10 (gain = the relevance grade, discount
  1 / log2(rank + 1)), divided by that of the ideal ranking.

Citations, after ALCE (Gao et al. 2023), per answered item, over the answer's sentences:

- ``citation_recall``: the share of sentences whose cited abstracts, read together, support the
  sentence (a sentence citing nothing counts as unsupported).
- ``citation_precision``: the share of citations that are needed. A citation is irrelevant when
  its sentence is supported, it does not support the sentence alone, and the other citations
  support it without it. Citations of an unsupported sentence count as imprecise.

After RAGAS (Es et al. 2023), per answered item:

- ``faithfulness``: the share of the answer's sentences that the retrieved abstracts (all of
  them, cited or not) support.
- ``answer_relevance``: how closely the answer addresses the question, in [0, 1], as the judge
  measures it (`rag.evaluation.judges`).

Gold citations (answerable items): ``gold_citation_precision`` is the share of the papers an answer
cites that are gold (items that cite nothing are left out); ``gold_citation_recall`` the share of
gold papers it cites (a refusal scores 0).

Refusals: an answer refuses when it says the corpus does not cover the question and cites
nothing. ``unanswerable_refused`` is the share of unanswerable questions refused (higher is
better); ``answerable_refused`` the share of answerable ones refused (lower is better).

Declines: an answer declines when it does not present the question as covered: it refuses, or it
answers in part and names what no abstract holds (a false presupposition's detail, an unreported
measure). ``unanswerable_declined`` is the share of unanswerable questions declined (higher is
better); ``answerable_partial`` the share of answerable ones answered only in part.
``decline_accuracy``: the share of all questions decided right (unanswerable declined,
answerable not refused).

Grades (`rag.records.Grade`: answers, best match, not found): ``gold_found`` (answerable items)
is the share whose answer cites a gold paper and is not graded not found; ``gold_not_found``
the share graded not found with a gold paper in the top 3 of the ranking (lower is better);
``answers_grade_right`` the share of answers graded answers that cite a gold paper (the
confident grade's precision: an unanswerable question's never does);
``answerable_graded_answers`` and ``unanswerable_graded_answers`` the shares graded answers.

Answer forms: ``gold_sentence_quoted`` (how and result questions): the share whose answer cites
an abstract sentence that is one of the gold answering sentences. ``premise_corrected``
(false-premise questions): the share answered as contradicted whose first citation quotes a gold
contradicting sentence, and whose words before that quote name the premise (at least half of the
content words of the set's `premise`). ``premise_invented`` (every other question): the share
answered "Not so", correcting a premise the question does not have. ``collection_precision`` and
``collection_recall`` (collection questions): the papers the answer lists (cited, or among its
matches after "and N more") against the gold papers.

Latency, in seconds per stage of `Answer.timings` (retrieve, generate, total, ...): p50 and p95.

What each metric is called where it is shown, and the rule a question passes it by: `rag.evaluation.metrics`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from difflib import SequenceMatcher

import numpy as np
import pytrec_eval

from rag.answering.chain import Assistant
from rag.answering.citations import cited_sentences
from rag.errors import AnswerCutOff, PaperChatError
from rag.evaluation.judges import KAPPA_BAR, Judge, PairedJudge, agreement, below_the_bar
from rag.evaluation.metrics import LOWER_IS_BETTER, METRICS
from rag.evaluation.records import EvalItem, EvalReport, EvalSet, ItemResult
from rag.index.store import Index
from rag.markup import to_plain
from rag.question.analysis import analyze
from rag.records import Answer, CorpusProfile, Coverage, Grade, Source
from rag.search.rerank import rank
from rag.settings import Settings
from rag.text import tokenize_terms

Progress = Callable[[int, int], None]

# Why a run stopped when Ctrl+C stopped it (`EvalReport.stopped`).
INTERRUPTED = "interrupted"

_TREC_NAMES = {"recall": "recall@{k}", "ndcg_cut": "ndcg@{k}"}


def retrieval_scores(
    relevance: Mapping[str, Mapping[str, int]], rankings: Mapping[str, Sequence[str]], *, depth: int = 10
) -> dict[str, dict[str, float]]:
    """Recall@1/5/10(/100), MRR@10 and nDCG@10 for each query with a relevant paper.

    `relevance`: query id -> paper id -> grade (> 0 relevant); `rankings`: query id -> paper ids,
    best first. trec_eval orders by score, so each ranking is given strictly falling scores.
    """
    judged = {q: {p: int(g) for p, g in grades.items()} for q, grades in relevance.items() if any(g > 0 for g in grades.values())}
    if not judged:
        return {}
    cutoffs = [k for k in (1, 5, 10, 100) if k <= max(depth, 10)]
    measures = {f"recall.{','.join(map(str, cutoffs))}", "ndcg_cut.10"}
    run = {q: {p: float(len(r) - i) for i, p in enumerate(r)} for q, r in rankings.items() if q in judged}
    # A query that retrieved nothing still counts (as all zeros), which trec_eval would skip.
    scores = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate({q: r for q, r in run.items() if r})
    top10 = {q: {p: s for p, s in r.items() if s > len(r) - 10} for q, r in run.items() if r}
    mrr = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(top10)
    out: dict[str, dict[str, float]] = {}
    for q in judged:
        row = {f"recall@{k}": scores.get(q, {}).get(f"recall_{k}", 0.0) for k in cutoffs}
        row["mrr@10"] = mrr.get(q, {}).get("recip_rank", 0.0)
        row["ndcg@10"] = scores.get(q, {}).get("ndcg_cut_10", 0.0)
        out[q] = row
    return out


@dataclass(frozen=True)
class CitationScores:
    recall: float
    precision: float


def citation_scores(answer_text: str, passages: Mapping[int, str], judge: Judge) -> CitationScores | None:
    """ALCE citation recall and precision of one answer; None when it has no sentence.

    `passages` maps each source number to the text the judge reads for it.
    """
    sentences = cited_sentences(answer_text)
    if not sentences:
        return None
    supported = precise = total = 0
    for sentence in sentences:
        cited = [passages[n] for n in sentence.numbers if n in passages]
        total += len(cited)
        joint = bool(cited) and judge.supports(sentence.claim, cited)
        supported += joint
        if joint and len(cited) > 1:
            for i, passage in enumerate(cited):
                others = cited[:i] + cited[i + 1 :]
                needed = judge.supports(sentence.claim, [passage]) or not judge.supports(sentence.claim, others)
                precise += needed
        else:
            precise += joint
    return CitationScores(recall=supported / len(sentences), precision=precise / total if total else 0.0)


def faithfulness(answer_text: str, context: Sequence[str], judge: Judge) -> float | None:
    """The share of the answer's sentences the context supports; None when it has no sentence."""
    claims = [s.claim for s in cited_sentences(answer_text)]
    if not claims:
        return None
    return sum(judge.supports(claim, context) for claim in claims) / len(claims)


def gold_citation_scores(cited: Iterable[str], gold: Iterable[str]) -> tuple[float | None, float]:
    """(precision, recall) of the cited papers against the gold papers; precision None if none cited."""
    cited, gold = set(cited), set(gold)
    hits = len(cited & gold)
    return (hits / len(cited) if cited else None), (hits / len(gold) if gold else 0.0)


def refused(answer: Answer) -> bool:
    """Said the corpus does not cover the question, and cited nothing."""
    return not answer.covered and not answer.citations


def declined(answer: Answer) -> bool:
    """Did not present the question as covered: refused, or answered in part naming what is missing."""
    return answer.answerability is not None and answer.answerability.coverage != Coverage.COVERED


_WORDS = re.compile(r"\w+")


def same_sentence(a: str, b: str) -> bool:
    """Whether two sentences are one (as plain words, one holding the other, or nearly equal)."""
    x = " ".join(_WORDS.findall(to_plain(a).casefold()))
    y = " ".join(_WORDS.findall(to_plain(b).casefold()))
    if not x or not y:
        return False
    return x in y or y in x or SequenceMatcher(None, x, y, autojunk=False).ratio() >= 0.9


def premise_corrected(item: EvalItem, answer: Answer) -> bool:
    """Whether the answer opens by naming the premise and quoting a sentence that contradicts it."""
    if answer.answerability is None or answer.answerability.coverage != Coverage.CONTRADICTED or not answer.citations:
        return False
    first = answer.citations[0]
    if first.paper_id not in item.gold or not any(same_sentence(first.support, g) for g in item.gold_sentences):
        return False
    lead = set(tokenize_terms(answer.text.split("“", 1)[0]))
    wanted = set(tokenize_terms(item.premise))
    return bool(wanted) and len(wanted & lead) >= 0.5 * len(wanted)


def listed_papers(answer: Answer) -> list[str]:
    """The papers an answer gives: those it cites, then a collection's further matches."""
    numbers = {s.number: s.paper.id for s in answer.sources}
    matched = [numbers[m.number] for m in answer.matches if m.number in numbers]
    return list(dict.fromkeys([c.paper_id for c in answer.citations] + matched))


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def passage_text(answer: Answer) -> dict[int, str]:
    """What the judge reads for each source: the paper's title and abstract."""
    return {s.number: f"{s.paper.title}. {s.paper.abstract}" if s.paper.title else s.paper.abstract for s in answer.sources}


def grade_scores(item: EvalItem, answer: Answer, retrieved: Sequence[str]) -> dict[str, float]:
    """How the answer's grade (`rag.records.Grade`) fits the question: graded "answers" (and,
    then, whether that is right: it cites a gold paper, or corrects a false presupposition); for
    an answerable one, whether it gives a gold paper as an answer or the best match, and whether
    it says "not found" with one ranked in the top 3."""
    if answer.grade is None:
        return {}
    cites_gold = bool({c.paper_id for c in answer.citations} & set(item.gold))
    corrected = answer.answerability is not None and answer.answerability.coverage == Coverage.CONTRADICTED
    # Saying "Not so" to a question that takes a falsehood for granted answers it.
    premise = corrected and item.kind == "false_presupposition"
    answers = answer.grade == Grade.ANSWERS
    scores = {"graded_answers": float(answers and not premise)}
    if answers:
        scores["answers_grade_right"] = float(cites_gold or premise)
    if item.answerable:
        scores["gold_found"] = float(cites_gold and answer.grade != Grade.NOT_FOUND)
        scores["gold_not_found"] = float(answer.grade == Grade.NOT_FOUND and bool(set(retrieved[:3]) & set(item.gold)))
    return scores


def answer_scores(item: EvalItem, answer: Answer, judge: Judge, retrieved: Sequence[str] = ()) -> dict[str, float]:
    """Every answer metric that applies to this item and answer (`retrieved`: the ranking, for
    the grade's scores)."""
    scores: dict[str, float] = {"refused": float(refused(answer)), "declined": float(declined(answer))}
    scores |= grade_scores(item, answer, retrieved)
    scores["decline_accuracy"] = float(declined(answer) if not item.answerable else not refused(answer))
    if item.gold_sentences:
        quoted = [c.support for c in answer.citations if c.paper_id in item.gold]
        scores["gold_sentence_quoted"] = float(any(same_sentence(q, g) for q in quoted for g in item.gold_sentences))
    if item.type == "false_premise":
        scores["premise_corrected"] = float(premise_corrected(item, answer))
    elif item.kind != "false_presupposition" and answer.answerability is not None:
        scores["premise_invented"] = float(answer.answerability.coverage == Coverage.CONTRADICTED)
    if item.type == "collection":
        precision, recall = gold_citation_scores(listed_papers(answer), item.gold)
        if precision is not None:
            scores["collection_precision"] = precision
        scores["collection_recall"] = recall
    if answer.covered:
        passages = passage_text(answer)
        citation = citation_scores(answer.text, passages, judge)
        if citation is not None:
            scores["citation_recall"] = citation.recall
            scores["citation_precision"] = citation.precision
        faithful = faithfulness(answer.text, list(passages.values()), judge)
        if faithful is not None:
            scores["faithfulness"] = faithful
        plain = " ".join(s.claim for s in cited_sentences(answer.text))
        scores["answer_relevance"] = judge.relevance(item.question, plain)
    if item.answerable:
        precision, recall = gold_citation_scores((c.paper_id for c in answer.citations), item.gold)
        if precision is not None:
            scores["gold_citation_precision"] = precision
        scores["gold_citation_recall"] = recall
    return scores


def aggregate(items: Sequence[ItemResult]) -> tuple[dict[str, float], dict[str, int]]:
    """Each metric's mean over the items it applies to, and how many those are.

    The per-item ``refused`` flag becomes ``unanswerable_refused`` and ``answerable_refused``.
    """
    values: dict[str, list[float]] = {}
    for item in items:
        for name, value in item.scores.items():
            if name == "refused":
                name = "answerable_refused" if item.gold else "unanswerable_refused"
            elif name == "graded_answers":
                name = "answerable_graded_answers" if item.gold else "unanswerable_graded_answers"
            elif name == "declined":
                if item.gold:
                    # Partly answered: declined without refusing.
                    name, value = "answerable_partial", float(value and not item.scores.get("refused"))
                else:
                    name = "unanswerable_declined"
            values.setdefault(name, []).append(value)
    names = [n for n in METRICS if n in values] + sorted(set(values) - set(METRICS))
    return {n: float(np.mean(values[n])) for n in names}, {n: len(values[n]) for n in names}


def latency(items: Sequence[ItemResult]) -> dict[str, dict[str, float]]:
    stages: dict[str, list[float]] = {}
    for item in items:
        for stage, seconds in item.timings.items():
            stages.setdefault(stage, []).append(seconds)
    return {s: {"p50": percentile(v, 50), "p95": percentile(v, 95), "n": float(len(v))} for s, v in stages.items()}


def run_eval(
    assistant: Assistant,
    eval_set: EvalSet,
    *,
    judge: Judge | None = None,
    k: int | None = None,
    depth: int = 10,
    answers: bool = True,
    retriever: str = "hybrid",
    limit: int | None = None,
    progress: Progress | None = None,
    kept: Sequence[ItemResult] = (),
    max_failures: int | None = None,
) -> EvalReport:
    """Ask every question (or the first `limit`) and score it; `answers=False` ranks only.

    The ranking scored for retrieval is `depth` papers deep (at least 10), from the same hybrid
    search the answer uses; the answer itself sees the top `k`.

    A question whose asking or judging raises a `PaperChatError` (the backend down, a rate limit)
    is kept with its error and left out of the metrics. After `max_failures` failures in a row
    the run stops, and the report says why. `kept`: results of an earlier run of these questions
    (`paperchat eval --resume`); those without an error are kept as they are, not asked again.
    """
    if answers and judge is None:
        raise ValueError("scoring answers needs a judge")
    items = eval_set.items[:limit] if limit else eval_set.items
    depth = max(depth, 10)
    k = k or assistant.settings.k
    ranking_settings = assistant.settings.model_copy(update={"candidates": max(assistant.settings.candidates, depth)})
    earlier = {r.id: r for r in kept if not r.error}
    profile = assistant.index.profile()
    results: list[ItemResult] = []
    in_a_row = 0
    stopped = ""
    for done, item in enumerate(items, 1):
        if item.id in earlier:
            # Not a sign the backend works now: the failures in a row go on counting across it.
            results.append(earlier[item.id])
        else:
            try:
                results.append(
                    _ask(
                        assistant,
                        item,
                        judge=judge if answers else None,
                        k=k,
                        depth=depth,
                        ranking_settings=ranking_settings,
                        profile=profile,
                    )
                )
                in_a_row = 0
            except PaperChatError as exc:
                results.append(
                    ItemResult(
                        id=item.id,
                        question=item.question,
                        type=item.type,
                        kind=item.kind,
                        gold=item.gold,
                        retrieved=(),
                        error=exc.message,
                    )
                )
                in_a_row += 1
            except KeyboardInterrupt:
                # Ctrl+C: the questions scored so far are reported and kept for --resume, not lost.
                stopped = INTERRUPTED
                break
        if progress:
            progress(done, len(items))
        if max_failures and in_a_row >= max_failures and done < len(items):
            stopped = f"{in_a_row} questions in a row failed, the last with: {results[-1].error}"
            break

    relevance = {i.id: i.relevance for i in items}
    scored = [r for r in results if not r.error]
    retrieval = retrieval_scores({r.id: relevance[r.id] for r in scored}, {r.id: list(r.retrieved) for r in scored}, depth=depth)
    scored = [r.model_copy(update={"scores": {**retrieval.get(r.id, {}), **r.scores}}) for r in scored]
    paired = isinstance(judge, PairedJudge) and answers
    agreed = agreement([v for r in scored for v in r.verdicts]) if paired else None
    seconded = [r.model_copy(update={"scores": {**r.scores, **r.second_scores}}) for r in scored] if paired else []
    headline, other = scored, seconded
    judge_note = ""
    # A run that scored nothing (all failed) has no agreement to fall short of.
    if agreed is not None and agreed["pairs"] and agreed["kappa"] < KAPPA_BAR:
        # The model judge is no better than chance against the calibrated one: lead with the latter.
        judge_note = below_the_bar(agreed["kappa"])
        headline, other = seconded, scored
    metrics, counts = aggregate(headline)
    # The by-type table's rows: the types, unanswerable questions by their kind.
    groups = dict.fromkeys(r.group for r in headline)
    by_type = {g: aggregate([r for r in headline if r.group == g])[0] for g in groups}
    final = {r.id: r for r in scored}
    backend = assistant.backend
    return EvalReport(
        set_name=eval_set.name,
        set_path=eval_set.path,
        backend=backend.name if answers else "retrieval",
        model=backend.model if answers else "",
        judge=judge.name if answers and judge else "",
        retriever=retriever,
        rerank_depth=assistant.settings.rerank_depth,
        rerank_weight=assistant.settings.rerank_weight if assistant.settings.rerank_depth else 0.0,
        k=k,
        depth=depth,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        metrics=metrics,
        counts=counts,
        by_type=by_type,
        latency=latency(headline),
        judge_agreement=agreed,
        judge_note=judge_note,
        alternative_metrics=aggregate(other)[0] if other else None,
        items=tuple(final.get(r.id, r) for r in results),
        questions=tuple(i.id for i in items),
        split=eval_set.split,
        corpus=eval_set.corpus,
        stopped=stopped,
    )


def _ask(
    assistant: Assistant,
    item: EvalItem,
    *,
    judge: Judge | None,
    k: int,
    depth: int,
    ranking_settings: Settings,
    profile: CorpusProfile,
) -> ItemResult:
    """One question ranked and, given a judge, answered and scored."""
    clock = time.perf_counter()
    # Ranked as the answer retrieves: the question analysed (noise and stated filters out).
    analysis = analyze(item.question, profile)
    found = rank(
        assistant.index, analysis, ranking_settings, assistant.vectors, assistant.verifier, k=depth, filters=analysis.filters
    )
    result = ItemResult(
        id=item.id,
        question=item.question,
        type=item.type,
        kind=item.kind,
        style=item.style,
        gold=item.gold,
        retrieved=tuple(s.paper.id for s in found),
    )
    if judge is None:
        timings = {"retrieve": time.perf_counter() - clock}
        return result.model_copy(update={"timings": timings, "titles": _titles(assistant.index, item.gold, found[:k])})
    answer = assistant.ask(item.question, k=k)
    if answer.cut_off:
        # Half an answer would score as a poor one: it is the backend's failure, to be asked again.
        raise AnswerCutOff(answer.cut_off, hint="the answer broke off; --resume asks it again")
    decided = len(judge.verdicts) if isinstance(judge, PairedJudge) else 0
    listed = listed_papers(answer)
    given = [s for s in answer.sources if s.paper.id in listed]
    update = {
        "answer": (f"{answer.note}\n\n" if answer.note else "") + answer.text,
        "covered": answer.covered,
        "grade": answer.grade.value if answer.grade else "",
        "form": answer.form,
        "citations": answer.citations,
        "listed": tuple(listed),
        "titles": _titles(assistant.index, item.gold, [*found[:k], *given]),
        "scores": answer_scores(item, answer, judge, result.retrieved),
        "timings": dict(answer.timings),
    }
    if isinstance(judge, PairedJudge):
        update |= {
            "second_scores": answer_scores(item, answer, judge.secondary, result.retrieved),
            "verdicts": tuple(judge.verdicts[decided:]),
        }
    return result.model_copy(update=update)


def _titles(index: Index, gold: Sequence[str], shown: Sequence[Source]) -> dict[str, str]:
    """The title of each paper of `shown` and of each gold paper (looked up when not shown)."""
    papers = {s.paper.id: s.paper for s in shown}
    papers |= index.fetch([g for g in gold if g not in papers])
    return {pid: paper.title or paper.display_title for pid, paper in papers.items()}


@dataclass(frozen=True)
class Delta:
    metric: str
    before: float | None
    after: float | None

    @property
    def change(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def better(self) -> bool | None:
        """Whether `after` improves on `before`, knowing which way the metric points."""
        change = self.change
        if not change:
            return None
        lower = self.metric in LOWER_IS_BETTER or self.metric.endswith("(ms)")
        return change < 0 if lower else change > 0


def compare(before: EvalReport, after: EvalReport) -> list[Delta]:
    """Each metric of either report, before and after; latency as p50/p95 of each stage in ms."""

    def flat(report: EvalReport) -> dict[str, float]:
        stages = {f"{s} {p} (ms)": v[p] * 1000 for s, v in report.latency.items() for p in ("p50", "p95")}
        return {**report.metrics, **stages}

    a, b = flat(before), flat(after)
    return [Delta(m, a.get(m), b.get(m)) for m in dict.fromkeys([*a, *b])]
