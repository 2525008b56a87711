"""A 2-D map of the corpus: each paper placed by its embedding, the papers grouped into clusters
(or, in a small corpus that has them, its categories), each group named by the phrases that set
its papers apart and given a colour of its own (the app's Map page).

Pure: `make_map` takes the papers and their vectors and returns a `CorpusMap`. `Index.corpus_map`
reads them from the store and keeps the map of each store generation on disk, so a map is made
once per ingest. Every random choice is seeded: the same papers make the same map.

- Groups: k-means on the unit vectors, where Euclidean distance ranks as cosine similarity
  does. Their number grows as the square root of the corpus, from 6 to 30: thirty names are
  about as many as a chart shows legibly. A corpus of at most `_CATEGORY_CORPUS` papers, every
  one with a category, is grouped by its categories instead, at the finest level of their
  hierarchy ("Deep Learning · Attention Mechanisms") that makes no more groups than k-means
  would. On the 20 bundled papers (`make bench-map`, the groupings table) only 2 of k-means' 6
  clusters had a phrase their papers share to be named by, and the papers' vectors were nearest
  their own cluster's name for 5 of 20; the six areas ("Deep Learning", "Theory", ...) are all
  named, and 8 of 20 papers lie nearest their own area's name. k-means' groups are the tighter
  (silhouette 0.04 against -0.07), as k-means is made to be, but a reader reads the names.
- Places: PCA to 50 dimensions, then t-SNE into two, which keeps each paper near its neighbours.
  At the 13,687 papers of the scale corpus (`make bench-map`, two cores): t-SNE over every paper
  took 36 s, and kept 0.95 of their neighbours (sklearn's trustworthiness over 10); PCA alone
  0.1 s and 0.80, one blob where the clusters overlap. So past 3,000 papers t-SNE places a sample
  of 3,000 drawn from every cluster, and each other paper goes among the five nearest placed
  papers of its own cluster: 5 s, 0.91, and the clusters drawn apart (silhouette on the map 0.19
  against 0.04). A group's label goes on its medoid, the paper with the least distance to the
  others of its group: a median of the coordinates can fall between two lobes, with no paper there.
- Names (`distinctive_phrases`): c-TF-IDF over phrases, not words. A phrase is an author keyword
  or category (where the corpus has them; a paper whose text says the phrase uses it too) or two
  adjacent words of a title or abstract, neither a function word nor an abstract's boilerplate
  ("objective", "we propose", "results"): one word of an abstract seldom tells its topic ("gap",
  "multi"). A phrase weighs, in a group, the share of the group's papers that use it times how
  many times more that share is than outside the group (the log of it): frequent in this group,
  rare in the others. Each phrase names the group it sets apart most, and a name's phrases share
  no word, so that no two names read alike.
- Colours (`palette`): Tableau 10, then colours as far from those and each other as can be
  (CIELAB, lightness counted half, as small dots are told apart more by hue than lightness).
  Tableau 20's pairs (a dark and a light of each hue) were the near-identical colours.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from rag.index.maprecords import CorpusMap, MapCluster
from rag.markup import to_plain
from rag.records import Paper
from rag.text import STOP_WORDS, stem_words

__all__ = [
    "TABLEAU_10",
    "category_groups",
    "cluster_count",
    "colour_distance",
    "distinctive_phrases",
    "make_map",
    "medoid",
    "palette",
    "place",
]

Progress = Callable[[str], None]

_SEED = 0
_MIN_CLUSTERS, _MAX_CLUSTERS = 6, 30
# k = sqrt(papers / 15): clusters grow slower than the corpus, and reach 30 at 13,500 papers.
_CLUSTER_SCALE = 15
# A corpus up to this size is grouped by its categories where every paper has one: at 20 papers
# they are named where k-means' clusters of three papers mostly are not (module docstring). From
# about 100 papers on, six clusters have some 15 papers each, enough to share phrases; no
# categorised corpus between the two sizes was at hand to measure where the two cross.
_CATEGORY_CORPUS = 100
_CATEGORY_LEVELS = re.compile(r"\s+·\s+")
_PCA_DIMENSIONS = 50
# t-SNE places this many papers at most; the others go among their nearest placed neighbours.
_PLACED = 3000
_NEIGHBOURS = 5
_ITERATIONS = 500
_PHRASES = 3
# A medoid is looked for among this many of a group's papers (a seeded sample of a larger one).
_MEDOID_CANDIDATES = 1000

# "Code is at https://github.com/...": the address is no topic.
_ADDRESS = re.compile(r"\S+://\S+|www\.\S+")
# A phrase never runs across punctuation: "... graphs. Language ..." makes no "graphs language".
_CLAUSES = re.compile(r"[.,;:!?()\[\]{}\"“”‘’|/=<>+*]+|\s[-–—]+\s|\n")
_PHRASE_WORD = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
# "Large", "Fine-tuning", "Vision-Language": capitals a title or a sentence gives a word.
_CAPITALISED = re.compile(r"[A-Z][a-z]*(?:-[A-Za-z][a-z]*)*")
_PLURAL_ACRONYM = re.compile(r"[0-9A-Z][0-9A-Za-z]*[A-Z]s")
# Words that carry no topic: the grammar's, and the abstract's own way of speaking.
_FUNCTION_TEXT = """about above across after against all along also although among amongst any
    based because been before being below between both can could did do does doing done due
    each either else enables et al etc even ever every few for from further furthermore had has
    have having hence here how however i ie eg its itself just less like may me might more
    moreover most much must my neither nor now often only other others otherwise our ours out
    over own per rather same several she should since so some still than thus those though
    through throughout thereby therefore too toward towards under unlike until up upon us use
    used uses using very via was we well were what whether which while who whom whose why
    within without would yet you your one two three four five first second third"""
_FUNCTION_WORDS = STOP_WORDS | frozenset(_FUNCTION_TEXT.split())
_BOILERPLATE_TEXT = """objective objectives aim aims aimed gap gaps propose proposes proposed proposing present
    presents presented introduce introduces introduced paper papers work works study studies
    studied result results method methods methodology approach approaches novel new existing
    state-of-the-art state art experiment experiments experimental extensive demonstrate
    demonstrates demonstrated show shows shown showing performance perform performs outperform
    outperforms outperforming improve improves improved improving improvement improvements
    significant significantly effective effectively effectiveness problem problems task tasks
    framework frameworks challenge challenges challenging address addresses addressing issue
    issues recent recently various different key main important crucial critical specifically
    particular particularly superior compared comparison prior previous previously current
    currently conventional traditional standard typical typically benchmark benchmarks dataset
    datasets evaluate evaluated evaluation evaluations demonstrating achieve achieves achieved
    achieving effort efforts limitation limitations remains remain paradigm paradigms
    contribution contributions insight insights finding findings question questions
    term terms real-world real world wide range large-scale high-quality set sets number way
    ways lack often widely able allows allowing enable enabling leverage leverages leveraging
    utilize utilizes utilizing employ employs consider considers considered provide provides
    providing well-known yield yields obtain obtains obtained novelty
    promising great potential superiority robust robustness comprehensive simple simply
    strong strongly better best good high low efficient efficiently powerful fundamental
    general generally respectively addition additionally"""
_BOILERPLATE = frozenset(_BOILERPLATE_TEXT.split())


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


def _numbered(found: np.ndarray) -> np.ndarray:
    """The groups of `found` numbered from 1 by size, the largest first (ties by first label)."""
    labels, inverse, sizes = np.unique(found, return_inverse=True, return_counts=True)
    order = sorted(range(len(labels)), key=lambda g: (-sizes[g], g))
    number = np.zeros(len(labels), dtype=int)
    number[order] = np.arange(1, len(labels) + 1)
    return number[inverse]


def _clusters(vectors: np.ndarray, k: int) -> np.ndarray:
    """Each row's k-means cluster, numbered from 1 by size (the largest first). k-means leaves a
    cluster empty where there are fewer distinct papers than clusters: it has no number."""
    from sklearn.cluster import KMeans

    # One start: three found clusters 0.2% tighter (k-means' inertia) at 13,687 papers, in four
    # times the time.
    return _numbered(KMeans(k, n_init=1, random_state=_SEED).fit(vectors).labels_)


def category_groups(categories: Sequence[str], most: int) -> list[str] | None:
    """Each paper's group by its category, at the finest level of the categories' hierarchy
    ("Deep Learning · Attention Mechanisms", then "Deep Learning") that makes from two to `most`
    groups; None when a paper has no category or no level does."""
    if not categories or not all(c.strip() for c in categories):
        return None
    levels = [_CATEGORY_LEVELS.split(c.strip()) for c in categories]
    for depth in range(max(len(parts) for parts in levels), 0, -1):
        groups = [" · ".join(parts[:depth]) for parts in levels]
        if 2 <= len(set(groups)) <= most:
            return groups
    return None


def medoid(points: np.ndarray) -> int:
    """The row of `points` with the least total distance to the others: the group's centre that
    is one of its own points."""
    candidates = np.arange(len(points))
    if len(points) > _MEDOID_CANDIDATES:
        candidates = np.sort(np.random.default_rng(_SEED).choice(len(points), _MEDOID_CANDIDATES, replace=False))
    total = np.linalg.norm(points[candidates, None, :] - points[None, :, :], axis=2).sum(axis=1)
    return int(candidates[np.argmin(total)])


def _tokens(text: str) -> list[list[str]]:
    """The words of each clause of `text`, as written."""
    return [words for clause in _CLAUSES.split(_ADDRESS.sub(" . ", text)) if (words := _PHRASE_WORD.findall(clause))]


def _topical(word: str) -> bool:
    """Whether a word of a text can be half of a phrase that names a topic."""
    lower = word.casefold()
    return len(word) > 1 and not word.isdigit() and lower not in _FUNCTION_WORDS and lower not in _BOILERPLATE


def _is_name(word: str) -> bool:
    """An acronym or a coined name ("LLMs", "NeRF"): a one-word keyword that a text's saying
    counts as its use. An everyday keyword ("efficient", "control") would not, nor "3D"."""
    return any(c.isupper() or c.isdigit() for c in word[1:]) and sum(c.isalpha() for c in word) > 1


def _folded(word: str) -> str:
    """The word in lower case, an acronym's plural as its singular ("LLMs" as "llm"), which the
    stemmer keeps apart."""
    return word[:-1].casefold() if _PLURAL_ACRONYM.fullmatch(word) else word.casefold()


def _keyword_phrases(keywords: Sequence[str]) -> list[list[str]]:
    """The keywords or categories of a paper that can name a topic: of one to four words, not all
    of them function words or boilerplate ("Others")."""
    phrases = []
    for keyword in keywords:
        words = _PHRASE_WORD.findall(keyword)
        if 1 <= len(words) <= 4 and any(_topical(w) for w in words):
            phrases.append(words)
    return phrases


class _Phrases:
    """Which phrases each text uses: two topical words adjacent in a clause, an author's keyword
    the text has or says (a one-word one only if it is a name), its categories. A phrase is the
    stems of its words, so "language model" and "language models" are one. Found with arrays
    over the whole corpus's words: a loop over the 1.5 million words of 13,687 abstracts took
    some 15 s."""

    def __init__(self, texts: Sequence[str], keywords: Sequence[Sequence[str]], categories: Sequence[Sequence[str]]) -> None:
        written: list[str] = []
        starts: list[int] = []
        counts = np.zeros(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            for clause in _tokens(text):
                starts.append(len(written))
                written.extend(clause)
                counts[row] += len(clause)
        self.ids: dict[str, int] = {}
        word = np.array([self.ids.setdefault(w, len(self.ids)) for w in written], dtype=np.int64)
        self.written = written
        self.stem_ids: dict[str, int] = {}
        self.stem = self._stems(list(self.ids))[word] if written else word
        self.text = np.repeat(np.arange(len(texts)), counts)
        opens = np.zeros(len(written), dtype=bool)
        opens[starts] = True
        self.clause = np.cumsum(opens)
        # How often each word is written so within a clause: "Large" loses to "large".
        self.within = np.bincount(word[~opens], minlength=len(self.ids))
        topical = np.array([_topical(w) for w in self.ids], dtype=bool)[word] if written else opens

        own: list[tuple[int, tuple[int, ...]]] = []
        self.keyword_forms: dict[tuple[int, ...], Counter[str]] = {}
        self.authored: set[tuple[int, ...]] = set()
        names: set[int] = set()
        # A category is only the paper's own: IJCAI's "Machine Learning" is no author's choice of
        # topic, and said in a text it is no category.
        for source, authored in ((keywords, True), (categories, False)):
            for row, phrases in enumerate(source):
                for words in _keyword_phrases(phrases):
                    key = tuple(self._stems(words).tolist())
                    own.append((row, key))
                    self.keyword_forms.setdefault(key, Counter())[" ".join(words)] += 1
                    if authored:
                        self.authored.add(key)
                        if len(words) == 1 and _is_name(words[0]):
                            names.add(key[0])
        self.stem_names = list(self.stem_ids)
        size = len(self.stem_ids)

        # Two words: adjacent in a clause, both topical, or an author's two-word keyword.
        pair = np.flatnonzero(~opens[1:]) if len(word) > 1 else np.zeros(0, dtype=np.int64)
        code = self.stem[pair] * size + self.stem[pair + 1]
        authored_pairs = np.array([a * size + b for a, b in (k for k in self.authored if len(k) == 2)], dtype=np.int64)
        kept = (topical[pair] & topical[pair + 1]) | np.isin(code, authored_pairs)
        rows = [self.text[pair[kept]], np.array([r for r, k in own if len(k) == 2], dtype=np.int64)]
        codes = [code[kept], np.array([k[0] * size + k[1] for _, k in own if len(k) == 2], dtype=np.int64)]
        # Other lengths: a name the text says, a longer keyword whose words it has in a row.
        others: list[tuple[int, tuple[int, ...]]] = [(r, k) for r, k in own if len(k) != 2]
        said = np.flatnonzero(np.isin(self.stem, list(names)))
        others.extend(zip(self.text[said].tolist(), ((s,) for s in self.stem[said].tolist()), strict=True))
        longer = {k for k in self.authored if len(k) > 2}
        openings = np.array(sorted({k[0] * size + k[1] for k in longer}), dtype=np.int64)
        for i in pair[np.isin(code, openings)].tolist():
            for n in (3, 4):
                key = tuple(self.stem[i : i + n].tolist())
                if key in longer and self.clause[i] == self.clause[min(i + n, len(word)) - 1]:
                    others.append((int(self.text[i]), key))
        other_keys = sorted({k for _, k in others})
        pair_codes, pair_column = np.unique(np.concatenate(codes), return_inverse=True)
        other_column = {k: len(pair_codes) + j for j, k in enumerate(other_keys)}
        self.keys: list[tuple[int, ...]] = [(int(c) // size, int(c) % size) for c in pair_codes] + other_keys
        self.rows = np.concatenate([*rows, np.array([r for r, _ in others], dtype=np.int64)])
        self.columns = np.concatenate([pair_column.ravel(), np.array([other_column[k] for _, k in others], dtype=np.int64)])

    def _stems(self, words: Sequence[str]) -> np.ndarray:
        """The ids of the words' stems, new stems given new ids."""
        stems = stem_words([_folded(w) for w in words]) if words else []
        return np.array([self.stem_ids.setdefault(s, len(self.stem_ids)) for s in stems], dtype=np.int64)

    def signature(self, key: tuple[int, ...]) -> set[str]:
        """What two phrases of one name must not share: a word's stem, or an acronym and the
        words it abbreviates ("LLMs" and "large language model")."""
        stems = [self.stem_names[s] for s in key]
        parts = [part for stem in stems for part in stem.split("-") if part]
        return {*stems, "".join(p[0] for p in parts)} if len(parts) > 1 else set(stems)

    def show(self, key: tuple[int, ...]) -> str:
        """The phrase as written most often, whatever its case, an author's keyword counting as
        three times a text's saying it (a chosen name against a sentence's grammar: "robotic
        grasping" over "robots grasp") and a form at a clause's start as a hundredth (a first
        word's capital, "Language models are ...")."""
        forms = self._written(key)
        for form, count in self.keyword_forms.get(key, Counter()).items():
            forms[form] += 300 * count
        folded: Counter[str] = Counter()
        for form, count in forms.items():
            folded[form.casefold()] += count
        best = folded.most_common(1)[0][0]
        written = max((form for form in forms if form.casefold() == best), key=forms.__getitem__)
        return " ".join(map(self._cased, written.split()))

    def _written(self, key: tuple[int, ...]) -> Counter[str]:
        """How the texts write the phrase: each form, how often (in hundredths)."""
        n = len(key)
        at = np.flatnonzero(self.stem == key[0])
        at = at[at + n <= len(self.stem)]
        for offset in range(1, n):
            at = at[self.stem[at + offset] == key[offset]]
        # In hundredths: a form at a clause's start weighs one.
        forms: Counter[str] = Counter()
        for i in at[self.clause[at] == self.clause[at + n - 1]].tolist():
            forms[" ".join(self.written[i : i + n])] += 100 if i and self.clause[i - 1] == self.clause[i] else 1
        return forms

    def _cased(self, word: str) -> str:
        """A capitalised word in lower case where the texts write it so as often: a title's or an
        acronym's expansion's capitals ("Large Language Models (LLMs)") are not the word's own,
        a name's are ("Gaussian")."""
        lower = word.casefold()
        if _CAPITALISED.fullmatch(word) and self._within(lower) > 0 and 4 * self._within(lower) >= self._within(word):
            return lower
        return word

    def _within(self, word: str) -> int:
        return int(self.within[self.ids[word]]) if word in self.ids else 0


