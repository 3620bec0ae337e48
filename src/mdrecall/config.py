"""Typed configuration with the spec's keys and defaults, loaded from TOML and validated with readable errors.

The file (`mdrecall.toml` in the workspace, or `--config FILE`) holds the keys of OpenClaw's
`memorySearch` section at its top level, in the spec's camelCase spelling, plus `citations` and
`backend` from OpenClaw's `memory` section:

    provider = "auto"
    extraPaths = ["../team-docs"]

    [query]
    maxResults = 6
    minScore = 0.35

    [query.hybrid]
    vectorWeight = 0.7
    textWeight = 0.3
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomllib
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from .errors import ConfigError

CONFIG_FILENAME = "mdrecall.toml"
DEFAULT_AGENT_ID = "main"
STATE_DIR_ENV = "MDRECALL_STATE_DIR"

ProviderName = Literal["auto", "local", "openai", "gemini", "voyage", "none"]
FallbackName = Literal["openai", "gemini", "local", "voyage", "none"]
SourceName = Literal["memory", "sessions"]


class _Section(BaseModel):
    """Base for every config section: camelCase keys, unknown keys rejected, values checked on assignment."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True)


class BatchConfig(_Section):
    enabled: bool = False
    wait: bool = True
    concurrency: int = Field(2, ge=1, le=64)
    poll_interval_ms: int = Field(2000, ge=1)
    timeout_minutes: float = Field(60, gt=0)


class RemoteConfig(_Section):
    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    batch: BatchConfig = Field(default_factory=BatchConfig)


class ProviderSection(_Section):
    """Per-provider overrides (`[openai]`, `[gemini]`, `[voyage]`); `remote.*` wins over these."""

    api_key: str | None = None
    base_url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    model: str | None = None


class LocalConfig(_Section):
    # A folder with a sentence-transformers / Hugging Face model (config.json, model.safetensors,
    # tokenizer.json), or a model name for fastembed/sentence-transformers when those extras are installed.
    model_path: str | None = None
    model_cache_dir: str | None = None
    # The offline model by name: "e5-small" (multilingual-e5-small, the default), "e5-small-enpt" or "minilm"
    # (all-MiniLM-L6-v2). Unset: the default. local.modelPath, when set, wins.
    model: str | None = None
    # "auto": numpy runtime for BERT-family folders, else fastembed, else sentence-transformers.
    runtime: Literal["auto", "numpy", "fastembed", "sentence-transformers"] = "auto"
    batch_size: int = Field(32, ge=1, le=1024)


class VectorStoreConfig(_Section):
    enabled: bool = True
    extension_path: str | None = None


class StoreConfig(_Section):
    driver: Literal["sqlite"] = "sqlite"
    # May contain "{agentId}"; relative paths are relative to the state dir.
    path: str | None = None
    vector: VectorStoreConfig = Field(default_factory=VectorStoreConfig)


class ChunkingConfig(_Section):
    tokens: int = Field(400, ge=1, le=100_000)
    overlap: int = Field(80, ge=0)

    @model_validator(mode="after")
    def _overlap_below_tokens(self) -> ChunkingConfig:
        if self.overlap >= self.tokens:
            raise ValueError(f"chunking.overlap ({self.overlap}) must be smaller than chunking.tokens ({self.tokens})")
        return self


class SessionDeltaConfig(_Section):
    delta_bytes: int = Field(100_000, ge=0)
    delta_messages: int = Field(50, ge=0)


class SyncConfig(_Section):
    on_session_start: bool = True
    on_search: bool = True
    watch: bool = True
    watch_debounce_ms: int = Field(1500, ge=0)
    interval_minutes: float = Field(0, ge=0)
    sessions: SessionDeltaConfig = Field(default_factory=SessionDeltaConfig)


class HybridConfig(_Section):
    enabled: bool = True
    vector_weight: float = Field(0.7, ge=0)
    text_weight: float = Field(0.3, ge=0)
    candidate_multiplier: int = Field(4, ge=1, le=100)
    mode: Literal["weighted", "rrf"] = "weighted"

    @model_validator(mode="after")
    def _weights_not_both_zero(self) -> HybridConfig:
        if self.vector_weight + self.text_weight <= 0:
            raise ValueError("query.hybrid.vectorWeight and query.hybrid.textWeight cannot both be 0")
        return self

    def normalized_weights(self) -> tuple[float, float]:
        """(vector, text) weights scaled to sum to 1, as the spec resolves them."""
        total = self.vector_weight + self.text_weight
        return self.vector_weight / total, self.text_weight / total


class TemporalDecayConfig(_Section):
    enabled: bool = False
    half_life_days: float = Field(30, gt=0)


class MmrConfig(_Section):
    enabled: bool = False
    lambda_: float = Field(0.7, ge=0, le=1, alias="lambda")


