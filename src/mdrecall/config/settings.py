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

import hashlib
import json
import os
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import tomllib
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from mdrecall.config.paths import CONFIG_FILENAME, DEFAULT_AGENT_ID, STATE_DIR_ENV, resolve_state_dir  # noqa: F401
from mdrecall.errors import ConfigError

ProviderName = Literal["auto", "local", "openai", "gemini", "voyage", "none"]
FallbackName = Literal["openai", "gemini", "local", "voyage", "none"]
SourceName = Literal["memory", "sessions"]


class _Section(BaseModel):
    """Base for every config section: camelCase keys, unknown keys rejected, values checked on assignment.

    Values are taken as typed (TOML and JSON are): `true` is not a number, `"yes"` is not a boolean, `"5"` is
    not an integer. Two leniencies stay, because they change no meaning: an integer where a number is expected
    (`minScore = 0`), and a whole-number float where an integer is expected (`maxResults = 6.0`: JSON has one
    number type). A Python caller's tuple is taken as a list."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True, strict=True
    )

    @field_validator("*", mode="before")
    @classmethod
    def _same_meaning(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name].annotation if info.field_name else None
        kinds = _annotation_kinds(annotation)
        if isinstance(value, float) and value.is_integer() and int in kinds and float not in kinds:
            return int(value)
        if isinstance(value, tuple) and list in kinds:
            return list(value)
        return value


def _annotation_kinds(annotation: Any) -> set[Any]:
    """The plain types an annotation accepts: `int | None` -> {int, NoneType}, `list[str]` -> {list}."""
    if annotation is None:
        return set()
    if isinstance(annotation, types.UnionType) or get_origin(annotation) is Union:
        return {kind for arg in get_args(annotation) for kind in _annotation_kinds(arg)}
    return {get_origin(annotation) or annotation}


class BatchConfig(_Section):
    enabled: bool = False
    wait: bool = True
    concurrency: int = Field(2, ge=1, le=64)
    poll_interval_ms: int = Field(2000, ge=1)
    timeout_minutes: float = Field(60, gt=0)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError(f"must be an environment variable name, got {value!r}")
    return value


class RemoteConfig(_Section):
    base_url: str | None = None
    api_key: str | None = Field(None, repr=False)
    # An environment variable whose value is sent as the key. Without it, a provider's own variable
    # (OPENAI_API_KEY, ...) is sent only to that provider's API host, never to another baseUrl.
    api_key_env: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    batch: BatchConfig = Field(default_factory=BatchConfig)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        return _env_name(value)


class ProviderSection(_Section):
    """Per-provider overrides (`[openai]`, `[gemini]`, `[voyage]`); `remote.*` wins over these."""

    api_key: str | None = Field(None, repr=False)
    api_key_env: str | None = None  # as `remote.apiKeyEnv`
    base_url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    model: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        return _env_name(value)


class LocalConfig(_Section):
    # A folder with a sentence-transformers / Hugging Face model (config.json, model.safetensors,
    # tokenizer.json), or a model name for fastembed/sentence-transformers when those extras are installed.
    model_path: str | None = None
    model_cache_dir: str | None = None
    # The offline model by name: "e5-small" (multilingual-e5-small, the default), "e5-small-enpt", "minilm"
    # (all-MiniLM-L6-v2), "wordllama" or "e5+minilm" (both side by side). Unset: the default.
    # local.modelPath, when set, wins.
    model: str | None = None
    # "auto": numpy runtime for BERT-family folders, else fastembed, else sentence-transformers.
    runtime: Literal["auto", "numpy", "fastembed", "sentence-transformers"] = "auto"
    batch_size: int = Field(32, ge=1, le=1024)


class VectorStoreConfig(_Section):
    enabled: bool = True
    extension_path: str | None = None
    # "numpy": exact search over a float32 matrix (measured faster, README "Benchmarks"); "sqlite-vec": the
    # spec's vec0 table and KNN query. jsonEmbeddings also writes the spec's JSON copy into chunks.embedding.
    engine: Literal["numpy", "sqlite-vec"] = "numpy"
    json_embeddings: bool = False
    # numpy engine: score every window exactly on every query. Off, an index of 100k+ windows is first
    # scored on an int8 copy and its best chunks rescored exactly (storage/vectors.py; recall in README).
    exact: bool = False
    # how vectors are stored on disk: "int10" (default: 10-bit values with one scale per vector, 485 bytes a
    # 384-d window; LoCoMo and pydocs figures those of float32 within one question), "float16" (the default
    # before round 6), "float32" (the exact vectors), or "int8" with one scale per vector (smallest; LoCoMo
    # hit@1 -0.4 pt); read back into the same float32 matrix (docs/storage.md, README "Benchmarks").
    # A change rebuilds the index from the embedding cache; a cache entry less precise than asked is not used.
    encoding: Literal["float32", "float16", "int10", "int8"] = "int10"


class PostgresStoreConfig(_Section):
    """`[store.postgres]`: the team backend's server. The DSN is a secret: never printed, redacted in errors."""

    # Prefer the environment variable: a DSN in a config file is a password in a file.
    dsn: str | None = None
    dsn_env: str = "MDRECALL_POSTGRES_DSN"
    # Names this workspace on the server; machines sharing a team workspace set the same key.
    # Default: the workspace's absolute path.
    workspace_key: str | None = None
    pool_min: int = Field(1, ge=0, le=64)
    pool_max: int = Field(4, ge=1, le=256)
    connect_timeout_seconds: float = Field(5.0, gt=0, le=300)
    # When the server is down, searches answer from a local keyword-only SQLite index built from the
    # markdown ("keyword"), from the full builtin index ("local"), or fail with one line ("none").
    fallback: Literal["keyword", "local", "none"] = "keyword"
    # HNSW search breadth (pgvector's hnsw.ef_search); at least 2x the candidate count is used.
    ef_search: int = Field(200, ge=10, le=1000)
    # An index (one agent's generation) gets its own HNSW graph (a partial index) once it holds this many
    # vectors; below, vector search scans its rows exactly (fast at that size, and equal to SQLite's).
    hnsw_min_vectors: int = Field(10_000, ge=1)
    # The HNSW build raises its session's maintenance_work_mem to what the graph needs (up to this many MB):
    # a graph that outgrows it is finished on disk, many times slower (pgvector says so in a notice).
    hnsw_build_memory_mb: int = Field(4096, ge=64, le=1_048_576)


