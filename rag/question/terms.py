"""A question's key terms: its content words, weighted by how specific they are in English at
large and in this corpus, grouped where they are alternatives ("A or B", "such as")."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from rag.question.vocabulary import COMPARATIVES, GENERIC, MEASURES
from rag.records import CorpusProfile, KeyTerm
from rag.text import CJK, STOP_WORDS, english_zipf, stem_words

# A word of a question, hyphenated compounds and names with digits kept whole ("top-1",
# "LLaMA3-8B", "Flat-LoRA").
_WORD = re.compile(rf"[^\W_{CJK}]+(?:[-'’][^\W_{CJK}]+)*")
_POSSESSIVE = re.compile(r"(?:'s|’s|s'|s’)$|(?:-(?:style|like|based|type|track|level|wise|specific))+$", re.IGNORECASE)


# A capitalised word of the corpus's categories weighs at least this much (see key_terms).
CATEGORY_WEIGHT = 0.6


def english_specificity(word: str) -> float:
    """How specific a word is in English at large, in [0.05, 1]: 1 for a rare or unknown word
    ("denoising", "MoH"), low for an everyday one ("rather", "work")."""
    return min(1.0, max(0.05, (5.3 - english_zipf(word)) / 2.3))


def corpus_termhood(word: str, stems: Sequence[str], profile: CorpusProfile) -> float:
    """How much more often the corpus uses the word than English does, in [0, 1]: a field's own
    terms ("attention", "regret") score high although English knows them well ("Weirdness",
    Ahmad et al. 1999). Abstracts are taken as ~120 content words."""
    if profile.papers == 0:
        return 0.0
    df = min(profile.document_frequency.get(s, 0) for s in stems)
    if df == 0:
        return 0.0
    in_corpus = df / (profile.papers * 120)
    in_english = 10 ** (english_zipf(word) - 9) if english_zipf(word) > 0 else 1e-9
    return min(1.0, max(0.0, math.log10(in_corpus / in_english) / 2))


# Quantities in words: a question that states one ("twice as much data") states a number.
_NUMBER_WORDS = frozenset(["twice", "thrice", "half", "double", "triple", "quadruple", "tenfold", "hundredfold", "thousandfold"])


def is_entity(word: str) -> bool:
    """A coined name, a token with digits or a quantity: "MoH", "ImageNet", "top-1", "8-bit", "twice"."""
    if any(c.isdigit() for c in word) or word.casefold() in _NUMBER_WORDS:
        return True
    core = word.replace("-", "")
    return (sum(c.isupper() for c in core[1:]) >= 1 and not core.isupper()) or (core.isupper() and len(core) >= 2)


def term_stems(word: str) -> tuple[str, ...]:
    parts = [p for p in re.findall(r"\w\w+", word.casefold()) if p not in STOP_WORDS]
    return tuple(stem_words(parts)) if parts else ()


_HOW_MANY = re.compile(
    r"\bhow (?:many|much)\s+((?:[\w-]+\s+){0,3}?[\w-]+?)(?=\s+(?:are|is|were|was|does|do|did|has|have|can|will|would|in|of|for|per|on)\b|[?,.]|$)",
    re.I,
)


def _counted(text: str) -> set[str]:
    """The words naming what a "how many / how much" question counts ("how many long
    caption-image pairs were generated" -> long, caption-image, pairs): its measure."""
    words = {w.casefold() for m in _HOW_MANY.finditer(text) for w in m.group(1).split()}
    # "How much better / faster is X": a comparison, whose measure is whatever the paper reports.
    return {w for w in words if not re.fullmatch(r"\w+(er|est)|more|less|fewer", w) or w in MEASURES}


_MARKER = r"(?:such as|e\.g\.|for example|for instance|like|including|i\.e\.)"
# How two runs of key words are joined, once the generic words between them are dropped: as
# alternatives ("A or B", "A/B"), as the head and the start of its examples ("data such as
# cells", "LLMs (fine-tuning"), or as items of a list (",").
_OR_GAP = re.compile(r"\s*,?\s*(?:and/)?or\s*|\s*/\s*", re.IGNORECASE)
_EXAMPLE_GAP = re.compile(rf"\s*,?\s*(?:\(\s*(?:{_MARKER},?)?|{_MARKER},?)\s*", re.IGNORECASE)
_COMMA_GAP = re.compile(r"\s*,\s*")
_WORDS_IN_GAP = re.compile(r"[A-Za-z][\w'-]*")
_JOIN_WORDS = frozenset(["or", "and/or", "such", "as", "like", "including", "for", "example", "instance", "e.g", "i.e"])


def _runs(text: str) -> list[list[re.Match]]:
    """The runs of adjacent key words of `text` (generic and stop words break a run, except inside
    a capitalised name: "Large Language Models")."""
    runs: list[list[re.Match]] = []
    current: list[re.Match] = []
    previous_end = 0
    for match in _WORD.finditer(text):
        word = _POSSESSIVE.sub("", match.group())
        lower = word.casefold()
        key = not (lower in GENERIC or lower in STOP_WORDS or not term_stems(word) or (len(word) < 3 and not is_entity(word)))
        titled = bool(current) and word[:1].isupper() and current[-1].group()[:1].isupper() and bool(term_stems(word))
        # Punctuation between two words ends a run too ("cells, genes").
        if current and (not (key or titled) or text[previous_end : match.start()].strip()):
            runs.append(current)
            current = []
        if key or (titled and current):
            current.append(match)
        previous_end = match.end()
    if current:
        runs.append(current)
    return runs


def _skeleton(gap: str) -> str:
    """A gap between runs without its generic words ("way (" -> "(", " models, " -> ",")."""
    return _WORDS_IN_GAP.sub(lambda m: m.group() if m.group().casefold() in _JOIN_WORDS else "", gap)


def _alternative_groups(text: str, runs: list[list[re.Match]]) -> list[int]:
    """A group number per run: alternatives ("A or B", "A, B or C", a head and its examples)
    share one; any other run is a group of its own."""
    gaps = [_skeleton(text[runs[i - 1][-1].end() : runs[i][0].start()]) for i in range(1, len(runs))]
    kinds = []
    for gap in gaps:
        if _OR_GAP.fullmatch(gap):
            kinds.append("or")
        elif _EXAMPLE_GAP.fullmatch(gap):
            kinds.append("example")
        elif _COMMA_GAP.fullmatch(gap):
            kinds.append(",")
        else:
            kinds.append("")
    joined = [False] * len(gaps)
    in_examples = False
    for i, kind in enumerate(kinds):
        if kind in ("or", "example"):
            joined[i] = True
            in_examples = in_examples or kind == "example"
            # The items of a list that ends in "or" ("A, B or C") are alternatives too.
            j = i - 1
            while j >= 0 and kinds[j] == ",":
                joined[j] = True
                j -= 1
        elif kind == "," and in_examples:
            joined[i] = True
        else:
            in_examples = False
    if not runs:
        return []
    groups = [0]
    for join in joined:
        groups.append(groups[-1] if join else groups[-1] + 1)
    return groups


def _titled(run: list[re.Match], text: str) -> bool:
    """A run of two or more capitalised words that is not the question's opening: a name of a
    category or a field ("Large Language Models"), to be met as written, not word by word."""
    return len(run) >= 2 and run[0].start() > 0 and all(m.group()[:1].isupper() for m in run)


def key_terms(text: str, profile: CorpusProfile) -> tuple[tuple[KeyTerm, ...], tuple[str, ...]]:
    """The question's key terms, heaviest first, and its phrases (runs of adjacent key words).

    Each term knows its `run` (the phrase it is in) and its `group`: runs that are alternatives
    ("A or B", examples after "such as") share a group, and meeting one of them meets it.
    """
    terms: dict[tuple[str, ...], KeyTerm] = {}
    counted = _counted(text)
    category_words = {w.casefold() for c in profile.categories for w in _WORD.findall(c)}
    runs = _runs(text)
    groups = _alternative_groups(text, runs)

    def weigh(word: str, stems: tuple[str, ...]) -> float:
        lower = word.casefold()
        specificity = 1.0 if is_entity(word) else max(english_specificity(lower), corpus_termhood(lower, stems, profile))
        if lower in COMPARATIVES:
            # "cheaper", "faster": how the topic is wanted, not the topic itself.
            specificity *= 0.5
        if word[:1].isupper() and lower in category_words:
            # A capitalised word of the corpus's categories ("Theory", "Applications") is metadata
            # the question filters by, however common the word.
            specificity = max(specificity, CATEGORY_WEIGHT)
        # A compound is as rare in the corpus as its rarest part ("fast-charging", "cycle-life"):
        # the papers that have it are among those that have that part. A plain word's stems are
        # variants of one word, and the commonest stands for it.
        rarity = max if "-" in word else min
        return specificity * (0.3 + 0.7 * rarity(profile.idf(s) for s in stems))

    repeated = {
        stems for stems, n in Counter(term_stems(_POSSESSIVE.sub("", m.group())) for run in runs for m in run).items() if n > 1
    }
    spare_group = max(groups, default=0) + 1

    def add(term: KeyTerm) -> None:
        nonlocal spare_group
        if term.stems in repeated:
            # A word said twice ("Sanskrit sandhi splitting or ... of Sanskrit texts") is asked
            # of every alternative: it is required on its own, in a group of its own.
            term = term.model_copy(update={"group": spare_group, "run": 10_000 + spare_group})
            spare_group += 1
        if term.stems not in terms or terms[term.stems].weight < term.weight:
            terms[term.stems] = term

    for number, (run, group) in enumerate(zip(runs, groups, strict=True)):
        words = [_POSSESSIVE.sub("", m.group()) for m in run]
        if _titled(run, text):
            phrase = " ".join(words)
            stems = tuple(s for w in words for s in term_stems(w))
            weight = round(max(weigh(w, term_stems(w)) for w in words), 4)
            add(KeyTerm(text=phrase, stems=stems, weight=weight, entity=True, group=group, run=number))
            continue
        for word in words:
            stems = term_stems(word)
            lower = word.casefold()
            add(
                KeyTerm(
                    text=word,
                    stems=stems,
                    weight=round(weigh(word, stems), 4),
                    entity=is_entity(word),
                    measure=lower in MEASURES or lower in counted,
                    group=group,
                    run=number,
                )
            )
    phrases = tuple(" ".join(_POSSESSIVE.sub("", m.group()) for m in run) for run in runs if len(run) >= 2)
    ordered = sorted(terms.values(), key=lambda t: -t.weight)
    return tuple(ordered), phrases
