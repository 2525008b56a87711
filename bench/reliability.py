"""`make reliability`: every failure class of issue 11 tried, as the tests that prove it, with a
table of cases per class.

Each class is a set of tests (by file, and where a file mixes classes by a keyword of the test's
name); the tests themselves assert what each row claims: our error and no traceback, no paper
lost or half-indexed, no duplicate chunk, the fault survived within its bound. The table counts
the cases each class tried and how they ended. Extra pytest arguments pass through
(`python bench/reliability.py -x`); `--junit FILE` prints the table of a run already made, as
`make test` does after the whole suite.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class FailureClass:
    name: str
    proves: str
    tests: tuple[str, ...]  # "tests/file.py" or "tests/file.py::keyword in the test's name"


# A case counts for the first class whose file and keyword it matches: the narrow rows come first.
CLASSES = (
    FailureClass("a server past its bounds", "ignores max_tokens: cut off at the cap; Retry-After as an HTTP date obeyed; "
                 "a wait said rounded up",
                 ("tests/models/test_model_faults.py::ignores_the_token_cap", "tests/models/test_model_faults.py::http_date",
                  "tests/models/test_model_faults.py::rounded_up")),
    FailureClass("credentials in a URL", "a password or query key in OPENAI_BASE_URL in no message, label or report",
                 ("tests/models/test_openai_backend.py::credentials_in_the_base_url",
                  "tests/test_settings.py::without_its_credentials")),
    FailureClass("a question too long", "refused before the model, never said back, in the library and the CLI",
                 ("tests/answering/test_model_safeguards.py::past_the_length_cap", "tests/answering/test_model_safeguards.py::long_question")),
    FailureClass("bad input files", "file:line error, index unchanged, no traceback",
                 ("tests/corpus/test_corpus.py", "tests/test_cli.py::bad", "tests/test_cli.py::oversized",
                  "tests/ui/test_ui.py::upload_of", "tests/ui/test_ui.py::upload_over")),
    FailureClass("settings and config", "ConfigError naming the variable or file:line, in every command and the app",
                 ("tests/test_settings.py", "tests/test_cli.py::a_bad_setting", "tests/ui/test_ui.py::a_bad_setting")),
    FailureClass("arbitrary bytes and text", "loaders and citation parser raise only our errors (hypothesis)",
                 ("tests/corpus/test_corpus_properties.py", "tests/answering/test_citation_properties.py")),
    FailureClass("model faults", "refused, 500, 429 Retry-After, stall, drop, not JSON, bad key: within the bound",
                 ("tests/models/test_model_faults.py", "tests/models/test_openai_backend.py", "tests/ui/test_ui.py::cut_off",
                  "tests/ui/test_ui.py::backend_error")),
    FailureClass("hostile text", "fenced as data, citations held to retrieved papers, Markdown defused, escaped",
                 ("tests/answering/test_model_safeguards.py", "tests/test_markup.py::defuse", "tests/ui/test_ui.py::escaped",
                  "tests/test_export.py")),
    FailureClass("markup in corpus text", "a link holding \"[\" shown by search, ask, chat and --export, no MarkupError",
                 ("tests/test_cli.py::link_holding_brackets",)),
    FailureClass("terminal escape sequences", "corpus and model text reach the terminal with no escape or control character, "
                 "their visible text kept",
                 ("tests/test_markup.py::terminal_safe", "tests/test_cli.py::terminal_escapes")),
    FailureClass("unmarked unsupported claims", "an unsupported citation's sentence marked (unsupported), a held-back "
                 "one's (no such source) where it stood, alike in the terminal, the app and the export",
                 ("tests/test_cli.py::marks_unsupported", "tests/answering/test_citations.py::held_back_claims",
                  "tests/answering/test_citation_properties.py::leaves_a_mark")),
    FailureClass("Ctrl+C", "ingest says how many papers are in and exits 130, the rerun adds the rest; chat stops the "
                 "answer and goes on; eval keeps its scored questions for --resume",
                 ("tests/index/test_crash_concurrency.py::ctrl_c", "tests/test_cli.py::ctrl_c", "tests/evaluation/test_eval_failures.py::ctrl_c")),
    FailureClass("secrets and file names", "the key in no output, report or export; upload names never paths",
                 ("tests/test_secrets.py", "tests/ui/test_ui.py::hostile_upload_name")),
    FailureClass("evaluation under failures", "failed questions recorded, stop after N in a row, --resume",
                 ("tests/evaluation/test_eval_failures.py",)),
    FailureClass("kills and concurrent writers", "SIGKILL in each stage of an ingest, placed by what it has written: papers whole or absent, "
                 "no duplicate; "
                 "two writers: both succeed or 'index busy'",
                 ("tests/index/test_crash_concurrency.py", "tests/index/test_store.py::killed", "tests/index/test_server.py::killed",
                  "tests/ui/test_ui.py::busy")),
    FailureClass("load", "8 browser sessions x 5 questions against one `paperchat ui`: 0 errors",
                 ("tests/ui/test_load.py",)),
    FailureClass("nested follow-ups", "joined once to the last real question; tags around a rewrite dropped",
                 ("tests/question/test_followup.py::joined_to_the_last_real_question_once", "tests/answering/test_chain.py::tags_wrapped")),
    FailureClass("progress in a log", "output not a terminal: a plain line per step, at least every 30 s, and at its end",
                 ("tests/test_progress.py", "tests/test_cli.py::plain_lines")),
)


def _selection(cls: FailureClass) -> list[tuple[str, str]]:
    return [(test.partition("::")[0], test.partition("::")[2]) for test in cls.tests]


def _class_of(case: ET.Element) -> FailureClass | None:
    # pytest names a case's module by its dotted path ("tests.ui.test_ui"), then any class in it.
    parts = case.get("classname", "").split(".")
    module = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
    file = case.get("file") or "/".join(parts[: module + 1]) + ".py"
    name = case.get("name", "")
    for cls in CLASSES:
        for path, keyword in _selection(cls):
            if file.endswith(path.removeprefix("tests/")) and keyword in name:
                return cls
    return None


def table(junit: Path) -> str:
    """The table of cases per class, from a pytest run's JUnit XML."""
    outcomes: dict[str, Counter] = {cls.name: Counter() for cls in CLASSES}
    for case in ET.parse(junit).getroot().iter("testcase"):
        cls = _class_of(case)
        if cls is not None:
            ended = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
            outcomes[cls.name][ended] += 1
    rows = [f"{'class':<30} {'cases':>5} {'passed':>6} {'failed':>6} {'skipped':>7}  what each passing case proves"]
    for cls in CLASSES:
        seen = outcomes[cls.name]
        failed = seen["failure"] + seen["error"]
        rows.append(f"{cls.name:<30} {sum(seen.values()):>5} {seen['passed']:>6} {failed:>6} {seen['skipped']:>7}  {cls.proves}")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--junit"]:
        # The table of a run already made (make test writes its JUnit XML).
        print(table(Path(argv[1])))
        return 0
    files = sorted({path for cls in CLASSES for path, _ in _selection(cls) if (ROOT / path).exists()})
    with tempfile.TemporaryDirectory() as folder:
        junit = Path(folder) / "junit.xml"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={junit}", *files, *argv], cwd=ROOT)
        if junit.exists():
            print("\n" + table(junit))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