def distinctive_phrases(
    texts: Sequence[str],
    groups: np.ndarray,
    keywords: Sequence[Sequence[str]] | None = None,
    categories: Sequence[Sequence[str]] | None = None,
    *,
    n: int = _PHRASES,
) -> dict[int, tuple[str, ...]]:
    """For each group of `groups` (each text's), up to `n` phrases that set its texts apart, the
    most distinctive first. `keywords` are each text's author keywords, `categories` its
    categories (each level of one).

    A phrase must be in two of the group's texts (or its only one), and in a larger share of
    them than of the other texts: a name is about the group, not one paper of it. A phrase names
    only the group it sets apart most, and no two phrases of a name share a word."""
    from scipy.sparse import coo_matrix

    labels, group = np.unique(groups, return_inverse=True)
    none = [()] * len(texts)
    phrases = _Phrases(texts, none if keywords is None else keywords, none if categories is None else categories)
    if not phrases.keys:
        return {int(label): () for label in labels}
    shape = (len(texts), len(phrases.keys))
    # Whether each text uses each phrase (once however often it says it).
    used = coo_matrix((np.ones(len(phrases.rows), dtype=np.float32), (phrases.rows, phrases.columns)), shape=shape).tocsr()
    used.data[:] = 1
    members = coo_matrix(
        (np.ones(len(texts), dtype=np.float32), (group.ravel(), np.arange(len(texts)))), shape=(len(labels), len(texts))
    )
    uses = (members.tocsr() @ used).toarray()  # how many of each group's texts use each phrase
    sizes = np.bincount(group.ravel(), minlength=len(labels)).astype(float)
    share_in = uses / sizes[:, None]
    # Smoothed, so that a phrase no other text uses counts as in half of one.
    share_out = (uses.sum(axis=0)[None, :] - uses + 0.5) / (len(texts) - sizes[:, None] + 1)
    with np.errstate(divide="ignore"):
        weight = np.where(uses > 0, share_in * np.log(np.maximum(share_in, 1e-12) / share_out), 0)
    weight[(uses < np.minimum(sizes, 2)[:, None]) | (share_in <= share_out)] = 0
    # An author's keyword is a topic by choice; two words that meet in a text, by chance.
    weight[:, [j for j, key in enumerate(phrases.keys) if key in phrases.authored]] *= 1.5
    # Each phrase names the group it sets apart most.
    weight[weight < weight.max(axis=0, keepdims=True)] = 0
    # Round by round, each group (the largest first) takes its best phrase that shares no word
    # with its name so far; a word of another group's name halves a phrase's weight, so that
    # names differ in more than one word where the groups allow it.
    chosen: list[list[tuple[int, ...]]] = [[] for _ in labels]
    taken: list[set[str]] = [set() for _ in labels]
    ranked = [
        [j for j in np.argsort(-weight[i], kind="stable")[: 20 * n].tolist() if weight[i, j] > 0] for i in range(len(labels))
    ]
    for _ in range(n):
        for i in range(len(labels)):
            elsewhere = Counter(word for other, words in enumerate(taken) if other != i for word in words)
            options = [
                j for j in ranked[i] if not phrases.signature(phrases.keys[j]) & taken[i] and phrases.keys[j] not in chosen[i]
            ]
            if options:
                best = max(
                    options, key=lambda j: weight[i, j] / 2 ** sum(elsewhere[w] > 0 for w in phrases.signature(phrases.keys[j]))
                )
                chosen[i].append(phrases.keys[best])
                taken[i] |= phrases.signature(phrases.keys[best])
    return {label: tuple(phrases.show(key) for key in keys) for label, keys in zip(labels.tolist(), chosen, strict=True)}


