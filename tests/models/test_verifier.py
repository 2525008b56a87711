"""The verifier (rag/models/verifier.py) and the decisions made from its verdicts.

The runtime is tested on the committed model; the decisions (a contradicted premise and its
correction, reranking, the model's gate) on evidence whose verdicts a test sets, so each rule is
checked apart from what the model happens to say."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest

from rag.answering.answerability import Bars, assess, for_model
from rag.answering.check import DeclineOpening
from rag.answering.evidence import Evidence, gather
from rag.answering.forms.correction import write_correction
from rag.answering.premise import stated_premise
from rag.answering.request import AnswerRequest, Task
from rag.errors import ModelNotFoundError
from rag.models.verifier import LABELS, VERIFIER_DIR, Verdict, Verifier, load_verifier, paper_passage
from rag.question.analysis import analyze
from rag.records import Answerability, CorpusProfile, Coverage, Paper, Source
from rag.search.rerank import rerank
from rag.settings import Settings

# -- the model ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return load_verifier(threads=1)


def test_the_committed_model_loads_offline_and_gives_probabilities(verifier):
    rows = verifier.probabilities("How does MoH make attention cheaper?", ["Each token picks its heads.", "We study bandits."])
    assert rows.shape == (2, len(LABELS))
    assert np.allclose(rows.sum(axis=1), 1.0, atol=1e-5)
    assert verifier.meta["labels"] == list(LABELS)
    # Float arithmetic (issue 35: dynamic int8 moved probabilities with its activations), the
    # weights stored as float16 to keep the repository small.
    assert (VERIFIER_DIR / "verifier.onnx").stat().st_size <= 50_000_000


def test_a_question_longer_than_the_model_reads_is_cut_not_an_error(verifier):
    # Issue 36: a 5,000-character column with no sentence break raised "Sequence to truncate too
    # short" in the tokenizer.
    long_question = "Which papers study " + "attention heads and tokens " * 180
    rows = verifier.probabilities(long_question, ["Each token picks its heads.", "We study bandits."])
    assert rows.shape == (2, len(LABELS))
    # A question of ordinary length reads as before: only the passage is cut.
    short = verifier.probabilities("How does MoH make attention cheaper?", ["Each token picks its heads. " * 60])
    assert np.allclose(short.sum(axis=1), 1.0, atol=1e-5)


def test_a_pair_gets_the_same_verdict_whatever_is_asked_with_it():
    question = "Which method estimates a car's drag coefficient from its shape?"
    passages = ["We propose DragSolver, a transformer that predicts the drag coefficient of a car from its 3D geometry.",
                "Tokens select attention heads.", "A short one.", "Regret bounds for linear bandits on continuous arms " * 4]
    together = Verifier(VERIFIER_DIR, threads=1).probabilities(question, passages)
    alone = np.stack([Verifier(VERIFIER_DIR, threads=1).probabilities(question, [p])[0] for p in passages])
    assert np.array_equal(together, alone)
    # Asked again, the verdict comes from the cache, the same.
    verifier = Verifier(VERIFIER_DIR, threads=1)
    assert np.array_equal(verifier.probabilities(question, passages[:1]), verifier.probabilities(question, passages[:1]))


def test_a_missing_model_file_is_our_error_with_what_to_do(tmp_path):
    shutil.copytree(VERIFIER_DIR, tmp_path / "model")
    (tmp_path / "model" / "verifier.onnx").unlink()
    with pytest.raises(ModelNotFoundError, match=r"verifier\.onnx") as caught:
        Verifier(tmp_path / "model", threads=1)
    assert "make train-verifier" in caught.value.hint


def test_it_tells_the_sentence_that_answers_from_one_on_another_topic(verifier):
    # Written for this test, about no paper of the training data.
    question = "How is the drag of a car predicted from its shape?"
    answering = "We predict the aerodynamic drag coefficient of vehicle designs directly from their 3D meshes."
    other = "Each token selects a few attention heads, which lowers inference cost."
    answers, elsewhere = verifier.judge(question, [answering, other])
    assert answers.answers > 0.5 > elsewhere.answers


def test_it_finds_the_sentence_that_contradicts_a_premise(verifier):
    question = "Why does the new optimizer need twice the memory of Adam?"
    contradicting = "Our optimizer keeps a single state vector and so uses half the memory of Adam."
    unrelated = "We evaluate on image classification and language modelling benchmarks."
    against, other = verifier.judge(question, [contradicting, unrelated])
    assert against.contradicts > max(against.answers, 0.5)
    assert other.contradicts < 0.5


# -- decisions from verdicts ----------------------------------------------------------------------

PAPER = Paper(
    id="p1",
    title="FastHeads: Attention with Fewer Heads",
    abstract="We route each token to a few heads. This cuts inference cost without adding parameters. It beats baselines.",
)
OTHER = Paper(id="p2", title="Bandits with Friends", abstract="We study bandits. Units interfere. Regret is bounded.")


class _Vectors:
    """Stands in for the embedding model: every text alike, so only the verdicts a test sets differ."""

    def read(self, papers):
        pass

    def similarities(self, query, texts):
        return [0.5] * len(texts)

    def __call__(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def evidence(question: str, verdicts: dict[str, list[tuple[float, float]]], *, verified: dict[str, float] | None = None) -> Evidence:
    """Evidence for `question` over the two papers (terms met as the product meets them), each
    sentence with the (answers, contradicts) verdicts given by paper id (none for a paper not given)."""
    sources = [Source(number=n, paper=p, score=1.0 / n, verified=(verified or {}).get(p.id)) for n, p in enumerate((PAPER, OTHER), 1)]
    gathered = gather(analyze(question, CorpusProfile()), sources, _Vectors())
    papers = []
    for paper in gathered.papers:
        given = verdicts.get(paper.paper.id)
        sentences = tuple(
            replace(s, answers=given[i][0], contradicts=given[i][1]) if given else s for i, s in enumerate(paper.sentences)
        )
        papers.append(replace(paper, sentences=sentences))
    return replace(gathered, papers=tuple(papers))


QUIET = [(0.02, 0.01)] * 3


def test_a_premise_a_sentence_contradicts_is_said_first_with_that_sentence():
    question = "Why does FastHeads need more parameters than plain attention?"
    found = evidence(question, {"p1": [(0.2, 0.05), (0.1, 0.85), (0.05, 0.0)], "p2": QUIET})
    verdict = assess(found, min_similarity=0.3)
    assert verdict.coverage == Coverage.CONTRADICTED and verdict.answers
    assert verdict.premise == "FastHeads needs more parameters than plain attention"
    text = "".join(write_correction(AnswerRequest(Task.ANSWER, question, found.analysis, found, verdict)))
    assert text.startswith("Not so: the question takes for granted that FastHeads needs more parameters")
    assert text.index("This cuts inference cost without adding parameters") < len(text) and text.endswith("[1]")


def test_a_contradiction_weaker_than_an_answer_does_not_overrule_it():
    found = evidence("How does FastHeads avoid adding parameters?", {"p1": [(0.2, 0.0), (0.9, 0.6), (0.0, 0.0)], "p2": QUIET})
    assert assess(found, min_similarity=0.3).coverage != Coverage.CONTRADICTED


def test_a_contradiction_in_a_paper_the_question_is_not_about_is_ignored():
    # The second paper is not among the top `premise_papers` when that is 1.
    found = evidence("Why does FastHeads need more parameters?", {"p1": [(0.1, 0.0)] * 3, "p2": [(0.0, 0.9)] * 3})
    assert assess(found, min_similarity=0.3, bars=Bars(premise_papers=1)).coverage != Coverage.CONTRADICTED


def test_a_collection_or_a_statement_is_never_answered_as_contradicted():
    verdicts = {"p1": [(0.0, 0.95)] * 3, "p2": QUIET}
    assert assess(evidence("Which papers need more parameters?", verdicts), min_similarity=0.3).coverage != Coverage.CONTRADICTED
    assert assess(evidence("FastHeads needs more parameters.", verdicts), min_similarity=0.3).coverage != Coverage.CONTRADICTED


class _FixedVerifier:
    """Stands in for the model: a paper's verdict by a word of its passage."""

    def __init__(self, relevant: dict[str, float]) -> None:
        self.relevant = relevant

    def judge(self, question, passages):
        return [Verdict(answers=next((v for w, v in self.relevant.items() if w in p), 0.0), contradicts=0.0) for p in passages]


