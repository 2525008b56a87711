"""The corpus map's records: its groups of papers, and every paper's place and group
(`rag.index.corpusmap` makes them, `rag.index.mapfile` keeps them)."""

from __future__ import annotations

from pydantic import model_validator

from rag.records import Record

__all__ = ["CorpusMap", "MapCluster"]


class MapCluster(Record):
    """A group of papers on the corpus map (`rag.index.corpusmap`): a cluster named by the phrases that
    set its papers apart from the rest of the corpus, or a category named by itself."""

    number: int  # from 1, the largest cluster first
    terms: tuple[str, ...]  # the most distinctive first
    size: int
    # Where its label goes on the map: its medoid, one of its own papers' places.
    x: float
    y: float
    colour: str  # "#rrggbb", none of the map's others alike (a map saved without one is made again)

    @property
    def label(self) -> str:
        return ", ".join(self.terms) or f"cluster {self.number}"

    @property
    def papers(self) -> str:
        """How many papers: "1 paper", "1,234 papers"."""
        return f"{self.size:,} paper{'' if self.size == 1 else 's'}"

    @property
    def name(self) -> str:
        """The label drawn on the map: its first phrase, so thirty of them stay legible."""
        return self.terms[0] if self.terms else f"cluster {self.number}"

    @property
    def question(self) -> str | None:
        """What the chat is asked about the cluster; None when no word sets it apart."""
        if not self.terms:
            return None
        topic = " and ".join(self.terms[:2])
        return f"Which papers work on {topic}?"


class CorpusMap(Record):
    """Every paper's place on a 2-D map of the corpus and its cluster, with the clusters.

    Column-wise, one tuple per field: at 14k papers a record per point would be most of the
    file and of the time to read it back. Papers are in cluster order, and within a cluster the
    one nearest its centre first."""

    paper_ids: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    cluster: tuple[int, ...] = ()  # each paper's MapCluster.number
    clusters: tuple[MapCluster, ...] = ()
    by_category: bool = False  # the groups are the corpus's categories, not clusters

    @property
    def kind(self) -> str:
        """What a group is called: "cluster" or "category"."""
        return "category" if self.by_category else "cluster"

    @model_validator(mode="after")
    def _columns_agree(self) -> CorpusMap:
        # A map file cut short or from another version is refused whole, and made again.
        if len({len(self.paper_ids), len(self.titles), len(self.x), len(self.y), len(self.cluster)}) > 1:
            raise ValueError("the map's columns differ in length")
        if not set(self.cluster) <= {c.number for c in self.clusters}:
            raise ValueError("a paper's cluster is not among the map's clusters")
        return self

    def members(self, number: int) -> list[tuple[str, str]]:
        """The (id, title) of the cluster's papers, the most typical first."""
        return [(pid, title) for pid, title, c in zip(self.paper_ids, self.titles, self.cluster, strict=True) if c == number]
