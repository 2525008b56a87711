"""Question analysis, with no model: what a question asks, about what, and within which papers.

`analyze` turns a question into a `QuestionAnalysis`, computed once per turn and kept on the
answer:

- the question cleaned of what does not change what it asks: a greeting, "please", stray
  characters, and words in another script around an English question ("Hi! How does MoH work?
  ñ é" asks "How does MoH work?");
- its type (`QuestionType`): lookup, how/why, result, collection ("which papers ..."), summary,
  comparison or yes/no, from its wording;
- the filters it states ("at ICML 2025", "by Yuan", "since 2023"), matched against the corpus's
  own venues and authors and taken out of the text that is searched;
- its key terms (`KeyTerm`): the content words an answer must address, weighted by how specific
  they are, both in English at large (wordfreq's frequencies: "federated" is rarer than "plain")
  and in this corpus (a word every abstract has tells no paper apart). Coined names ("MoH",
  "ImageNet", "top-1") are entities, met only as written;
- its focus, the question without its framing words, which is what the embedding model matches.

A follow-up the rules join to the question it follows up on ("what about its results? (following
up on: How does MoH work?)", `with_context`) is read as two questions: the joining words are
never key terms (see `_follow_up`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from rag.records import Filters, KeyTerm, QuestionAnalysis, QuestionType
from rag.text import STOP_WORDS, stem_words

__all__ = [
    "CorpusProfile",
    "analyze",
    "clean_question",
    "question_focus",
    "split_context",
    "with_context",
]


@dataclass(frozen=True)
class CorpusProfile:
    """What question analysis needs to know of the corpus: its size, term counts and metadata."""

    papers: int = 0
    document_frequency: Mapping[str, int] = field(default_factory=dict)
    venues: Sequence[str] = ()
    authors: Sequence[str] = ()
    categories: Sequence[str] = ()
    years: Sequence[int] = ()
    names: Mapping[str, str] = field(default_factory=dict)  # short name -> paper id

    def idf(self, stem: str) -> float:
        """Inverse document frequency in [0, 1]: 1 for a word no paper has, 0 for one all have."""
        if self.papers <= 1:
            return 1.0
        df = self.document_frequency.get(stem, 0)
        return math.log((self.papers + 1) / (df + 0.5)) / math.log((self.papers + 1) / 0.5)


# --- cleaning ----------------------------------------------------------------------------------

_GREETING = re.compile(
    r"^\s*(?:(?:(?:hi|hello|hey|hiya|greetings|dear \w+|good (?:morning|afternoon|evening))(?:\s+there)?\s*[,!.:;]*"
    r"|(?:ok(?:ay)?|so|well|quick q)(?:\s*[,!.:;]+|\s+-(?=\s)))\s*)+",
    re.IGNORECASE,
)
_THANKS = re.compile(r"[\s,.!]*\b(?:thanks?(?: you)?(?: (?:so|very) much)?|thx|cheers)\b[\s.!]*$", re.IGNORECASE)
_POLITE = re.compile(r"\b(?:please|pls|kindly)\b[,]?\s*", re.IGNORECASE)
_REPEATED_PUNCTUATION = re.compile(r"([?!.])\1+")


def _script_letters(token: str) -> tuple[int, int]:
    """(Latin letters, letters of other scripts) in a token."""
    latin = other = 0
    for char in token:
        if char.isalpha():
            if "LATIN" in unicodedata.name(char, ""):
                latin += 1
            else:
                other += 1
    return latin, other


def _stray(token: str) -> bool:
    """A token that carries no word: a lone accented letter, a symbol, an emoji."""
    core = token.strip("?!.,;:\"'()[]")
    if not core:
        return False
    if len(core) == 1 and not core.isascii():
        return True
    return not any(c.isalnum() for c in core) and not core.isascii()


def clean_question(question: str) -> str:
    """The question without greetings, "please", thanks, stray characters and foreign-script words.

    Words in another script are dropped only around a question written mostly in Latin letters;
    a question wholly in another language is left as it is.
    """
    text = unicodedata.normalize("NFC", question).strip()
    tokens = text.split()
    latin = sum(_script_letters(t)[0] for t in tokens)
    other = sum(_script_letters(t)[1] for t in tokens)
    if latin > other:
        tokens = [t for t in tokens if _script_letters(t)[1] == 0 or _script_letters(t)[0] > 0]
    tokens = [t for t in tokens if not _stray(t)]
    text = " ".join(tokens)
    stripped = _THANKS.sub("", _POLITE.sub("", _GREETING.sub("", text))).strip()
    text = stripped or text
    text = _REPEATED_PUNCTUATION.sub(r"\1", text)
    return text[:1].upper() + text[1:] if text else question.strip()


# --- focus --------------------------------------------------------------------------------------

# Words that frame a question rather than say what it is about. MiniLM was trained on
# statement pairs and scores "Which papers make attention cheaper?" 0.15 against the MoH
# abstract but "make attention cheaper" 0.41, so the frame is dropped before embedding.
_FRAME = re.compile(
    r"\b(which|what|who|whom|whose|where|when|why|how|is|are|was|were|does|do|did|has|have|had|can|could|"
    r"there|any|anyone|someone|somebody|papers?|works?|studies|study|articles?|approaches|methods|"
    r"in the (corpus|collection)|in this (corpus|collection)|this corpus|the corpus|the collection|"
    r"tell me|show me|give me|find|about|and how|and why|please)\b",
    re.IGNORECASE,
)


def question_focus(question: str) -> str:
    """The question without its framing words ("Which papers ...", "Is there work on ..."),
    for embedding; the question itself when nothing would be left.

    Applied to statements too: measured per query type (`eval/fusion_study.py`), it helps dense
    retrieval on questions and moves it by at most 0.003 nDCG@10 on claims and titles."""
    focus = re.sub(r"\s+", " ", re.sub(r"[?,]", " ", _FRAME.sub(" ", question))).strip(" .")
    return focus if len(focus.split()) >= 2 else question


# --- type ---------------------------------------------------------------------------------------

_SUMMARY = re.compile(
    r"^\s*(summari[sz]e|sum up|tl;?dr|give (me )?(a |an )?(short |brief )?(summary|overview)|overview of|"
    r"what is (the paper |the work )?.{1,60} about\??$)",
    re.IGNORECASE,
)
_COMPARISON = re.compile(
    r"\b(compare|comparing|comparison|contrast|versus|vs\.?|differences?|differ|side by side|"
    r"(make|give|build|draw) (me )?a table|in a table|table of|tabulate)\b",
    re.IGNORECASE,
)
_COLLECTION = re.compile(
    r"\b((which|what|list|name|find|show|any|all|other|more) (me )?(the |all |of the )?"
    r"(papers|works|studies|articles|publications|approaches|methods|abstracts)\b|"
    r"\b(publish(ed)?|authored|wrote)\b|^\s*anything (from|by|on)\b|"
    r"^\s*(list|enumerate|find|show me|give me|papers|works)\b|"
    r"\bpapers (on|about|that|which|using|from|by|in|with|at|dealing|addressing|proposing|studying)\b|"
    r"^\s*(are there|is there any (other )?(papers|work|research))\b|"
    r"\b(what|which) (work|research|literature|prior work) (is|exists|has been done)\b)",
    re.IGNORECASE,
)
_RESULT = re.compile(
    r"\b(how (much|many|large|big|fast|well|accurate|good)|by how|what (is|was|were|are) the (reported |main |best )?"
    r"(accuracy|error|regret|speed-?up|score|performance|improvement|results?|gain|bound|rate|complexity)|"
    r"results?|report(s|ed)?|achieves?|outperforms?|percent|percentage|numbers?|figures?|"
    r"improvements?|gains?|speed-?ups?|what (accuracy|error|regret|score|bound|rate)|"
    r"(experiments?|evaluations?|ablations?|empirical (studies|results)) (show|showed|find|found|reveal|demonstrate)|"
    r"what (is|are|was|were) the (\w+ )?(benefits?|advantages?|effects?|impact|findings?|conclusions?|outcomes?|implications?)|"
    r"(show|reveal|say|tell us|suggest|imply) about)\b|%|"
    r"^\s*what\b.{0,120}\b(did|do|does|have|has)\b.{0,120}\b(show|find|reveal|demonstrate|discover|recover|observe)\W*$",
    re.IGNORECASE,
)
_HOW = re.compile(
    r"(^\s*(how|why)\b|\b(how (does|do|did|can|could|is|are|was|were|would|to)|why|in what way|what makes|"
    r"what (is|was) the (idea|mechanism|trick|reason|key idea|intuition)|mechanism|what allows|what enables|"
    r"rel(y|ies|ied) on|by what means|key (idea|insight|ingredient)|what motivate[sd]?)\b|"
    r"\band how\b)",
    re.IGNORECASE,
)
_YES_NO = re.compile(r"^\s*(is|are|does|do|did|can|could|has|have|was|were|should|will|would)\b(?! there\b)", re.I)
_SELECTION = re.compile(r"\b(these|those|the selected|the filtered|them|they)\b( papers| works| ones)?", re.I)


# How a question or a request opens; a text that neither opens so nor has a question mark is a
# statement ("0-dimensional biomaterials lack inductive properties.", a title, keywords).
_ASKING = re.compile(
    r"^\W*(who|whom|whose|what|what's|which|when|where|why|how|is|are|was|were|do|does|did|can|could|should|"
    r"would|will|has|have|had|may|might|list|show|find|give|name|tell|compare|contrast|summari[sz]e|sum|explain|"
    r"describe|enumerate|make|build|draw|tabulate|search|look|papers|works|any|anything|please)\b",
    re.IGNORECASE,
)


def is_statement(text: str) -> bool:
    # Each clause counts: "MoH: how does it work" asks.
    return "?" not in text and not any(_ASKING.search(clause) for clause in re.split(r"[:;,]", text))


def question_type(text: str, *, names_measure: bool = False) -> tuple[QuestionType, bool]:
    """The question's type, and whether it also asks how (a collection "..., and how?").

    `names_measure`: the question names what a result is measured in ("What ImageNet top-1
    accuracy ..."), which makes a what/which question a result question."""
    asks_how = bool(_HOW.search(text))
    if _SUMMARY.search(text):
        return QuestionType.SUMMARY, asks_how
    if _COMPARISON.search(text):
        return QuestionType.COMPARISON, asks_how
    if _COLLECTION.search(text):
        return QuestionType.COLLECTION, asks_how
    result = _RESULT.search(text) or (names_measure and re.match(r"\s*(what|which)\b", text, re.I))
    if result and not re.match(r"\s*(how|why) (does|do|did|is|are|can)\b", text, re.I):
        return QuestionType.RESULT, asks_how
    if asks_how:
        return QuestionType.HOW, True
    if result:
        return QuestionType.RESULT, asks_how
    if _YES_NO.search(text):
        return QuestionType.YES_NO, asks_how
    return QuestionType.LOOKUP, asks_how


# --- stated filters -----------------------------------------------------------------------------

_YEAR = r"(19[5-9]\d|20\d\d)"
_YEAR_RANGE = re.compile(rf"\b(?:from|between)\s+{_YEAR}\s+(?:to|and|until|-|–)\s+{_YEAR}\b|\b{_YEAR}\s*[-–]\s*{_YEAR}\b", re.I)
_YEAR_FROM = re.compile(rf"\b(?:since|from|after|as of|starting(?: in)?)\s+{_YEAR}(?:\s+on(?:wards?)?)?\b", re.I)
_YEAR_TO = re.compile(rf"\b(?:before|until|up to|prior to|through)\s+{_YEAR}\b", re.I)
_YEAR_IN = re.compile(rf"\b(?:in|of|from|during)\s+{_YEAR}\b", re.I)
_NAME = r"[A-Z][\w'’\-]+(?:\s+[A-Z][\w'’\-]+){0,2}"
# "by Yuan", "Yuan et al.", "Yuan's group", "whose family name is Li", "surnamed Li": an author.
# Not "of X" or "from X" alone, which name datasets and models as often ("of Gemma 2B").
_AUTHOR_BY = re.compile(rf"\b(?:by|authored by|written by)\s+(?P<name>{_NAME})(?!\s+or\b)")
_ET_AL = re.compile(rf"\b(?P<name>{_NAME})(?:\s+et al\.?|['’]s\s+(?:group|lab|team|papers?))")
_SURNAME = re.compile(
    r"\b(?:family name|surname|last name)\s+(?:is\s+)?(?P<name>[A-Z][\w'’\-]+)(?!\s+or\b)|\bsurnamed\s+(?P<name2>[A-Z][\w'’\-]+)(?!\s+or\b)"
)


def _venue_filter(text: str, venues: Iterable[str]) -> tuple[str | None, str]:
    """The venue a question names ("at ICML 2025", "COLT papers"), and the text without it.

    Two years of one venue ("AutoML 2023 or AutoML 2024") filter by the venue's name; two
    different venues are no one filter, and stay in the text."""
    bases: dict[str, set[str]] = {}
    for venue in venues:
        base = re.sub(r"\s*\b(19|20)\d\d\b\s*", " ", venue).strip()
        if base:
            bases.setdefault(base, set()).add(venue)
    found: list[tuple[str, re.Match]] = []
    for base in sorted(bases, key=len, reverse=True):
        # Case-sensitive: venue names are written as acronyms ("COLT", "CoRL"), and "www" or "rss"
        # in lower case are words, not venues.
        pattern = rf"(?:\b(?:at|in|from|of|for)\s+(?:the\s+)?)?\b{re.escape(base)}\b(?:['’]?\s*(?P<year>(19|20)?\d\d)\b)?"
        found += [
            (base, m)
            for m in re.finditer(pattern, text)
            if not any(m.start() < o.end() and o.start() < m.end() for _, o in found)
        ]
    if not found or len({base for base, _ in found}) > 1:
        return None, text
    base = found[0][0]
    years = {("20" + m["year"] if len(m["year"]) == 2 else m["year"]) for _, m in found if m["year"]}
    venue = f"{base} {years.pop()}" if len(years) == 1 and len(found) == 1 else base
    for _, match in sorted(found, key=lambda f: -f[1].start()):
        text = text[: match.start()] + " " + text[match.end() :]
    return venue, re.sub(r"\b(or|and)\s+(?=papers?\b|\W|$)", "", text)


def _author_filter(text: str, authors: Iterable[str]) -> tuple[str | None, str]:
    names = [a.casefold() for a in authors]
    for pattern in (_AUTHOR_BY, _ET_AL, _SURNAME):
        for match in pattern.finditer(text):
            name = match.group("name") or match.groupdict().get("name2")
            if not name:
                continue
            wanted = name.casefold()
            if any(re.search(rf"(^|\s){re.escape(wanted)}($|\s)", a) for a in names):
                return name, (text[: match.start()] + " " + text[match.end() :])
    return None, text


def _year_filter(text: str) -> tuple[int | None, int | None, str]:
    for pattern, kind in ((_YEAR_RANGE, "range"), (_YEAR_FROM, "from"), (_YEAR_TO, "to"), (_YEAR_IN, "in")):
        match = pattern.search(text)
        if not match:
            continue
        years = [int(y) for y in match.groups() if y]
        rest = text[: match.start()] + " " + text[match.end() :]
        word = match.group(0).split()[0].casefold()
        if kind == "range":
            return min(years), max(years), rest
        if kind == "from":
            return years[0] + (1 if word == "after" else 0), None, rest
        if kind == "to":
            return None, years[0] - (0 if word in ("until", "through", "up") else 1), rest
        return years[0], years[0], rest
    return None, None, text


def stated_filters(text: str, profile: CorpusProfile) -> tuple[Filters, str]:
    """The filters a question states and the question without them."""
    venue, text = _venue_filter(text, profile.venues)
    author, text = _author_filter(text, profile.authors)
    # A year filters only a corpus that records years (a BEIR corpus does not), and not when the
    # venue named already has one ("ICML 2025").
    dated = profile.years and not (venue and re.search(r"\d{4}$", venue))
    year_min, year_max, text = _year_filter(text) if dated else (None, None, text)
    text = re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    return Filters(venue=venue, author=author, year_min=year_min, year_max=year_max), text


# --- key terms ----------------------------------------------------------------------------------

# Words that ask rather than say what about: the question frame, requests, and words every
# research question uses ("paper", "method", "propose"). Their weight is nil.
_GENERIC = frozenset(
    [
        "which",
        "what",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "does",
        "do",
        "did",
        "has",
        "have",
        "had",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "there",
        "any",
        "anyone",
        "someone",
        "somebody",
        "all",
        "each",
        "every",
        "other",
        "others",
        "some",
        "such",
        "many",
        "much",
        "paper",
        "papers",
        "work",
        "works",
        "study",
        "studies",
        "article",
        "articles",
        "publication",
        "publications",
        "research",
        "researcher",
        "researchers",
        "approach",
        "approaches",
        "method",
        "methods",
        "technique",
        "techniques",
        "way",
        "ways",
        "idea",
        "ideas",
        "corpus",
        "collection",
        "propose",
        "proposes",
        "proposed",
        "proposing",
        "present",
        "presents",
        "presented",
        "introduce",
        "introduces",
        "introduced",
        "new",
        "novel",
        "use",
        "uses",
        "used",
        "using",
        "based",
        "via",
        "get",
        "gets",
        "getting",
        "make",
        "makes",
        "made",
        "making",
        "do",
        "doing",
        "done",
        "tell",
        "show",
        "give",
        "find",
        "list",
        "name",
        "explain",
        "describe",
        "summarize",
        "summarise",
        "summary",
        "overview",
        "compare",
        "comparison",
        "difference",
        "differences",
        "differ",
        "versus",
        "vs",
        "table",
        "side",
        "please",
        "know",
        "like",
        "want",
        "need",
        "also",
        "still",
        "just",
        "only",
        "me",
        "my",
        "we",
        "our",
        "us",
        "you",
        "your",
        "they",
        "them",
        "their",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "one",
        "ones",
        "thing",
        "things",
        "kind",
        "between",
        "among",
        "across",
        "within",
        "without",
        "about",
        "into",
        "onto",
        "from",
        "over",
        "under",
        "than",
        "then",
        "so",
        "very",
        "really",
        "main",
        "key",
        "actually",
        "exactly",
        "specifically",
        "particular",
        "general",
        "overall",
        "recent",
        "recently",
        "existing",
        "current",
        "author",
        "authors",
        "et",
        "al",
        "anything",
        "something",
        "everything",
        "lot",
        "lots",
        "what's",
        "thx",
        "whether",
        "rather",
        "instead",
        "learn",
        "learns",
        "learned",
        "learning",
        "data",
        "train",
        "trains",
        "trained",
        "training",
        "performance",
        "perform",
        "performs",
        "according",
        "deal",
        "goes",
        "go",
        "going",
        "come",
        "comes",
        "look",
        "looks",
        "kind",
        "sort",
        "help",
        "helps",
        "try",
        "tries",
        "tried",
        "set",
        "setting",
        "settings",
        "case",
        "cases",
        "problem",
        "problems",
        "task",
        "tasks",
        "result",
        "results",
        "track",
        "tracks",
        "sub-track",
        "category",
        "categories",
        "area",
        "areas",
        "field",
        "fields",
        "topic",
        "topics",
        "family",
        "name",
        "names",
        "starts",
        "start",
        "filed",
        "discussed",
        "discuss",
        "mentioned",
        "mention",
        "regarding",
        "concerning",
        "involving",
        "involve",
        "involves",
        "model",
        "models",
        "proposed",
        "framework",
        "frameworks",
        "algorithm",
        "algorithms",
        "system",
        "systems",
        "here",
        "exist",
        "exists",
        "abstract",
        "abstracts",
        "publish",
        "published",
        "publication",
        "anything",
        "explicitly",
    ]
)
# What result questions ask to be reported as a number: a sentence that answers one must give
# one. (Regret, bounds or complexity are often stated without digits: they are plain terms.)
_MEASURES = frozenset(
    [
        "accuracy",
        "accuracies",
        "error",
        "errors",
        "speedup",
        "speed-up",
        "speedups",
        "latency",
        "throughput",
        "memory",
        "parameters",
        "flops",
        "runtime",
        "f1",
        "bleu",
        "rouge",
        "psnr",
        "ssim",
        "auc",
        "perplexity",
        "top-1",
        "top-5",
        "success",
        "rate",
        "rates",
        "score",
        "scores",
        "improvement",
        "improvements",
        "gain",
        "gains",
        "percent",
        "percentage",
        "reduction",
        "precision",
        "recall",
        "ndcg",
        "mrr",
        "iou",
        "fid",
        "wer",
        "mae",
        "mse",
        "rmse",
    ]
)
_COMPARATIVES = frozenset(
    [
        "cheaper",
        "cheapest",
        "faster",
        "fastest",
        "better",
        "best",
        "larger",
        "largest",
        "smaller",
        "smallest",
        "higher",
        "highest",
        "lower",
        "lowest",
        "fewer",
        "more",
        "less",
        "easier",
        "harder",
        "stronger",
        "weaker",
        "simpler",
        "longer",
        "shorter",
        "quicker",
        "slower",
        "greater",
        "wider",
        "efficiently",
        "quickly",
        "cheaply",
        "easily",
        "accurately",
        "robustly",
        "effectively",
    ]
)
# A word of a question, hyphenated compounds and names with digits kept whole ("top-1",
# "LLaMA3-8B", "Flat-LoRA").
_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*")
_POSSESSIVE = re.compile(r"(?:'s|’s|s'|s’)$|(?:-(?:style|like|based|type|track|level|wise|specific))+$", re.IGNORECASE)


# A capitalised word of the corpus's categories weighs at least this much (see key_terms).
CATEGORY_WEIGHT = 0.6


@lru_cache(maxsize=65536)
def english_zipf(word: str) -> float:
    """The word's frequency in English at large on the Zipf scale (wordfreq): 7 for "the", 0 unknown."""
    from wordfreq import zipf_frequency

    return zipf_frequency(word.casefold(), "en")


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
    return {w for w in words if not re.fullmatch(r"\w+(er|est)|more|less|fewer", w) or w in _MEASURES}


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
        key = not (lower in _GENERIC or lower in STOP_WORDS or not term_stems(word) or (len(word) < 3 and not is_entity(word)))
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
        if lower in _COMPARATIVES:
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
                    measure=lower in _MEASURES or lower in counted,
                    group=group,
                    run=number,
                )
            )
    phrases = tuple(" ".join(_POSSESSIVE.sub("", m.group()) for m in run) for run in runs if len(run) >= 2)
    ordered = sorted(terms.values(), key=lambda t: -t.weight)
    return tuple(ordered), phrases