def test_reranking_puts_the_paper_the_verifier_finds_relevant_first():
    sources = [Source(number=1, paper=OTHER, score=1.0), Source(number=2, paper=PAPER, score=0.8)]
    analysis = analyze("Which design lets every word consult only some of the readers?")
    ranked = rerank(analysis, sources, _Vectors(), _FixedVerifier({"FastHeads": 0.9}), Settings(rerank_depth=30, rerank_weight=0.5))
    assert [s.paper.id for s in ranked] == ["p1", "p2"] and [s.number for s in ranked] == [1, 2]
    assert ranked[0].verified == 0.9 and ranked[1].verified == 0.0
    # Where the verifier finds both alike, the fused order stands.
    tied = rerank(analysis, sources, _Vectors(), _FixedVerifier({}), Settings(rerank_depth=30, rerank_weight=0.5))
    assert [s.paper.id for s in tied] == ["p2", "p1"]


def test_the_passage_the_verifier_reads_is_the_title_and_the_closest_sentences():
    assert paper_passage("A Title.", ["One.", "Two."]) == "A Title. One. Two."
    assert paper_passage("", ["One."]) == "One."


# -- with a model --------------------------------------------------------------------------------


def test_with_a_model_only_a_question_far_from_everything_is_declined_before_asking():
    near = Answerability(coverage=Coverage.NOT_COVERED, best_similarity=0.4, missing=("air resistance",))
    far = Answerability(coverage=Coverage.NOT_COVERED, best_similarity=0.05)
    assert for_model(near, floor=0.15).coverage == Coverage.COVERED
    assert for_model(far, floor=0.15).coverage == Coverage.NOT_COVERED
    unnamed = Answerability(coverage=Coverage.PARTLY, best_similarity=0.4)
    assert for_model(unnamed, floor=0.15).coverage == Coverage.COVERED
    named = Answerability(coverage=Coverage.PARTLY, best_similarity=0.4, missing=("ImageNet",))
    assert for_model(named, floor=0.15) == named


