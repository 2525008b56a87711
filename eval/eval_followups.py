"""How follow-ups are read (`rag.question.followup`), offline, on two sets over the bundled 20
papers, each split into a calibration half (read while writing the rules) and a report half (read
only for the figure); the answers are asked of a fresh index of data/papers.jsonl with the
extractive backend.

`eval/sets/followup-references.jsonl` (issue 25): a previous question, a follow-up that refers to
the last answer's papers (`read_references`), and what a reader means by it:

- "paper": the reference names that paper (its title replaces it, nothing is asked);
- "ask": the last answer does not settle it (an ordinal past its papers, a name none of them
  has, a name several have): the chain asks which paper, guessing none;
- "confirm": it names a paper the last answer lists but does not cite (a decline's closest
  papers): the chain says so, names that paper and offers it, rather than going on silently;
- "none": no reference at all; the follow-up is left as written.

`eval/sets/followup-switch.jsonl` (issue 35, written before the rule was): earlier questions, then
one that either names its own subject ("switch": a new topic, a title's words, "Which paper
..."), to be answered on its own, never joined to the previous question; or leans on the
conversation ("follow": "what data did they use?", "any limitations?"), to be resolved to the
paper the last question was about: its answer cites that paper, or that paper ranks first for
its standalone question.

    python eval/eval_followups.py [--split calibration|report] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.answering.chain import Assistant  # noqa: E402
from rag.corpus.reading import load_corpus  # noqa: E402
from rag.index.embeddings import make_embeddings  # noqa: E402
from rag.index.offline import prepare  # noqa: E402
from rag.index.store import Index  # noqa: E402
from rag.question.followup import Reading, read_references  # noqa: E402
from rag.question.references import split_context  # noqa: E402
from rag.records import Answer  # noqa: E402
from rag.settings import Settings  # noqa: E402

REFERENCES = ROOT / "eval" / "sets" / "followup-references.jsonl"
SWITCHES = ROOT / "eval" / "sets" / "followup-switch.jsonl"


def verdict(item: dict, reading: Reading, previous: Answer) -> bool:
    offer = getattr(reading, "offer", "")
    if item["expect"] == "none":
        return reading.question == item["follow_up"] and not reading.unclear
    if item["expect"] == "ask":
        return bool(reading.unclear and reading.choices) and not offer
    if item["expect"] == "confirm":
        return bool(offer) and [c.paper.id for c in reading.choices] == [item["paper"]]
    titles = {s.paper.id: s.paper.display_title for s in (*previous.sources, *previous.closest)}
    return not reading.unclear and f'"{titles.get(item["paper"], item["paper"])}"' in reading.question


def _items(path: Path, split: str) -> list[dict]:
    return [i for i in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if i["split"] == split]


def references(assistant: Assistant, split: str, verbose: bool) -> None:
    items = _items(REFERENCES, split)
    previous = {q: assistant.ask(q) for q in dict.fromkeys(i["previous"] for i in items)}
    right = 0
    for item in items:
        reading = read_references(item["follow_up"], [previous[item["previous"]]])
        ok = verdict(item, reading, previous[item["previous"]])
        right += ok
        if verbose or not ok:
            shown = reading.ask_back if reading.unclear else reading.question
            print(f"{'ok ' if ok else 'BAD'} {item['id']} {item['expect']:<8} {item['follow_up']!r} -> {shown!r}")
    print(f"{split} half: {right}/{len(items)} follow-ups read right ({right / len(items):.3f})")


def switches(assistant: Assistant, split: str, verbose: bool) -> None:
    items = _items(SWITCHES, split)
    conversations: dict[tuple[str, ...], list[Answer]] = {}
    counts = {"switch": 0, "joined": 0, "answerable": 0, "found": 0, "follow": 0, "resolved": 0}
    for item in items:
        turns: list[Answer] = []
        for question in item["history"]:
            key = (*(t.question for t in turns), question)
            if key not in conversations:
                conversations[key] = [*turns, assistant.ask(question, history=turns)]
            turns = conversations[key]
        answer = assistant.ask(item["next"], history=turns)
        cited = {c.paper_id for c in answer.citations}
        gold = set(item["gold"])
        if item["expect"] == "switch":
            ok = not split_context(answer.standalone_question)[1]
            counts["switch"] += 1
            counts["joined"] += not ok
            counts["answerable"] += bool(gold)
            counts["found"] += bool(gold & cited)
        else:
            first = assistant.search_papers(answer.standalone_question, k=1)
            ok = bool(gold & cited) or bool(first and first[0].paper_id in gold)
            counts["follow"] += 1
            counts["resolved"] += ok
        if verbose or not ok:
            print(f"{'ok ' if ok else 'BAD'} {item['id']} {item['expect']:<6} {item['next']!r} -> {answer.standalone_question!r}")
    c = counts
    print(
        f"{split} half: topic switches joined to the previous question {c['joined']}/{c['switch']} ({c['joined'] / c['switch']:.3f})"
    )
    print(
        f"{split} half: switches to a paper of the corpus answered with it {c['found']}/{c['answerable']} ({c['found'] / c['answerable']:.3f})"
    )
    print(f"{split} half: follow-ups resolved {c['resolved']}/{c['follow']} ({c['resolved'] / c['follow']:.3f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("calibration", "report"), default="calibration")
    parser.add_argument("--verbose", action="store_true", help="print every item's reading")
    args = parser.parse_args()
    prepare()
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), backend="extractive")
        index = Index(settings, make_embeddings(settings))
        index.ingest(load_corpus(ROOT / "data" / "papers.jsonl"))
        assistant = Assistant(index, settings)
        references(assistant, args.split, args.verbose)
        switches(assistant, args.split, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
