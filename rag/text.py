"""Small pure text helpers shared by the product: sentence splitting and lexical terms.

Sentence splitting is tuned for scientific abstracts (abbreviations, decimals, LaTeX, URLs, and the
missing space in "generalization.We introduce"). Term extraction uses the same token pattern,
stop words and Snowball stemmer as the BM25 index, so that lexical matching agrees everywhere.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

import pysbd
import Stemmer

__all__ = [
    "CJK",
    "LANGUAGES",
    "STOP_WORDS",
    "TOKEN_PATTERN",
    "in_cjk",
    "language_of",
    "lexical_similarity",
    "quoted_listing",
    "sentence_spans",
    "split_sentences",
    "stem_words",
    "term_words",
    "tokenize_terms",
]

# Han characters, kana and hangul. Word rules read words between spaces: a Chinese question has
# none, and "MoH的注意力头" is one run of word characters. These scripts are read by meaning
# (rag.index.crosslingual), not by the word rules: no lexical term is made of them, and a Latin
# name glued to them ("MoH的") is a word of its own.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{CJK}]")
_LETTER = re.compile(r"[^\W\d_]")
# bm25s's default word pattern, runs of two or more word characters, with no CJK character.
TOKEN_PATTERN = rf"(?u)[^\W{CJK}]{{2,}}"
_TOKEN = re.compile(TOKEN_PATTERN)
# A text this much in CJK letters is read by meaning: "MoH 的注意力头是怎么选的？" (9 of 12), not
# an English one naming "张伟".
_CJK_SHARE = 0.25


# Kana or hangul: Japanese or Korean, which PaperChat has no words of its own for.
_KANA_HANGUL = re.compile("[\u3040-\u30ff\uac00-\ud7af]")
# The languages PaperChat words its answers in (prompts/ and prompts/zh/).
LANGUAGES = ("en", "zh")


def language_of(text: str) -> str:
    """The language to answer `text` in: "zh" for Chinese, else "en" (a Japanese or Korean
    question is read, and answered in English)."""
    return "zh" if in_cjk(text) and not _KANA_HANGUL.search(text) else "en"


def in_cjk(text: str) -> bool:
    """Whether `text` is written in Chinese, Japanese or Korean, more than in letters the word
    rules read."""
    letters = len(_LETTER.findall(text))
    return bool(letters) and len(_CJK.findall(text)) / letters >= _CJK_SHARE


try:  # the BM25 index removes bm25s's English stop words; use the very same list
    from bm25s.stopwords import STOPWORDS_EN as _BM25_STOPWORDS
except ImportError:  # pragma: no cover - bm25s is a dependency; this copy only guards a broken install
    _BM25_STOPWORDS = (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    )

STOP_WORDS: frozenset[str] = frozenset(_BM25_STOPWORDS)


# ---------------------------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------------------------

# "generalization.We": a word ending in a lowercase letter, a period, then a capital with no space.
# The look-behind makes the match start at a word's beginning and not after a period, which keeps
# "e.g.Foo" / "i.e.The" / "U.S.Army" whole; decimals never match (digits are not letters).
_GLUED_PERIOD = re.compile(r"(?<![\w.])([A-Za-z]*[a-z])\.(?=[A-Z])")
# Abbreviations that are followed by a capital inside a sentence ("et al.Smith" is not a break).
_ABBREVIATIONS = frozenset(
    [
        "al",
        "etc",
        "vs",
        "cf",
        "fig",
        "figs",
        "eq",
        "eqs",
        "sec",
        "ch",
        "vol",
        "no",
        "nos",
        "pp",
        "approx",
        "resp",
        "ref",
        "refs",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "jr",
        "sr",
        "inc",
        "ltd",
    ]
)
# A segment ending like this ends a sentence; pysbd segments that don't (it breaks before
# "(i)", "(ii)" enumerations inside a sentence) are joined with the next segment. A LaTeX "\!"
# is no sentence end, and neither is "et al." (pysbd breaks in "Xiang et al. [2022] proposed").
_TERMINAL = re.compile(r"(?<!\\)[.!?…][\"'”’)\]}*_$]*\s*$")
_NOT_TERMINAL = re.compile(r"\bet al\.\s*$")
# A segment opening like this continues the one before: no sentence starts with a lowercase
# letter or with ",;:)" or a closing quotation mark (pysbd breaks after "resp.", at the "?" of a URL's
# query string, and between a full stop and the "”" after it).
_CONTINUATION = re.compile(r"[a-z,;:)\]”’]")
# A segment that is only an enumerator, "(2.)" or "3.", opens the sentence after it.
_ENUMERATOR = re.compile(r"\(?\d{1,2}\.?\)?")
_SEGMENTER_LOCK = threading.Lock()
_SOFT_WRAP = re.compile(r"[ \t]*\r?\n\s*")


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False)


def _glued_break_points(text: str) -> list[int]:
    """Offsets just after a period that is missing its following space ("generalization.|We")."""
    points = []
    for match in _GLUED_PERIOD.finditer(text):
        if match.group(1).lower() in _ABBREVIATIONS or _in_url_like_token(text, match.start()):
            continue
        points.append(match.end())
    return points


# A quotation that ends a sentence and another that opens the next ("... level.” “MoH has ..."):
# pysbd keeps the two together.
_QUOTE_BREAK = re.compile(r"[.!?…]”(?:\s*\[[^\]\n]{1,20}\])?\s+(?=“)")


def _quote_break_points(text: str) -> list[int]:
    """Offsets where a new quotation opens after a closed, sentence-ending one."""
    return [m.end() for m in _QUOTE_BREAK.finditer(text)]


# Chinese and Japanese end a sentence with a full-width stop, and no space follows it: pysbd
# (English) never breaks there. A closing quote or bracket, and a citation marker, stay with it.
_FULL_WIDTH_STOP = re.compile(r"[。！？]+[”’」』）]*(?:\s*\[[^\]\n]{1,20}\])?")


def _full_width_stop_points(text: str) -> list[int]:
    """Offsets just after each full-width sentence end."""
    return [m.end() for m in _FULL_WIDTH_STOP.finditer(text)]


def _in_url_like_token(text: str, position: int) -> bool:
    """Whether `position` sits in a URL, e-mail or path, where "name.Capital" is no sentence break."""
    start, end = position, position
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    token = text[start:end]
    return "://" in token or "/" in token or "@" in token or token.lower().startswith("www.")


# Lines that open a Markdown block (heading, list item, quote, table row): a break before them.
_BLOCK_START = re.compile(r"[ \t]{0,3}(?:#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|>|\|)")
# Lines that stand alone as a title (a Markdown heading, or a line that is all bold): a break after.
_TITLE_LINE = re.compile(r"[ \t]{0,3}(?:#{1,6}\s.*|\*\*[^*\n]+\*\*:?|__[^_\n]+__:?)\s*")


def _block_break_points(text: str) -> list[int]:
    """Line starts where a new block begins: after a blank line, at a Markdown block, after a title.

    Other single newlines are soft wraps (arXiv-style hard-wrapped abstracts) and break nothing.
    """
    points = []
    lines = text.split("\n")
    offset = len(lines[0]) + 1
    for previous, line in pairwise(lines):
        if not previous.strip() or not line.strip() or _BLOCK_START.match(line) or _TITLE_LINE.fullmatch(previous):
            points.append(offset)
        offset += len(line) + 1
    return points


def _pysbd_spans(text: str, offset: int) -> list[tuple[int, int]]:
    """pysbd's sentences of one block `text` as stripped (start, end) spans shifted by `offset`."""
    # pysbd breaks at every newline; inside a block a newline is a soft wrap, so show it a space
    # (same length, so offsets still hold).
    flat = text.replace("\n", " ")
    with _SEGMENTER_LOCK:  # a Segmenter keeps per-call state on itself, so it is not thread-safe
        # Its processor's sentences, not `segment`'s: `segment` then finds each sentence in the
        # text again with a regex compiled for that sentence, which this function does below with
        # `str.find` (a third of the splitting time at ingest; the same sentences on 18,890
        # abstracts of the scale corpus, SciFact and the seed papers).
        segments = _segmenter().processor(flat).process() if flat else []
    spans: list[tuple[int, int]] = []
    cursor = 0
    for segment in segments:
        core = segment.strip()
        if not core:
            continue
        found = flat.find(core, cursor)
        if found == -1:  # pysbd altered the text (it should not with clean=False): keep the rest whole
            rest = flat[cursor:]
            start = cursor + len(rest) - len(rest.lstrip())
            spans.append((offset + start, offset + len(flat.rstrip())))
            break
        spans.append((offset + found, offset + found + len(core)))
        cursor = found + len(core)
    return _merge_unterminated(flat, spans, offset)


