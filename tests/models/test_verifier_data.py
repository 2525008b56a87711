"""The verifier's training data and its preparation (issue 35): the second round's question kinds
become the pairs the data card says, no held-out paper is ever paired, openings are evened out
between labels, and a passage is cleaned the same way at training and at run time."""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rag.models.verifier import LABELS, VERIFIER_DIR, Verifier, clean_passage

ROOT = Path(__file__).resolve().parents[2]
NONE, ANSWERS, CONTRADICTS = range(3)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "eval" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


verifier_data = _load("verifier_data")
train_verifier = _load("train_verifier")


# -- cleaning -------------------------------------------------------------------------------------


def test_a_passage_is_cleaned_of_latex_and_math_letters_and_plain_text_is_left_alone():
    assert clean_passage("accurate $C_d$ estimation with $\\mathbf{A}$") == "accurate C_d estimation with A"
    assert clean_passage("an $\\epsilon$-optimal arm, $\\mathcal{O}(n^2)$") == "an ε-optimal arm, O(n^2)"
    # A math symbol stands apart, so only it is unknown to the word pieces, not the word it touches.
    assert clean_passage("when $m \\ll n$") == "when m ≪ n"
    assert clean_passage("50%$\\sim$90% of the heads") == "50% ∼ 90% of the heads"
    plain = "We train it with SGD; code costs $5 at most."
    assert clean_passage(plain) == plain
    for text in ("$\\tilde O(\\sqrt T)$ regret", "x_1 ⊗⋯⊗x_q", "ﬁnd café"):
        assert clean_passage(clean_passage(text)) == clean_passage(text)


