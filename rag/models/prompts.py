"""Prompts are files in `prompts/`, loaded by name, so changing one needs no code change. The
words an answer says to its reader are there once per language: English in `prompts/`, Chinese
in `prompts/zh/` (the same names)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from rag.errors import ConfigError
from rag.text import quoted_listing

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"


def _read(filename: str, directory: Path, language: str) -> str:
    path = (directory if language == "en" else directory / language) / filename
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"prompt file {path} is missing", hint="restore it from the repository's prompts/ folder") from None


@lru_cache(maxsize=128)
def load_prompt(name: str, directory: Path = PROMPTS_DIR, *, language: str = "en") -> str:
    """The prompt or user-facing text `name`, in `language`: English in prompts/, another
    language in its folder (prompts/zh/)."""
    return _read(f"{name}.md", directory, language).strip()


@lru_cache(maxsize=8)
def listing_words(language: str = "en", directory: Path = PROMPTS_DIR) -> dict[str, str]:
    """How `language` lists things: the mark between items ("between"), and the words before
    the last one ("or", "and"), with their spaces (prompts/listing.json)."""
    return json.loads(_read("listing.json", directory, language))


def listed(items: Sequence[str], language: str = "en") -> str:
    """Phrases as a sentence in `language` names them: “a”, “b” or “c”; “a”、“b”或“c”."""
    words = listing_words(language)
    return quoted_listing(items, last=words["or"], between=words["between"])


@lru_cache(maxsize=8)
def catalogue(language: str = "en", directory: Path = PROMPTS_DIR) -> dict[str, str]:
    """The app's and the terminal's words in `language`, by key (prompts/ui.json,
    prompts/zh/ui.json): the same keys in each, a string an entry, `{field}` for what is filled in."""
    return json.loads(_read("ui.json", directory, language))


def say(key: str, language: str = "en", **fields: object) -> str:
    """The catalogue's `key` in `language`, its fields filled in."""
    return catalogue(language)[key].format(**fields)