def _merge_unterminated(flat: str, spans: list[tuple[int, int]], offset: int) -> list[tuple[int, int]]:
    """Join pysbd's segments of one block where it broke inside a sentence.

    A segment joins the one before when that one does not end a sentence or is a bare
    enumerator, or when it opens as a continuation (lowercase letter, ",;:)").
    (Forced "generalization.|We" breaks need no guard: they are block ends.)
    """
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged:
            previous = flat[merged[-1][0] - offset : merged[-1][1] - offset]
            current = flat[start - offset : end - offset]
            if not _ends_sentence(previous) or _ENUMERATOR.fullmatch(previous) or _CONTINUATION.match(current):
                merged[-1] = (merged[-1][0], end)
                continue
        merged.append((start, end))
    return merged


def _ends_sentence(segment: str) -> bool:
    return bool(_TERMINAL.search(segment)) and not _NOT_TERMINAL.search(segment)


@lru_cache(maxsize=4096)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    cuts = sorted(
        {
            0,
            *_glued_break_points(text),
            *_quote_break_points(text),
            *_full_width_stop_points(text),
            *_block_break_points(text),
            len(text),
        }
    )
    spans: list[tuple[int, int]] = []
    for start, end in pairwise(cuts):
        if text[start:end].strip():
            spans.extend(_pysbd_spans(text[start:end], start))
    return tuple(spans)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets into `text` of each sentence that `split_sentences` returns.

    `text[start:end]` is the sentence, stripped of surrounding whitespace, with any soft line
    breaks still in it.
    """
    return list(_sentence_spans(text))


# Splits made earlier and kept (ingest stores each abstract's sentences): `remember_sentences`.
_KNOWN_SPLITS: dict[str, tuple[str, ...]] = {}
_KNOWN_SPLITS_KEPT = 20_000


def remember_sentences(text: str, sentences: Sequence[str]) -> None:
    """Record `text`'s split as `split_sentences` made it before (at ingest), so a question
    reading the abstract does not run pysbd again."""
    if len(_KNOWN_SPLITS) >= _KNOWN_SPLITS_KEPT:
        _KNOWN_SPLITS.clear()
    _KNOWN_SPLITS[text] = tuple(sentences)


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences, stripped, with empty ones dropped.

    pysbd (English, clean=False) does the splitting; it keeps "e.g.", "i.e.", "et al.", decimals
    ("2.4%"), LaTeX ("$\\tilde O(\\sqrt T)$", "50%$\\sim$90%") and URLs whole. Around it:

    - a pre-pass breaks where a period lacks its space ("generalization.We introduce"): a word
      ending in a lowercase letter, ".", then a capital; not after abbreviations ("et al.",
      "Fig."), not inside dotted abbreviations ("e.g.Foo"), URLs, e-mails or paths;
    - a full-width stop ("。", "！", "？") always ends a sentence, with any closing quote and
      citation marker after it;
    - Markdown blocks always separate: a blank line, a line opening a heading, list item, quote
      or table row, and the line after a title (a heading or an all-bold line). Any other single
      newline is a soft wrap (hard-wrapped arXiv abstracts) and becomes a space in the result;
    - pysbd's segments are joined back where it broke inside a sentence: after a segment that
      does not end in sentence punctuation (it breaks before "(i)"/"(ii)" enumerations), after
      "et al." or a bare "(2.)", and before a segment opening with a lowercase letter or ",;:)"
      ("(resp., faster)", "watch?v=..."). Never across a block break.

    Markdown markup ("- ", "**") is left in the sentences. Results are memoised per text (pysbd
    is slow, and the same abstracts are split again and again).
    """
    known = _KNOWN_SPLITS.get(text)
    if known is not None:
        return list(known)
    return [_SOFT_WRAP.sub(" ", text[start:end]) for start, end in _sentence_spans(text)]


