"""Build the verifier's labelled pairs (`data/verifier/pairs.jsonl.gz`) from the written questions.

    python eval/verifier_data.py --assemble DIR     # the writers' batch files -> questions.jsonl
    python eval/verifier_data.py --index DIR [--scifact ../shared/benchmarks/scifact --scifact-index DIR]
                                 [--scifact-pairs data/verifier/pairs.jsonl.gz]
    python eval/verifier_data.py --index DIR --add-to data/verifier/pairs.jsonl.gz   # a later round's questions added

`data/verifier/questions.jsonl` holds the questions written for abstracts of the scale corpus
(`data/verifier/abstracts.jsonl.gz`, each abstract split into sentences as the product splits
them, and assigned to the train, calibration or report split); `data/verifier/CARD.md` says who
wrote them and how. Each question becomes labelled pairs (labels: `rag.models.verifier.LABELS`):

- sentence pairs: the sentences written down as answering it (answers) or contradicting its
  premise (contradicts); the other sentences of its abstract closest to it (none), except for a
  topic question, which more of its abstract may fit; for a question the abstract does not
  answer, or one asking for what abstracts never hold, its closest sentences (none);
- paper pairs (`rag.models.verifier.paper_passage`: the title and the two sentences closest to the
  question): its own paper (answers; contradicts where a contradicting sentence is among the
  two; none for a question the abstract does not answer);
- hard negatives, for the questions that name one paper's finding: the best BM25 paper and the
  best dense paper of the whole scale corpus other than its own (the best two of each for the
  short styles of `data/verifier/styles/`), as a paper pair and by their closest sentence (none);
- negatives from further away, which the first model never saw and so read every paper of
  another topic as answering about as well as the right one (`eval/probe_verifier.py`): for every
  question, a paper drawn at random from the corpus, and for the questions that name one paper's
  finding a paper of the same area (dense rank 10 to 40), each as a paper pair and by its closest
  sentence (none).

The second writing round (`data/verifier/styles/*.jsonl`, all for train-split abstracts) adds
short, lay and terse lookups (paired as `reworded`), short near misses (as `near`), false premises
stated in passing (`premise_use`, as `false_premise`) and their true twins (`premise_none`, as
`how`), and paper-level topic questions: `about` (the paper is on it: its own paper answers) and
`mentions_only` (it only mentions it: its own paper and its closest sentence answer nothing).

No pair is made of a paper that is gold or "mentions" in any `eval/sets/scale-*.jsonl` (either
half): such an abstract's questions are left out and such a paper is never a negative. The 20
bundled papers are not in the scale corpus; a negative with one of their titles is skipped too.

`--index` is an index of the scale corpus (`paperchat eval --set eval/sets/scale-how-result.jsonl`
makes one under `<data_dir>/eval/scale_corpus`): it supplies the rankings and the sentence
vectors. With `--scifact`, the claims of SciFact train's calibration half (never its report half)
are added as paper pairs: their relevant abstracts (answers) and the best BM25 abstracts that are
not (none). Every pair keeps its question's split; SciFact's claims are all train.
`--scifact-pairs` takes those pairs from an earlier build instead (they depend only on SciFact
and its index).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.evaluation.sets import load_beir  # noqa: E402
from rag.index.embeddings import SentenceVectors  # noqa: E402
from rag.index.store import Index  # noqa: E402
from rag.markup import to_plain  # noqa: E402
from rag.models.verifier import LABELS, paper_passage  # noqa: E402
from rag.question.kind import question_focus  # noqa: E402
from rag.search.retrieval import search, with_retriever  # noqa: E402
from rag.settings import Settings  # noqa: E402
from rag.text import split_sentences, tokenize_terms  # noqa: E402

DATA = ROOT / "data" / "verifier"
NONE, ANSWERS, CONTRADICTS = (LABELS.index(label) for label in ("none", "answers", "contradicts"))
# The second round's kinds, by the first-round kind each is paired like.
STYLE_AS = {
    "short": "reworded",
    "lay": "reworded",
    "terse": "reworded",
    "premise_none": "how",
    "short_near": "near",
    "premise_use": "false_premise",
    "about": "topic",
    "mentions_only": "mentions_only",
}
# The kinds whose question names one paper's own finding: another paper is a negative for them.
SPECIFIC = ("reworded", "how", "false_premise")
OWN_NEGATIVES = 3
# The short styles are what the first model failed on: they get two neighbours of each ranker.
NEIGHBOURS_PER_RANKER = {"short": 2, "lay": 2, "terse": 2, "premise_use": 2, "premise_none": 2}
# A paper of the question's area but not its closest: dense ranks this far down.
AREA_RANKS = (10, 40)
_CODE = re.compile(r"\b(code|github|implementation|source)\b.{0,60}\b(available|released?|public|open-source[d]?|at)\b", re.I)
# Rule-made, not written: questions about code availability, paired with each abstract's sentence
# that says where the code is (the data card counts them apart).
CODE_QUESTIONS = (
    "Is the code for this released?",
    "Do the authors make their implementation public?",
    "Where can I get the source code?",
    "Which papers share their code?",
    "Is there a GitHub repository for this work?",
    "Has the implementation been open-sourced?",
    "papers with code available",
    "Can I download their code somewhere?",
)


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def shared_content_words(question: str, sentence: str) -> int:
    """Content words (stemmed, stop words out) the question shares with the sentence."""
    return len(set(tokenize_terms(question)) & set(tokenize_terms(to_plain(sentence))))


def held_out_papers() -> set[str]:
    """Every gold or "mentions" paper of the scale question sets, both halves: never trained on."""
    ids: set[str] = set()
    for path in sorted((ROOT / "eval" / "sets").glob("scale-*.jsonl")):
        for record in read_jsonl(path):
            for field in ("gold", "mentions"):
                value = record.get(field) or []
                ids |= {value} if isinstance(value, str) else set(value)
    return ids


def bundled_titles() -> set[str]:
    return {_title_key(p.get("title", "")) for p in read_jsonl(ROOT / "data" / "papers.jsonl")} - {""}


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", title.lower()).split())


class Builder:
    def __init__(self, index: Index, *, excluded: set[str] | None = None, seed: int = 0) -> None:
        self.index = index
        self.vectors = SentenceVectors(index.embeddings, store=index)
        self.settings = index.settings
        self.pairs: list[dict] = []
        self.excluded = excluded or set()
        self.bundled = bundled_titles()
        self.rng = random.Random(seed)
        self._ids: list[str] | None = None
        self._ranked: dict = {}

    def usable(self, paper) -> bool:
        """May this paper be a negative: not held out by a scale set, not a bundled paper."""
        return paper.id not in self.excluded and _title_key(paper.title) not in self.bundled

    def closest(self, question: str, sentences: list[str], n: int) -> list[int]:
        """Positions of the n sentences closest to the question (by MiniLM cosine, as the product ranks them)."""
        if not sentences:
            return []
        similarity = np.asarray(self.vectors.similarities(question_focus(question), sentences))
        return [int(i) for i in np.argsort(-similarity, kind="stable")[:n]]

    def add(self, question: dict, passage: str, label: int, *, level: str, own: bool) -> None:
        self.pairs.append(
            {
                "q": question["question"],
                "p": passage,
                "label": label,
                "level": level,
                "own": own,
                "kind": question["kind"],
                "qid": question["id"],
                "split": question["split"],
            }
        )

    def paper(self, question: dict, title: str, sentences: list[str], label_of, *, own: bool = True) -> None:
        """The paper pair: title and the two closest sentences in the abstract's order."""
        chosen = sorted(self.closest(question["question"], sentences, 2))
        passage = paper_passage(to_plain(title), [to_plain(sentences[i]) for i in chosen])
        self.add(question, passage, label_of(chosen), level="paper", own=own)

    def negative(self, question: dict, paper) -> None:
        """Another paper as a negative: its paper pair and its closest sentence (none)."""
        sentences = split_sentences(paper.abstract)
        self.paper(question, paper.title, sentences, lambda _: NONE, own=False)
        for i in self.closest(question["question"], sentences, 1):
            self.add(question, to_plain(sentences[i]), NONE, level="sentence", own=False)

    def question(self, question: dict, abstract: dict) -> None:
        sentences = abstract["sentences"]
        # A second-round kind is paired as the first-round kind it is like; the pair keeps its own.
        kind = STYLE_AS.get(question["kind"], question["kind"])
        answers = set(question.get("answers", []))
        contradicts = set(question.get("contradicts", []))
        for i in answers:
            self.add(question, to_plain(sentences[i]), ANSWERS, level="sentence", own=True)
        for i in contradicts:
            self.add(question, to_plain(sentences[i]), CONTRADICTS, level="sentence", own=True)
        if kind not in ("topic", "mentions_only"):
            others = [i for i in self.closest(question["question"], sentences, len(sentences)) if i not in answers | contradicts]
            if kind == "beyond":
                # "Show me the code" is not answered by "code is available at ...", but a question
                # may well be; such a sentence is left out rather than called an answer to neither.
                others = [i for i in others if not _CODE.search(sentences[i])]
            for i in others[: OWN_NEGATIVES + (kind in ("near", "beyond"))]:
                self.add(question, to_plain(sentences[i]), NONE, level="sentence", own=True)
        elif kind == "mentions_only":
            # The paper mentions the topic and is not on it: neither it nor the sentence closest to
            # the topic (the mention, as a rule) answers a question for papers on it.
            for i in self.closest(question["question"], sentences, 1):
                self.add(question, to_plain(sentences[i]), NONE, level="sentence", own=True)

        def own_label(chosen: list[int]) -> int:
            if kind in ("near", "beyond", "mentions_only"):
                return NONE
            if kind == "false_premise":
                return CONTRADICTS if contradicts & set(chosen) else ANSWERS
            return ANSWERS

        self.paper(question, abstract["title"], sentences, own_label)
        taken = {abstract["id"]}
        if kind in SPECIFIC:
            for neighbour in self.neighbours(question["question"], taken, NEIGHBOURS_PER_RANKER.get(question["kind"], 1)):
                self.negative(question, neighbour)
                taken.add(neighbour.id)
            area = self.area(question["question"], taken)
            if area is not None:
                self.negative(question, area)
                taken.add(area.id)
        # Any question, a topic one too, is answered by no paper drawn at random: the lesson the
        # first model lacked (it scored papers of other topics as high as the right one).
        self.negative(question, self.anywhere(taken))

    def ranking(self, question: str, ranker: str) -> list:
        """The papers of one ranker for the question, deep enough for the area's ranks; the last
        question's are kept (its neighbours and its area come from one dense search)."""
        if self._ranked.get("question") != question:
            self._ranked = {"question": question}
        if ranker not in self._ranked:
            self._ranked[ranker] = [s.paper for s in search(self.index, question, with_retriever(self.settings, ranker), k=AREA_RANKS[1])]
        return self._ranked[ranker]

    def neighbours(self, question: str, taken: set[str], per_ranker: int = 1) -> list:
        """The best BM25 papers and the best dense papers other than those taken."""
        found: list = []
        for ranker in ("bm25", "dense"):
            candidates = [p for p in self.ranking(question, ranker) if p.id not in taken and self.usable(p)]
            found += [p for p in candidates if p.id not in {f.id for f in found}][:per_ranker]
        return found

    def area(self, question: str, taken: set[str]):
        """A paper of the question's area but not among its closest: drawn from dense ranks 10-40."""
        pool = [p for p in self.ranking(question, "dense")[AREA_RANKS[0] - 1 :] if p.id not in taken and self.usable(p)]
        return self.rng.choice(pool) if pool else None

    def anywhere(self, taken: set[str]):
        """A paper of the corpus drawn at random."""
        if self._ids is None:
            self._ids = sorted(self.index.papers)
        while True:
            paper = self.index.get(self.rng.choice(self._ids))
            if paper.id not in taken and self.usable(paper):
                return paper

    def code(self, abstract: dict, number: int) -> None:
        """A rule-made code-availability question for an abstract that says where its code is."""
        sentences = abstract["sentences"]
        saying = [i for i, s in enumerate(sentences) if _CODE.search(s)]
        if not saying:
            return
        question = {
            "id": f"code-{abstract['key']}",
            "question": CODE_QUESTIONS[number % len(CODE_QUESTIONS)],
            "kind": "code",
            "split": abstract["split"],
        }
        for i in saying:
            self.add(question, to_plain(sentences[i]), ANSWERS, level="sentence", own=True)
        for i in [i for i in self.closest(question["question"], sentences, len(sentences)) if i not in saying][:2]:
            self.add(question, to_plain(sentences[i]), NONE, level="sentence", own=True)

    def scifact(self, folder: Path, index: Index) -> None:
        """Paper pairs of SciFact train's calibration half: relevant abstracts and BM25 misses."""
        claims = load_beir(folder, split="calibration")
        builder = Builder(index)
        bm25 = with_retriever(index.settings, "bm25")
        for item in claims.items:
            question = {"id": f"scifact-{item.id}", "question": item.question, "kind": "scifact", "split": "train"}
            relevant = index.fetch(list(item.gold))
            for paper in relevant.values():
                builder.paper(question, paper.title, split_sentences(paper.abstract), lambda _: ANSWERS)
            misses = [s.paper for s in search(index, item.question, bm25, k=5) if s.paper.id not in item.gold][:2]
            for paper in misses:
                builder.paper(question, paper.title, split_sentences(paper.abstract), lambda _: NONE, own=False)
        self.pairs += builder.pairs


