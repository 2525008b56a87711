"""A 2-D map of the corpus: each paper placed by its embedding, the papers grouped into clusters,
each cluster named by the words that set its papers apart (the app's Map page).

Pure: `make_map` takes the papers and their vectors and returns a `CorpusMap`. `Index.corpus_map`
reads them from the store and keeps the map of each store generation on disk, so a map is made
once per ingest. Every random choice is seeded: the same papers make the same map.

- Clusters: k-means on the unit vectors, where Euclidean distance ranks as cosine similarity
  does. Their number grows as the square root of the corpus, from 6 to 30: thirty two-word
  labels are about as many as a chart shows legibly.
- Places: PCA to 50 dimensions, then t-SNE into two, which keeps each paper near its neighbours.
  At the 13,687 papers of the scale corpus (`make bench-map`, two cores): t-SNE over every paper
  took 36 s, and kept 0.95 of their neighbours (sklearn's trustworthiness over 10); PCA alone
  0.1 s and 0.80, one blob where the clusters overlap. So past 3,000 papers t-SNE places a sample
  of 3,000 drawn from every cluster, and each other paper goes among the five nearest placed
  papers of its own cluster: 5 s, 0.91, and the clusters drawn apart (silhouette on the map 0.19
  against 0.04).
- Names: c-TF-IDF over papers. A term weighs, in a cluster, the share of the cluster's papers
  that use it times its inverse document frequency in the corpus: common in the cluster, rare
  elsewhere; then as question analysis weighs words, so that an everyday word ("recent") does
  not name a topic. Terms are the BM25 index's (stop words out, stemmed), each shown as the word
  the corpus writes most often for it. In a corpus of a few dozen papers every cluster is a mix
  and its names are the words its papers happen to share.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from rag.answering.question import CorpusProfile, corpus_termhood, english_specificity, is_entity
from rag.markup import to_plain
from rag.records import CorpusMap, MapCluster, Paper
from rag.text import term_words

__all__ = ["cluster_count", "distinctive_terms", "make_map", "place"]

Progress = Callable[[str], None]

_SEED = 0
_MIN_CLUSTERS, _MAX_CLUSTERS = 6, 30
# k = sqrt(papers / 15): clusters grow slower than the corpus, and reach 30 at 13,500 papers.
_CLUSTER_SCALE = 15
_PCA_DIMENSIONS = 50
# t-SNE places this many papers at most; the others go among their nearest placed neighbours.
_PLACED = 3000
_NEIGHBOURS = 5
_ITERATIONS = 500
_TERMS = 3
# A cluster's best terms by c-TF-IDF alone, among which its names are chosen.
_CANDIDATES = 40


# What can name a topic: ASCII letters, maybe after or among digits ("3D", "GPT4").
_WORD = re.compile(r"[0-9]*[A-Za-z][A-Za-z0-9]*")
# "Code is at https://github.com/...": the address is no topic either.
_ADDRESS = re.compile(r"\S+://\S+|www\.\S+")


def cluster_count(papers: int) -> int:
    """How many clusters a corpus of `papers` is split into: at least two papers each."""
    if papers < 2:
        return papers
    wanted = round(np.sqrt(papers / _CLUSTER_SCALE))
    return min(int(np.clip(wanted, _MIN_CLUSTERS, _MAX_CLUSTERS)), papers // 2)


def _sample(groups: np.ndarray) -> np.ndarray:
    """The rows t-SNE places: all of a small corpus; of a large one about `_PLACED`, drawn from
    each cluster in proportion to its size, and enough of each that its other papers have
    `_NEIGHBOURS` of their own cluster to go among."""
    if len(groups) <= _PLACED:
        return np.arange(len(groups))
    rng = np.random.default_rng(_SEED)
    drawn = []
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        share = max(min(len(rows), _NEIGHBOURS), round(_PLACED * len(rows) / len(groups)))
        drawn.append(rng.choice(rows, share, replace=False))
    return np.sort(np.concatenate(drawn))


def place(vectors: np.ndarray, groups: np.ndarray, *, threads: int = 1) -> np.ndarray:
    """Each row's (x, y) on the map: near rows land near each other, and a row that t-SNE does
    not place (in a large corpus) lands among the nearest placed rows of its group."""
    n = len(vectors)
    if n < 2:  # t-SNE needs two points; a lone paper sits in the middle
        return np.zeros((n, 2))
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    reduced = PCA(min(_PCA_DIMENSIONS, *vectors.shape), random_state=_SEED).fit_transform(vectors)
    placed = _sample(groups)
    # Perplexity is about how many neighbours each point keeps near; t-SNE wants it under a
    # third of the points. 500 iterations: 1,000 (sklearn's default) took twice the time for
    # the same trustworthiness at 13,687 papers.
    tsne = TSNE(
        2, perplexity=min(30.0, (len(placed) - 1) / 3), init="pca", max_iter=_ITERATIONS, random_state=_SEED, n_jobs=threads
    )
    coordinates = np.zeros((n, 2))
    coordinates[placed] = tsne.fit_transform(reduced[placed])
    is_placed = np.zeros(n, dtype=bool)
    is_placed[placed] = True
    from sklearn.neighbors import NearestNeighbors

    for group in np.unique(groups[~is_placed]):
        # Among its own group's: the nearest placed papers of other clusters would pull a paper
        # into the space between the clusters.
        anchors = np.flatnonzero(is_placed & (groups == group))
        rest = np.flatnonzero(~is_placed & (groups == group))
        distance, nearest = NearestNeighbors(n_neighbors=_NEIGHBOURS).fit(reduced[anchors]).kneighbors(reduced[rest])
        # The nearer a placed paper, the more it pulls; a paper equal to one lands on it.
        weight = 1 / (distance + 1e-6)
        coordinates[rest] = np.einsum("rk,rkd->rd", weight, coordinates[anchors][nearest]) / weight.sum(axis=1, keepdims=True)
    return coordinates


def _clusters(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cluster, numbered from 1 by size (the largest first), and its distance to the
    cluster's centre."""
    from sklearn.cluster import KMeans

    # One start: three found clusters 0.2% tighter (k-means' inertia) at 13,687 papers, in four
    # times the time.
    kmeans = KMeans(k, n_init=1, random_state=_SEED).fit(vectors)
    found = kmeans.labels_
    # k-means leaves a cluster empty where there are fewer distinct papers than clusters: it goes.
    sizes = np.bincount(found, minlength=k)
    order = sorted((c for c in range(k) if sizes[c]), key=lambda c: (-sizes[c], c))
    number = np.zeros(k, dtype=int)
    number[order] = np.arange(1, len(order) + 1)
    distance = kmeans.transform(vectors)[np.arange(len(vectors)), found]
    return number[found], distance