# ---------------------------------------------------------------------------------------------
# Terms
# ---------------------------------------------------------------------------------------------

_STEMMER = threading.local()  # PyStemmer stemmers must not be shared between threads


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_STEMMER, "stemmer", None)
    if stemmer is None:
        stemmer = _STEMMER.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stem_words(words: list[str]) -> list[str]:
    """Snowball (English) stems of `words`, with this thread's stemmer; pass to bm25s as its stemmer."""
    return _stemmer().stemWords(words)


def tokenize_terms(text: str) -> list[str]:
    """Lowercase word terms of `text`, stop words removed, Snowball-stemmed, in order (repeats kept).

    Same rules as the BM25 index: bm25s's token pattern (2+ word characters), bm25s's English
    stop words (removed before stemming), PyStemmer's English stemmer.
    """
    words = [w for w in _TOKEN.findall(text.lower()) if w not in STOP_WORDS]
    return stem_words(words) if words else []


def term_words(text: str) -> list[tuple[str, str]]:
    """The terms of `tokenize_terms`, each with the word it was stemmed from as `text` writes it:
    a label shows "LLMs" or "Gaussian" where the terms are "llms" and "gaussian". Words are
    found in `text` as written; a word whose lowercase `tokenize_terms` would split otherwise
    (a few non-ASCII letters) may come out differently."""
    words = [w for w in _TOKEN.findall(text) if w.lower() not in STOP_WORDS]
    return list(zip(stem_words([w.lower() for w in words]), words, strict=True)) if words else []


@lru_cache(maxsize=8192)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(tokenize_terms(text))


def lexical_similarity(a: str, b: str) -> float:
    """Overlap of the stemmed term sets of `a` and `b`: |A∩B| / sqrt(|A|·|B|), in [0, 1].

    0.0 when either side has no terms; 1.0 when both have the same set of terms.
    """
    terms_a, terms_b = _term_set(a), _term_set(b)
    if not terms_a or not terms_b:
        return 0.0
    return len(terms_a & terms_b) / math.sqrt(len(terms_a) * len(terms_b))


@lru_cache(maxsize=65536)
def english_zipf(word: str) -> float:
    """The word's frequency in English at large on the Zipf scale (wordfreq): 7 for "the", 0 unknown."""
    from wordfreq import zipf_frequency

    return zipf_frequency(word.casefold(), "en")


def quoted_listing(items: Sequence[str], *, last: str = " or ", between: str = ", ") -> str:
    """Phrases as a sentence names them: “a”, “b” or “c” (in Chinese, with `last` "或" and
    `between` "、": “a”、“b”或“c”)."""
    quoted = [f"“{item}”" for item in items]
    return quoted[0] if len(quoted) == 1 else between.join(quoted[:-1]) + last + quoted[-1]