class QueryConfig(_Section):
    max_results: int = Field(6, ge=1, le=1000)
    min_score: float = Field(0.35, ge=0, le=1)
    snippet_max_chars: int = Field(700, ge=1)
    max_injected_chars: int = Field(4000, ge=1)
    hybrid: HybridConfig = Field(default_factory=HybridConfig)
    temporal_decay: TemporalDecayConfig = Field(default_factory=TemporalDecayConfig)
    mmr: MmrConfig = Field(default_factory=MmrConfig)


class CacheConfig(_Section):
    enabled: bool = True
    max_entries: int | None = Field(None, ge=1)


class ExperimentalConfig(_Section):
    session_memory: bool = False


class MemoryConfig(_Section):
    """The whole mdrecall configuration (OpenClaw's `memorySearch` plus `memory.citations/backend`)."""

    enabled: bool = True
    sources: list[SourceName] = Field(default_factory=lambda: ["memory"])
    extra_paths: list[str] = Field(default_factory=list)
    provider: ProviderName = "auto"
    model: str | None = None
    fallback: FallbackName = "none"
    remote: RemoteConfig = Field(default_factory=RemoteConfig)
    openai: ProviderSection = Field(default_factory=ProviderSection)
    gemini: ProviderSection = Field(default_factory=ProviderSection)
    voyage: ProviderSection = Field(default_factory=ProviderSection)
    local: LocalConfig = Field(default_factory=LocalConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    sync: SyncConfig = Field(default_factory=SyncConfig)
    query: QueryConfig = Field(default_factory=QueryConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    experimental: ExperimentalConfig = Field(default_factory=ExperimentalConfig)
    citations: Literal["auto", "on", "off"] = "auto"
    backend: Literal["builtin", "qmd"] = "builtin"

    @model_validator(mode="after")
    def _sources_not_empty(self) -> MemoryConfig:
        if not self.sources:
            raise ValueError("sources must name at least one of 'memory', 'sessions'")
        return self


def format_validation_error(err: ValidationError, origin: str) -> str:
    """One readable line per problem, naming the key as it is spelled in the file."""
    lines = []
    for problem in err.errors():
        key = ".".join(str(part) for part in problem["loc"] if part != "__root__") or "(top level)"
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            message = "unknown key"
        lines.append(f"{key}: {message}")
    return f"invalid config {origin}: " + "; ".join(lines)


def parse_config(data: dict[str, Any], origin: str = "(inline)") -> MemoryConfig:
    """Validate a dict (as read from TOML) into a MemoryConfig, or raise ConfigError naming the keys."""
    try:
        return MemoryConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, origin)) from None


def load_config_file(path: Path) -> MemoryConfig:
    """Read and validate a TOML config file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as err:
        raise ConfigError(f"cannot read config file {path}: {err.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"invalid config {path}: not valid TOML ({err})") from None
    return parse_config(data, str(path))


def resolve_state_dir(explicit: str | os.PathLike[str] | None) -> Path:
    """`--state-dir`, else $MDRECALL_STATE_DIR, else ~/.mdrecall."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.home() / ".mdrecall").resolve()


@dataclass(frozen=True)
class Settings:
    """Everything a MemoryIndex needs: where the notes are, where the index goes, and the config."""

    workspace: Path
    agent_id: str
    state_dir: Path
    db_path: Path
    config: MemoryConfig
    config_path: Path | None = None

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "agents" / self.agent_id / "sessions"


def resolve_settings(
    workspace: str | os.PathLike[str] | None = None,
    agent_id: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    db_path: str | os.PathLike[str] | None = None,
    config: MemoryConfig | None = None,
) -> Settings:
    """Resolve paths and load the config, the way the CLI and library callers both need it."""
    from .errors import WorkspaceError

    ws = Path(workspace if workspace is not None else os.getcwd()).expanduser()
    if not ws.exists():
        raise WorkspaceError(f"workspace not found: {ws}")
    if not ws.is_dir():
        raise WorkspaceError(f"workspace is not a directory: {ws}")
    ws = ws.resolve()
    agent = (agent_id or DEFAULT_AGENT_ID).strip()
    if not agent or any(ch in agent for ch in "/\\\0") or agent in {".", ".."}:
        raise ConfigError(f"invalid agent id: {agent_id!r}")
    state = resolve_state_dir(state_dir)

    chosen_config_path: Path | None = None
    if config is None:
        if config_path is not None:
            chosen_config_path = Path(config_path).expanduser()
            config = load_config_file(chosen_config_path)
        elif (ws / CONFIG_FILENAME).is_file():
            chosen_config_path = ws / CONFIG_FILENAME
            config = load_config_file(chosen_config_path)
        else:
            config = MemoryConfig()

    if db_path is not None:
        db = Path(db_path).expanduser().resolve()
    elif config.store.path:
        db = Path(config.store.path.replace("{agentId}", agent)).expanduser()
        db = (db if db.is_absolute() else state / db).resolve()
    else:
        db = state / "memory" / f"{agent}.sqlite"
    return Settings(
        workspace=ws, agent_id=agent, state_dir=state, db_path=db, config=config, config_path=chosen_config_path
    )