_NAME_TOKEN = re.compile(r"[^\s,;:!?()\[\]\"“”]+")


def _names_used(text: str, names: Mapping[str, str]) -> list[str]:
    """The papers' short names the question uses ("MoH", "Flat-LoRA"), as written: a lookup of
    the question's one- to three-word spans, so it costs the same for 20 names or 20,000."""
    tokens = [t.strip(".'’") for t in _NAME_TOKEN.findall(text)]
    tokens = [re.sub(r"['’]s$", "", t) for t in tokens]
    spans = (" ".join(tokens[start : start + size]) for size in (3, 2, 1) for start in range(len(tokens) - size + 1))
    return list(dict.fromkeys(span for span in spans if span in names))


def _named_papers(text: str, names: Mapping[str, str]) -> tuple[str, ...]:
    """The papers whose short name the question uses."""
    return tuple(dict.fromkeys(names[name] for name in _names_used(text, names)))


# --- follow-ups joined to the question they follow up on --------------------------------------

# How `rag.answering.followup` joins a follow-up that leans on the last question to it, when no
# rule or model makes it standalone; read back here, so the joining words are never key terms.
_CONTEXT_MARK = " (following up on: "
# A comparison of two sides: "compare X to / with / and Y", "the difference between X and Y", "X
# versus Y", "is X faster than Y" ("rather than", "other than" compare nothing).
_SIDES = re.compile(
    r"\b(?:compar|contrast|differ)\w*\b.*\b(?:to|with|and|from|against)\b|\b(?:versus|vs)\b"
    r"|\b(?!(?:rather|other)\b)(?:\w+er|more|less|worse)\s+than\b",
    re.IGNORECASE,
)
# Only comparisons and yes/no questions are read as two sides, and answered as comparisons ("Is
# X better than the bandits work?" is answered by each side's own sentences): "How much faster
# is X than Y?" asks for X's result, and "Y" is what X's abstract should name.
_TWO_SIDED = (QuestionType.COMPARISON, QuestionType.YES_NO)
# A side is a topic when a term this specific names it ("bandits"), not a wish ("faster").
_SIDE_WEIGHT = 0.5
_QUOTED_TITLE = re.compile(r'"[^"\n]*"|“[^”\n]*”')


