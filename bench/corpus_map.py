"""The map of the corpus (the app's Map page) at 20 and at 13,687 papers (`make bench-map`).

For each corpus, from an index of it: reading the papers' vectors and the paper table, making
the map from them (k-means, t-SNE, the names: `rag.index.corpusmap.make_map`), a first opening that
makes and saves it (`Index.corpus_map` in a new process's Index), opening it again from the saved
file, a rerun's (from memory), the saved file's size; then the Map page itself under AppTest:
its first drawing in a process that has the map on disk, a rerun choosing a cluster, and the
chart's data as the page sends it to the browser.

The 13,687-paper index is made once in --data-dir and kept. Its chunks are given the vectors
the model gave them in `make bench-scale`'s index (--vectors-from), read from its Chroma by
text, so no abstract is embedded again (the model takes some 25 minutes over them); without that
index the model embeds them. Sentence vectors are off: the map does not read them.

Last, the page in headless Chromium (where Debian's chromium and playwright are installed, as
for bench/load_ui.py): the time until the map is drawn, and from choosing a cluster until its
papers are listed.

At 20 papers, before the rest: the bundled papers grouped by k-means clusters, by their
categories and by the categories' areas, each with its silhouette and how well its names tell
where each paper goes (`groupings`): the map groups a small corpus by category on these figures.

`--projections` also compares ways of placing the 13,687 papers: PCA alone, t-SNE over every
paper, and the map's t-SNE over a sample with the rest placed among their neighbours, each with
its time, its trustworthiness (how many of each paper's 10 nearest neighbours on the map are
among its nearest in the embedding, sklearn's measure, on 2,000 papers) and the silhouette of
the map's clusters on the map (how apart the clusters are drawn).

    python bench/corpus_map.py
    python bench/corpus_map.py --projections
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_ingest_ask import ROOT, SCALE, table
from langchain_core.embeddings import Embeddings

from rag.corpus.reading import load_corpus
from rag.index.corpusmap import make_map
from rag.index.embeddings import make_embeddings
from rag.index.maprecords import CorpusMap
from rag.index.offline import prepare
from rag.index.store import Index
from rag.records import Paper
from rag.settings import Settings

PAPERS = ROOT / "data" / "papers.jsonl"
SCALE_INDEX = Path.home() / ".local" / "share" / "paperchat" / "bench-scale"
MAP_INDEX = Path.home() / ".local" / "share" / "paperchat" / "bench-map"
APP = str(ROOT / "ui" / "app.py")


class Stored(Embeddings):
    """The vectors stored for these texts; the model for any other."""

    def __init__(self, model: Embeddings, known: dict[str, list[float]]) -> None:
        self.model = model
        self.known = known
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.known]
        if missing:
            self.embedded += len(missing)
            self.known.update(zip(missing, self.model.embed_documents(missing), strict=True))
        return [self.known[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


def chunk_vectors(source: Path, paper_ids: list[str]) -> dict[str, list[float]]:
    """The vectors of these papers' chunks in the index at `source`, by chunk text."""
    if not (source / "chroma").exists():
        return {}
    index = Index.open(Settings(data_dir=source))
    known: dict[str, list[float]] = {}
    for start in range(0, len(paper_ids), 1000):
        got = index._collection.get(
            where={"paper_id": {"$in": paper_ids[start : start + 1000]}}, include=["documents", "embeddings"]
        )
        known.update(zip(got["documents"], np.asarray(got["embeddings"]).tolist(), strict=True))
    return known


def scale_index(data_dir: Path, source: Path) -> Path:
    """An index of exactly the scale corpus in `data_dir`, made now unless it is there."""
    settings = Settings(data_dir=data_dir, sentence_vectors=False)
    papers = load_corpus(SCALE).papers
    if (data_dir / "chroma").exists() and sorted(Index.open(settings).papers) == sorted(p.id for p in papers):
        return data_dir
    known = chunk_vectors(source, [p.id for p in papers])
    print(f"making the {len(papers):,}-paper index in {data_dir} ({len(known):,} chunk vectors from {source})", flush=True)
    embeddings = Stored(make_embeddings(settings), known)
    clock = time.perf_counter()
    index = Index(settings, embeddings)
    index.reset()
    index.ingest(papers)
    print(f"  {time.perf_counter() - clock:.0f} s, {embeddings.embedded} texts embedded by the model", flush=True)
    return data_dir


def timed(work):
    clock = time.perf_counter()
    result = work()
    return result, time.perf_counter() - clock


