"""The map of the corpus: clusters, places and names from vectors and texts (`rag.corpusmap`), and
the store's map, made once per generation and kept on disk (`Index.corpus_map`)."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

import rag.corpusmap as corpusmap
import rag.store
from rag.corpusmap import cluster_count, distinctive_terms, make_map
from rag.records import CorpusMap, Paper
from rag.store import Index

# Six topics, each with the words that set it apart; every abstract also has the filler.
TOPICS = [
    ("Kronecker", "tensor", "factorization"),
    ("bandit", "regret", "arms"),
    ("protein", "molecule", "docking"),
    ("robot", "grasping", "gripper"),
    ("diffusion", "denoising", "sampler"),
    ("federated", "clients", "privacy"),
]
FILLER = "We propose a method and report results that improve on prior work across benchmarks."


def topic_papers(per_topic: int, dimensions: int = 32) -> tuple[list[Paper], np.ndarray, list[int]]:
    """Papers on TOPICS, each topic's vectors close around a direction of its own; returns the
    papers, their vectors and each one's topic."""
    rng = np.random.default_rng(7)
    directions = np.linalg.qr(rng.standard_normal((dimensions, len(TOPICS))))[0].T
    papers, vectors, topics = [], [], []
    for topic, words in enumerate(TOPICS):
        for i in range(per_topic):
            papers.append(Paper(id=f"t{topic}-{i}", title=f"Paper {topic}.{i} on {words[0]}", abstract=f"{FILLER} {' '.join(words)}."))
            vectors.append(directions[topic] + 0.05 * rng.standard_normal(dimensions))
            topics.append(topic)
    return papers, np.array(vectors), topics


def topics_of(corpus_map: CorpusMap, topic: dict[str, int]) -> dict[int, set[int]]:
    """The topics of each cluster's papers."""
    found: dict[int, set[int]] = {}
    for paper_id, number in zip(corpus_map.paper_ids, corpus_map.cluster, strict=True):
        found.setdefault(number, set()).add(topic[paper_id])
    return found


def test_separated_topics_are_the_clusters_named_by_their_own_words():
    papers, vectors, topics = topic_papers(10)
    corpus_map = make_map(papers, vectors)
    topic = {p.id: t for p, t in zip(papers, topics, strict=True)}
    assert cluster_count(60) == len(TOPICS)
    # Each cluster is one topic, whole.
    assert sorted(tuple(t) for t in topics_of(corpus_map, topic).values()) == [(t,) for t in range(len(TOPICS))]
    assert [c.size for c in corpus_map.clusters] == [10] * len(TOPICS)
    for cluster in corpus_map.clusters:
        [members_topic] = topics_of(corpus_map, topic)[cluster.number]
        # Its own words, as the texts write them ("Kronecker"); never the filler every paper has.
        assert set(cluster.terms) == set(TOPICS[members_topic])
        assert cluster.question == f"Which papers work on {cluster.terms[0]} and {cluster.terms[1]}?"
        assert len(corpus_map.members(cluster.number)) == cluster.size


def test_the_same_papers_make_the_same_map():
    papers, vectors, _ = topic_papers(6)
    assert make_map(papers, vectors) == make_map(papers, vectors)


