"""The one settings object: `PAPERCHAT_*` environment variables and an optional TOML file.

Read once at the edge (CLI, UI, eval) and passed down; library code never reads the environment.
Precedence, highest first: arguments, environment, `$PAPERCHAT_CONFIG` or `./paperchat.toml` or
the user config file, defaults.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from platformdirs import user_cache_dir, user_config_dir, user_data_dir
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from rag.errors import ConfigError
from rag.records import Limits

BackendName = Literal["auto", "extractive", "openai", "local"]


def _config_files() -> list[Path]:
    explicit = os.environ.get("PAPERCHAT_CONFIG")
    if explicit:
        return [Path(explicit)]
    return [Path(user_config_dir("paperchat")) / "config.toml", Path("paperchat.toml")]


def _present_config_files() -> list[Path]:
    """The config files that exist, each checked to be TOML: a broken one is a ConfigError naming
    its file and line, not a parser's traceback."""
    present = [p for p in _config_files() if p.is_file()]
    for path in present:
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the config file: {exc}", hint="fix or remove it") from None
        except tomllib.TOMLDecodeError as exc:
            line = re.search(r"at line (\d+)", str(exc))
            where = f"{path}:{line[1]}" if line else str(path)
            reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
            raise ConfigError(f"{where}: not valid TOML: {reason}", hint="fix the line, or remove the file") from None
    return present


def _source(field: str, overrides: dict, files: list[Path]) -> str:
    """Where a setting's value came from, as a user would look for it."""
    if field in overrides:
        return f"the {field} option"
    known = Settings.model_fields.get(field)
    alias = known.validation_alias if known else None
    names = alias.choices if isinstance(alias, AliasChoices) else [f"PAPERCHAT_{field.upper()}"]
    for name in names:
        if isinstance(name, str) and name in os.environ:
            return name
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.match(rf"\s*{re.escape(field)}\s*=", line):
                return f"{path}:{number}: {field}"
    return field