class StoreConfig(_Section):
    # "postgres" selects the Postgres + pgvector backend (same as top-level `backend = "postgres"`);
    # `store.backend` is accepted as another name for this key.
    driver: Literal["sqlite", "postgres"] = Field("sqlite", validation_alias=AliasChoices("driver", "backend"))
    # May contain "{agentId}" and "{workspaceKey}"; relative paths are relative to the state dir. An index
    # records the workspace it was built from and refuses to serve another one.
    path: str | None = None
    # chunk text kept zlib-compressed in the index (~0.9 KB less per chunk of prose, issue 14's size budget);
    # false keeps it as plain TEXT, readable with the sqlite3 shell. Either way the markdown is the source of
    # truth and both kinds of rows are read; changing it rewrites nothing.
    compress_text: bool = True
    vector: VectorStoreConfig = Field(default_factory=VectorStoreConfig)
    postgres: PostgresStoreConfig = Field(default_factory=PostgresStoreConfig)


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
    # `<id>.jsonl.reset.<timestamp>` transcripts closed by a session reset. OpenClaw's default is false;
    # mdrecall indexes them unless told not to (a reset does not make what was said untrue).
    include_reset_archives: bool = True


class SyncConfig(_Section):
    on_session_start: bool = True
    on_search: bool = True
    watch: bool = True
    watch_debounce_ms: int = Field(1500, ge=0)
    interval_minutes: float = Field(0, ge=0)
    sessions: SessionDeltaConfig = Field(default_factory=SessionDeltaConfig)