@pytest.mark.parametrize("pieces", [["NOT COVERED: no source", " has it."], ["NOT", " COV", "ERED", ": no source has it."], ["**NOT COVERED**: no source has it."]])
def test_a_models_decline_is_held_back_however_it_streams(pieces):
    opening = DeclineOpening()
    shown = "".join(opening.feed(p) for p in pieces) + opening.feed("", final=True)
    assert shown == "" and opening.declined and opening.reason == "no source has it"


def test_an_answer_that_opens_like_a_decline_streams_once_it_differs():
    opening = DeclineOpening()
    assert opening.feed("NOT") == ""
    assert opening.feed("ABLY, MoH routes heads [1].") == "NOTABLY, MoH routes heads [1]."
    assert opening.feed(" More.") == " More." and not opening.declined
    short = DeclineOpening()
    assert short.feed("No", final=True) == "No"


@pytest.mark.parametrize(
    ("question", "premise"),
    [
        ("Why does MolStitch need to call the wet-lab oracle at every round?", "MolStitch needs to call the wet-lab oracle at every round"),
        ("How much does the SAM inner loop slow Flat-LoRA down?", "the SAM inner loop slows Flat-LoRA down"),
        ("Why is DragSolver so slow at inference?", "DragSolver is so slow at inference"),
        ("What makes ActionPiece ignore the order of actions?", "ActionPiece ignores the order of actions"),
        ("How many GPUs does MATS need for pretraining?", "MATS needs GPUs for pretraining"),
        ("MoH uses more heads, right", "MoH uses more heads, right"),
    ],
)
def test_the_premise_is_the_question_restated(question, premise):
    assert stated_premise(question) == premise