def _model_with(tmp_path: Path, passages: str | None) -> Path:
    folder = tmp_path / f"model-{passages}"
    shutil.copytree(VERIFIER_DIR, folder)
    meta = json.loads((folder / "verifier.json").read_text(encoding="utf-8"))
    meta.pop("passages", None)
    if passages:
        meta["passages"] = passages
    (folder / "verifier.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_the_model_cleans_its_passages_as_its_training_did(tmp_path):
    question = "Which paper predicts drag coefficients of cars from 3D shapes?"
    raw = "We present a transformer for rapid and accurate $C_d$ estimation from $\\mathbf{3D}$ vehicle models."
    cleaned = Verifier(_model_with(tmp_path, "clean_passage"), threads=1)
    assert np.array_equal(cleaned.probabilities(question, [raw]), cleaned.probabilities(question, [clean_passage(raw)]))
    # A model whose card names no cleaning reads a passage as given (its pairs were `to_plain` only).
    as_given = Verifier(_model_with(tmp_path, None), threads=1)
    assert as_given.clean(raw) == raw


# -- the second round's questions as pairs --------------------------------------------------------

ABSTRACT = {
    "key": "P9999",
    "id": "own:1",
    "title": "Adaptive Batches for Active Learning",
    "split": "train",
    "sentences": ["Active learning picks points to label.", "Fixed batch sizes waste queries.",
                  "We let the batch size adapt each round.", "Code is at github.com/x/y.", "It beats fixed batches."],
}
PAPERS = {f"other:{i}": SimpleNamespace(id=f"other:{i}", title=f"Other paper {i}", abstract="One thing. Another thing.") for i in range(10)}


class _Builder(verifier_data.Builder):
    """The builder without an index: closeness by position, neighbours and draws from a fixed list."""

    def __init__(self, excluded: set[str] = frozenset()) -> None:
        self.pairs = []
        self.excluded = set(excluded)
        self.bundled = {"a bundled paper"}
        self.rng = random.Random(0)

    def closest(self, question, sentences, n):
        return list(range(len(sentences)))[:n]

    def neighbours(self, question, taken, per_ranker=1):
        return [p for p in PAPERS.values() if p.id not in taken and self.usable(p)][: 2 * per_ranker]

    def area(self, question, taken):
        return next((p for p in reversed(PAPERS.values()) if p.id not in taken and self.usable(p)), None)

    def anywhere(self, taken):
        return next(p for p in PAPERS.values() if p.id not in taken and self.usable(p))


def _pairs(kind: str, **fields) -> list[dict]:
    builder = _Builder()
    builder.question({"id": "q", "question": "what?", "kind": kind, "split": "train", **fields}, ABSTRACT)
    return builder.pairs


def _labels(pairs, *, level, own) -> list[int]:
    return [p["label"] for p in pairs if p["level"] == level and p["own"] == own]


def test_a_short_lookup_gets_its_answers_its_paper_and_negatives_from_near_and_far():
    pairs = _pairs("terse", answers=[2])
    assert sorted(_labels(pairs, level="sentence", own=True)) == [NONE, NONE, NONE, ANSWERS]
    assert _labels(pairs, level="paper", own=True) == [ANSWERS]
    # Two neighbours of each ranker, one of its area, one drawn at random: each a paper and a sentence.
    assert _labels(pairs, level="paper", own=False) == [NONE] * 6
    assert _labels(pairs, level="sentence", own=False) == [NONE] * 6
    assert {p["kind"] for p in pairs} == {"terse"}


def test_a_premise_stated_in_passing_is_contradicted_by_its_sentence():
    pairs = _pairs("premise_use", contradicts=[1], premise="Batch sizes are fixed")
    assert CONTRADICTS in _labels(pairs, level="sentence", own=True)
    assert _labels(pairs, level="paper", own=True) == [CONTRADICTS]


def test_paper_level_topic_kinds_answer_or_not_by_membership_and_take_no_neighbour():
    about = _pairs("about", answers=[0, 2])
    assert _labels(about, level="paper", own=True) == [ANSWERS]
    assert sorted(_labels(about, level="sentence", own=True)) == [ANSWERS, ANSWERS]
    mentions = _pairs("mentions_only")
    assert _labels(mentions, level="paper", own=True) == [NONE]
    assert _labels(mentions, level="sentence", own=True) == [NONE]
    # Other papers may be on the topic: only the one drawn at random is paired, as none.
    for pairs in (about, mentions):
        assert _labels(pairs, level="paper", own=False) == [NONE]


def test_a_short_near_miss_answers_nothing_in_its_own_paper():
    pairs = _pairs("short_near")
    assert set(_labels(pairs, level="sentence", own=True)) == {NONE}
    assert _labels(pairs, level="paper", own=True) == [NONE]


def test_no_held_out_or_bundled_paper_is_ever_a_negative():
    builder = _Builder(excluded={"other:0", "other:5", "other:9"})
    PAPERS["other:1"].title, title = "A Bundled Paper", PAPERS["other:1"].title
    try:
        builder.question({"id": "q", "question": "what?", "kind": "short", "split": "train", "answers": [2]}, ABSTRACT)
    finally:
        PAPERS["other:1"].title = title
    used = {p["p"].split(".")[0] for p in builder.pairs if p["level"] == "paper" and not p["own"]}
    assert used and not used & {"Other paper 0", "Other paper 5", "Other paper 9", "A Bundled Paper"}


def test_the_scale_sets_gold_and_mentioned_papers_are_held_out():
    held = verifier_data.held_out_papers()
    for path in sorted((ROOT / "eval" / "sets").glob("scale-*.jsonl")):
        for record in verifier_data.read_jsonl(path):
            assert set(record.get("gold") or []) <= held and set(record.get("mentions") or []) <= held


def test_the_second_rounds_files_are_read_with_the_abstracts_split_and_checked(tmp_path):
    folder = tmp_path / "styles"
    folder.mkdir()
    lines = [
        {"id": "s1", "key": "P9999", "paper": "own:1", "kind": "lay", "question": "batches that grow", "answers": [2], "split": "report"},
        {"id": "s2", "key": "P9999", "paper": "own:1", "kind": "lay", "question": "out of range", "answers": [9]},
        {"id": "s3", "key": "P9999", "paper": "own:1", "kind": "premise_use", "question": "no sentence"},
        {"id": "s4", "key": "P9999", "paper": "own:1", "kind": "poem", "question": "?"},
    ]
    (folder / "styles_1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    questions = verifier_data.read_styles(folder, {"P9999": ABSTRACT})
    assert [q["id"] for q in questions] == ["s1"]
    # Its own "split" field is not kept: the split is the abstract's, given when its pairs are made.
    assert "split" not in questions[0]


def test_a_later_round_adds_only_the_questions_an_earlier_build_has_no_pair_of():
    questions = [{"id": "vq-1"}, {"id": "vs1-2"}, {"id": "vt1-1"}, {"id": "vt6-1"}]
    earlier = [{"qid": "vq-1", "q": "a"}, {"qid": "vq-1", "q": "b"}, {"qid": "vs1-2", "q": "c"}, {"q": "no qid"}]
    assert [q["id"] for q in verifier_data.unbuilt(questions, earlier)] == ["vt1-1", "vt6-1"]


# -- openings at training -------------------------------------------------------------------------


def test_openings_are_weighed_so_each_family_has_the_overall_label_shares():
    pairs = (
        [{"q": "Which papers study X?", "label": NONE}] * 8 + [{"q": "Which papers study Y?", "label": ANSWERS}] * 2
        + [{"q": "batch size adaptation", "label": ANSWERS}] * 6 + [{"q": "batch size fixed", "label": NONE}] * 4
    )
    weights, shares = train_verifier.opening_weights(pairs)
    overall = {LABELS[NONE]: 0.6, LABELS[ANSWERS]: 0.4}
    assert shares["lookup"]["after"] == pytest.approx(overall, abs=1e-3)
    assert shares["bare"]["after"] == pytest.approx(overall, abs=1e-3)
    assert len(weights) == len(pairs) and all(1 / 3 <= w <= 3 for w in weights)


def test_a_lookup_opening_is_swapped_or_dropped_but_its_content_kept():
    rng = random.Random(1)
    seen = {train_verifier.reframe("Which paper predicts drag from shape?", rng) for _ in range(200)}
    assert "Predicts drag from shape?" in seen and "Which paper predicts drag from shape?" in seen
    assert all(s.lower().endswith("predicts drag from shape?") for s in seen)
    assert train_verifier.reframe("How does it predict drag?", rng) == "How does it predict drag?"