class HybridConfig(_Section):
    enabled: bool = True
    # Defaults chosen on LoCoMo dev with the default model, multilingual-e5-small over windows
    # (bench/quality/README.md): min-max 0.5/0.5 hit@5 .916 vs the spec's raw weighted 0.7/0.3 .896, RRF .888.
    # The spec's behaviour: mode = "weighted", vectorWeight = 0.7, textWeight = 0.3, keywordQuery = "and".
    vector_weight: float = Field(0.5, ge=0)
    text_weight: float = Field(0.5, ge=0)
    candidate_multiplier: int = Field(4, ge=1, le=100)
    # "minmax": each side's candidate scores scaled to 0..1 per query, then weighted (e5's cosines are
    # compressed into 0.75-0.9, so raw scores would let them drown exact keyword hits); "weighted": the spec's
    # weighted sum of raw scores (best with MiniLM); "rrf": rank fusion.
    mode: Literal["minmax", "weighted", "rrf"] = "minmax"
    # keyword side: "or" = stop words dropped, remaining terms OR-joined, ranked by BM25; "and" = the spec's
    # query (every word required).
    keyword_query: Literal["or", "and"] = "or"
    # share of the min-max fused score given to each chunk's best window, scored on both sides over the same
    # few lines (retrieval/window_blend.py); 0 turns it off (the chunk-level fusion alone). Only with mode = "minmax".
    window_weight: float = Field(0.3, ge=0, le=1)

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
    # decay can at most scale a score down to this share (0 = the spec's plain exponential decay): a strong
    # match in an old log is not pushed out by weak recent ones (bench/quality/README.md)
    floor: float = Field(0.5, ge=0, le=1)


class MmrConfig(_Section):
    enabled: bool = False
    lambda_: float = Field(0.7, ge=0, le=1, alias="lambda")


RerankProviderName = Literal["cohere", "voyage", "jina"]


