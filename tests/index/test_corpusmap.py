"""The map of the corpus: clusters, places and names from vectors and texts (`rag.index.corpusmap`), and
the store's map, made once per generation and kept on disk (`Index.corpus_map`)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import shared_file
from langchain_core.embeddings import Embeddings

import rag.index.corpusmap as corpusmap
import rag.index.store
from rag.index.corpusmap import (
    TABLEAU_10,
    category_groups,
    cluster_count,
    colour_distance,
    distinctive_phrases,
    make_map,
    medoid,
    palette,
)
from rag.index.maprecords import CorpusMap
from rag.index.store import Index
from rag.records import Paper

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
            papers.append(
                Paper(id=f"t{topic}-{i}", title=f"Paper {topic}.{i} on {words[0]}", abstract=f"{FILLER} {' '.join(words)}.")
            )
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
    assert cluster_count(60) == len(TOPICS) and not corpus_map.by_category
    # Each cluster is one topic, whole.
    assert sorted(tuple(t) for t in topics_of(corpus_map, topic).values()) == [(t,) for t in range(len(TOPICS))]
    assert [c.size for c in corpus_map.clusters] == [10] * len(TOPICS)
    for cluster in corpus_map.clusters:
        [members_topic] = topics_of(corpus_map, topic)[cluster.number]
        # A phrase of its own words, as the texts write them ("Kronecker tensor"); never the
        # filler every paper has.
        assert cluster.terms and {w for term in cluster.terms for w in term.split()} <= set(TOPICS[members_topic])
        assert cluster.name == cluster.terms[0]
        assert cluster.question == f"Which papers work on {' and '.join(cluster.terms[:2])}?"
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


def test_names_are_phrases_as_written_once_per_stem_never_boilerplate():
    texts = [
        "Objective: we propose a method. Large language models answer prompts; results improve.",
        "The aims of this paper: a large language model survey, and results.",
        "Regret bounds for linear bandits. Our method closes the gap.",
        "Linear bandit regret bounds; the results fill a gap.",
    ]
    names = distinctive_phrases(texts, np.array([1, 1, 2, 2]))
    # "language model(s)", one phrase, as the texts write it most often within a sentence.
    assert names[1] == ("large language",) or "language models" in names[1] or "large language model" in names[1]
    assert set(names[2]) == {"regret bounds", "linear bandits"}
    said = {w.casefold() for name in names.values() for phrase in name for w in phrase.split()}
    assert not said & {"objective", "aims", "gap", "propose", "paper", "results", "method"}


def test_an_author_keyword_names_its_group_and_an_acronym_does_not_repeat_its_words():
    texts = [
        "LLMs reason. Large language models plan with tools.",
        "We study LLMs and tool planning with large language models.",
        "Robots grasp objects with suction grippers.",
        "Suction grippers let robots grasp objects.",
    ]
    keywords = [["LLMs", "tool use"], ["LLMs"], ["robotic grasping"], ["robotic grasping", "suction"]]
    names = distinctive_phrases(texts, np.array([1, 1, 2, 2]), keywords)
    assert names[1][0] == "LLMs" and "large language models" not in names[1]  # its own acronym
    assert names[2][0] == "robotic grasping"
    # Where no phrase of the texts sets a group apart, its categories do; a category a text
    # says is not the text's category ("vision" in the third).
    texts = [FILLER, FILLER, f"{FILLER} Computer vision.", FILLER]
    categories = [["Computer Vision"], ["Computer Vision"], ["Robotics"], ["Robotics"]]
    named = distinctive_phrases(texts, np.array([1, 1, 2, 2]), categories=categories)
    assert named[2] == ("Robotics",)
    assert [n.casefold() for n in named[1]] == ["computer vision"]  # "vision" as the texts write it


def test_a_phrase_in_one_paper_of_a_cluster_does_not_name_it():
    texts = ["graph neural nets, and quantum circuits.", "graph neural nets.", "vision transformers.", "vision transformers."]
    names = distinctive_phrases(texts, np.array([1, 1, 2, 2]))
    assert names[1] == ("graph neural",) or names[1][0] in {"graph neural", "neural nets"}
    assert "quantum circuits" not in names[1] and names[2] == ("vision transformers",)


def test_categories_group_a_small_corpus_at_the_level_that_makes_few_enough_groups():
    categories = ["Theory · Bandits", "Theory · Learning Theory", "Deep Learning · LLMs", "Deep Learning · LLMs", "Optimization"]
    assert category_groups(categories, 6) == categories
    assert category_groups(categories, 3) == ["Theory", "Theory", "Deep Learning", "Deep Learning", "Optimization"]
    assert category_groups(categories, 2) is None  # no level makes two groups or fewer
    assert category_groups([*categories[:4], ""], 6) is None  # a paper with none
    assert category_groups(["Optimization"] * 4, 6) is None  # one group is no grouping


def categorised(n: int) -> tuple[list[Paper], np.ndarray]:
    papers, vectors, topics = topic_papers(n)
    areas = [
        "Algebra · Tensors",
        "Theory · Bandits",
        "Science · Molecules",
        "Robotics · Grasping",
        "Deep Learning · Diffusion",
        "Theory · Privacy",
    ]
    return [p.model_copy(update={"category": areas[t]}) for p, t in zip(papers, topics, strict=True)], vectors


def test_a_small_corpus_with_categories_is_grouped_by_them_and_a_large_one_by_clusters():
    papers, vectors = categorised(3)  # 18 papers: six categories, five areas
    small = make_map(papers, vectors)
    assert small.by_category
    assert sorted(c.terms for c in small.clusters) == sorted((a,) for a in {p.category for p in papers})
    category = {p.id: p.category for p in papers}
    for cluster in small.clusters:
        assert {category[pid] for pid, _ in small.members(cluster.number)} == {cluster.terms[0]}
    papers, vectors = categorised(20)  # 120 papers
    assert not make_map(papers, vectors).by_category
    papers, vectors = categorised(3)
    uncategorised = [papers[0].model_copy(update={"category": ""}), *papers[1:]]
    assert not make_map(uncategorised, vectors).by_category


def test_each_clusters_label_sits_on_one_of_its_papers_at_its_medoid():
    papers, vectors = categorised(4)
    for corpus_map in (make_map(papers, vectors), make_map([p.model_copy(update={"category": ""}) for p in papers], vectors)):
        points = np.column_stack([corpus_map.x, corpus_map.y])
        number = np.array(corpus_map.cluster)
        for cluster in corpus_map.clusters:
            own = points[number == cluster.number]
            # On one of its own points (a group by category may lie in several places: a
            # median of its points could land where it has none)...
            assert np.min(np.linalg.norm(own - [cluster.x, cluster.y], axis=1)) == 0
            # ...the one nearest all the others.
            totals = np.linalg.norm(own[:, None] - own[None], axis=2).sum(axis=1)
            assert np.isclose(np.linalg.norm(own - [cluster.x, cluster.y], axis=1) @ np.ones(len(own)), totals.min())


def test_a_medoid_is_a_point_amid_the_others_not_the_empty_middle():
    # Two lobes: the median of each axis falls between them, on no point.
    points = np.array([[0, 0], [0, 1], [1, 0], [10, 0], [10, 1], [11, 0]], dtype=float)
    assert list(np.median(points, axis=0)) == [5.5, 0]
    assert medoid(points) == 2  # (1, 0): of the first lobe, the nearest the second


def test_the_palette_has_no_two_colours_alike_where_tableau_20_has_pairs():
    tableau_20 = ["#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f", "#8cd17d", "#b6992d", "#f1ce63", "#499894", "#86bcb6"]
    tableau_20 += ["#e15759", "#ff9d9a", "#79706e", "#bab0ac", "#d37295", "#fabfd2", "#b07aa1", "#d4a6c8", "#9d7660", "#d7b5a6"]

    def closest(colours):
        distance = colour_distance(colours, colours)
        np.fill_diagonal(distance, np.inf)
        return distance.min()

    colours = palette(30)
    assert colours[:10] == TABLEAU_10 and len(set(colours)) == 30
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours)
    # Tableau 20's light and dark blue are 9 apart; no two of these are nearer than Tableau
    # 10's brown and grey, 20.
    assert closest(tableau_20) < 10 and closest(colours) >= 20


def test_the_clusters_of_a_map_have_colours_of_their_own():
    papers, vectors, _ = topic_papers(10)
    corpus_map = make_map(papers, vectors)
    assert [c.colour for c in corpus_map.clusters] == list(palette(len(corpus_map.clusters)))


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
    long = Paper(
        id="long", title="Long", abstract=" ".join(f"Sentence {i} about robot grasping with a gripper." for i in range(80))
    )
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
    monkeypatch.setattr(rag.index.store, "make_map", lambda *a, **k: pytest.fail("made the map again"))
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


BOILERPLATE = {"objective", "aims", "gap", "propose", "proposed", "paper", "results", "method", "approach", "novel", "work"}


@pytest.fixture(scope="module")
def scale_sample():
    """2,000 papers of the scale corpus (seeded), grouped as the map groups them, by k-means on
    vectors of their words (TF-IDF, then LSA to 100 dimensions): the model would take minutes
    to embed them, and the names are what is tested."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    from rag.corpus.reading import load_corpus
    from rag.markup import to_plain

    every = load_corpus(shared_file("data/scale_corpus.jsonl.gz")).papers
    papers = [every[i] for i in sorted(np.random.default_rng(0).choice(len(every), 2000, replace=False))]
    texts = [f"{p.display_title}\n{to_plain(p.abstract)}" for p in papers]
    vectors = TruncatedSVD(100, random_state=0).fit_transform(
        TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=2).fit_transform(texts)
    )
    groups = corpusmap._clusters(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), cluster_count(len(papers)))
    keywords = [p.extra.get("keywords", "").split(",") for p in papers]
    categories = [[p.category] for p in papers]
    return papers, texts, groups, distinctive_phrases(texts, groups, keywords, categories)


