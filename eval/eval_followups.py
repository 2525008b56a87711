"""How often a follow-up's reference to the last answer's papers is read right
(`rag.question.followup.read_references`), on `eval/sets/followup-references.jsonl`: a previous
question asked of the bundled 20 papers, a follow-up, and what a reader means by it, written for
issue 25 by one of the session's agents from the answers as shown, before the rules were changed:

- "paper": the reference names that paper (its title replaces it, nothing is asked);
- "ask": the last answer does not settle it (an ordinal past its papers, a name none of them
  has, a name several have): the chain asks which paper, guessing none;
- "confirm": it names a paper the last answer said does not answer (a decline's closest
  papers): the chain says so, names that paper and offers it, rather than going on silently;
- "none": no reference at all; the follow-up is left as written.

Items are split into a calibration half (read while writing the rules) and a report half (read
only for the figure). The previous answers are asked of a fresh index of data/papers.jsonl with
the extractive backend.

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
from rag.records import Answer  # noqa: E402
from rag.settings import Settings  # noqa: E402

SET = ROOT / "eval" / "sets" / "followup-references.jsonl"


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("calibration", "report"), default="calibration")
    parser.add_argument("--verbose", action="store_true", help="print every item's reading")
    args = parser.parse_args()
    prepare()
    items = [i for i in map(json.loads, SET.read_text(encoding="utf-8").splitlines()) if i["split"] == args.split]
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), backend="extractive")
        index = Index(settings, make_embeddings(settings))
        index.ingest(load_corpus(ROOT / "data" / "papers.jsonl"))
        assistant = Assistant(index, settings)
        previous = {q: assistant.ask(q) for q in dict.fromkeys(i["previous"] for i in items)}
        right = 0
        for item in items:
            reading = read_references(item["follow_up"], [previous[item["previous"]]])
            ok = verdict(item, reading, previous[item["previous"]])
            right += ok
            if args.verbose or not ok:
                shown = reading.ask_back if reading.unclear else reading.question
                print(f"{'ok ' if ok else 'BAD'} {item['id']} {item['expect']:<8} {item['follow_up']!r} -> {shown!r}")
    print(f"{args.split} half: {right}/{len(items)} follow-ups read right ({right / len(items):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