KINDS = ("reworded", "how", "near", "false_premise", "topic", "beyond")


def assemble(folder: Path, abstracts: dict[str, dict]) -> list[dict]:
    """The questions of the writers' batch files (`batch_NN.jsonl`, one JSON object a line, as
    the writers' instructions in the data card ask), checked and numbered. A line whose sentence
    numbers its abstract lacks, or that misses the field its kind needs, is left out and said."""
    questions = []
    for path in sorted(folder.glob("batch_*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            record = json.loads(line)
            abstract = abstracts.get(record.get("key", ""))
            kind = record.get("kind")
            cited = [*record.get("answers", []), *record.get("contradicts", [])]
            problem = (
                "no such abstract" if abstract is None
                else f"unknown kind {kind!r}" if kind not in KINDS
                else "no question" if not str(record.get("q", "")).strip()
                else "a sentence number out of range" if any(not isinstance(i, int) or not 0 <= i < len(abstract["sentences"]) for i in cited)
                else "no answering sentence" if kind in ("reworded", "how", "topic") and not record.get("answers")
                else "no contradicting sentence or premise" if kind == "false_premise" and not (record.get("contradicts") and record.get("premise"))
                else ""
            )
            if problem:
                print(f"{path.name}:{number}: {problem}; left out", file=sys.stderr)
                continue
            question = {
                "id": f"vq-{len(questions) + 1:05d}",
                "key": record["key"],
                "paper": abstract["id"],
                "kind": kind,
                "question": record["q"].strip(),
                "batch": path.stem,
            }
            for field in ("answers", "contradicts"):
                if record.get(field):
                    question[field] = sorted(set(record[field]))
            if kind == "false_premise":
                question["premise"] = record["premise"].strip()
            if kind == "reworded":
                # The writers' rule: at most one content word shared with an answering sentence.
                question["shared_words"] = min(shared_content_words(record["q"], abstract["sentences"][i]) for i in question["answers"])
            questions.append(question)
    return questions


def read_styles(folder: Path, abstracts: dict[str, dict]) -> list[dict]:
    """The second round's questions (`styles_N.jsonl`: `id`, `key`, `paper`, `kind`, `question`,
    `answers` / `contradicts` / `premise`), checked as `assemble` checks the first round's. Their
    own "split" field is not read: the split is the abstract's, and every one of them is train."""
    questions = []
    for path in sorted(folder.glob("styles_*.jsonl")):
        for number, record in enumerate(read_jsonl(path), 1):
            abstract = abstracts.get(record.get("key", ""))
            kind = record.get("kind")
            cited = [*record.get("answers", []), *record.get("contradicts", [])]
            problem = (
                "no such abstract" if abstract is None
                else "another paper than its abstract's" if record.get("paper") != abstract["id"]
                else f"unknown kind {kind!r}" if kind not in STYLE_AS
                else "no question" if not str(record.get("question", "")).strip()
                else "a sentence number out of range" if any(not isinstance(i, int) or not 0 <= i < len(abstract["sentences"]) for i in cited)
                else "no answering sentence" if STYLE_AS[kind] in ("reworded", "how", "topic") and not record.get("answers")
                else "no contradicting sentence" if kind == "premise_use" and not record.get("contradicts")
                else ""
            )
            if problem:
                print(f"{path.name}:{number}: {problem}; left out", file=sys.stderr)
                continue
            question = {k: record[k] for k in ("id", "key", "paper", "kind", "answers", "contradicts", "premise") if k in record}
            questions.append({**question, "question": record["question"].strip(), "batch": path.stem})
    return questions


def unbuilt(questions: list[dict], earlier: list[dict]) -> list[dict]:
    """The questions no pair of an earlier build comes from."""
    built = {p["qid"] for p in earlier if "qid" in p}
    return [q for q in questions if q["id"] not in built]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assemble", type=Path, help="a folder of the writers' batch_NN.jsonl files")
    parser.add_argument("--index", type=Path, help="data_dir of an index of the scale corpus")
    parser.add_argument("--scifact", type=Path, help="SciFact's BEIR folder")
    parser.add_argument("--scifact-index", type=Path, help="data_dir of an index of SciFact's corpus")
    parser.add_argument("--scifact-pairs", type=Path, help="take the SciFact pairs of this earlier build instead")
    parser.add_argument("--styles", type=Path, default=DATA / "styles", help="the second round's styles_N.jsonl files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--add-to",
        type=Path,
        help="an earlier build: keep its pairs and add those of the questions it lacks (a later writing round)",
    )
    parser.add_argument("--out", type=Path, default=DATA / "pairs.jsonl.gz")
    args = parser.parse_args(argv)
    abstracts = {a["key"]: a for a in read_jsonl(DATA / "abstracts.jsonl.gz")}
    if args.assemble:
        assembled = assemble(args.assemble, abstracts)
        with open(DATA / "questions.jsonl", "w", encoding="utf-8") as out:
            for question in assembled:
                out.write(json.dumps(question, ensure_ascii=False) + "\n")
        print(f"{len(assembled)} questions of {len({q['key'] for q in assembled})} abstracts -> {DATA / 'questions.jsonl'}")
        print(dict(Counter(q["kind"] for q in assembled)))
        return 0
    if args.index is None:
        parser.error("--index is needed to build the pairs")
    questions = read_jsonl(DATA / "questions.jsonl") + read_styles(args.styles, abstracts)
    excluded = held_out_papers()
    left_out = {a["key"] for a in abstracts.values() if a["id"] in excluded}
    print(f"{len(left_out)} abstracts left out: gold or mentioned in a scale set ({', '.join(sorted(left_out))})")
    # Read before the output, which may be the same file, is written.
    scifact_pairs = [p for p in read_jsonl(args.scifact_pairs) if p["kind"] == "scifact"] if args.scifact_pairs else []
    earlier = read_jsonl(args.add_to) if args.add_to else []
    index = Index.open(Settings(data_dir=args.index, backend="extractive"))
    builder = Builder(index, excluded=excluded, seed=args.seed)
    questions = [q for q in questions if q["key"] not in left_out]
    if earlier:
        # Its pairs as they were (rebuilding them would draw other random negatives), then the new questions'.
        questions = unbuilt(questions, earlier)
        builder.pairs += earlier
        print(f"{len(earlier)} pairs of {args.add_to} kept; {len(questions)} questions to add")
    for number, question in enumerate(questions):
        abstract = abstracts[question["key"]]
        builder.question({**question, "split": abstract["split"]}, abstract)
        if number % 500 == 0:
            print(f"{number}/{len(questions)} questions, {len(builder.pairs)} pairs", flush=True)
    for number, abstract in enumerate(abstracts.values()):
        if abstract["key"] not in left_out and not earlier:
            builder.code(abstract, number)
    if args.scifact:
        scifact_index = Index.open(Settings(data_dir=args.scifact_index, backend="extractive", collection="papers-eval-scifact"))
        builder.scifact(args.scifact, scifact_index)
    builder.pairs += scifact_pairs
    with gzip.open(args.out, "wt", encoding="utf-8") as out:
        for pair in builder.pairs:
            out.write(json.dumps(pair, ensure_ascii=False) + "\n")
    counts = Counter((p["split"], p["level"], LABELS[p["label"]]) for p in builder.pairs)
    for key in sorted(counts):
        print(*key, counts[key], sep="\t")
    print(f"{len(builder.pairs)} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
