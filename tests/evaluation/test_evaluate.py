"""The metrics and judges on hand-made cases whose right score is known."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence

import pytest
from conftest import PAPERS, ROOT, SEED_SET
from langchain_core.language_models import FakeListChatModel

from rag.answering.backends import ModelBackend
from rag.errors import ConfigError
from rag.evaluation.evaluate import (
    Delta,
    aggregate,
    citation_scores,
    compare,
    declined,
    faithfulness,
    gold_citation_scores,
    refused,
    retrieval_scores,
    same_sentence,
)
from rag.evaluation.judges import LLMJudge, PairedJudge, SimilarityJudge, agreement, make_judge
from rag.evaluation.records import ItemResult
from rag.records import Answer, Answerability, Citation, Coverage
from rag.settings import Settings


class KeywordJudge:
    """Supports a claim when every word of it marked *like this* appears in the evidence."""

    name = "keyword"

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def supports(self, claim: str, evidence: Sequence[str]) -> bool:
        self.calls.append((claim, tuple(evidence)))
        needed = [w.strip("*.") for w in claim.split() if w.startswith("*")]
        text = " ".join(evidence)
        return all(word in text for word in needed)

    def relevance(self, question: str, answer: str) -> float:
        return 1.0


# ---------------------------------------------------------------------------------------------
# Retrieval
# ---------------------------------------------------------------------------------------------


def test_a_perfect_ranking_scores_one():
    scores = retrieval_scores({"q": {"a": 1}}, {"q": ["a", "b", "c"]})["q"]
    assert scores == {"recall@1": 1.0, "recall@5": 1.0, "recall@10": 1.0, "mrr@10": 1.0, "ndcg@10": 1.0}


def test_relevant_paper_at_rank_two():
    scores = retrieval_scores({"q": {"a": 1}}, {"q": ["x", "a", "y"]})["q"]
    assert scores["recall@1"] == 0.0 and scores["recall@5"] == 1.0
    assert scores["mrr@10"] == pytest.approx(0.5)
    assert scores["ndcg@10"] == pytest.approx(1 / math.log2(3))


def test_two_relevant_papers_one_found():
    scores = retrieval_scores({"q": {"a": 1, "b": 1}}, {"q": ["a", "x", "y"]})["q"]
    assert scores["recall@5"] == pytest.approx(0.5)
    # DCG = 1 / log2(2); ideal DCG = 1 + 1 / log2(3)
    assert scores["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_graded_relevance_rewards_the_better_paper_first():
    relevance = {"q": {"a": 2, "b": 1}}
    best = retrieval_scores(relevance, {"q": ["a", "b"]})["q"]["ndcg@10"]
    swapped = retrieval_scores(relevance, {"q": ["b", "a"]})["q"]["ndcg@10"]
    assert best == pytest.approx(1.0)
    assert swapped == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_mrr_is_cut_at_ten_and_deeper_recall_is_reported():
    ranking = [f"x{i}" for i in range(11)] + ["a"]
    scores = retrieval_scores({"q": {"a": 1}}, {"q": ranking}, depth=100)["q"]
    assert scores["mrr@10"] == 0.0 and scores["recall@10"] == 0.0
    assert scores["recall@100"] == 1.0


def test_an_empty_ranking_counts_as_a_miss_and_unjudged_queries_are_left_out():
    scores = retrieval_scores({"q": {"a": 1}, "none": {}}, {"q": [], "none": ["a"]})
    assert set(scores) == {"q"}
    assert all(value == 0.0 for value in scores["q"].values())


# ---------------------------------------------------------------------------------------------
# Citations (ALCE), faithfulness, gold citations
# ---------------------------------------------------------------------------------------------

PASSAGES = {1: "alpha beta", 2: "gamma delta", 3: "alpha gamma"}


def test_citation_recall_and_precision_on_supported_sentences():
    scores = citation_scores("It has *alpha [1]. It has *gamma [2].", PASSAGES, KeywordJudge())
    assert (scores.recall, scores.precision) == (1.0, 1.0)


def test_an_unsupported_or_uncited_sentence_lowers_recall():
    text = "It has *alpha [2]. It has *beta [1]. It has *delta. It has *omega [1]."
    scores = citation_scores(text, PASSAGES, KeywordJudge())
    # Supported: only "*beta [1]". Citations: [2] wrong, [1] right, [1] wrong; the uncited one has none.
    assert scores.recall == pytest.approx(1 / 4)
    assert scores.precision == pytest.approx(1 / 3)


def test_a_redundant_citation_is_imprecise_but_a_needed_one_is_not():
    # *alpha is in [1] and [3]; *gamma only in [2] and [3]: with [1, 3] both are needed? No:
    # [3] alone supports "*alpha *gamma", so [1] is redundant; [3] supports it alone, so it is needed.
    scores = citation_scores("It joins *alpha and *gamma [1, 3].", PASSAGES, KeywordJudge())
    assert scores.recall == 1.0 and scores.precision == pytest.approx(1 / 2)
    # Each of [1] and [2] is needed: neither alone supports, and neither is enough without the other.
    scores = citation_scores("It joins *beta and *delta [1][2].", PASSAGES, KeywordJudge())
    assert (scores.recall, scores.precision) == (1.0, 1.0)


def test_citation_numbers_without_a_passage_support_nothing():
    scores = citation_scores("It has *alpha [7].", PASSAGES, KeywordJudge())
    assert (scores.recall, scores.precision) == (0.0, 0.0)
    assert citation_scores("", PASSAGES, KeywordJudge()) is None


def test_faithfulness_counts_claims_the_context_supports():
    context = list(PASSAGES.values())
    assert faithfulness("It has *alpha [1]. It has *omega.", context, KeywordJudge()) == 0.5
    assert faithfulness("**Title**: It has *delta [5].", context, KeywordJudge()) == 1.0


def test_gold_citation_precision_and_recall():
    assert gold_citation_scores(["a", "b"], ["a", "c", "d"]) == (0.5, pytest.approx(1 / 3))
    assert gold_citation_scores([], ["a"]) == (None, 0.0)


def _answer(covered: bool, cited: bool, coverage: Coverage | None = None) -> Answer:
    citation = Citation(number=1, paper_id="p", title="t", authors=(), citing_sentence="s", support="s", support_score=1.0)
    coverage = coverage or (Coverage.COVERED if covered else Coverage.NOT_COVERED)
    return Answer(
        question="q", standalone_question="q", text="x", citations=(citation,) if cited else (),
        sources=(), answerability=Answerability(coverage=coverage), backend="extractive",
    )


def test_a_refusal_says_not_covered_and_cites_nothing():
    assert refused(_answer(covered=False, cited=False))
    assert not refused(_answer(covered=True, cited=True))
    assert not refused(_answer(covered=True, cited=False))


def test_a_decline_refuses_or_names_what_is_missing():
    assert declined(_answer(covered=False, cited=False))
    assert declined(_answer(covered=False, cited=False, coverage=Coverage.UNCLEAR))
    assert declined(_answer(covered=True, cited=True, coverage=Coverage.PARTLY))
    assert not declined(_answer(covered=True, cited=True))
    assert not refused(_answer(covered=True, cited=True, coverage=Coverage.PARTLY))


def test_aggregate_reads_declines_as_unanswerable_declined_and_answerable_partial():
    items = [
        ItemResult(id="1", question="q", type="lookup", gold=("a",), retrieved=(), scores={"refused": 0.0, "declined": 1.0}),
        ItemResult(id="2", question="q", type="lookup", gold=("a",), retrieved=(), scores={"refused": 1.0, "declined": 1.0}),
        ItemResult(id="3", question="q", type="unanswerable", gold=(), retrieved=(), scores={"refused": 0.0, "declined": 1.0}),
    ]
    metrics, _ = aggregate(items)
    assert metrics["answerable_partial"] == 0.5  # the refusal is counted as refused, not as partial
    assert metrics["answerable_refused"] == 0.5
    assert metrics["unanswerable_declined"] == 1.0 and metrics["unanswerable_refused"] == 0.0


def test_the_gold_sentence_counts_as_quoted_across_latex_and_markup():
    gold = "MoH outperforms multi-head attention by using only 50%$\\sim$90% of the attention heads."
    assert same_sentence("MoH outperforms multi-head attention by using only 50%∼90% of the attention heads.", gold)
    assert same_sentence("Extensive experiments show that " + gold, gold)
    assert not same_sentence("MoH is a promising alternative to multi-head attention.", gold)


def test_aggregate_splits_refusals_by_answerability_and_means_only_where_defined():
    items = [
        ItemResult(id="1", question="q", type="lookup", gold=("a",), retrieved=(), scores={"refused": 1.0, "recall@5": 1.0}),
        ItemResult(id="2", question="q", type="lookup", gold=("a",), retrieved=(), scores={"refused": 0.0, "recall@5": 0.0}),
        ItemResult(id="3", question="q", type="unanswerable", gold=(), retrieved=(), scores={"refused": 1.0}),
    ]
    metrics, counts = aggregate(items)
    assert metrics == {"recall@5": 0.5, "unanswerable_refused": 1.0, "answerable_refused": 0.5}
    assert counts == {"recall@5": 2, "unanswerable_refused": 1, "answerable_refused": 2}


def test_deltas_know_which_way_is_better():
    assert Delta("recall@5", 0.8, 0.9).better is True
    assert Delta("answerable_refused", 0.1, 0.2).better is False
    assert Delta("total p95 (ms)", 50.0, 40.0).better is True
    assert Delta("recall@5", 0.8, 0.8).better is None
    assert Delta("recall@100", None, 0.9).change is None


def test_compare_lists_metrics_of_both_reports(tmp_path):
    from rag.evaluation.records import EvalReport

    def report(metrics, latency):
        return EvalReport(set_name="s", set_path="s", backend="b", k=5, depth=10, created="2026-12-02T00:00:00+00:00",
                          metrics=metrics, counts=dict.fromkeys(metrics, 1), by_type={}, latency=latency, items=())

    before = report({"recall@5": 0.5}, {})
    after = report({"recall@5": 0.75, "mrr@10": 1.0}, {"total": {"p50": 0.1, "p95": 0.2}})
    deltas = {d.metric: d for d in compare(before, after)}
    assert deltas["recall@5"].change == pytest.approx(0.25)
    assert deltas["mrr@10"].before is None
    assert deltas["total p95 (ms)"].after == pytest.approx(200.0)


# ---------------------------------------------------------------------------------------------
# Judges
# ---------------------------------------------------------------------------------------------

ABSTRACT = (
    "We propose Mixture-of-Head attention (MoH), which treats attention heads as experts. "
    "Each token selects the heads it needs, and the outputs are combined by a weighted sum. "
    "MoH outperforms multi-head attention while using only 50% to 90% of the heads."
)


@pytest.fixture(scope="module")
def similarity(embeddings):
    from rag.index.embeddings import SentenceVectors

    return SimilarityJudge(SentenceVectors(embeddings))


@pytest.mark.semantic
def test_similarity_judge_accepts_quotes_and_paraphrases(similarity):
    assert similarity.supports("Each token selects the heads it needs [1].", [ABSTRACT])
    assert similarity.supports("MoH lets each token select its own attention heads.", [ABSTRACT])


@pytest.mark.semantic
def test_similarity_judge_rejects_claims_about_something_else(similarity):
    assert not similarity.supports("The method speeds up protein structure prediction with diffusion.", [ABSTRACT])
    assert not similarity.supports("", [ABSTRACT])
    assert not similarity.supports("Each token selects the heads it needs.", [])


@pytest.mark.semantic
def test_similarity_judge_relevance_prefers_an_on_topic_answer(similarity):
    question = "How can attention use fewer heads per token?"
    on_topic = similarity.relevance(question, "Each token selects the attention heads it needs.")
    off_topic = similarity.relevance(question, "Bandit regret grows with the square root of time.")
    assert 0 <= off_topic < on_topic <= 1
    assert similarity.relevance(question, "") == 0.0


def test_llm_judge_reads_yes_and_no_and_asks_once_per_claim(embeddings):
    from rag.index.embeddings import SentenceVectors

    model = FakeListChatModel(responses=["Yes.", "no", "The answer is: no, it adds a number."])
    judge = LLMJudge(ModelBackend.wrapping(model, Settings(), name="fake", reason="test"), SentenceVectors(embeddings))
    assert judge.supports("claim one", ["evidence"]) is True
    assert judge.supports("claim one", ["evidence"]) is True  # cached: no second call
    assert judge.supports("claim two", ["evidence"]) is False
    assert judge.supports("claim three", ["evidence"]) is False


def test_llm_judge_relevance_compares_the_question_it_writes(embeddings):
    from rag.index.embeddings import SentenceVectors

    model = FakeListChatModel(responses=["How can attention use fewer heads per token?"])
    judge = LLMJudge(ModelBackend.wrapping(model, Settings(), name="fake", reason="test"), SentenceVectors(embeddings))
    assert judge.relevance("How can attention use fewer heads per token?", "Each token picks heads.") == pytest.approx(1.0, abs=1e-4)


def test_paired_judge_answers_with_the_first_and_measures_agreement():
    class Always:
        def __init__(self, verdict):
            self.verdict, self.name = verdict, str(verdict)

        def supports(self, claim, evidence):
            return self.verdict

        def relevance(self, question, answer):
            return 0.5

    paired = PairedJudge(Always(True), Always(False))
    assert paired.supports("c", ["e"]) is True
    assert agreement(paired.verdicts) == {"pairs": 1.0, "agreement": 0.0, "kappa": 0.0}


def test_agreement_and_kappa():
    # 4 pairs: agree on 3; yes rates 0.5 and 0.25 -> chance 0.5*0.25 + 0.5*0.75 = 0.5; kappa 0.5.
    pairs = [(True, True), (True, False), (False, False), (False, False)]
    result = agreement(pairs)
    assert result["agreement"] == 0.75 and result["kappa"] == pytest.approx(0.5)
    assert agreement([(True, True)])["kappa"] == 1.0


def test_judges_with_no_decision_in_common_are_said_to_have_nothing_to_compare():
    from rag.evaluation.records import EvalReport
    from rag.evaluation.report import agreement_text, markdown

    def report(pairs):
        return EvalReport(set_name="s", set_path="s", backend="b", k=5, depth=10, created="2026-12-02T00:00:00+00:00",
                          metrics={}, counts={}, by_type={}, latency={}, items=(), judge_agreement=agreement(pairs))

    nothing = report([])
    assert agreement_text(nothing) == (
        "Judge agreement (LLM vs offline similarity judge): no support decision was made by both, so nothing to compare."
    )
    assert "0.000" not in markdown(nothing) and "nothing to compare" in markdown(nothing)
    some = agreement_text(report([(True, True), (True, False), (False, False), (False, False)]))
    assert some == "Judge agreement (LLM vs offline similarity judge) on 4 support decisions: 0.750 raw, Cohen's kappa 0.500."


def test_make_judge_is_offline_without_a_model_and_refuses_llm(embeddings):
    from rag.index.embeddings import SentenceVectors

    vectors = SentenceVectors(embeddings)
    assert isinstance(make_judge("auto", vectors, Settings()), SimilarityJudge)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_judge("llm", vectors, Settings())
    paired = make_judge("auto", vectors, Settings(openai_base_url="http://127.0.0.1:9/v1"))
    assert isinstance(paired, PairedJudge) and paired.name.startswith("llm")


@pytest.mark.semantic
def test_the_similarity_judge_threshold_still_separates_the_calibration_pairs(similarity):
    """eval/calibrate_judge.py's labelled pairs: the threshold in use keeps its measured accuracy."""
    spec = importlib.util.spec_from_file_location("calibrate_judge", ROOT / "eval" / "calibrate_judge.py")
    calibrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibrate)
    supported, unsupported = calibrate.labelled_scores(similarity, SEED_SET, PAPERS)
    assert len(supported) >= 60
    balanced = ((supported >= similarity.threshold).mean() + (unsupported < similarity.threshold).mean()) / 2
    assert balanced >= 0.95  # measured 0.969 at 0.575
