"""Probe the verifier on short questions in users' words, over the 20 bundled papers (issue 35).

    python eval/probe_verifier.py [--split calibration|report] [--model DIR ...] [--float DIR] [--threads 2]

The verifier's own held-out figures (`eval/train_verifier.py`) come from pairs of one writer's
questions; this reads the seed sets written in users' words instead (`eval/sets/seed-reworded`,
`seed-lay`, `seed-premise-use`), over the 20 papers of `data/papers.jsonl`, none of which any model
trains on. For each model it prints:

- **within a paper**: an answering sentence (`gold_sentences`) ranked first among its paper's
  sentences by p(answers) (a false premise: the contradicting one, by p(contradicts));
- **between papers**: per answerable question, the gold paper against the other 19, each read as
  the product reads a paper (`paper_passage`: title and the two sentences closest to the question)
  or by its best sentence: the AUC (the share of the 19 it outscores), how often it is first, and
  its p(answers) beside the best other paper's (a false premise: p(answers) + p(contradicts));
- **unanswerable**: seed-lay's questions no paper answers against its answerable ones, by the best
  paper's p(answers): can the verifier tell them apart across questions?
- **what moves it**: LaTeX in the passages (as written, with the model's own cleaning turned off;
  `rag.markup.to_plain`, as the callers pass them; `rag.models.verifier.clean_passage`), and the
  question's opening ("Which paper ..." as asked, and removed);
- with `--float`, the same model's float export: how far the chosen export moves its verdicts;
- with `--pairs`, the openings and lengths of the training questions against the seed sets', and
  the negatives each kind gets (why a model trained on them reads a short question as it does).

Use the calibration halves to look (the default) and the report halves only for final figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# How a question opens, as the training balances it.
from eval.train_verifier import FAMILY_NAMES, opening_family  # noqa: E402
from rag.index.embeddings import SentenceVectors, make_embeddings  # noqa: E402
from rag.markup import has_latex, to_plain  # noqa: E402
from rag.models.verifier import VERIFIER_DIR, Verifier, clean_passage, paper_passage  # noqa: E402
from rag.question.kind import question_focus  # noqa: E402
from rag.search.rerank import PASSAGE_SENTENCES  # noqa: E402
from rag.settings import Settings  # noqa: E402
from rag.text import split_sentences  # noqa: E402

SETS = ("seed-reworded", "seed-lay", "seed-premise-use")
# Openings that say "find me a paper" and nothing of the content; the probe removes them to see
# what the opening alone does to a verdict.
OPENING = re.compile(
    r"^(?:(?:which|what) (?:papers?|works?|studies|methods?|approaches?)(?: (?:is|are|was))?(?: there)?(?: (?:that|on|about|for))?"
    r"|(?:is|are) there (?:a |any )?(?:papers?|works?|research|studies|methods?|approaches?)?(?: (?:that|on|about|for|which))?"
    r"|any (?:papers?|works?|research)(?: (?:that|on|about|for))?"
    r"|(?:i'?m )?looking for (?:a |any )?(?:papers?|works?|research)?(?: (?:that|on|about|for))?"
    r"|papers? (?:that|on|about)|work on)\s+",
    re.I,
)


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def without_opening(question: str) -> str:
    """The question without a lookup opening ("Which paper ...", "Is there work on ..."); as asked
    when it has none."""
    stripped = OPENING.sub("", question.strip(), count=1)
    return stripped[:1].upper() + stripped[1:] if stripped != question.strip() and len(stripped.split()) >= 2 else question


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass
class PaperText:
    id: str
    title: str
    raw: list[str]
    plain: list[str] = field(init=False)
    clean: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.plain = [to_plain(s) for s in self.raw]
        self.clean = [clean_passage(s) for s in self.raw]

    def sentences(self, markup: str) -> list[str]:
        return {"raw": self.raw, "plain": self.plain, "clean": self.clean}[markup]

    def titled(self, markup: str) -> str:
        return {"raw": self.title, "plain": to_plain(self.title), "clean": clean_passage(self.title)}[markup]


@dataclass
class Item:
    set: str
    id: str
    question: str
    gold: str | None
    gold_sentences: list[int]
    label: int  # what the gold sentences are: 1 answers, 2 contradicts
    style: str


def load_papers() -> dict[str, PaperText]:
    papers = {}
    for record in read_jsonl(ROOT / "data" / "papers.jsonl"):
        papers[record["id"]] = PaperText(record["id"], record.get("title", ""), split_sentences(record["abstract"]))
    return papers


def load_items(split: str, papers: dict[str, PaperText]) -> list[Item]:
    items = []
    for name in SETS:
        for record in read_jsonl(ROOT / "eval" / "sets" / f"{name}.jsonl"):
            if "question" not in record or (split != "all" and record.get("split") != split):
                continue
            gold = (record.get("gold") or [None])[0]
            positions = []
            if gold is not None:
                sentences = [_norm(s) for s in papers[gold].raw]
                for wanted in record.get("gold_sentences", []):
                    wanted = _norm(wanted)
                    found = [i for i, s in enumerate(sentences) if s == wanted or wanted in s or (s in wanted and len(s) > 20)]
                    if not found:
                        print(
                            f"{record['id']}: a gold sentence is not among its paper's sentences: {wanted[:60]}...",
                            file=sys.stderr,
                        )
                    positions += found
            label = 2 if record.get("type") == "false_premise" else 1
            style = record.get("style") or record.get("type", "")
            items.append(Item(name, record["id"], record["question"], gold, sorted(set(positions)), label, style))
    return items


class Scorer:
    """A model's verdicts on every sentence and every paper passage of the 20 papers, per question."""

    def __init__(self, model: Path, papers: dict[str, PaperText], vectors: SentenceVectors, threads: int) -> None:
        self.verifier = Verifier(model, threads=threads)
        # Passages "as written" must reach the model so: a second model whose own cleaning is off
        # (its verdicts kept apart, as the same text is cleaned in the first).
        self.as_written = Verifier(model, threads=threads)
        self.as_written.clean = lambda text: text
        self.papers = papers
        self.vectors = vectors

    def passage(self, question: str, paper: PaperText, markup: str) -> str:
        # As `rag.search.rerank.passages` chooses them: closest to the question's focus, by MiniLM.
        similarity = np.asarray(self.vectors.similarities(question_focus(question), paper.plain))
        chosen = sorted(int(i) for i in np.argsort(-similarity, kind="stable")[:PASSAGE_SENTENCES])
        sentences = paper.sentences(markup)
        return paper_passage(paper.titled(markup), [sentences[i] for i in chosen])

    def score(self, question: str, markup: str = "plain") -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(per paper, its sentences' probabilities; per paper, its passage's probabilities)."""
        ids = list(self.papers)
        texts = [s for pid in ids for s in self.papers[pid].sentences(markup)]
        passages = [self.passage(question, self.papers[pid], markup) for pid in ids]
        verifier = self.as_written if markup == "raw" else self.verifier
        rows = verifier.probabilities(question, texts + passages)
        sentences, at = {}, 0
        for pid in ids:
            n = len(self.papers[pid].raw)
            sentences[pid] = rows[at : at + n]
            at += n
        return sentences, {pid: rows[len(texts) + i] for i, pid in enumerate(ids)}


def relevance(row: np.ndarray, label: int) -> float:
    return float(row[1] + row[2]) if label == 2 else float(row[1])


def measures(scorer: Scorer, items: list[Item], *, markup: str = "plain", opening: bool = True) -> dict[str, float]:
    """The within-paper and between-paper figures over answerable items (see the module doc)."""
    first, auc_passage, auc_sentence, top_passage, top_sentence, gold_p, other_p, gold_sentence_p = ([] for _ in range(8))
    for item in items:
        if item.gold is None or not item.gold_sentences:
            continue
        question = item.question if opening else without_opening(item.question)
        sentences, passages = scorer.score(question, markup)
        own = sentences[item.gold]
        first.append(int(np.argmax(own[:, item.label])) in item.gold_sentences)
        gold_sentence_p.append(float(np.max(own[item.gold_sentences, item.label])))
        by_passage = {pid: relevance(row, item.label) for pid, row in passages.items()}
        by_sentence = {pid: max(relevance(r, item.label) for r in rows) for pid, rows in sentences.items()}
        for scores, aucs, tops in ((by_passage, auc_passage, top_passage), (by_sentence, auc_sentence, top_sentence)):
            gold = scores[item.gold]
            others = [v for pid, v in scores.items() if pid != item.gold]
            aucs.append((sum(gold > v for v in others) + 0.5 * sum(gold == v for v in others)) / len(others))
            tops.append(gold > max(others))
        gold_p.append(by_passage[item.gold])
        other_p.append(max(v for pid, v in by_passage.items() if pid != item.gold))
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return {
        "n": len(first),
        "sentence first": mean(first),
        "gold sentence p": mean(gold_sentence_p),
        "AUC passage": mean(auc_passage),
        "AUC best sentence": mean(auc_sentence),
        "first passage": mean(top_passage),
        "first best sentence": mean(top_sentence),
        "p gold paper": mean(gold_p),
        "p best other": mean(other_p),
    }


def unanswerable_auc(scorer: Scorer, items: list[Item]) -> tuple[int, int, float, float, float]:
    """seed-lay: the best paper passage's p(answers) of its answerable questions against its
    unanswerable ones (the share of pairs where the answerable one is higher)."""
    answerable, unanswerable = [], []
    for item in items:
        if item.set != "seed-lay":
            continue
        _, passages = scorer.score(item.question)
        best = max(float(row[1]) for row in passages.values())
        (answerable if item.gold else unanswerable).append(best)
    if not answerable or not unanswerable:
        return len(answerable), len(unanswerable), float("nan"), float("nan"), float("nan")
    a, u = np.asarray(answerable), np.asarray(unanswerable)
    auc = float(((a[:, None] > u[None, :]).sum() + 0.5 * (a[:, None] == u[None, :]).sum()) / (len(a) * len(u)))
    return len(a), len(u), auc, float(np.mean(a)), float(np.mean(u))


# The product's bar for a contradicted premise (`rag.answering.answerability.Bars.contradicted`).
CONTRADICTED = 0.4


def premise_calls(scorer: Scorer, items: list[Item]) -> tuple[int, float, int, float]:
    """seed-premise-use at the product's bar: of the false premises, the share whose paper has a
    sentence at p(contradicts) >= the bar; of their true twins, the share that would be called
    contradicted all the same."""
    caught, false_alarms = [], []
    for item in items:
        if item.set != "seed-premise-use" or item.gold is None:
            continue
        own = scorer.score(item.question)[0][item.gold]
        called = bool(own[:, 2].max() >= CONTRADICTED and own[:, 2].max() > own[:, 1].max())
        (caught if item.label == 2 else false_alarms).append(called)
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return len(caught), mean(caught), len(false_alarms), mean(false_alarms)


def question_blindness(scorer: Scorer, items: list[Item]) -> tuple[float, float]:
    """How much a paper's p(answers) (by its passage) owes to the paper rather than the question:
    the share of its variance over (question, paper) that the paper's mean over all questions
    explains, and the mean rank correlation of a question's paper scores with those means. A
    verifier that reads the question has both low; one that scores a paper the same whatever is
    asked has both near 1."""
    answerable = [i for i in items if i.gold]
    if len(answerable) < 2:
        return float("nan"), float("nan")
    ids = list(scorer.papers)
    grid = np.asarray([[float(scorer.score(i.question)[1][pid][1]) for pid in ids] for i in answerable])
    means = grid.mean(axis=0)
    explained = float(((means - grid.mean()) ** 2).sum() * len(grid) / ((grid - grid.mean()) ** 2).sum())

    def ranks(values: np.ndarray) -> np.ndarray:
        return np.argsort(np.argsort(values)).astype(float)

    correlation = float(np.mean([np.corrcoef(ranks(row), ranks(means))[0, 1] for row in grid]))
    return explained, correlation


def table(header: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return "nan" if np.isnan(value) else f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


COLUMNS = [
    "n",
    "sentence first",
    "AUC passage",
    "AUC best sentence",
    "first passage",
    "first best sentence",
    "p gold paper",
    "p best other",
]


def by_set(items: list[Item]) -> dict[str, list[Item]]:
    groups: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        groups[item.set].append(item)
        if item.set != "seed-reworded":
            groups[f"{item.set} ({item.style})"].append(item)
    groups["all answerable"] = [i for i in items if i.gold]
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == "all answerable", kv[0])))


def probe_model(name: str, scorer: Scorer, items: list[Item]) -> None:
    print(f"\n## {name}: as the product asks it (passages `to_plain`, the question as written)\n")
    rows = []
    for group, members in by_set(items).items():
        figures = measures(scorer, members)
        rows.append([group, *(figures[c] for c in COLUMNS)])
    print(table(["set", *COLUMNS], rows))
    n_a, n_u, auc, mean_a, mean_u = unanswerable_auc(scorer, items)
    print(
        f"\nseed-lay, best paper passage's p(answers): answerable {mean_a:.3f} (n={n_a}) against unanswerable "
        f"{mean_u:.3f} (n={n_u}); AUC {auc:.3f}"
    )
    n_false, caught, n_true, alarms = premise_calls(scorer, items)
    print(
        f"seed-premise-use at the product's bar (p(contradicts) >= {CONTRADICTED} and above every p(answers) of the "
        f"paper): false premises caught {caught:.3f} (n={n_false}), true twins called false {alarms:.3f} (n={n_true})"
    )
    explained, correlation = question_blindness(scorer, items)
    print(
        f"paper passages' p(answers): share of variance the paper alone explains {explained:.3f}; a question's "
        f"ranking of the 20 papers against their mean ranking over all questions, rank correlation {correlation:.3f}"
    )

    print(f"\n## {name}: what moves it\n")
    rows = []
    everything = [i for i in items if i.gold]
    latex_items = [i for i in everything if any(has_latex(s) for s in scorer.papers[i.gold].raw)]
    opened = [i for i in everything if without_opening(i.question) != i.question]
    for what, members, kwargs in (
        (f"papers with LaTeX, passages as written (n={len(latex_items)})", latex_items, {"markup": "raw"}),
        ("  the same, `to_plain` (as the product reads them)", latex_items, {"markup": "plain"}),
        ("  the same, `clean_passage`", latex_items, {"markup": "clean"}),
        (f"questions with a lookup opening, as asked (n={len(opened)})", opened, {}),
        ("  the same, opening removed", opened, {"opening": False}),
    ):
        figures = measures(scorer, members, **kwargs)
        rows.append(
            [
                what,
                *(
                    figures[c]
                    for c in (
                        "gold sentence p",
                        "sentence first",
                        "AUC passage",
                        "AUC best sentence",
                        "p gold paper",
                        "p best other",
                    )
                ),
            ]
        )
    print(
        table(
            ["variant", "gold sentence p", "sentence first", "AUC passage", "AUC best sentence", "p gold paper", "p best other"],
            rows,
        )
    )


def compare_exports(chosen: Scorer, reference: Scorer, items: list[Item], names: tuple[str, str]) -> None:
    """How far the chosen export moves the float model's probabilities on every pair of the probe."""
    a_rows, b_rows = [], []
    for item in items:
        for scorer, out in ((chosen, a_rows), (reference, b_rows)):
            sentences, passages = scorer.score(item.question)
            out.append(np.concatenate([*sentences.values(), np.stack(list(passages.values()))]))
    a, b = np.concatenate(a_rows), np.concatenate(b_rows)
    change = np.abs(a - b).max(axis=1)
    print(f"\n## {names[0]} against {names[1]}, every probe pair (n={len(a)})\n")
    print(
        table(
            ["argmax agrees", "max |change|", "mean |change|", "p99 |change|", "share moved > 0.05"],
            [
                [
                    float(np.mean(a.argmax(1) == b.argmax(1))),
                    float(change.max()),
                    float(change.mean()),
                    float(np.quantile(change, 0.99)),
                    float(np.mean(change > 0.05)),
                ]
            ],
        )
    )


