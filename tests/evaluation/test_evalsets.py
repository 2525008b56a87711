"""Loading evaluation sets: the seed question set, BEIR folders, and their errors."""

from __future__ import annotations

import json

import pytest
from conftest import SEED_SET, shared_file

from rag.errors import CorpusError, RecordError, StoreError
from rag.evaluation.records import EvalSet
from rag.evaluation.sets import eval_index, load_beir, load_eval_set, load_question_set, missing_gold


def test_the_seed_set_has_every_type_and_enough_of_each():
    seed = load_question_set(SEED_SET)
    kinds = [item.type for item in seed.items]
    assert len(seed.items) >= 60 and kinds.count("unanswerable") >= 10
    assert set(kinds) == {"lookup", "multi", "summary", "unanswerable"}
    assert all(item.answerable == (item.type != "unanswerable") for item in seed.items)
    assert seed.corpus is None  # judged over the configured index


def test_the_seed_gold_papers_are_all_in_the_bundled_corpus(seed_index):
    assert missing_gold(load_question_set(SEED_SET), seed_index) == set()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ('{"id": "x", "gold": []}', "'question'"),
        ('{"id": "x", "question": "q", "gold": "p1"}', "list of paper ids"),
        ('{"id": "x", "question": "q", "gold": [], "type": "lookup"}', "unanswerable"),
        ('{"id": "x", "question": "q", "gold": ["p"], "type": "trivia"}', "unknown type"),
        ('{"id": "a", "question": "q", "gold": ["p"]}', "duplicate id"),
    ],
)
def test_a_bad_question_names_its_line(tmp_path, line, reason):
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a", "question": "q", "gold": ["p"], "type": "lookup"}\n\n' + line + "\n")
    with pytest.raises(RecordError) as caught:
        load_question_set(path)
    assert caught.value.line == 3 and reason in caught.value.reason
    assert str(path) in str(caught.value)


def test_types_default_from_the_gold_papers(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a", "question": "q", "gold": ["p"]}\n{"id": "b", "question": "r", "gold": []}\n')
    assert [i.type for i in load_question_set(path).items] == ["lookup", "unanswerable"]


def _beir(folder, qrels: dict[str, str]):
    folder.mkdir()
    docs = [{"_id": "d1", "title": "Cats", "text": "Cats purr when content."},
            {"_id": "d2", "title": "Dogs", "text": "Dogs bark at strangers."}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "why do cats purr"}\n{"_id": "q2", "text": "barking"}\n'
                                          '{"_id": "q3", "text": "unjudged"}\n')
    (folder / "qrels").mkdir()
    for split, body in qrels.items():
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + body)
    return folder


def test_a_beir_folder_loads_graded_judgements_and_its_corpus(tmp_path):
    folder = _beir(tmp_path / "pets", {"test": "q1\td1\t2\nq2\td2\t1\nq2\td1\t0\n", "train": "q1\td1\t1\n"})
    pets = load_eval_set(folder)
    assert pets.name == "pets" and pets.corpus == str(folder / "corpus.jsonl")
    assert [(i.id, i.relevance, i.gold) for i in pets.items] == [
        ("q1", {"d1": 2}, ("d1",)),
        ("q2", {"d2": 1, "d1": 0}, ("d2",)),
    ]
    assert [i.id for i in load_beir(folder, split="train").items] == ["q1"]
    with pytest.raises(CorpusError, match="no dev.tsv"):
        load_beir(folder, split="dev")


def test_a_folder_that_is_not_beir_or_a_bad_qrels_line_is_reported(tmp_path):
    with pytest.raises(CorpusError, match="not a BEIR benchmark"):
        load_eval_set(tmp_path)
    folder = _beir(tmp_path / "pets", {"test": "q1\td1\n"})
    with pytest.raises(RecordError) as caught:
        load_eval_set(folder)
    assert caught.value.line == 2
    with pytest.raises(CorpusError, match="no such evaluation set"):
        load_eval_set(tmp_path / "missing.jsonl")


def test_a_beir_corpus_is_indexed_once_into_its_own_folder(tmp_path, settings, embeddings):
    pets = load_eval_set(_beir(tmp_path / "pets", {"test": "q1\td1\t1\n"}))
    index = eval_index(pets, settings, embeddings=embeddings)
    assert len(index) == 2 and index.path.is_relative_to(settings.data_dir / "eval" / "pets")
    again = eval_index(pets, settings, embeddings=embeddings)
    assert len(again) == 2 and missing_gold(pets, again) == set()


