"""The README and the pages of docs/: short enough to read, every relative link leading somewhere,
and the architecture page naming every module the code has, in the folder it is in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
# [text](target) and ![alt](target), outside fenced code.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return LINK.findall(text)


def test_the_readme_is_one_a_newcomer_reads_in_five_minutes():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, len(lines)
    text = "\n".join(lines)
    assert "make run" in text and "make test" in text, "the two commands"
    assert "make test" in (ROOT / ".ci" / "run").read_text(), "CI runs the README's test command"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address, or a place on the same page
        if not (page.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to what is not there: {broken}"


def test_the_docs_are_all_reachable_from_the_readme():
    linked = {(ROOT / target).resolve() for target in links(ROOT / "README.md")}
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, sorted(p.name for p in pages - linked)


def architecture_paths() -> set[str]:
    """The modules docs/architecture.md's tables name, by path: a bare name in a row ("`rag/a/x.py`,
    `y.py`") is in the folder of the path before it."""
    named = set()
    for row in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        if not row.startswith("| `"):
            continue
        folder = ""
        for name in re.findall(r"`([\w/]+\.py)`", row.split(" | ")[0]):
            if "/" in name:
                folder = name.rsplit("/", 1)[0]
            named.add(name if "/" in name else f"{folder}/{name}")
    return named


def test_the_architecture_page_names_every_module_where_it_is():
    modules = {
        str(p.relative_to(ROOT))
        for p in [*(ROOT / "rag").rglob("*.py"), *(ROOT / "ui").glob("*.py")]
        if p.name != "__init__.py" or p.parent == ROOT / "rag"
    }
    named = architecture_paths()
    assert not modules - named, f"modules docs/architecture.md does not name: {sorted(modules - named)}"
    assert not named - modules, f"docs/architecture.md names modules that are not there: {sorted(named - modules)}"