def cosine_reference(papers: dict[str, PaperText], vectors: SentenceVectors, items: list[Item]) -> None:
    """What the embedding model alone does (MiniLM cosine to the question's focus, as the product
    ranks sentences): the bar a verifier's sentence ranking has to clear to be worth its cost."""
    rows = []
    for group, members in by_set(items).items():
        first, aucs = [], []
        for item in members:
            if item.gold is None or not item.gold_sentences:
                continue
            focus = question_focus(item.question)
            best = {pid: max(vectors.similarities(focus, paper.plain)) for pid, paper in papers.items()}
            own = vectors.similarities(focus, papers[item.gold].plain)
            first.append(int(np.argmax(own)) in item.gold_sentences)
            others = [v for pid, v in best.items() if pid != item.gold]
            aucs.append((sum(best[item.gold] > v for v in others) + 0.5 * sum(best[item.gold] == v for v in others)) / len(others))
        rows.append([group, len(first), float(np.mean(first)) if first else float("nan"), float(np.mean(aucs)) if aucs else float("nan")])
    print("\n## Reference: MiniLM cosine alone (no verifier)\n")
    print(table(["set", "n", "sentence first", "AUC best sentence"], rows))


def training_data(path: Path, items: list[Item]) -> None:
    """The training pairs' question openings and lengths against the seed sets', and the
    negatives each kind gets."""
    pairs = [p for p in read_jsonl(path) if p["split"] == "train"]
    print(f"\n## The training pairs ({path.name}, train split: {len(pairs)} pairs)\n")
    counts: dict[str, Counter] = defaultdict(Counter)
    for p in pairs:
        counts[opening_family(p["q"])][p["label"]] += 1
    seed = Counter(opening_family(i.question) for i in items)
    total = Counter(p["label"] for p in pairs)
    rows = [["all", sum(total.values()), total[1] / sum(total.values()), total[2] / sum(total.values()), "", ""]]
    for name in (*FAMILY_NAMES, "bare"):
        c = counts[name]
        n = sum(c.values())
        rows.append(
            [name, n, c[1] / n if n else float("nan"), c[2] / n if n else float("nan"), seed[name], seed[name] / len(items)]
        )
    print(table(["opening", "pairs", "share answers", "share contradicts", "seed questions", "seed share"], rows))
    questions = {p["q"]: p["kind"] for p in pairs}
    words = [len(q.split()) for q in questions]
    seed_words = [len(i.question.split()) for i in items]
    print(
        f"\nquestion length in words, median (p10-p90): training {statistics.median(words)} "
        f"({np.quantile(words, 0.1):.0f}-{np.quantile(words, 0.9):.0f}), seed sets {statistics.median(seed_words)} "
        f"({np.quantile(seed_words, 0.1):.0f}-{np.quantile(seed_words, 0.9):.0f}); training questions of at most 8 words: "
        f"{np.mean([w <= 8 for w in words]):.3f}, seed: {np.mean([w <= 8 for w in seed_words]):.3f}"
    )
    per_kind: dict[str, Counter] = defaultdict(Counter)
    asked = Counter(questions.values())
    for p in pairs:
        per_kind[p["kind"]][(p["level"], p["label"], p["own"])] += 1
    rows = []
    for kind in sorted(per_kind):
        c, n = per_kind[kind], asked[kind]
        rows.append(
            [
                kind,
                n,
                c[("sentence", 1, True)] / n,
                c[("sentence", 2, True)] / n,
                c[("sentence", 0, True)] / n,
                c[("sentence", 0, False)] / n,
                sum(v for (level, label, _), v in c.items() if level == "paper" and label) / n,
                sum(v for (level, label, _), v in c.items() if level == "paper" and not label) / n,
            ]
        )
    print()
    # Paper pairs by label only: pairs built before issue 35 mark other papers' paper pairs as own.
    print(
        table(
            [
                "kind",
                "questions",
                "answering sentences",
                "contradicting sentences",
                "own other sentences (none)",
                "other papers' sentences (none)",
                "paper pairs answers/contradicts",
                "paper pairs none",
            ],
            rows,
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="calibration", choices=("calibration", "report", "all"))
    parser.add_argument(
        "--model", type=Path, action="append", help="a model folder (default: the committed one); repeat to compare"
    )
    parser.add_argument("--float", type=Path, help="the float export of the (last) model, to measure the chosen export against")
    parser.add_argument("--pairs", type=Path, action="append", default=[], help="training pairs to describe (pairs.jsonl.gz)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    papers = load_papers()
    items = load_items(args.split, papers)
    print(
        f"# The verifier on the seed sets' {args.split} half{'s' if args.split != 'all' else ''}: "
        f"{len(items)} questions ({sum(1 for i in items if i.gold)} answerable) over {len(papers)} papers"
    )
    for path in args.pairs:
        training_data(path, items)
    vectors = SentenceVectors(make_embeddings(Settings(backend="extractive", threads=args.threads)))
    cosine_reference(papers, vectors, items)
    scorers = {}
    for model in args.model or [VERIFIER_DIR]:
        scorers[str(model)] = scorer = Scorer(model, papers, vectors, args.threads)
        probe_model(str(model), scorer, items)
    if args.float:
        last = str((args.model or [VERIFIER_DIR])[-1])
        reference = Scorer(args.float, papers, vectors, args.threads)
        probe_model(f"{args.float} (float)", reference, items)
        compare_exports(scorers[last], reference, items, (last, f"{args.float} (float)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
