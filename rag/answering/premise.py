"""What a question takes for granted, restated: the premise an answer that contradicts it names.

"Why does MoH need more parameters?" takes for granted that MoH needs more parameters; when an
abstract says otherwise (`rag.answering.forms.correction`), the answer names that premise in the
question's own words before quoting the sentence that contradicts it. No parser: the question's
opening is dropped and, for "does X V ...", the verb made to agree with X.
"""

from __future__ import annotations

import re

__all__ = ["has_premise", "stated_premise"]


# How a question that takes something for granted opens: "Why does X need ...", "How much does X
# slow ...", "What makes X require ...". The rest is its premise, once its verb agrees with X.
_PREMISE_OPENING = re.compile(
    r"^\s*(?:(?:so|but|then),?\s+)?(?:why|how come|how (?:much|many|far|often|badly|long)(?:\s+(?P<object>(?!does|do|did|is|are|was|were)[\w-]+))?|"
    r"how|in what way|(?P<makes>what (?:makes|made|causes|caused|forces|forced))|given that|since)\s+"
    r"(?P<aux>does|do|did|is|are|was|were|can|could|would|should|has|have)?\b\s*",
    re.IGNORECASE,
)
_IRREGULAR = {"do": "does", "go": "goes", "have": "has", "be": "is"}
# Verbs a premise is built on after a lowercase subject ("the SAM inner loop slow ..."), where the
# subject's end cannot be told from capitals.
_PREMISE_VERBS = frozenset(
    [
        "need",
        "require",
        "use",
        "rely",
        "call",
        "slow",
        "hurt",
        "fail",
        "work",
        "get",
        "make",
        "take",
        "lose",
        "beat",
        "outperform",
        "improve",
        "increase",
        "reduce",
        "achieve",
        "ignore",
        "retrain",
        "train",
        "compute",
        "run",
        "cost",
        "depend",
        "assume",
        "break",
        "degrade",
        "drop",
        "discard",
        "treat",
        "add",
        "double",
        "halve",
        "store",
        "keep",
        "apply",
        "learn",
        "predict",
        "produce",
        "generate",
        "sample",
        "query",
        "scale",
        "grow",
        "cause",
        "force",
        "limit",
        "restrict",
        "give",
        "show",
        "prove",
        "say",
        "claim",
        "report",
        "find",
        "perform",
        "handle",
        "support",
    ]
)


def _third_person(verb: str) -> str:
    lower = verb.casefold()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    if re.search(r"(s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    return verb + "s"


def _subject_end(words: list[str]) -> int:
    """How many of `words` make the premise's subject: a run of names ("MoH", "Flat-LoRA", "The
    DragSolver model"), or a lowercase phrase up to a verb of `_PREMISE_VERBS`; 0 if unknown."""
    if words[0][:1].isupper() and words[0].casefold() not in ("the", "its", "their", "a", "an"):
        end = 1
        while end < len(words) - 1 and (words[end][:1].isupper() or any(c.isdigit() for c in words[end])):
            end += 1
        return end
    for end in range(1, min(6, len(words) - 1) + 1):
        if words[end].casefold() in _PREMISE_VERBS:
            return end
    return 0


# "How many paired examples does MATS need to train ...": what is counted, who, and the rest.
_COUNTED = re.compile(r"^\s*how (?:many|much) (?P<object>.+?) (?:does|do|did) (?P<rest>.+)$", re.I)


# "How many heads does MoH use?": a count asked for, whose premise only the verifier could deny and
# which it denies wrongly more often than rightly (issue 35's sets): no premise, unless a change is
# counted ("how much does it slow ...", "how many more ...").
_COUNT = re.compile(r"^\s*how (?:many|much)\b(?!\s+(?:more|less|fewer|faster|slower|worse|better)\b)", re.I)
_CHANGE = re.compile(r"\b(?:slow|hurt|cost|reduce|increase|improve|degrade|drop|lose|double|halve)s?\b", re.I)


# "In the bandits paper, why ...": where the question is, said before it.
_CONTEXT = re.compile(r"^(?:in|for|about|regarding|with)\b[^,?]{0,120},\s*", re.I)


def has_premise(question: str) -> bool:
    """Whether the question takes something for granted that an abstract could contradict: it
    asks why, how something it states is done, or a change it counts, or says "since"/"given that"
    (the forms `stated_premise` restates). "What does MoH use?" and "How many heads does MoH use?"
    ask, and take nothing for granted that the answer should correct."""
    text = _CONTEXT.sub("", question.strip(), count=1)
    if _PREMISE_OPENING.match(text) is None:
        return False
    return not (_COUNT.match(text) and not _CHANGE.search(text))


def _split(words: list[str], end: int) -> tuple[list[str], list[str], str, list[str]]:
    """The subject (`words[:end]`), the adverbs before its verb ("actually", "still"), the verb and the rest."""
    verb = end
    while verb < len(words) - 1 and (
        words[verb].casefold().endswith("ly") or words[verb].casefold() in ("still", "also", "even")
    ):
        verb += 1
    return words[:end], words[end:verb], words[verb], words[verb + 1 :]


def stated_premise(question: str) -> str:
    """What a question takes for granted, as a statement in its own words: "Why does MoH need
    more parameters?" -> "MoH needs more parameters". Where the subject's end cannot be told, the
    question's words after its opening, as asked."""
    text = question.strip().rstrip("?").strip()
    opening = _PREMISE_OPENING.match(text)
    if opening is None:
        return text
    counted = _COUNTED.match(text)
    if counted:
        # "How many paired examples does MATS need to train" -> "MATS needs paired examples to train".
        words = counted["rest"].split()
        end = _subject_end(words) if len(words) >= 2 else 0
        if end:
            subject, adverbs, verb, rest = _split(words, end)
            return " ".join([*subject, *adverbs, _third_person(verb), counted["object"], *rest])
    clause = text[opening.end() :]
    if re.match(r"\s*(?:so|but|then)?,?\s*(?:given that|since)\b", text, re.I):
        # "Since X does Y, how ...?": the premise is the clause before the question.
        clause = clause.split(",", 1)[0]
    words = clause.split()
    # "What makes X ignore ..." asks why X does.
    aux = "does" if opening["makes"] else (opening["aux"] or "").casefold()
    end = _subject_end(words) if len(words) >= 2 else 0
    if not end or not aux:
        return " ".join(words)
    subject, adverbs, verb, rest = _split(words, end)
    subject = [*subject, *adverbs]
    if opening["object"]:
        # "How many GPUs does MATS need": what is counted is what the verb takes.
        rest = [opening["object"], *rest]
    if aux == "does":
        return " ".join([*subject, _third_person(verb), *rest])
    if aux in ("do", "did"):
        return " ".join(words)
    # "Why is MoH slower": the verb goes after the subject.
    return " ".join([*subject, aux, verb, *rest])