def _lab(colours: Sequence[str]) -> np.ndarray:
    """CIELAB (D65) of "#rrggbb" colours."""
    rgb = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in colours]) / 255
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = linear @ to_xyz.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.column_stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])])


def colour_distance(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """How far apart each colour of `a` is from each of `b`, as dots on a map: CIELAB distance
    with lightness counted half."""
    difference = _lab(a)[:, None, :] - _lab(b)[None, :, :]
    difference[..., 0] /= 2
    return np.sqrt((difference**2).sum(axis=2))


TABLEAU_10 = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")


@lru_cache(maxsize=1)
def _palette() -> tuple[str, ...]:
    """Tableau 10, then each next colour the farthest from all before it, among colours of middle
    lightness (dots on white) and moderate chroma (no neon), to `_MAX_CLUSTERS` colours."""
    steps = np.arange(0, 256, 15)
    grid = [f"#{r:02x}{g:02x}{b:02x}" for r in steps for g in steps for b in steps]
    lab = _lab(grid)
    usable = (lab[:, 0] >= 35) & (lab[:, 0] <= 80) & (np.hypot(lab[:, 1], lab[:, 2]) <= 60)
    chosen = list(TABLEAU_10)
    nearest = colour_distance(grid, chosen).min(axis=1)
    while len(chosen) < _MAX_CLUSTERS:
        best = int(np.argmax(np.where(usable, nearest, -1)))
        chosen.append(grid[best])
        nearest = np.minimum(nearest, colour_distance(grid, [grid[best]])[:, 0])
    return tuple(chosen)


def palette(n: int) -> tuple[str, ...]:
    """`n` colours ("#rrggbb") that no reader takes for each other, the most distinct first."""
    colours = _palette()
    return tuple(colours[i % len(colours)] for i in range(n))


def make_map(papers: Sequence[Paper], vectors: np.ndarray, *, threads: int = 1, progress: Progress | None = None) -> CorpusMap:
    """The map of `papers`, whose embeddings are the rows of `vectors`."""
    if not papers:
        return CorpusMap()
    unit = np.asarray(vectors, dtype=np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    say = progress or (lambda _: None)
    k = cluster_count(len(papers))
    categories = category_groups([p.category for p in papers], k) if len(papers) <= _CATEGORY_CORPUS else None
    say(f"Grouping {len(papers):,} papers " + ("by their categories" if categories else "into clusters"))
    group = _numbered(np.array(categories)) if categories else _clusters(unit, k)
    say("Placing them on the map")
    # Rounded: a map is read by eye, and the saved file then holds five characters a number.
    xy = np.round(place(unit, group, threads=threads), 2)
    say("Naming the groups")
    numbers = sorted(set(group.tolist()))
    names: dict[int, tuple[str, ...]]
    if categories:
        names = {number: (categories[int(np.flatnonzero(group == number)[0])],) for number in numbers}
    else:
        names = distinctive_phrases(
            # In plain text: "$\\mathbf{x}$" names no topic, "mathbf" would.
            [f"{p.display_title}\n{to_plain(p.abstract)}" for p in papers],
            group,
            keywords=[p.extra.get("keywords", "").split(",") for p in papers],
            categories=[_CATEGORY_LEVELS.split(p.category) for p in papers],
        )
    colours = palette(len(numbers))
    clusters = []
    for number, colour in zip(numbers, colours, strict=True):
        rows = np.flatnonzero(group == number)
        x, y = xy[rows[medoid(xy[rows])]]
        clusters.append(MapCluster(number=number, terms=names[number], size=len(rows), x=x, y=y, colour=colour))
    # Within a group, the papers nearest its centre (the mean of its unit vectors) first.
    centres = np.stack([unit[group == number].mean(axis=0) for number in numbers])
    distance = np.linalg.norm(unit - centres[np.searchsorted(numbers, group)], axis=1)
    order = np.lexsort((distance, group))
    return CorpusMap(
        paper_ids=tuple(papers[i].id for i in order),
        titles=tuple(papers[i].display_title for i in order),
        x=tuple(xy[order, 0].tolist()),
        y=tuple(xy[order, 1].tolist()),
        cluster=tuple(group[order].tolist()),
        clusters=tuple(clusters),
        by_category=bool(categories),
    )