@pytest.mark.slow
def test_a_reader_tells_the_scale_corpus_clusters_apart_by_their_names(scale_sample):
    papers, texts, groups, names = scale_sample
    assert len(names) == cluster_count(2000) == 12
    assert all(len(name) == 3 for name in names.values()), "every cluster has three phrases"
    labels = [", ".join(name) for name in names.values()]
    assert len(set(labels)) == len(labels)
    phrases = [phrase.casefold() for name in names.values() for phrase in name]
    assert len(set(phrases)) == len(phrases), "a phrase names one cluster"

    def words(name: tuple[str, ...]) -> set[str]:
        return {w.casefold().removesuffix("s") for phrase in name for w in re.split(r"[\s-]+", phrase)}

    # None is an abstract's boilerplate, and no two names share much: at most a word ("learning").
    assert not set().union(*map(words, names.values())) & {w.removesuffix("s") for w in BOILERPLATE}
    for a in names:
        for b in names:
            if a < b:
                assert len(words(names[a]) & words(names[b])) <= 1, (names[a], names[b])
    # Each phrase is said (or is a keyword or category) in at least twice as large a share of its
    # cluster's papers as of the others'.
    searched = [f"{t}\n{p.extra.get('keywords', '')}\n{p.category}".casefold() for p, t in zip(papers, texts, strict=True)]
    for number, name in names.items():
        inside = groups == number
        for phrase in name:
            # Each word as written or with another ending: "language model" says "language models".
            pattern = re.compile(
                r"\b" + r"\W+".join(re.escape(w[:-1] if len(w) > 3 else w) + r"\w*" for w in phrase.casefold().split())
            )
            says = np.array([bool(pattern.search(t)) for t in searched])
            assert says[inside].mean() > 2 * says[~inside].mean(), (number, phrase)
