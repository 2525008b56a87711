"""The package's rooms and the direction of their imports (docs/architecture.md).

A paper runs corpus -> index, a question question -> search -> answering -> evaluation, and the
models serve both; the command line and the app sit on top. A room may import its own modules and
the rooms below it, never one above: read from the code's own imports, lazy ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

# From the bottom up. The base is what every room uses: the records, settings and errors, and the
# pure text helpers the records themselves need. The faces are what the user calls.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({"rag.errors", "rag.records", "rag.settings", "rag.progress", "rag.markup", "rag.naming", "rag.text"})),
    ("corpus", frozenset({"rag.corpus"})),
    ("index", frozenset({"rag.index"})),
    ("models", frozenset({"rag.models"})),
    ("question", frozenset({"rag.question"})),
    ("search", frozenset({"rag.search"})),
    ("answering", frozenset({"rag.answering"})),
    ("evaluation", frozenset({"rag.evaluation"})),
    ("faces", frozenset({"rag", "rag.cli", "rag.terminal", "rag.conversations", "rag.export", "rag.library", "rag.outputs"})),
    ("ui", frozenset({"ui"})),
)
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    """The layer a module belongs to: a room's module by its room (`rag.index.store` by `rag.index`),
    a top-level one by its own name."""
    parts = module.split(".")
    key = "ui" if parts[0] == "ui" else ".".join(parts[:2])
    return next((number for number, (_, members) in enumerate(LAYERS) if key in members), None)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of rag or ui in a file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from rag import x` imports the module rag.x where there is one.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (ROOT / sub.replace(".", "/")).is_dir() or (ROOT / (sub.replace(".", "/") + ".py")).is_file()
                found.append((node.lineno, sub if is_module else node.module))
    return [(line, name) for line, name in found if name.split(".")[0] in ("rag", "ui")]


SOURCES = sorted([*(ROOT / "rag").rglob("*.py"), *(ROOT / "ui").rglob("*.py")])


def test_every_module_has_a_room():
    homeless = [module_name(p) for p in SOURCES if layer_of(module_name(p)) is None]
    assert not homeless, f"modules in no layer of this test: {homeless}; move each into a room, or name it in LAYERS"


def upward(path: Path, module: str) -> list[str]:
    """The imports of `path`, read as the module `module`, that run to a layer above its own."""
    here = layer_of(module)
    assert here is not None
    return [
        f"{path.name}:{line} imports {name} ({LAYERS[there][0]}, above {LAYERS[here][0]})"
        for line, name in imports(path)
        if (there := layer_of(name)) is not None and there > here
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_runs_back_up(path):
    found = upward(path, module_name(path))
    assert not found, "\n".join(found)


def test_no_module_is_over_600_lines():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / "rag").rglob("*.py")}
    long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    assert not long, f"split these by concern: {long}"


def test_the_check_catches_an_import_back_up_even_a_lazy_one(tmp_path):
    module = tmp_path / "store.py"
    module.write_text("from rag.records import Paper\n\n\ndef f():\n    from rag.answering.chain import Assistant\n")
    assert upward(module, "rag.index.store") == ["store.py:5 imports rag.answering.chain (answering, above index)"]
    assert upward(module, "rag.evaluation.run") == []
