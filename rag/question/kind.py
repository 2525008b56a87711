"""What kind of question it is: the question cleaned of what does not change what it asks, its
focus (what the embedding model matches), and its type from its wording."""

from __future__ import annotations

import re
import unicodedata

from rag.records import QuestionType

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
    # "table of" asks for one only when it opens the question: "a huge table of values" is a matrix.
    r"(make|give|build|draw) (me )?a table|in a table|^\s*table of|tabulate)\b|"
    # Compare, contrast, the difference, in Chinese.
    r"比较|对比|区别|差异",
    re.IGNORECASE,
)
_COLLECTION = re.compile(
    r"\b((which|what|list|name|find|show|any|all|other|more) (me )?(the |all |of the )?"
    r"(papers|works|studies|articles|publications|approaches|methods|abstracts)\b|"
    r"\b(publish(ed)?|authored|wrote)\b|^\s*anything (from|by|on)\b|"
    r"^\s*(list|enumerate|find|show me|give me|papers|works)\b|"
    r"\bpapers (on|about|that|which|using|from|by|in|with|at|dealing|addressing|proposing|studying)\b|"
    r"^\s*(are there|is there any (other )?(papers|work|research))\b|"
    r"\b(what|which) (work|research|literature|prior work) (is|exists|has been done)\b|"
    # Which papers, list the papers, all the papers on, in Chinese.
    r"哪些|列出|列举|所有.{0,12}(论文|工作|文章|研究))",
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
    r"\band how\b|"
    # The same in Chinese: how, in what way, why, what mechanism.
    r"怎么|怎样|如何|为什么|为何|什么原理|什么机制)",
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


def about_selection(text: str) -> bool:
    """The question asks of the papers already selected ("these papers", "them")."""
    return bool(_SELECTION.search(text))


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
