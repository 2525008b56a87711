"""The one settings object: `PAPERCHAT_*` environment variables and an optional TOML file.

Read once at the edge (CLI, UI, eval) and passed down; library code never reads the environment.
Precedence, highest first: arguments, environment, `$PAPERCHAT_CONFIG` or `./paperchat.toml` or
the user config file, defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from platformdirs import user_cache_dir, user_config_dir, user_data_dir
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

BackendName = Literal["auto", "extractive", "openai", "local"]


def _config_files() -> list[Path]:
    explicit = os.environ.get("PAPERCHAT_CONFIG")
    if explicit:
        return [Path(explicit)]
    return [Path(user_config_dir("paperchat")) / "config.toml", Path("paperchat.toml")]


class Settings(BaseSettings):
    """Everything configurable, with the offline defaults."""

    model_config = SettingsConfigDict(env_prefix="PAPERCHAT_", extra="ignore", populate_by_name=True)

    data_dir: Path = Field(default_factory=lambda: Path(user_data_dir("paperchat")))
    collection: str = "papers"

    embedding_provider: Literal["local", "openai"] = "local"
    # onnx: onnxruntime, no torch at start-up (the model is exported once from the bundled
    # weights); torch: sentence-transformers. Same vectors either way, so one index serves both.
    embedding_runtime: Literal["onnx", "torch"] = "onnx"
    model_cache_dir: Path = Field(default_factory=lambda: Path(user_cache_dir("paperchat")) / "models")
    openai_embedding_model: str = "text-embedding-3-small"

    backend: BackendName = "auto"
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PAPERCHAT_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PAPERCHAT_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    openai_model: str = "gpt-4o-mini"
    local_model_path: Path | None = None
    temperature: float = 0.0
    request_timeout: float = 60.0

    k: int = Field(default=5, ge=1, le=100)
    # cl100k tokens; MiniLM reads 256 word pieces, so a chunk this size is seen whole.
    chunk_size: int = Field(default=256, ge=32)
    chunk_overlap: int = Field(default=32, ge=0)
    # Fusion weights stay settings: on known-item (title) queries BM25 alone beats the fusion.
    dense_weight: float = Field(default=1.0, ge=0)
    bm25_weight: float = Field(default=1.0, ge=0)
    rrf_k: int = Field(default=60, ge=1)
    candidates: int = Field(default=50, ge=1)
    # Below this cosine similarity between the question's focus (rag.text.question_focus) and the
    # closest sentence of the retrieved abstracts, the corpus is taken not to cover a question.
    # Calibrated across corpora by eval/calibrate_coverage.py: the highest bar that refuses no
    # answerable question of the seed set, of SciFact (claims on their abstracts) or of the
    # known-item set. It refuses 6 of the seed set's 15 unanswerable questions (0.33 refused 2),
    # 98% of SciFact's biomedical claims put to the 20 ML papers, and 57% of the seed set's ML
    # questions put to SciFact's biomedical abstracts.
    min_relevance: float = 0.37
    threads: int = Field(default_factory=lambda: os.cpu_count() or 1)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=[p for p in _config_files() if p.is_file()])
        return init_settings, env_settings, toml

    @property
    def has_openai_key(self) -> bool:
        return bool(self.openai_api_key and self.openai_api_key.get_secret_value())

    @property
    def uses_openai(self) -> bool:
        """A key, or a compatible server (Ollama, vLLM, llama.cpp), which may need none."""
        return self.has_openai_key or bool(self.openai_base_url)

    @property
    def openai_client_key(self) -> str:
        # The client insists on a key even where the server wants none.
        return self.openai_api_key.get_secret_value() if self.has_openai_key else "not-needed"