class RerankConfig(_Section):
    """`[query.rerank]`: an optional remote rerank API (Cohere v2, Voyage or Jina wire format); see docs/rerank.md.

    Off by default: no offline reranker has been measured on the evals, and a generic cross-encoder lowered
    hit@1 by 7 points on LoCoMo in the literature, so it is only worth turning on after measuring a gain
    (`bench/quality/locomo_eval.py --rerank-url ...`).
    """

    enabled: bool = False
    provider: RerankProviderName = "cohere"
    model: str | None = None  # unset: the provider's default (docs/rerank.md)
    base_url: str | None = None  # unset: the provider's public API; `{baseUrl}/rerank` is called
    # The key is a secret: never printed, redacted from errors. Unset: the env var named by apiKeyEnv,
    # else COHERE_API_KEY / VOYAGE_API_KEY / JINA_API_KEY. No key at all: requests go without one
    # (self-hosted servers speaking one of the formats).
    api_key: str | None = Field(None, repr=False)
    api_key_env: str | None = None
    # How many of the results that passed minScore (best first) are sent to be reordered.
    candidates: int = Field(20, ge=2, le=1000)
    timeout_seconds: float = Field(5.0, gt=0, le=120)
    max_retries: int = Field(1, ge=0, le=5)  # on 429, 5xx, timeouts and refused connections
    # Share of the rerank score in the new order: (1 - weight) * fused + weight * rerank, both min-max
    # scaled over the candidates. 1 = the reranker's order alone; 0.5 keeps the measured fused evidence
    # (keywords, dates, identifiers) as heavy as an unmeasured reranker.
    weight: float = Field(0.5, ge=0, le=1)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value.strip()):
            raise ValueError(f"must start with http:// or https://, got {value!r}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        return _env_name(value)

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("cannot be empty (leave it out for the provider's default)")
        return value


class QueryConfig(_Section):
    max_results: int = Field(6, ge=1, le=1000)
    min_score: float = Field(0.35, ge=0, le=1)
    snippet_max_chars: int = Field(700, ge=1)
    max_injected_chars: int = Field(4000, ge=1)
    # overlapping chunks of one file in the results come back as one result (search.merge_overlapping)
    merge_overlapping: bool = True
    # share of the model's empty-text direction taken out of the query vector (centering.py); unset = the
    # model's calibrated share (multilingual-e5-small 0.45, other models 0); 0 = the spec's plain query vector
    centering: float | None = Field(None, ge=0, le=1)
    # the keyword side (OR query) also meets other forms of an English word: "adopted" finds "adopting"
    # (word_forms.py). LoCoMo dev hit@1 .758 -> .770 (bench/quality/README.md, fifth round); false = the
    # exact words only, as the spec's keyword side
    word_forms: bool = True
    # "calibrated": a result's score is its estimated chance of holding what was asked, the same scale for
    # every query (retrieval/calibration.py; models with a fitted calibration: multilingual-e5-small; other
    # models keep the fused score). "fused": the fusion's own score, relative to the query's candidates (the
    # spec's scoring)
    scoring: Literal["calibrated", "fused"] = "calibrated"
    # with no minScore set: when the best result scores below this, the search answers nothing ("nothing in
    # memory matches"). Unset = the calibration's value (multilingual-e5-small 0.0125); 0 = never
    abstain_below: float | None = Field(None, ge=0, le=1)
    # with no minScore set and calibrated scores: results (below the first) scoring under this share of the
    # best result's score are not listed (retrieval/tail.py). Unset = the calibration's value
    # (multilingual-e5-small 0.01); 0 = list every result, as the spec does
    relative_floor: float | None = Field(None, ge=0, le=1)
    hybrid: HybridConfig = Field(default_factory=HybridConfig)
    temporal_decay: TemporalDecayConfig = Field(default_factory=TemporalDecayConfig)
    mmr: MmrConfig = Field(default_factory=MmrConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)


class CacheConfig(_Section):
    enabled: bool = True
    max_entries: int | None = Field(None, ge=1)


class ExperimentalConfig(_Section):
    session_memory: bool = False


class FactsLlmConfig(_Section):
    """The optional LLM capture extractor: any OpenAI-compatible `/chat/completions` endpoint."""

    base_url: str | None = None
    api_key: str | None = None
    model: str = "gpt-4.1-mini"
    timeout_seconds: float = Field(20, gt=0)


class FactsConfig(_Section):
    """The fact store (LanceDB) and the hooks' auto-recall / auto-capture (see docs/facts.md)."""

    enabled: bool = True
    file: str = "memory/facts.md"
    auto_recall: bool = True
    auto_capture: bool = True
    capture: Literal["rules", "llm"] = "rules"
    # 10: bench/quality/capture_cap.py on LoCoMo dev (fact-dense personal chats, an upper bound for agent
    # sessions): candidates per session-speaker p50 8, p75 11, p90 14.5; a cap of 3 would drop 66 % of them
    # (95 % of sessions over it), 10 drops 12 % (28 % of sessions). What the cap drops is reported.
    max_captures_per_session: int = Field(10, ge=0, le=100)
    recall_limit: int = Field(3, ge=1, le=50)
    # None: the threshold measured for the embedding model (facts/relevance.py; 0.2 for uncalibrated models)
    recall_min_score: float | None = Field(None, ge=0, le=1)
    recall_max_chars: int = Field(1500, ge=100)
    duplicate_threshold: float = Field(0.95, gt=0, le=1)
    context_window: int = Field(200_000, ge=1000)
    llm: FactsLlmConfig = Field(default_factory=FactsLlmConfig)


# ---------------------------------------------------------------------------------------------------------
# QMD sidecar (`[qmd]`, OpenClaw's `memory.qmd.*`): used when `backend = "qmd"`. Owned by the qmd backend.
# ---------------------------------------------------------------------------------------------------------

_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(value: str | int | float) -> int:
    """ "5m", "30s", "1h", "500ms" (or a bare number of milliseconds) → milliseconds; "0" turns a timer off."""
    if isinstance(value, bool):
        raise ValueError("a duration must be like '5m', '30s', '1h' or a number of milliseconds")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return int(value)
    text = value.strip().lower()
    for unit in sorted(_DURATION_UNITS_MS, key=len, reverse=True):
        number = text.removesuffix(unit)
        if number != text:
            try:
                amount = float(number.strip())
            except ValueError:
                break
            if amount < 0:
                raise ValueError("a duration cannot be negative")
            return int(amount * _DURATION_UNITS_MS[unit])
    try:
        return parse_duration_ms(float(text))
    except ValueError:
        raise ValueError(f"invalid duration {value!r}: use e.g. '5m', '30s', '1h', '500ms'") from None


class QmdPathConfig(_Section):
    """An extra qmd collection: a folder (or file) outside the default memory files."""

    path: str
    name: str | None = None
    pattern: str = "**/*.md"


class QmdSessionsConfig(_Section):
    enabled: bool = False
    export_dir: str | None = None  # default <state>/agents/<id>/qmd/sessions
    retention_days: float | None = Field(None, gt=0)


class QmdUpdateConfig(_Section):
    interval: str | int = "5m"
    debounce_ms: int = Field(15_000, ge=0)
    on_boot: bool = True
    embed_interval: str | int = "60m"
    command_timeout_ms: int = Field(30_000, ge=1)
    update_timeout_ms: int = Field(120_000, ge=1)
    embed_timeout_ms: int = Field(120_000, ge=1)

    @model_validator(mode="after")
    def _durations_parse(self) -> QmdUpdateConfig:
        parse_duration_ms(self.interval)
        parse_duration_ms(self.embed_interval)
        return self

    @property
    def interval_ms(self) -> int:
        return parse_duration_ms(self.interval)

    @property
    def embed_interval_ms(self) -> int:
        return parse_duration_ms(self.embed_interval)


class QmdLimitsConfig(_Section):
    max_results: int = Field(6, ge=1, le=1000)
    max_snippet_chars: int = Field(700, ge=1)
    max_injected_chars: int = Field(4000, ge=1)
    timeout_ms: int = Field(4000, ge=1)


class QmdScopeMatch(_Section):
    chat_type: Literal["direct", "group", "channel"] | None = None
    channel: str | None = None
    key_prefix: str | None = None


class QmdScopeRule(_Section):
    action: Literal["allow", "deny"]
    match: QmdScopeMatch = Field(default_factory=QmdScopeMatch)


def _default_scope_rules() -> list[QmdScopeRule]:
    return [QmdScopeRule(action="allow", match=QmdScopeMatch(chat_type="direct"))]


class QmdScopeConfig(_Section):
    """Which chats may see qmd results (OpenClaw's `session.sendPolicy` shape); default: direct chats only."""

    default: Literal["allow", "deny"] = "deny"
    rules: list[QmdScopeRule] = Field(default_factory=_default_scope_rules)


class QmdConfig(_Section):
    command: str = "qmd"
    search_mode: Literal["search", "vsearch", "query"] = "search"
    # qmd `search` needs every query term in a note: when it finds nothing, the builtin index answers
    # (false: an empty qmd answer is final, as in OpenClaw's qmd sidecar)
    fallback_on_empty: bool = True
    include_default_memory: bool = True
    paths: list[QmdPathConfig] = Field(default_factory=list)
    sessions: QmdSessionsConfig = Field(default_factory=QmdSessionsConfig)
    update: QmdUpdateConfig = Field(default_factory=QmdUpdateConfig)
    limits: QmdLimitsConfig = Field(default_factory=QmdLimitsConfig)
    scope: QmdScopeConfig = Field(default_factory=QmdScopeConfig)


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
    facts: FactsConfig = Field(default_factory=FactsConfig)
    citations: Literal["auto", "on", "off"] = "auto"
    backend: Literal["builtin", "qmd", "postgres"] = "builtin"
    qmd: QmdConfig = Field(default_factory=QmdConfig)
    # Safety (issue 13): memory files are redacted before indexing unless turned off; bigger files are skipped.
    redact_memory: bool = True
    max_file_bytes: int = Field(10_000_000, ge=1)

    @model_validator(mode="after")
    def _sources_not_empty(self) -> MemoryConfig:
        if not self.sources:
            raise ValueError("sources must name at least one of 'memory', 'sessions'")
        return self

    @model_validator(mode="after")
    def _session_memory_turns_on_sessions(self) -> MemoryConfig:
        """`experimental.sessionMemory = true` is OpenClaw's switch for transcript indexing: it adds the source."""
        if self.experimental.session_memory and "sessions" not in self.sources:
            self.sources = [*self.sources, "sessions"]
        return self


# What a wrong-typed value was expected to be, by pydantic's error type (strict mode, see _Section).
_EXPECTED = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
}
# pydantic names the member of a union (`str | int`) that refused a value as the last part of its location
_UNION_MEMBERS = {"str", "int", "float", "bool", "list", "dict"}
# keys whose values are never repeated in an error: they may hold a key, a token or a password
_SECRET_KEYS = {"apiKey", "api_key", "dsn", "headers"}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number" if value.is_integer() else "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return "nothing" if value is None else type(value).__name__


