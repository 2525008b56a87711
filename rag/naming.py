"""What a paper is called in an answer: a short name a researcher would use. Pure text.

- A title that opens with a name before a colon gives that name ("MoH: Multi-Head Attention as
  ..." -> "MoH", "Flat-LoRA: ..." -> "Flat-LoRA").
- Any other title is the name, as written.
- An untitled paper (the seed listing has no titles) is named by the method its abstract
  introduces ("We present DragSolver, ..." -> "DragSolver"; "we propose Mixture-of-Head attention
  (MoH)" -> "MoH"), else by its first author ("Meyer et al.").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.markup import to_plain

__all__ = ["THE_PAPER", "method_name", "opening_words", "short_name"]

# "it", "the paper", "this method": words that stand for a paper a question or a claim is about,
# which its name replaces (a table's column asked of its row, a claim read by its citation).
THE_PAPER = re.compile(
    r"\b(it|they|the (paper|work|study|authors|method|model|approach)|this (paper|work|study|method|model|approach))\b", re.I
)
# A coined name: a word with a capital after its first letter or a digit ("MoH", "FG-CLIP",
# "DragSolver", "VLGPO", "ICFL", "LLaMA3"), as papers name their methods.
_COINED = r"(?:[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*|[A-Z][a-z]+-[A-Z][A-Za-z0-9-]*)"
_INTRODUCES = re.compile(
    r"\b(?:we|this (?:paper|work))\s+(?:first\s+|then\s+|further\s+)?"
    r"(?:propose|present|introduce|develop|design|call|term|name|dub)[sd]?\s+"
    r"(?P<span>[^.;:]{0,120})",
    re.IGNORECASE,
)
_NAMED = re.compile(rf"\b(?:termed|called|named|dubbed)\s+(?P<name>{_COINED})")
_PARENTHESIZED = re.compile(rf"\((?P<name>{_COINED})\)")
_LEADING = re.compile(rf"^(?:the\s+|a\s+|an\s+)?(?:\*\*)?(?P<name>{_COINED})\b")
# Names that are not a method: datasets, models and the field's common acronyms.
_NOT_A_METHOD = frozenset(
    [
        "LLM",
        "LLMs",
        "LLaMA",
        "GPT",
        "CNN",
        "CNNs",
        "RNN",
        "GNN",
        "GNNs",
        "NLP",
        "CV",
        "RL",
        "MARL",
        "AI",
        "ML",
        "SGD",
        "NTK",
        "CLIP",
        "MoE",
        "ViT",
        "DiT",
        "PCA",
        "VAE",
        "CFD",
        "SOTA",
        "API",
        "GPU",
        "GPUs",
        "CPU",
        "IoT",
    ]
)
_TITLE_NAME = re.compile(r"^(?P<name>[^:]{1,40}):\s+\S")


def _acceptable(name: str) -> bool:
    return name not in _NOT_A_METHOD and not name.isdigit() and len(name) <= 30


def method_name(abstract: str) -> str:
    """The name of the method the abstract introduces, or "" when it names none."""
    text = to_plain(abstract).replace("**", "")
    for match in _INTRODUCES.finditer(text):
        span = match["span"]
        # "Mixture-of-Head attention (MoH)": the acronym the long name is given.
        for paren in _PARENTHESIZED.finditer(span):
            if _acceptable(paren["name"]):
                return paren["name"]
        leading = _LEADING.match(span)
        if leading and _acceptable(leading["name"]):
            return leading["name"]
    named = _NAMED.search(text)
    return named["name"] if named and _acceptable(named["name"]) else ""


def _family_name(author: str) -> str:
    # "Last, First" names the family first; "First Last" names it last.
    return author.split(",")[0].strip() if "," in author else (author.split() or [""])[-1]


def short_name(title: str, abstract: str, authors: Sequence[str]) -> str:
    """A short name for a paper (see the module docstring); never empty."""
    title = to_plain(title).strip()
    if title:
        named = _TITLE_NAME.match(title)
        if named and len(named["name"].split()) <= 3:
            return named["name"].strip()
        return title
    name = method_name(abstract)
    if name:
        return name
    if authors:
        family = _family_name(authors[0])
        return f"{family} et al." if len(authors) > 2 else " and ".join(_family_name(a) for a in authors)
    return opening_words(abstract)


def opening_words(abstract: str, words: int = 10) -> str:
    """The abstract's first words, in plain text, with "…" when cut."""
    tokens = to_plain(abstract).split()
    return " ".join(tokens[:words]) + ("…" if len(tokens) > words else "")
