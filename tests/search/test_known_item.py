"""The generated known-item set (eval/make_known_item.py) on a hand-made source and the real one."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import ROOT, shared_file

_spec = importlib.util.spec_from_file_location("make_known_item", ROOT / "eval" / "make_known_item.py")
make_known_item = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_known_item)

PAPERS = [
    {"id": "p1", "title": "Sparse Attention for Long Document Retrieval", "abstract": "We sparsify."},
    {"id": "p2", "title": "Graph Neural Networks Meet Protein Folding", "abstract": "Proteins fold."},
    # p3 and p4 share a title up to case and punctuation: neither names one paper.
    {"id": "p3", "title": "Learning to Rank with Large Models", "abstract": "Ranking, first."},
    {"id": "p4", "title": "Learning to rank -- with large models!", "abstract": "Ranking, again."},
    {"id": "p5", "title": "Diffusion Models Beat GANs", "abstract": ""},
    {"id": "p6", "title": "Scaling Laws", "abstract": "Bigger is better."},
    {"id": "p7", "title": "Contrastive Pretraining of Sentence Encoders", "abstract": "Pairs help."},
    {"id": "p8", "title": "Efficient Vision Transformers on Edge Devices", "abstract": "Phones."},
]
TITLES = {p["id"]: p["title"] for p in PAPERS}


def build(tmp_path, out_name="out", n=3, papers=PAPERS):
    source = tmp_path / "source.jsonl.gz"
    if not source.exists():
        source.write_bytes(gzip.compress("".join(json.dumps(p) + "\n" for p in papers).encode()))
    out = tmp_path / out_name
    assert make_known_item.main(["--source", str(source), "--out", str(out), "--n", str(n)]) == 0
    with gzip.open(out / "corpus.jsonl.gz", "rt") as f:
        corpus = [json.loads(line) for line in f]
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    lines = (out / "qrels" / "test.tsv").read_text().splitlines()
    return out, corpus, queries, lines


def test_small_source(tmp_path, capsys):
    out, corpus, queries, lines = build(tmp_path)
    assert [d["_id"] for d in corpus] == ["p1", "p2", "p3", "p4", "p6", "p7", "p8"]  # p5: no abstract
    assert all(d["title"] == "" and d["text"] for d in corpus)
    assert len(queries) == 3 and len({q["_id"] for q in queries}) == 3
    assert lines[0] == "query-id\tcorpus-id\tscore"
    qrels = dict((qid, (doc, score)) for qid, doc, score in (line.split("\t") for line in lines[1:]))
    in_corpus = {d["_id"] for d in corpus}
    for q in queries:
        doc, score = qrels[q["_id"]]
        assert score == "1" and doc in in_corpus and TITLES[doc] == q["text"]
        assert doc not in {"p3", "p4", "p5", "p6"}  # duplicated, no abstract, too short
    assert (out / "README.md").read_text().startswith("# known-item")
    assert "corpus: 7 papers; queries: 3" in capsys.readouterr().out


def test_rerun_is_byte_identical(tmp_path):
    first = build(tmp_path, "a")[0]
    second = build(tmp_path, "b")[0]
    for name in ("corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv", "README.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_asking_for_more_than_the_candidates_gives_all_of_them(tmp_path):
    _, _, queries, _ = build(tmp_path, n=100)
    assert sorted(q["text"] for q in queries) == sorted(TITLES[i] for i in ("p1", "p2", "p7", "p8"))


@pytest.mark.slow
def test_missing_source_exits_1_with_the_path(tmp_path):
    missing = tmp_path / "nope.jsonl.gz"
    script = ROOT / "eval" / "make_known_item.py"
    run = subprocess.run(
        [sys.executable, str(script), "--source", str(missing), "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert run.returncode == 1 and run.stdout == ""
    assert str(missing) in run.stderr and len(run.stderr.strip().splitlines()) == 1  # no traceback
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_real_shared_corpus(tmp_path):
    source = shared_file("data/scale_corpus.jsonl.gz")
    out = tmp_path / "ki"
    assert make_known_item.main(["--source", str(source), "--out", str(out), "--n", "50"]) == 0
    queries = (out / "queries.jsonl").read_text().splitlines()
    qrels = (out / "qrels" / "test.tsv").read_text().splitlines()
    with gzip.open(out / "corpus.jsonl.gz", "rt") as f:
        ids = {json.loads(line)["_id"] for line in f}
    assert len(queries) == 50 and len(qrels) == 51
    assert 13_000 <= len(ids) <= 13_687
    assert all(line.split("\t")[1] in ids for line in qrels[1:])