class Settings(BaseSettings):
    """Everything configurable, with the offline defaults."""

    model_config = SettingsConfigDict(env_prefix="PAPERCHAT_", extra="ignore", populate_by_name=True)

    data_dir: Path = Field(default_factory=lambda: Path(user_data_dir("paperchat")))
    # What the app offers to index when the index is empty: the papers that ship with PaperChat.
    bundled_corpus: Path = Path(__file__).resolve().parents[1] / "data" / "papers.jsonl"
    collection: str = "papers"
    # A Chroma server (`chroma run --path DIR --host H --port P`) shared by a team, as
    # http://host:port; unset, the index is embedded under data_dir.
    chroma_url: str | None = None
    # Seconds a write to the embedded index (an ingest, an upload, a removal) waits for another
    # process writing to it (rag.index.locking) before it gives up with "index busy". Ten minutes sees
    # out an ingest or upload of some 6,000 papers (10-11 papers/s, docs/architecture.md); a
    # longer wait would leave the app's page or a script hanging with no end in sight. 0: at once.
    lock_timeout: float = Field(default=600.0, ge=0)

    embedding_provider: Literal["local", "openai"] = "local"
    # onnx: onnxruntime, no torch at start-up (the model is exported once from the bundled
    # weights); torch: sentence-transformers. Same vectors either way, so one index serves both.
    # onnx-int8: its matrix weights quantized to int8 (made once from the export), 1.6x the
    # model's speed at the same answers; other vectors, so an index of its own. auto: an index
    # is read with the runtime it was built with, and a new one is built with onnx-int8.
    embedding_runtime: Literal["auto", "onnx", "onnx-int8", "torch"] = "auto"
    model_cache_dir: Path = Field(default_factory=lambda: Path(user_cache_dir("paperchat")) / "models")
    openai_embedding_model: str = "text-embedding-3-small"

    backend: BackendName = "auto"
    # The app's language: auto follows the browser's (and the terminal, each answer's question).
    language: Literal["auto", "en", "zh"] = Field(
        default="auto", validation_alias=AliasChoices("PAPERCHAT_LANG", "PAPERCHAT_LANGUAGE")
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PAPERCHAT_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("PAPERCHAT_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    openai_model: str = "gpt-4o-mini"
    local_model_path: Path | None = None
    temperature: float = 0.0
    # A model call's bounds (rag.models.modelcall), in seconds: opening the connection; the first token,
    # and each next one (a CPU llama.cpp server reads five abstracts well within it); the whole
    # answer, retries included. Before the first token a rate limit, a server error or a refused
    # connection is retried up to max_retries times.
    connect_timeout: float = Field(default=5.0, gt=0)
    first_token_timeout: float = Field(default=60.0, gt=0)
    request_timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    # A model's answer stops here whatever the server's default: small models loop otherwise.
    max_answer_tokens: int = Field(default=600, ge=16)
    # A question's length, in characters: a question is a few sentences (the longest of the
    # question sets is 234 characters), and 4,000 leaves room for a pasted abstract (the bundled
    # ones are 1,553 characters at most). Longer is a document pasted by mistake, which would be sent to
    # the model whole and said back whole in a decline.
    max_question_chars: int = Field(default=4000, ge=1)
    # How many papers a collection or comparison question considers before its relevance bar.
    collection_depth: int = Field(default=30, ge=1)

    # Embed every abstract sentence and paper word at ingest (about twice the embedding work), so
    # that a question embeds only itself; off, the answerer embeds them when a question needs them.
    sentence_vectors: bool = True

    k: int = Field(default=5, ge=1, le=100)
    # cl100k tokens; MiniLM reads 256 word pieces, so a chunk this size is seen whole.
    chunk_size: int = Field(default=256, ge=32)
    chunk_overlap: int = Field(default=32, ge=0)
    # Size limits (rag.corpus.reading), checked as a file is read, so an oversized record is refused before
    # anything is indexed. An abstract's cl100k tokens: the longest real one measured is 688 (of
    # the 13,687 in shared/data/scale_corpus.jsonl.gz; 317 in data/papers.jsonl), and 2,000 is
    # about three times that. Longer is a whole paper or a broken export, whose chunks would fill
    # the top-k. Chunks per paper follow from this and chunk_size (2,000 tokens of abstract make
    # 10 chunks at the defaults; the 1.25 MB record that prompted this made 2,232). A cap of their
    # own would repeat this check, and could only be made by chunking every record at load.
    max_abstract_tokens: int = Field(default=2000, ge=1)
    # An upload in the app, in MB as Streamlit counts them, a .gz decompressed: 50 holds ~30k
    # abstracts (the scale corpus is 22.8 MB as JSONL). Streamlit's server.maxUploadSize (200)
    # caps it too. `paperchat ingest` has no such cap: it streams a file of any size.
    max_upload_mb: int = Field(default=50, ge=1)
    # Records in one upload: the app indexes while its user waits, at 10-11 papers/s
    # (docs/architecture.md), so 20,000 is about half an hour; a larger corpus is for `paperchat ingest`.
    max_upload_records: int = Field(default=20_000, ge=1)
    # The weights of the dense and BM25 scores in the fusion (rag.search.retrieval.score_fusion). On the
    # calibration halves dense shares of 0.4-0.6 score within 0.006 nDCG@10 of each other; equal
    # weights are the middle (docs/benchmarks.md, "Fusion").
    dense_weight: float = Field(default=1.0, ge=0)
    bm25_weight: float = Field(default=1.0, ge=0)
    candidates: int = Field(default=50, ge=1)
    # The fused ranking's top papers the verifier reorders (rag.search.rerank), and how much the fused
    # score (scaled to the top paper's) counts beside the verifier's probability. Off: on the
    # calibration halves (eval/calibrate_rerank.py) no weight ranks better than the fusion alone.
    rerank_depth: int = Field(default=0, ge=0)
    rerank_weight: float = Field(default=2.0, ge=0)
    # With a model backend, a question is declined before the model is asked only when no
    # retrieved sentence comes this close to it (MiniLM cosine): below every answerable question
    # of every set (eval/calibrate_answerability.py). Above it, the model reads the sources and
    # may answer NOT COVERED.
    model_floor: float = 0.09
    # Below this cosine similarity between the question's focus and the closest sentence of the
    # retrieved abstracts, a question whose key terms are not strongly met is not covered
    # (rag.answering.answerability). Calibrated with the other answerability bars by
    # eval/calibrate_answerability.py on the calibration halves of the question sets.
    min_relevance: float = 0.33
    threads: int = Field(default_factory=lambda: os.cpu_count() or 1)
    # Where `paperchat eval` and the Evaluate page write their run folders: the user's, beside
    # their index and conversations, as the project's tree is not theirs (nor writable, installed).
    reports_dir: Path = Field(default_factory=lambda data: data["data_dir"] / "eval-reports")
    # An evaluation run stops after this many failed questions in a row. In a row, not in all: a
    # server that drops one request in fifty should not end a long run, while one that is down
    # fails every question from then on, and a few in a row tell that apart from bad luck.
    eval_max_failures: int = Field(default=3, ge=1)

    @field_validator("openai_base_url")
    @classmethod
    def _an_http_url(cls, url: str | None) -> str | None:
        # Read here, once: a URL the HTTP client cannot read failed only at the first question,
        # as a TypeError.
        if url is None:
            return url
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (reading it checks it)
        except ValueError as exc:
            raise ValueError(f"it should be a URL such as http://localhost:8080/v1 ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("it should be an http:// or https:// URL with a host, such as http://localhost:8080/v1")
        return url

    def __init__(self, **values) -> None:
        files = _present_config_files()
        try:
            super().__init__(**values)
        except ValidationError as exc:
            problems = [
                f"{_source(str(e['loc'][0]), values, files)} is {_shown(str(e['loc'][0]), e['input'])!r}: "
                + e["msg"].replace("Input should", "it should").removeprefix("Value error, ")
                for e in exc.errors()
                # A default made from a bad setting (reports_dir from data_dir) is not a problem of its own.
                if e["type"] != "default_factory_not_called"
            ]
            raise ConfigError(
                "bad setting: " + "; ".join(problems),
                hint="fix or unset it (docs/settings.md lists them all)",
            ) from None

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
    def limits(self) -> Limits:
        return Limits(**{name: getattr(self, name) for name in Limits.model_fields})

    @property
    def conversations_dir(self) -> Path:
        """Where the app saves conversations (`rag.conversations`), one file each."""
        return self.data_dir / "conversations"

    @property
    def has_openai_key(self) -> bool:
        return bool(self.openai_api_key and self.openai_api_key.get_secret_value())

    @property
    def uses_openai(self) -> bool:
        """A key, or a compatible server (Ollama, vLLM, llama.cpp), which may need none."""
        return self.has_openai_key or bool(self.openai_base_url)

    @property
    def openai_server(self) -> str:
        """The server as it may be shown or saved (`redact_url`)."""
        return redact_url(self.openai_base_url) if self.openai_base_url else "api.openai.com"

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no message may hold: the API key and the credentials in OPENAI_BASE_URL."""
        key = self.openai_api_key.get_secret_value() if self.openai_api_key else ""
        return tuple(s for s in (key, *url_credentials(self.openai_base_url or "")) if s)

    @property
    def openai_client_key(self) -> str:
        """The bearer key: OPENAI_API_KEY, else the password (or lone user name) in
        OPENAI_BASE_URL. The client insists on a key even where the server wants none."""
        key = self.openai_api_key.get_secret_value() if self.openai_api_key else ""
        parts = urlsplit(self.openai_base_url or "")
        return key or parts.password or parts.username or "not-needed"

    @property
    def openai_endpoint(self) -> str | None:
        """OPENAI_BASE_URL without its user info and query: the client appends its paths to it
        (the query is sent as `openai_query`; user info would be sent as Basic auth, in place of
        the bearer key)."""
        if not self.openai_base_url:
            return None
        parts = urlsplit(self.openai_base_url)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))

    @property
    def openai_query(self) -> dict[str, str]:
        """The query of OPENAI_BASE_URL (`?api_key=...`), sent with every request."""
        return {name: value for name, value in _query_parts(urlsplit(self.openai_base_url or "").query) if name}


# What a redacted credential reads as.
HIDDEN = "***"


def _query_parts(query: str) -> list[tuple[str, str]]:
    """Each `name=value` of a URL's query as (name, value); a part without `=` is a bare value."""
    parts = [p.partition("=") for p in query.split("&") if p]
    return [(name, value) if sep else ("", name) for name, sep, value in parts]


def _shown(field: str, value: object) -> object:
    """A bad setting's value as a message may say it: the base URL's credentials hidden."""
    return redact_url(value) if field.casefold().endswith("openai_base_url") and isinstance(value, str) else value


def url_credentials(url: str) -> tuple[str, ...]:
    """The credentials a URL may carry: its password (or, with none, its user name, which is then
    often a token) and every query value, as gateways take keys by names of their own
    (`api_key`, `key`, `token`, `sig`), so none is known to be harmless."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return (url,)
    user = parts.password or parts.username
    return tuple(s for s in (user, *(value for _, value in _query_parts(parts.query))) if s)


def redact_url(url: str) -> str:
    """`url` as it may be printed or written into a report, its credentials (`url_credentials`)
    hidden: `http://user:PASSWORD@host/v1?api_key=K` becomes `http://***@host/v1?api_key=***`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a URL that cannot be read, not shown)"
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{HIDDEN}@{host}" if "@" in parts.netloc else host
    query = "&".join(f"{name}={HIDDEN}" if name else HIDDEN for name, _ in _query_parts(parts.query))
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=""))
