"""What the answerer reads of each paper besides its vectors' source: its text with its metadata
(what a question's key term may meet), its abstract's sentences and its distinct content words.

Ingest embeds the sentences and words (`rag.index.textvectors`), so a question embeds only itself."""

from __future__ import annotations

import re
from functools import lru_cache

from rag.markup import to_plain
from rag.records import Paper
from rag.text import STOP_WORDS, english_zipf, split_sentences

# A content word of a paper: letters, hyphens inside.
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}")


@lru_cache(maxsize=4096)
def paper_words(text: str) -> tuple[str, ...]:
    """The paper's distinct content words, lowercased, for paraphrase matching."""
    words = {w.casefold().strip("-") for w in _WORD.findall(text)}
    # Everyday words ("the", "show", "new") are no paraphrase of a question's specific term.
    return tuple(sorted(w for w in words if w not in STOP_WORDS and len(w) >= 3 and english_zipf(w) < 5.0))


_GREEK = {
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "δ": "delta",
    "ε": "epsilon",
    "ϵ": "epsilon",
    "ζ": "zeta",
    "η": "eta",
    "θ": "theta",
    "κ": "kappa",
    "λ": "lambda",
    "μ": "mu",
    "ν": "nu",
    "ξ": "xi",
    "π": "pi",
    "ρ": "rho",
    "σ": "sigma",
    "τ": "tau",
    "φ": "phi",
    "ϕ": "phi",
    "χ": "chi",
    "ψ": "psi",
    "ω": "omega",
}
_GREEK_RE = re.compile("[" + "".join(_GREEK) + "]")


def metadata_text(paper: Paper) -> str:
    """What a paper's record says of it besides its title and abstract."""
    keywords = paper.extra.get("keywords", "")
    return "\n".join(x for x in (paper.category, paper.venue, "; ".join(paper.authors), keywords) if x)


def paper_text(paper: Paper) -> str:
    """Everything a paper says of itself that a question's term may meet: metadata counts too."""
    text = "\n".join(x for x in (to_plain(paper.title), to_plain(paper.abstract), metadata_text(paper)) if x)
    # "$\\mu$P" reads "μP"; a question types "muP".
    return text + "\n" + _GREEK_RE.sub(lambda m: _GREEK[m.group()], text) if _GREEK_RE.search(text) else text


def evidence_texts(paper: Paper) -> tuple[list[str], list[str]]:
    """The texts of a paper whose vectors `gather` reads: its abstract's sentences and its words.

    Ingest embeds and stores them (`rag.index.store`), so a question embeds only itself."""
    return split_sentences(paper.abstract), list(paper_words(paper_text(paper)))