def stages(papers: list[Paper], vectors: np.ndarray, threads: int) -> tuple[CorpusMap, dict[str, float]]:
    """make_map, timed as a whole and by its stages (from its progress messages)."""
    marks: list[tuple[str, float]] = []
    corpus_map, total = timed(
        lambda: make_map(papers, vectors, threads=threads, progress=lambda s: marks.append((s, time.perf_counter())))
    )
    ends = [t for _, t in marks[1:]] + [marks[0][1] + total]
    took = {message.split()[0].lower(): end - start for (message, start), end in zip(marks, ends, strict=True)}
    return corpus_map, took


def page(data_dir: Path) -> dict:
    """The Map page under AppTest, in this process, with the map saved on disk."""
    from streamlit.testing.v1 import AppTest

    os.environ["PAPERCHAT_DATA_DIR"] = str(data_dir)
    at = AppTest.from_file(APP, default_timeout=600).run()  # the chat page loads the Assistant
    _, first = timed(lambda: at.switch_page("map.py").run())
    assert not at.exception, at.exception
    [chart] = at.get("vega_lite_chart")
    _, rerun = timed(lambda: at.selectbox[0].select_index(0).run())
    assert not at.exception and at.dataframe, "the chosen cluster's papers are listed"
    import streamlit as st

    st.cache_resource.clear()
    return {
        "page first draw s": round(first, 2),
        "page rerun s": round(rerun, 2),
        "chart data KB": round(sum(len(d.data.data) for d in chart.proto.datasets) / 1024),
        "chart element KB": round(chart.proto.ByteSize() / 1024),
    }


def browser(data_dir: Path) -> dict:
    """The Map page in headless Chromium, served by `paperchat ui` (bench/load_ui.py) whose
    Assistant is loaded: seconds until the map is drawn, and from choosing a cluster in the list
    until its papers are shown (the chart is sent and drawn again, its cluster brighter)."""
    from load_ui import CHROMIUM, FLAGS, serve

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    if not Path(CHROMIUM).exists():
        return {}
    with serve(data_dir, wait_s=120) as ui, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(300_000)
        page.goto(ui.url)
        page.get_by_test_id("stChatInputTextArea").wait_for()  # the model and the index are loaded
        clock = time.perf_counter()
        page.goto(f"{ui.url}/map")
        page.locator(".vega-embed canvas, .vega-embed svg.marks").first.wait_for()
        drawn = time.perf_counter() - clock
        page.get_by_test_id("stSelectbox").click()
        clock = time.perf_counter()
        page.get_by_role("option").first.click()
        page.get_by_text(re.compile(r"Ask about this (cluster|category)")).wait_for()
        chosen = time.perf_counter() - clock
        browser.close()
    return {"browser: map drawn s": round(drawn, 2), "browser: cluster chosen s": round(chosen, 2)}


def measure(name: str, data_dir: Path) -> dict:
    settings = Settings(data_dir=data_dir, sentence_vectors=False)
    index = Index.open(settings)
    (ids, vectors), read_vectors = timed(index.paper_vectors)
    table_, read_papers = timed(lambda: index.papers)
    papers = [table_[i] for i in ids]
    made, took = stages(papers, vectors, settings.threads)
    for saved in index._local_folder("maps").glob("*"):
        saved.unlink()
    first_index = Index(settings, index.embeddings)
    first, first_open = timed(first_index.corpus_map)
    assert first == made, "the map is the same made twice"
    again = Index(settings, index.embeddings)
    _, cached = timed(again.corpus_map)
    _, rerun = timed(again.corpus_map)
    [saved] = index._local_folder("maps").glob("*.json")
    return {
        "corpus": name,
        "papers": len(made.paper_ids),
        "clusters": len(made.clusters),
        "read vectors s": round(read_vectors, 2),
        "read papers s": round(read_papers, 2),
        "group s": round(took["grouping"], 2),
        "place s": round(took["placing"], 2),
        "name s": round(took["naming"], 2),
        "make s": round(sum(took.values()), 2),
        "first open s": round(first_open, 2),
        "cached open s": round(cached, 3),
        "rerun ms": round(rerun * 1000, 3),
        "map file MB": round(saved.stat().st_size / 2**20, 2),
        **page(data_dir),
        **browser(data_dir),
    }