@pytest.mark.parametrize("placed", [1000, 25])
def test_each_paper_lands_nearer_its_own_clusters_label_than_any_other(monkeypatch, placed):
    # 25: t-SNE places a sample of the 72 papers and the others go among their nearest placed.
    monkeypatch.setattr(corpusmap, "_PLACED", placed)
    papers, vectors, _ = topic_papers(12)
    corpus_map = make_map(papers, vectors)
    centres = np.array([(c.x, c.y) for c in corpus_map.clusters])
    points = np.column_stack([corpus_map.x, corpus_map.y])
    nearest = np.argmin(((points[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
    assert [corpus_map.clusters[i].number for i in nearest] == list(corpus_map.cluster)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_a_corpus_of_a_few_papers_is_mapped_too(n):
    papers, vectors, _ = topic_papers(1)
    corpus_map = make_map(papers[:n], vectors[:n])
    assert sorted(corpus_map.paper_ids) == sorted(p.id for p in papers[:n])
    assert len(corpus_map.clusters) == cluster_count(n) == max(min(n // 2, 6), min(n, 1))
    assert sum(c.size for c in corpus_map.clusters) == n


def test_the_number_of_clusters_grows_with_the_corpus_and_stays_readable():
    counts = [cluster_count(n) for n in (20, 100, 1000, 5000, 13_687, 100_000)]
    assert counts == sorted(counts)
    assert counts[0] == 6 and counts[-2] == counts[-1] == 30


def test_names_are_words_as_written_once_per_stem_and_no_numbers_or_variables():
    texts = [
        "LLMs answer prompts. LLM prompting in 2024 with x_1.",
        "Prompting LLMs, an LLM survey of 2024 and x_1.",
        "Regret of bandit arms in 2024 with x_1.",
        "Bandit regret bounds in 2024 with x_1.",
    ]
    names = distinctive_terms(texts, np.array([1, 1, 2, 2]))
    assert names[2] == ("regret", "bandit")
    # "LLM" and "LLMs" are one name; the words keep the corpus's case.
    assert len({w.casefold().removesuffix("s") for w in names[1]}) == len(names[1])
    assert {w.casefold() for w in names[1]} <= {"llm", "llms", "prompting", "prompts", "answer", "survey"}
    assert "LLMs" in names[1] or "LLM" in names[1]


def test_a_word_in_one_paper_of_a_cluster_does_not_name_it():
    texts = ["graph neural nets, and quantum.", "graph neural nets.", "vision transformers.", "vision transformers."]
    names = distinctive_terms(texts, np.array([1, 1, 2, 2]))
    assert "quantum" not in names[1]


class TopicEmbeddings(Embeddings):
    """Each text's vector from the topic its words name: a model with no model."""

    def __init__(self) -> None:
        self.directions = np.eye(len(TOPICS), 16)

    def _vector(self, text: str) -> list[float]:
        hits = [t for t, words in enumerate(TOPICS) if words[1] in text]
        noise = np.random.default_rng(len(text)).standard_normal(16) * 0.05
        return (self.directions[hits[0]] + noise if hits else noise).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


@pytest.fixture
def topic_index(settings):
    index = Index(settings.model_copy(update={"sentence_vectors": False}), TopicEmbeddings())
    index.ingest(topic_papers(4)[0])
    return index


def test_a_papers_vector_is_the_mean_of_its_chunks(topic_index):
    long = Paper(id="long", title="Long", abstract=" ".join(f"Sentence {i} about robot grasping with a gripper." for i in range(80)))
    topic_index.ingest([long])
    chunks = topic_index._collection.get(where={"paper_id": "long"}, include=["embeddings"])["embeddings"]
    assert len(chunks) > 1
    ids, vectors = topic_index.paper_vectors(["long", "t0-0", "not indexed"])
    assert ids == ["long", "t0-0"]
    np.testing.assert_allclose(vectors[0], np.mean(chunks, axis=0), rtol=1e-5)
    every, _ = topic_index.paper_vectors()
    assert sorted(every) == sorted(topic_index.papers)


def maps_saved(index: Index) -> list:
    return sorted(index._local_folder("maps").glob("*"))


def test_the_map_is_made_once_per_generation_and_read_back_by_the_next_process(topic_index, monkeypatch):
    made = topic_index.corpus_map()
    assert len(made.paper_ids) == 24 and len(made.clusters) == 6
    [saved] = maps_saved(topic_index)
    assert topic_index.corpus_map() is made  # a rerun of the page: from memory

    # Another process (or the next run) reads the saved map and makes none.
    monkeypatch.setattr(rag.store, "make_map", lambda *a, **k: pytest.fail("made the map again"))
    reopened = Index(topic_index.settings, topic_index.embeddings)
    assert reopened.corpus_map() == made
    assert maps_saved(reopened) == [saved]


def test_an_ingest_or_a_removal_makes_the_map_again_and_drops_the_old_one(topic_index):
    before = topic_index.corpus_map()
    [old] = maps_saved(topic_index)
    topic_index.ingest([Paper(id="new", title="New", abstract="A robot with a new gripper.")])
    added = topic_index.corpus_map()
    assert "new" in added.paper_ids and "new" not in before.paper_ids
    assert old not in maps_saved(topic_index) and len(maps_saved(topic_index)) == 1

    topic_index.remove(["new", "t0-0"])
    removed = topic_index.corpus_map()
    assert not {"new", "t0-0"} & set(removed.paper_ids) and len(removed.paper_ids) == 23

    # Another process's ingest: this one sees it at its next refresh.
    other = Index(topic_index.settings, topic_index.embeddings)
    other.ingest([Paper(id="late", title="Late", abstract="Federated clients keep privacy.")])
    assert topic_index.refresh()
    assert "late" in topic_index.corpus_map().paper_ids


def test_a_damaged_map_file_is_made_again(topic_index):
    made = topic_index.corpus_map()
    [saved] = maps_saved(topic_index)
    saved.write_text('{"paper_ids": ["cut short"', encoding="utf-8")
    assert Index(topic_index.settings, topic_index.embeddings).corpus_map() == made


def test_an_empty_index_has_an_empty_map(settings):
    assert Index(settings, TopicEmbeddings()).corpus_map() == CorpusMap()