def with_context(question: str, context: str) -> str:
    """The follow-up `question` joined to the real question it follows up on."""
    return f"{question}{_CONTEXT_MARK}{context})"


def split_context(text: str) -> tuple[str, str]:
    """A question's own words and the real question it follows up on ("" when it follows up on
    none). Records saved before follow-ups stopped nesting may join several: the innermost is the
    real question."""
    own, mark, rest = text.partition(_CONTEXT_MARK)
    if not mark or not rest.endswith(")"):
        return text, ""
    inner = rest[:-1]
    return own, split_context(inner)[1] or inner


def _names_a_topic(terms: Sequence[KeyTerm]) -> bool:
    return any(not t.measure and t.weight >= _SIDE_WEIGHT for t in terms)


def _either_side(topic: Sequence[KeyTerm], other: Sequence[KeyTerm]) -> tuple[KeyTerm, ...]:
    """A comparison's two sides as alternatives, so a paper about either side meets the question
    and neither is missing from the other's papers: the other side's terms, as one run, join the
    group of the topic's heaviest term."""
    side = max((t for t in topic if not t.measure), key=lambda t: t.weight).group
    run = max(t.run for t in topic) + 1
    said = {t.stems for t in topic}
    joined = [*topic, *(t.model_copy(update={"group": side, "run": run}) for t in other if t.stems not in said)]
    return tuple(sorted(joined, key=lambda t: -t.weight))