def _shown(value: Any, secret: bool) -> str:
    """A wrong value as the user wrote it (TOML/JSON spelling, shortened), or only its kind for a secret key."""
    if secret:
        return _kind(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({_kind(value)})"


def format_validation_error(err: ValidationError, origin: str) -> str:
    """One readable line for all problems, naming each key as it is spelled in the file; a value of the wrong
    type is named with what was expected (`query.maxResults: expected an integer, got true (a boolean)`)."""
    problems: dict[str, list[str]] = {}  # key -> messages, or for a type error the expected kinds
    wrong_type: dict[str, tuple[Any, bool]] = {}  # key -> (the value written, whether the key holds secrets)
    for problem in err.errors():
        loc = [part for part in problem["loc"] if part != "__root__"]
        expected = _EXPECTED.get(problem["type"])
        if expected and len(loc) > 1 and loc[-1] in _UNION_MEMBERS:
            loc = loc[:-1]
        key = ".".join(str(part) for part in loc) or "(top level)"
        secret = any(part in _SECRET_KEYS for part in loc)
        if expected:
            wrong_type[key] = (problem["input"], secret)
            problems.setdefault(key, []).append(expected)
            continue
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            message = "unknown key"
        elif problem["type"] == "literal_error":
            message += f", got {_shown(problem['input'], secret)}"
        problems.setdefault(key, []).append(message)
    lines = []
    for key, messages in problems.items():
        if key in wrong_type:
            expected = " or ".join(dict.fromkeys(messages))
            lines.append(f"{key}: expected {expected}, got {_shown(*wrong_type[key])}")
        else:
            lines.extend(f"{key}: {message}" for message in messages)
    return f"invalid config {origin}: " + "; ".join(lines)


def parse_config(data: dict[str, Any], origin: str = "(inline)") -> MemoryConfig:
    """Validate a dict (as read from TOML) into a MemoryConfig, or raise ConfigError naming the keys."""
    try:
        return MemoryConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, origin)) from None


