"""`make train-verifier` end to end on a few questions: train, export to float ONNX (and the int8
export it is measured against), score the held-out splits, and load the result the way the product
does."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from rag.models.verifier import LABELS, Verifier

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("train_verifier", ROOT / "eval" / "train_verifier.py")
train_verifier = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_verifier)

pytestmark = pytest.mark.slow


def few_questions(per_split: int) -> list[dict]:
    """Every pair of the first `per_split` questions of each split of the committed pairs."""
    chosen: dict[str, list[str]] = {"train": [], "calibration": [], "report": []}
    pairs = []
    for pair in train_verifier.read_pairs(train_verifier.PAIRS):
        qids = chosen[pair["split"]]
        if pair["qid"] not in qids and len(qids) < per_split:
            qids.append(pair["qid"])
        if pair["qid"] in qids:
            pairs.append(pair)
    return pairs


def test_training_on_a_few_questions_makes_a_model_the_product_loads(tmp_path):
    pairs = few_questions(per_split=6)
    assert {p["split"] for p in pairs} == {"train", "calibration", "report"}
    path = tmp_path / "pairs.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(p) + "\n" for p in pairs)
    out_dir, int8_dir = tmp_path / "model", tmp_path / "int8"
    code = train_verifier.main(
        ["--pairs", str(path), "--out", str(out_dir), "--layers", "1", "--batch", "8", "--threads", "1", "--int8", str(int8_dir)]
    )
    assert code == 0
    meta = json.loads((out_dir / "verifier.json").read_text(encoding="utf-8"))
    assert meta["labels"] == list(LABELS) and meta["layers"] == 1 and meta["seed"] == 0
    assert meta["train_pairs"] == sum(p["split"] == "train" for p in pairs)
    # The passages are cleaned at run time as at training, and the float export is the torch model.
    assert meta["passages"] == "clean_passage" and meta["export"] == "float32"
    assert meta["export_against_torch"]["max_probability_change"] < 1e-3
    assert "int8_against_torch" in meta and Verifier(int8_dir, threads=1).probabilities("Why?", ["Because."]).shape == (1, 3)
    assert set(meta["held_out"]) == {"calibration", "report"}
    assert 0.0 <= meta["held_out"]["report"]["sentence accuracy"] <= 1.0
    probabilities = Verifier(out_dir, threads=1).probabilities("How is it trained?", ["We train it with SGD.", "Code is online."])
    assert probabilities.shape == (2, len(LABELS))
    assert probabilities.sum(axis=1) == pytest.approx([1.0, 1.0], abs=1e-4)