def _paper_and_topic(text: str, kind: QuestionType, profile: CorpusProfile) -> tuple[tuple[KeyTerm, ...], tuple[str, ...]] | None:
    """The terms and phrases of a comparison of the one paper it names (by short name or quoted
    title) with a topic ("How does MoH compare to the bandits work?"), the two as either side;
    None for any other question."""
    if kind not in _TWO_SIDED or not _SIDES.search(text) or len(_named_papers(text, profile.names)) != 1:
        return None
    quoted = _QUOTED_TITLE.findall(text)
    rest = _QUOTED_TITLE.sub(" ", text)
    names = _names_used(rest, profile.names)
    for name in names:
        rest = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", " ", rest)
    topic, topic_phrases = key_terms(rest, profile)
    if not _names_a_topic(topic):
        return None
    paper, paper_phrases = key_terms(" ".join([*quoted, *names]), profile)
    return _either_side(topic, paper), topic_phrases + paper_phrases


def _follow_up(question: str, own: str, context: str, profile: CorpusProfile) -> QuestionAnalysis:
    """A follow-up joined to the question it follows up on. What it asks (its type, the premise
    it states) is read from its own words; what it is about from both, searched together. One
    that compares what it leans on with something it names ("How does this compare to the
    bandits work?") has two sides, and a paper about either side meets it: neither is missing
    from the other's papers."""
    asked, earlier = analyze(own, profile), analyze(context, profile)
    kind, asks_how = (earlier.type, earlier.asks_how) if asked.type == QuestionType.LOOKUP else (asked.type, asked.asks_how)
    search_text = f"{asked.search_text} {earlier.search_text}"
    if asked.type in _TWO_SIDED and _SIDES.search(asked.cleaned) and _names_a_topic(asked.terms):
        terms, phrases = _either_side(asked.terms, earlier.terms), asked.phrases + earlier.phrases
        kind = QuestionType.COMPARISON
    else:
        terms, phrases = key_terms(search_text, profile)
    return QuestionAnalysis(
        question=question,
        cleaned=asked.cleaned,
        search_text=search_text,
        focus=question_focus(search_text),
        type=kind,
        asks_how=asks_how,
        terms=terms,
        phrases=phrases,
        filters=asked.filters if asked.filters.active else earlier.filters,
        named_papers=tuple(dict.fromkeys(earlier.named_papers + asked.named_papers)),
        about_selection=asked.about_selection,
        statement=asked.statement,
    )