def load_config_file(path: Path) -> MemoryConfig:
    """Read and validate a TOML config file."""
    return read_config_file(path)[0]


def read_config_file(path: Path) -> tuple[MemoryConfig, bytes]:
    """Read and validate a TOML config file; also the bytes read (what trust is recorded for)."""
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
    return parse_config(data, str(path)), raw


def workspace_key(workspace: Path) -> str:
    """`<folder name>-<8 hex>` from the workspace's real path: one index per workspace and agent, so running
    mdrecall in another folder can never resync (and empty) this workspace's index."""
    real = os.path.realpath(workspace)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", os.path.basename(real.rstrip(os.sep)) or "root").strip("-.")[:32]
    return f"{name or 'ws'}-{digest}"


def default_db_path(state_dir: Path, agent: str, workspace: Path) -> Path:
    """`<state>/memory/<agent>-<workspace key>.sqlite`."""
    return state_dir / "memory" / f"{agent}-{workspace_key(workspace)}.sqlite"


@dataclass(frozen=True)
class Settings:
    """Everything a MemoryIndex needs: where the notes are, where the index goes, and the config."""

    workspace: Path
    agent_id: str
    state_dir: Path
    db_path: Path
    config: MemoryConfig
    config_path: Path | None = None
    # Keys of the workspace's own mdrecall.toml left at their defaults because the folder is not trusted
    # (config/trust.py), and the one line saying so (shown by the CLI, the hooks and the MCP server).
    untrusted_keys: tuple[str, ...] = ()
    trust_notice: str | None = None

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "agents" / self.agent_id / "sessions"