def projections(data_dir: Path) -> list[dict]:
    """Ways of placing the papers, on the map's clusters: time, trustworthiness, silhouette."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE, trustworthiness
    from sklearn.metrics import silhouette_score

    import rag.index.corpusmap as corpusmap

    index = Index.open(Settings(data_dir=data_dir, sentence_vectors=False))
    _, vectors = index.paper_vectors()
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    clusters, _ = corpusmap._clusters(unit, corpusmap.cluster_count(len(unit)))
    threads = index.settings.threads
    sample = np.random.default_rng(1).choice(len(unit), 2000, replace=False)
    reduced = PCA(50, random_state=0).fit_transform(unit)
    ways = {
        "PCA": lambda: PCA(2, random_state=0).fit_transform(unit),
        "t-SNE, every paper": lambda: TSNE(2, init="pca", max_iter=500, random_state=0, n_jobs=threads).fit_transform(reduced),
        "t-SNE, every paper, 1,000 iterations": lambda: TSNE(2, init="pca", random_state=0, n_jobs=threads).fit_transform(
            reduced
        ),
        f"the map's: t-SNE over {corpusmap._PLACED:,}, the rest placed": lambda: corpusmap.place(unit, clusters, threads=threads),
    }
    rows = []
    for name, way in ways.items():
        placed, seconds = timed(way)
        rows.append(
            {
                "placing": name,
                "s": round(seconds, 1),
                "trustworthiness@10": round(trustworthiness(unit[sample], placed[sample], n_neighbors=10, metric="cosine"), 3),
                "cluster silhouette": round(silhouette_score(placed[sample], clusters[sample]), 3),
            }
        )
        print(f"  {name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return rows


def groupings(data_dir: Path) -> list[dict]:
    """The 20 bundled papers grouped three ways, as the map could: k-means clusters named by
    their phrases, the papers' whole categories, and the categories' areas (their first level).
    For each: how many groups, how many of one paper and how many have a name (no phrase is
    shared by a cluster's papers); the silhouette of the groups on the
    papers' vectors (cosine: are a group's papers nearer each other than the other groups'?);
    and whether the names tell where each paper goes: the share of papers whose vector is
    nearest the vector of their own group's name, among the names (the model reads the names
    as a reader would, knowing nothing else of the groups)."""
    from sklearn.metrics import silhouette_score

    import rag.index.corpusmap as corpusmap
    from rag.markup import to_plain

    index = Index.open(Settings(data_dir=data_dir, sentence_vectors=False))
    ids, vectors = index.paper_vectors()
    papers = [index.papers[i] for i in ids]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    k = corpusmap.cluster_count(len(papers))
    clusters = corpusmap._clusters(unit, k)
    phrases = corpusmap.distinctive_phrases([f"{p.display_title}\n{to_plain(p.abstract)}" for p in papers], clusters)
    whole = [p.category for p in papers]
    areas = corpusmap.category_groups(whole, k) or whole
    ways = {
        f"k-means, {k} clusters, named by their phrases": (
            [str(c) for c in clusters],
            {str(c): ", ".join(t) for c, t in phrases.items()},
        ),
        "categories, whole": (whole, {c: c for c in whole}),
        "categories, areas (the map's choice)": (areas, {c: c for c in areas}),
    }
    rows = []
    for way, (group, name) in ways.items():
        labels = sorted(set(group))
        named = np.asarray(index.embeddings.embed_documents([name[g] for g in labels]))
        named /= np.linalg.norm(named, axis=1, keepdims=True)
        nearest = np.argmax(unit @ named.T, axis=1)
        sizes = [group.count(g) for g in labels]
        rows.append(
            {
                "grouping": way,
                "groups": len(labels),
                "of one paper": sizes.count(1),
                "named": sum(bool(name[g]) for g in labels),
                "silhouette (cosine)": round(silhouette_score(unit, group, metric="cosine"), 3),
                "papers nearest their group's name": f"{sum(labels[n] == g for n, g in zip(nearest, group, strict=True))}/{len(group)}",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=MAP_INDEX, help="where the 13,687-paper index is made and kept")
    parser.add_argument(
        "--vectors-from", type=Path, default=SCALE_INDEX, help="an index holding the scale corpus's chunk vectors"
    )
    parser.add_argument("--projections", action="store_true", help="also compare ways of placing the 13,687 papers")
    args = parser.parse_args()
    prepare()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        small = Path(folder)
        Index.open(Settings(data_dir=small, sentence_vectors=False)).ingest(load_corpus(PAPERS))
        rows.append(measure("data/papers.jsonl", small))
        # Clusters or categories: which groups the map draws at 20 papers.
        print(table(groupings(small)), flush=True)
    if not SCALE.exists():
        print(f"{SCALE} is absent: the 13,687-paper row is left out (the shared corpora are not beside this checkout)")
        return
    rows.append(measure(SCALE.name, scale_index(args.data_dir, args.vectors_from)))
    # One table per line of figures is too wide: the corpora as columns instead.
    print()
    print(table([{"": key, **{row["corpus"]: row[key] for row in rows}} for key in rows[0] if key != "corpus"]))
    if args.projections:
        print()
        print(table(projections(args.data_dir)))
    # The machine is shared: a busy one stretches every time above.
    print(f"\nload average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
