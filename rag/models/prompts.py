"""Prompts are files in `prompts/`, loaded by name, so changing one needs no code change."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rag.errors import ConfigError

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"


@lru_cache(maxsize=32)
def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> str:
    path = directory / f"{name}.md"
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ConfigError(f"prompt file {path} is missing", hint="restore it from the repository's prompts/ folder") from None