def resolve_settings(
    workspace: str | os.PathLike[str] | None = None,
    agent_id: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    db_path: str | os.PathLike[str] | None = None,
    config: MemoryConfig | dict[str, Any] | None = None,
) -> Settings:
    """Resolve paths and load the config, the way the CLI and library callers both need it.

    `config` is a MemoryConfig or a dict of config keys (as in mdrecall.toml); a file goes in `config_path`."""
    from mdrecall.errors import WorkspaceError

    if isinstance(config, dict):
        config = parse_config(config)
    elif config is not None and not isinstance(config, MemoryConfig):
        raise ConfigError(
            f"config must be a MemoryConfig or a dict of config keys, not {type(config).__name__}: "
            "pass a config file as config_path="
        )

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
    untrusted: list[str] = []
    notice: str | None = None
    if config is None:
        if config_path is not None:  # named by the user: their own config
            chosen_config_path = Path(config_path).expanduser()
            config = load_config_file(chosen_config_path)
        elif (ws / CONFIG_FILENAME).is_file():  # the folder's own: trusted only by `mdrecall trust`
            chosen_config_path = ws / CONFIG_FILENAME
            config, untrusted, notice = _folder_config(chosen_config_path, ws, state)
        else:
            config = MemoryConfig()

    if db_path is not None:
        db = Path(db_path).expanduser().resolve()
    elif config.store.path:
        path = config.store.path.replace("{agentId}", agent).replace("{workspaceKey}", workspace_key(ws))
        db = Path(path).expanduser()
        db = (db if db.is_absolute() else state / db).resolve()
    else:
        db = default_db_path(state, agent, ws)
    return Settings(
        workspace=ws,
        agent_id=agent,
        state_dir=state,
        db_path=db,
        config=config,
        config_path=chosen_config_path,
        untrusted_keys=tuple(untrusted),
        trust_notice=notice,
    )


def _folder_config(path: Path, workspace: Path, state: Path) -> tuple[MemoryConfig, list[str], str | None]:
    """A workspace's own config: whole when the user trusted this exact content, else without the keys that
    need trust (and the line naming them)."""
    from mdrecall.config.trust import config_digest, restrict_untrusted, trust_status, untrusted_notice

    config, raw = read_config_file(path)
    safe, ignored = restrict_untrusted(config, workspace, state)
    if not ignored:
        return config, [], None
    status = trust_status(state, path, config_digest(raw))
    if status == "trusted":
        return config, [], None
    return safe, ignored, untrusted_notice(path, status, ignored)
