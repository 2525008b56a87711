"""Score an earlier checkout's answers on a question set, with this checkout's metric definitions.

The "before" column of docs/evaluation.md's answer-form table: an earlier commit's `paperchat eval`
cannot read the new sets (halves, corpus headers) nor compute the new metrics, so its
`Assistant` answers the questions in a subprocess and this checkout scores them.

    git worktree add /tmp/before 14c9862
    python eval/score_checkout.py /tmp/before seed-unanswerable --split report
    python eval/score_checkout.py /tmp/before scale-collection --split report \\
        --data-dir ~/.local/share/paperchat/eval/scale_corpus

`--data-dir` is the index the questions are put to (default: the configured one; index the set's
corpus there first, as `paperchat eval --set` does).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.evaluation.evaluate import gold_citation_scores, same_sentence  # noqa: E402
from rag.evaluation.sets import load_question_set  # noqa: E402
from rag.text import tokenize_terms  # noqa: E402

# Run inside the earlier checkout: what its assistant answers, as JSON lines.
_ANSWER = """
import json, sys
from rag.answering.chain import Assistant
from rag.settings import Settings
from rag.index.store import Index
settings = Settings(backend="extractive", **({"data_dir": sys.argv[1]} if sys.argv[1] else {}))
assistant = Assistant(Index.open(settings), settings)
for line in sys.stdin:
    answer = assistant.ask(json.loads(line))
    cited = [{"paper": c.paper_id, "support": c.support} for c in answer.citations]
    coverage = answer.answerability.coverage.value if answer.answerability else "covered"
    print(json.dumps({"covered": answer.covered, "coverage": coverage, "cited": cited, "text": answer.text}), flush=True)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("set", help="a set's name in eval/sets, e.g. seed-collection")
    parser.add_argument("--split", help="calibration or report")
    parser.add_argument("--data-dir", default="")
    args = parser.parse_args(argv)
    items = load_question_set(ROOT / "eval" / "sets" / f"{args.set}.jsonl", split=args.split).items
    done = subprocess.run(
        [sys.executable, "-c", _ANSWER, args.data_dir], cwd=args.checkout, check=True, capture_output=True, text=True,
        input="".join(json.dumps(item.question) + "\n" for item in items),
    )
    scores: dict[str, list[float]] = {}
    for item, line in zip(items, done.stdout.splitlines(), strict=True):
        answer = json.loads(line)
        cited = list(dict.fromkeys(c["paper"] for c in answer["cited"]))
        refused = not answer["covered"] and not cited
        if not item.gold:
            scores.setdefault("unanswerable_declined", []).append(not answer["covered"])
            continue
        precision, recall = gold_citation_scores(cited, item.gold)
        if item.type == "false_premise":
            first = answer["cited"][0] if answer["cited"] else None
            lead = set(tokenize_terms(answer["text"].split("“", 1)[0]))
            wanted = set(tokenize_terms(item.premise))
            scores.setdefault("premise_corrected", []).append(
                answer["coverage"] == "contradicted"
                and first is not None
                and first["paper"] in item.gold
                and any(same_sentence(first["support"], g) for g in item.gold_sentences)
                and len(wanted & lead) >= 0.5 * len(wanted)
            )
            continue
        scores.setdefault("answerable_refused", []).append(refused)
        scores.setdefault("gold_citation_recall", []).append(recall)
        if item.type == "collection":
            if precision is not None:
                scores.setdefault("collection_precision", []).append(precision)
            scores.setdefault("collection_recall", []).append(recall)
        if item.gold_sentences:
            quoted = any(same_sentence(c["support"], g) for c in answer["cited"] if c["paper"] in item.gold for g in item.gold_sentences)
            scores.setdefault("gold_sentence_quoted", []).append(quoted)
    print(f"{args.set} {args.split or ''} ({args.checkout})")
    for name, values in scores.items():
        print(f"  {name:24} {sum(values) / len(values):.3f}  ({len(values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
