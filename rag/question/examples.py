"""Example questions drawn from the corpus itself, for a newcomer's first screen: one about its
biggest topic, one about a method a paper names, and a summary of one paper. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rag.records import ExampleQuestion, Paper

__all__ = ["example_questions"]


def example_questions(categories: Mapping[str, int], names: Mapping[str, str], papers: Iterable[Paper]) -> list[ExampleQuestion]:
    """Up to three questions this corpus answers. `categories` biggest first (a category's last
    part is its topic: "Deep Learning · Attention Mechanisms"), `names` a paper's coined name
    ("MoH") -> its id, `papers` those a summary may be of."""
    asks = []
    if categories:
        asks.append(ExampleQuestion(text=f"Which papers work on {next(iter(categories)).split(' · ')[-1]}?"))
    named = next(iter(names.items()), None)
    if named:
        asks.append(ExampleQuestion(text=f"How does {named[0]} work?"))
    # The shortest title keeps its button on one line; not the named paper, asked about already.
    others = [p for p in papers if p.title and (named is None or p.id != named[1])]
    if others:
        paper = min(others, key=lambda p: (len(p.title), p.id))
        asks.append(ExampleQuestion(text=f"Summarize “{paper.title}”", paper_id=paper.id))
    return asks