def distinctive_terms(texts: Sequence[str], clusters: np.ndarray, *, n: int = _TERMS) -> dict[int, tuple[str, ...]]:
    """For each cluster of `clusters` (each text's), up to `n` words that set its texts apart,
    the most distinctive first. A word must be in two of the cluster's texts (or its only one):
    a name is about the cluster, not one paper of it."""
    vocabulary: dict[str, int] = {}
    forms: Counter[tuple[str, str]] = Counter()  # (term, word as written): how often
    rows: list[int] = []
    columns: list[int] = []
    for row, text in enumerate(texts):
        pairs = term_words(_ADDRESS.sub(" ", text))
        forms.update(pairs)
        distinct = {vocabulary.setdefault(term, len(vocabulary)) for term, _ in pairs}
        rows.extend([row] * len(distinct))
        columns.extend(distinct)
    labels, group = np.unique(clusters, return_inverse=True)
    # How many of each cluster's texts use each term.
    uses = np.zeros((len(labels), len(vocabulary)))
    np.add.at(uses, (group[np.array(rows, dtype=int)], np.array(columns, dtype=int)), 1)
    sizes = np.bincount(group, minlength=len(labels))
    papers_using = uses.sum(axis=0)
    weight = uses / sizes[:, None] * np.log(len(texts) / np.maximum(papers_using, 1))
    weight[uses < np.minimum(sizes, 2)[:, None]] = 0
    terms = list(vocabulary)
    written: dict[str, tuple[int, str]] = {}
    for (term, word), count in forms.items():
        written[term] = max(written.get(term, (0, "")), (count, word))
    # A number ("2024"), a variable ("x_1", "𝐀x") or a formula's word is no topic.
    weight[:, [i for i, t in enumerate(terms) if not _WORD.fullmatch(written[t][1])]] = 0
    profile = CorpusProfile(papers=len(texts), document_frequency=dict(zip(terms, papers_using.tolist(), strict=True)))

    def specificity(term: str) -> float:
        # As question analysis weighs a word: "how" or "recent" tells no topic however unevenly
        # the clusters use it; a name ("LoRA") or a field's own word ("attention") does.
        word = written[term][1]
        return 1.0 if is_entity(word) else max(english_specificity(word), corpus_termhood(word, (term,), profile))

    named = {}
    for i, label in enumerate(labels.tolist()):
        candidates = [j for j in np.argsort(-weight[i], kind="stable")[:_CANDIDATES] if weight[i, j] > 0]
        words: dict[str, str] = {}
        for j in sorted(candidates, key=lambda j: -weight[i, j] * specificity(terms[j])):
            # The stemmer keeps "LLM" and "LLMs" apart: the first of them names the cluster.
            words.setdefault(written[terms[j]][1].casefold().removesuffix("s"), written[terms[j]][1])
        named[label] = tuple(words.values())[:n]
    return named


def make_map(papers: Sequence[Paper], vectors: np.ndarray, *, threads: int = 1, progress: Progress | None = None) -> CorpusMap:
    """The map of `papers`, whose embeddings are the rows of `vectors`."""
    if not papers:
        return CorpusMap()
    unit = np.asarray(vectors, dtype=np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    say = progress or (lambda _: None)
    say(f"Grouping {len(papers):,} papers into clusters")
    cluster, distance = _clusters(unit, cluster_count(len(papers)))
    say("Placing them on the map")
    xy = place(unit, cluster, threads=threads)
    say("Naming the clusters")
    # In plain text: "$\\mathbf{x}$" names no topic, "mathbf" would.
    terms = distinctive_terms([f"{p.display_title}\n{to_plain(p.abstract)}" for p in papers], cluster)
    clusters = tuple(
        MapCluster(
            number=c,
            terms=terms[c],
            size=int((cluster == c).sum()),
            x=float(np.median(xy[cluster == c, 0])),
            y=float(np.median(xy[cluster == c, 1])),
        )
        for c in sorted(terms)
    )
    order = np.lexsort((distance, cluster))  # by cluster, then the nearest its centre first
    return CorpusMap(
        paper_ids=tuple(papers[i].id for i in order),
        titles=tuple(papers[i].display_title for i in order),
        # Rounded: a map is read by eye, and the saved file then holds five characters a number.
        x=tuple(np.round(xy[order, 0], 2).tolist()),
        y=tuple(np.round(xy[order, 1], 2).tolist()),
        cluster=tuple(cluster[order].tolist()),
        clusters=clusters,
    )
