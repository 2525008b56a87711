"""The answer to a question whose premise an abstract contradicts: that sentence, first.

"Why does MoH need more parameters?" is not answered with quotes about MoH's efficiency that
leave the assumption standing: the answer names the premise and quotes the sentence that says
otherwise ("Not so: the question takes for granted that MoH needs more parameters, but **MoH**'s
abstract says otherwise: “… without … increasing the number of parameters.” [1]"), then the
paper's sentence that best answers what is left of the question, if one does. The wording lives in
prompts/contradicted.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from rag.answering.answerability import Bars
from rag.answering.forms.writing import label, quote
from rag.answering.request import AnswerRequest
from rag.markup import escape_markdown
from rag.models.prompts import load_prompt

__all__ = ["write_correction"]

# A further sentence of the paper follows the correction when the verifier gives it this much.
_FOLLOW = 0.5


def write_correction(request: AnswerRequest) -> Iterator[str]:
    found = request.evidence.contradicting(Bars().premise_papers)
    if found is None:
        return
    paper, sentence = found
    language = request.analysis.language
    premise = escape_markdown(request.answerability.premise.rstrip(" .")) or load_prompt("premise_fallback", language=language)
    opening = load_prompt("contradicted", language=language).format(premise=premise, name=label(paper.paper))
    yield opening + " " + quote(sentence.text, paper.number)
    further = max(
        (s for s in paper.quotable() if s.position != sentence.position and (s.answers or 0.0) >= _FOLLOW),
        key=lambda s: s.answers or 0.0,
        default=None,
    )
    if further is not None:
        yield f" {label(paper.paper)} also says: {quote(further.text, paper.number)}"