def test_a_beir_set_splits_into_fixed_halves_over_one_index(tmp_path, settings, embeddings):
    folder = _beir(tmp_path / "pets", {"train": "".join(f"q{n}\td1\t1\n" for n in range(1, 13))})
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{n}", "text": "cats"}) + "\n" for n in range(1, 13)))
    whole = {i.id for i in load_beir(folder).items}
    calibration, report = (load_beir(folder, split=half) for half in ("calibration", "report"))
    assert calibration.items and report.items
    assert {i.id for i in calibration.items} | {i.id for i in report.items} == whole
    assert not {i.id for i in calibration.items} & {i.id for i in report.items}
    assert (calibration.name, report.name) == ("pets-calibration", "pets-report")
    shuffled = list(reversed((folder / "queries.jsonl").read_text().splitlines()))
    (folder / "queries.jsonl").write_text("\n".join(shuffled) + "\n")
    assert {i.id for i in load_beir(folder, split="report").items} == {i.id for i in report.items}
    # Both halves are judged over the benchmark's one index, not an index per half.
    assert eval_index(report, settings, embeddings=embeddings).path.is_relative_to(settings.data_dir / "eval" / "pets")


def test_an_empty_index_is_an_error_with_a_hint(settings, embeddings):
    empty = EvalSet(name="s", path="s", items=())
    with pytest.raises(StoreError, match="empty") as caught:
        eval_index(empty, settings, embeddings=embeddings)
    assert "paperchat ingest" in caught.value.hint


def test_scifact_train_loads_809_claims():
    scifact = load_beir(shared_file("benchmarks/scifact"), split="train")
    assert len(scifact.items) == 809
    assert sum(len(i.gold) for i in scifact.items) == 919


def test_an_uploaded_set_names_the_users_file_in_errors_and_reports():
    from rag.evaluation.sets import load_upload

    good = load_upload("mine.jsonl", b'{"id": "a", "question": "q", "gold": ["p"]}\n')
    assert good.path == "mine.jsonl" and good.name == "mine"
    with pytest.raises(RecordError) as caught:
        load_upload("mine.jsonl", b'{"id": "a", "question": "q", "gold": ["p"]}\n{oops\n')
    assert str(caught.value).startswith("mine.jsonl:2: invalid JSON")
    with pytest.raises(CorpusError, match="^mine.jsonl: no questions"):
        load_upload("mine.jsonl", b"\n")


def test_a_benchmark_is_scored_deeper_than_a_question_set(tmp_path):
    assert load_question_set(SEED_SET).depth == 10
    assert load_eval_set(_beir(tmp_path / "pets", {"test": "q1\td1\t1\n"})).depth == 100


SETS = SEED_SET.parent


@pytest.mark.parametrize("name", ["seed-unanswerable", "seed-how-result", "seed-collection", "seed-extra"])
def test_the_sets_written_for_the_answer_forms_are_valid_and_split(name, seed_index):
    full = load_question_set(SETS / f"{name}.jsonl")
    assert missing_gold(full, seed_index) == set()
    papers = {p.id: p.abstract for p in seed_index.papers.values()}
    for item in full.items:
        assert item.split in ("calibration", "report")
        # A how/result question's answer is a sentence of its gold paper, as written.
        assert all(any(s in papers[g] for g in item.gold) for s in item.gold_sentences)
        assert (item.type == "unanswerable") == bool(item.kind)
    if name != "seed-extra":  # calibration only
        halves = [load_question_set(SETS / f"{name}.jsonl", split=s) for s in ("calibration", "report")]
        assert sum(len(h.items) for h in halves) == len(full.items) and all(len(h.items) >= 10 for h in halves)
        assert halves[1].name == f"{name}-report"


def test_the_unanswerable_sets_cover_every_kind_of_unanswerable_request():
    kinds = [i.kind for n in ("seed-unanswerable", "scale-unanswerable") for i in load_question_set(SETS / f"{n}.jsonl").items]
    assert len(kinds) >= 60
    assert set(kinds) == {"out_of_corpus", "false_presupposition", "underspecified", "nonsensical", "beyond_abstracts"}


def test_a_set_names_its_corpus_in_its_first_line(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "p", "title": "T", "abstract": "An abstract."}\n')
    path = tmp_path / "sets" / "over.jsonl"
    path.parent.mkdir()
    path.write_text('{"corpus": "../corpus.jsonl"}\n{"id": "q", "question": "q?", "gold": ["p"], "split": "report"}\n')
    loaded = load_question_set(path)
    assert loaded.corpus == str(corpus.resolve()) and [i.id for i in loaded.items] == ["q"]
    with pytest.raises(CorpusError, match="calibration split"):
        load_question_set(path, split="calibration")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q", "question": "q?", "gold": [], "kind": "rude"}\n')
    with pytest.raises(RecordError, match="bad.jsonl:1: unknown kind"):
        load_question_set(bad)
