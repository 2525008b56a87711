"""What each sentence of an abstract does: state the problem, the method, the data, a result.

Abstracts follow a known arc (Swales' moves: background and gap, purpose, method, results,
conclusion), and their sentences say which move they make in a few recurring words. The cues
below score each role from 0 to 1; answer forms read them to choose the sentence that says how
(method), what was found (result), or, for a summary, problem, method and result in that order.
Pure logic over one sentence and its place in the abstract.
"""

from __future__ import annotations

import re
from enum import StrEnum

from rag.markup import terminal_safe

__all__ = ["NUMBER", "Role", "is_boilerplate", "is_outlook", "role_scores"]


class Role(StrEnum):
    PROBLEM = "problem"
    METHOD = "method"
    DATA = "data"
    RESULT = "result"
    REASON = "reason"  # says why: a cause, a consequence, a limitation


_PROBLEM = re.compile(
    r"\b(challeng\w*|problem\w*|however|struggl\w*|limit(ed|ation\w*)|remains?|lack\w*|gap|expensive|costly|"
    r"impractical|suffer\w*|fail\w*|overlook\w*|elusive|vulnerable|bottleneck\w*|difficult\w*|hinder\w*|"
    r"prohibitive\w*|under-?explored|less well understood|demand\w*|important|pivotal|significant attention)\b",
    re.IGNORECASE,
)
_METHOD_LEAD = re.compile(
    r"\b(we|this (paper|work)|our (method|approach|framework|model))\s+(first\s+|further\s+|then\s+)?"
    r"(propose|introduce|present|develop|design|employ|leverage|use|adopt|construct|formulate|build|devise)",
    re.IGNORECASE,
)
_MECHANISM = re.compile(
    r"\b(enables?|allows?|by (leverag|us|introduc|combin|learn|model|treat|select|merg|project|embed|map|replac|"
    r"generat|estimat|decoupl|optimiz|reparametriz|focus)\w*|via|based on|leverag\w*|combin\w*|treats?|"
    r"replaces?|represent\w*|consists?|relies on|instead of|select\w*|merg\w*|projects?|maps?|embeds?|"
    r"guid\w*|reparametri[sz]\w*|regulari[sz]\w*|perturbation\w*|gating|stitch\w*|to address|in which|where each|"
    r"directly models?|captures?|integrat\w*|incorporat\w*)\b",
    re.IGNORECASE,
)
_DATA = re.compile(
    r"\b(datasets?|benchmarks?|corpus|corpora|experiments? (on|across|with)|evaluat\w* (on|across)|trained on|"
    r"tested on|images|pairs|samples|synthetic data|real-world data\w*|annotations?)\b",
    re.IGNORECASE,
)
_RESULT = re.compile(
    r"\b(outperform\w*|achiev\w*|state-of-the-art|improv\w*|surpass\w*|demonstrat\w*|show(s|n)? that|results?|"
    r"prove\w*|bounds?|regret|complexity|reduc\w*|gain\w*|effective\w*|superior\w*|competitive|establish\w*|"
    r"validat\w*|breakthrough|better|faster)\b",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(due to|because|since|as a result|owing to|lead(s)? to|leading to|caus\w*|hinder\w*|depend\w* on|may depend|"
    r"cannot|can not|fail\w*|lack\w*|suffer\w*|limit\w*|struggl\w*|so that|in order to|which (means|implies)|"
    r"insight that|key (idea|insight)|rel(y|ies) on|reveal\w*|ensur\w*)\b",
    re.IGNORECASE,
)
NUMBER = re.compile(r"\d+(\.\d+)?\s*(%|x\b|×|times\b)|\b\d+(\.\d+)?\b(?! ?\))")
# Outlook and belief: "We believe ...", "... may find utility beyond ...": no claim to quote.
_OUTLOOK = re.compile(
    r"\b(we believe|we hope|we envision|promising (alternative|direction)|may find utility|future work|in summary)\b", re.I
)
_LINK = re.compile(
    r"https?://|\bgithub\.com\b|\b(code|data|models?)( and \w+)?,? (is|are|will be) (publicly |made )?(available|released)|source code",
    re.I,
)


def is_boilerplate(sentence: str) -> bool:
    """A code-availability line: it matches a method's name but never answers anything. Read as
    shown: a link hidden in a terminal control sequence is not one a reader sees."""
    return bool(_LINK.search(terminal_safe(sentence)))


def is_outlook(sentence: str) -> bool:
    """A belief or an outlook ("We believe ...", "... may find utility beyond ..."): no answer."""
    return bool(_OUTLOOK.search(sentence))


def role_scores(sentence: str, position: int, count: int) -> dict[Role, float]:
    """How strongly the sentence at `position` (of `count`) plays each role, 0 to 1."""
    first = position == 0
    early = position < max(2, count // 3)
    late = position >= count - max(2, count // 3)
    numbers = bool(NUMBER.search(sentence))
    outlook = bool(_OUTLOOK.search(sentence))
    scores = {
        Role.PROBLEM: 0.5 * first
        + 0.3 * early
        + 0.4 * bool(_PROBLEM.search(sentence))
        - 0.3 * bool(_METHOD_LEAD.search(sentence)),
        Role.METHOD: 0.6 * bool(_METHOD_LEAD.search(sentence)) + 0.4 * bool(_MECHANISM.search(sentence)) - 0.2 * first,
        Role.DATA: 0.6 * bool(_DATA.search(sentence)) + 0.2 * numbers,
        Role.RESULT: 0.5 * bool(_RESULT.search(sentence)) + 0.3 * numbers + 0.2 * late - 0.2 * first,
        Role.REASON: 0.6 * bool(_REASON.search(sentence)) + 0.2 * bool(_PROBLEM.search(sentence)),
    }
    if outlook:
        scores = {role: value - 0.5 for role, value in scores.items()}
    return {role: max(0.0, min(1.0, value)) for role, value in scores.items()}