def analyze(question: str, profile: CorpusProfile = CorpusProfile()) -> QuestionAnalysis:
    """Everything the answering stages need to know of a question (see the module docstring)."""
    own, context = split_context(question)
    if context:
        return _follow_up(question, own, context, profile)
    cleaned = clean_question(question)
    filters, search_text = stated_filters(cleaned, profile)
    if not search_text.strip(" ?.!"):
        search_text = cleaned
    terms, phrases = key_terms(search_text, profile)
    # Read without its stated filters ("Which AutoML 2023 papers ..." asks "Which papers ..."), and
    # as asked when that says more ("papers since 2023 on bandits").
    names_measure = any(t.measure for t in terms)
    kind, asks_how = question_type(search_text, names_measure=names_measure)
    if kind == QuestionType.LOOKUP:
        kind, asks_how = question_type(cleaned, names_measure=names_measure)
    two_sided = _paper_and_topic(search_text, kind, profile)
    if two_sided:
        (terms, phrases), kind = two_sided, QuestionType.COMPARISON
    return QuestionAnalysis(
        question=question,
        cleaned=cleaned,
        search_text=search_text,
        focus=question_focus(search_text),
        type=kind,
        asks_how=asks_how,
        terms=terms,
        phrases=phrases,
        filters=filters,
        named_papers=_named_papers(search_text, profile.names),
        # "these papers", or a question all of whose content is a filter ("papers by Yuan").
        about_selection=bool(_SELECTION.search(search_text)) or (filters.active and not terms),
        statement=is_statement(cleaned),
    )
