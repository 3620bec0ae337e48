"""Read an OpenClaw installation's config and state layout, so mdrecall can serve the same agent's memory.

Follows OpenClaw 2026.9 and still reads the older names its doctor migrates away:
- state dir: `state_dir`, else $OPENCLAW_STATE_DIR, else `~/.openclaw` (or a legacy `~/.moltbot` when only
  that exists); config: `config_path`, else $OPENCLAW_CONFIG_PATH, else `<state>/openclaw.json` (JSON5);
- agents: keyed `agents.entries.<id>` (or the older `agents.list[]`); the default agent is the one marked
  `default: true`, else the first, else `main`;
- workspace: the agent's `workspace`; else (default agent) `agents.defaults.workspace`, $OPENCLAW_WORKSPACE_DIR
  or `<state>/workspace`; else (other agents) `<agents.defaults.workspace>/<id>` or `<state>/workspace-<id>`;
- memory search settings: `memory.search` over `agents.defaults.memorySearch` over a top-level `memorySearch`,
  then the agent's `memory.search` / `memorySearch` (objects merge key by key, anything else is replaced),
  plus `memory.citations`, `memory.backend` and `memory.qmd`;
- embedding keys and endpoints: `memory.search.remote.*`, else `models.providers.<openai|google|voyage>`
  (`apiKey` as a literal, `${VAR}`, an env SecretRef or an auth-profile id), else a key saved with
  `openclaw models auth` for the chosen provider (OpenClaw's SQLite credential stores, read-only), else the
  provider's environment variable. A provider naming a custom `models.providers.<id>` with an
  OpenAI-compatible API is served as `openai` at its `baseUrl`. File/exec secrets and OAuth profiles are not
  read: a warning names each one;
- OpenClaw's own index and transcripts (2026.9 keeps transcripts in `<agentDir>/openclaw-agent.sqlite`) are
  never opened; JSONL transcripts under `<state>/agents/<id>/sessions` (older versions) are read when the
  sessions source is on. mdrecall's index lives in mdrecall's state dir ($MDRECALL_STATE_DIR or ~/.mdrecall),
  `openclaw/<agentId>-<workspace key>.sqlite`; no OpenClaw file is ever written.

Our `MemoryConfig` uses the same camelCase keys; OpenClaw keys it does not know are dropped with a warning,
while a known key with a wrong value still fails with a ConfigError naming the key. `${VAR}` in strings is
replaced by the environment variable, as OpenClaw does.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import json5
from pydantic import BaseModel

from mdrecall.config.settings import (
    DEFAULT_AGENT_ID,
    MemoryConfig,
    Settings,
    parse_config,
    resolve_settings,
    resolve_state_dir,
    workspace_key,
)
from mdrecall.errors import ConfigError

STATE_DIR_ENV = "OPENCLAW_STATE_DIR"
CONFIG_PATH_ENV = "OPENCLAW_CONFIG_PATH"
WORKSPACE_DIR_ENV = "OPENCLAW_WORKSPACE_DIR"
CONFIG_FILENAME = "openclaw.json"
LEGACY_STATE_DIRS = (".moltbot", ".clawdbot")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# OpenClaw nests these under query.hybrid; mdrecall has them under query.
_HYBRID_MOVES = ("mmr", "temporalDecay")


# ---------------------------------------------------------------------------------------------------------
# Locations
# ---------------------------------------------------------------------------------------------------------


def openclaw_state_dir(state_dir: str | os.PathLike[str] | None = None) -> Path:
    """The OpenClaw state dir: explicit, else $OPENCLAW_STATE_DIR, else ~/.openclaw (legacy dirs if only they exist)."""
    if state_dir:
        return Path(state_dir).expanduser().resolve()
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    home = Path.home()
    default = home / ".openclaw"
    if not default.exists():
        for legacy in LEGACY_STATE_DIRS:
            if (home / legacy).is_dir():
                return (home / legacy).resolve()
    return default.resolve()


def openclaw_config_path(
    config_path: str | os.PathLike[str] | None = None, state_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The config file: explicit, else $OPENCLAW_CONFIG_PATH, else <state>/openclaw.json."""
    if config_path:
        return Path(config_path).expanduser()
    env = os.environ.get(CONFIG_PATH_ENV)
    if env:
        return Path(env).expanduser()
    return openclaw_state_dir(state_dir) / CONFIG_FILENAME


def load_openclaw_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a JSON5 config file (comments, trailing commas, unquoted keys) into a dict."""
    target = Path(path)
    try:
        text = target.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"OpenClaw config not found: {target}") from None
    except OSError as err:
        raise ConfigError(f"cannot read OpenClaw config {target}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"invalid OpenClaw config {target}: not UTF-8 text "
            f"(byte {err.object[err.start]:#04x} at offset {err.start})"
        ) from None
    try:
        data = json5.loads(text)
    except ValueError as err:
        raise ConfigError(f"invalid OpenClaw config {target}: not valid JSON5 ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"invalid OpenClaw config {target}: the top level must be an object")
    return data


# ---------------------------------------------------------------------------------------------------------
# Agents
# ---------------------------------------------------------------------------------------------------------


def _section(data: Mapping[str, Any] | None, *keys: str) -> dict[str, Any]:
    """`data[k1][k2]...` when every level is an object, else {}."""
    node: Any = data or {}
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return dict(node) if isinstance(node, Mapping) else {}


def _roster(raw: Mapping[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """("agents.entries" | "agents.list", [(where, entry with its "id")]): keyed entries (2026.9) or the older list."""
    agents = raw.get("agents")
    if not isinstance(agents, Mapping):
        return "agents.entries", []
    entries = agents.get("entries")
    if isinstance(entries, Mapping):
        return "agents.entries", [
            (f"agents.entries.{key}", {**dict(value), "id": str(key)})
            for key, value in entries.items()
            if isinstance(value, Mapping)
        ]
    listed = agents.get("list")
    if isinstance(listed, list):
        return "agents.list", [
            (f"agents.list[{position}]", dict(e))
            for position, e in enumerate(listed)
            if isinstance(e, Mapping) and isinstance(e.get("id"), str)
        ]
    return "agents.entries", []


def _agent_entries(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [entry for _, entry in _roster(raw)[1]]


def _normalize_id(agent_id: str) -> str:
    return agent_id.strip().lower()


def default_agent_id(raw: Mapping[str, Any]) -> str:
    """The one entry marked `default: true`, else the first listed agent, else `main`."""
    entries = _agent_entries(raw)
    marked = [e for e in entries if e.get("default") is True]
    if marked:
        return _normalize_id(marked[0]["id"])
    return _normalize_id(entries[0]["id"]) if entries else DEFAULT_AGENT_ID


def find_agent(raw: Mapping[str, Any], agent_id: str) -> tuple[str, dict[str, Any]] | None:
    """(where in the config, entry) of the agent with this id (case-insensitive), if listed."""
    wanted = _normalize_id(agent_id)
    for where, entry in _roster(raw)[1]:
        if _normalize_id(entry["id"]) == wanted:
            return where, entry
    return None


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`: nested objects merge, everything else (lists too) is replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _expand_env(value: Any, where: str, warnings: list[str]) -> Any:
    """Replace `${VAR}` in every string; an unset variable is left as is, with a warning."""
    if isinstance(value, str):

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in os.environ:
                return os.environ[name]
            warnings.append(f"{where}: environment variable {name} is not set")
            return match.group(0)

        return _ENV_REF.sub(lookup, value)
    if isinstance(value, Mapping):
        return {k: _expand_env(v, f"{where}.{k}", warnings) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, f"{where}[{i}]", warnings) for i, v in enumerate(value)]
    return value


# ---------------------------------------------------------------------------------------------------------
# memorySearch → MemoryConfig
# ---------------------------------------------------------------------------------------------------------


def _submodel(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _known_keys(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    """Accepted keys of a config section (camelCase alias and snake_case name) → nested section model."""
    known: dict[str, type[BaseModel] | None] = {}
    for name, field in model.model_fields.items():
        nested = _submodel(field.annotation)
        known[name] = nested
        known[field.alias or name] = nested
    return known


def _drop_unsupported(
    data: Mapping[str, Any], model: type[BaseModel], prefix: str, warnings: list[str]
) -> dict[str, Any]:
    """Keep the keys `model` knows (recursively); warn about and drop the rest. Values are not checked here."""
    known = _known_keys(model)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            warnings.append(f"{prefix}{key}: not supported by mdrecall; ignored")
            continue
        nested = known[key]
        out[key] = (
            _drop_unsupported(value, nested, f"{prefix}{key}.", warnings)
            if nested and isinstance(value, Mapping)
            else value
        )
    return out


def _move_hybrid_sections(memory_search: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's `query.hybrid.{mmr,temporalDecay}` → our `query.{mmr,temporalDecay}` (explicit ones win)."""
    query = memory_search.get("query")
    hybrid = query.get("hybrid") if isinstance(query, Mapping) else None
    if not isinstance(hybrid, Mapping):
        return memory_search
    query, hybrid = dict(query), dict(hybrid)  # type: ignore[arg-type]
    for key in _HYBRID_MOVES:
        if key in hybrid:
            moved = hybrid.pop(key)
            existing = query.get(key)
            if isinstance(moved, Mapping) and isinstance(existing, Mapping):
                query[key] = deep_merge(moved, existing)
            elif key not in query:
                query[key] = moved
    query["hybrid"] = hybrid
    return {**memory_search, "query": query}


def _drop_gguf_model(memory_search: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """OpenClaw's local provider takes GGUF files / `hf:` URIs, which our local runtimes cannot load."""
    local = memory_search.get("local")
    model_path = local.get("modelPath") if isinstance(local, Mapping) else None
    if isinstance(model_path, str) and (model_path.startswith("hf:") or model_path.lower().endswith(".gguf")):
        warnings.append(
            f"memorySearch.local.modelPath: GGUF models ({model_path}) are not supported by mdrecall; "
            "the default local model is used instead"
        )
        local = {k: v for k, v in local.items() if k != "modelPath"}  # type: ignore[union-attr]
        return {**memory_search, "local": local}
    return memory_search


# Where OpenClaw keeps memory search settings, oldest name first: later ones win (as its doctor merges them).
_SEARCH_PATHS = (("memorySearch",), ("agents", "defaults", "memorySearch"), ("memory", "search"))
_AGENT_SEARCH_PATHS = (("memorySearch",), ("memory", "search"))
_MEMORY_KEYS = ("citations", "backend", "qmd")
# memory.* sections that shape OpenClaw's own engine only (dreaming, admission, ...): not mdrecall's business
_MEMORY_IGNORED_QUIETLY = ("search",)


def _search_sections(raw: Mapping[str, Any], agent_id: str, origin: str, warnings: list[str]) -> tuple[dict, str]:
    merged: dict[str, Any] = {}
    used: list[str] = []
    for path in _SEARCH_PATHS:
        section = _section(raw, *path)
        if section:
            merged = deep_merge(merged, section)
            used.append(".".join(path))
    found = find_agent(raw, agent_id)
    if found is not None:
        where, entry = found
        for path in _AGENT_SEARCH_PATHS:
            section = _section(entry, *path)
            if section:
                merged = deep_merge(merged, section)
                used.append(f"{where}.{'.'.join(path)}")
    elif _agent_entries(raw):
        warnings.append(f"agent {agent_id!r} is not in {_roster(raw)[0]}; using the defaults")
    return merged, f"{origin}: {' + '.join(used) or 'memory.search'}"


def memory_config_from_openclaw(
    raw: Mapping[str, Any], agent_id: str, origin: str = "(OpenClaw config)", state_dir: Path | None = None
) -> tuple[MemoryConfig, list[str]]:
    """The agent's MemoryConfig from a parsed OpenClaw config, and the warnings about what was dropped.

    Reads `memory.search` (OpenClaw 2026.9) on top of the older `agents.defaults.memorySearch` / top-level
    `memorySearch`, then the agent's `memory.search` / `memorySearch` override; the embedding provider's key
    and endpoint come from `models.providers.<id>` when `memory.search` does not set them.
    """
    warnings: list[str] = []
    merged, where = _search_sections(raw, agent_id, origin, warnings)
    merged = _expand_env(merged, "memorySearch", warnings)
    merged = _drop_gguf_model(_move_hybrid_sections(merged), warnings)
    merged = _provider_from_openclaw(merged, raw, warnings, AuthProfiles(state_dir, agent_id, raw))
    memory = _section(raw, "memory")
    for key in _MEMORY_KEYS:
        if key in memory:
            if key in merged:
                warnings.append(f"memorySearch.{key}: overridden by memory.{key}")
            merged[key] = memory[key]
    for key in memory:
        if key not in _MEMORY_KEYS and key not in _MEMORY_IGNORED_QUIETLY:
            warnings.append(f"memory.{key}: not supported by mdrecall; ignored")
    kept = _session_source_rule(_drop_unsupported(merged, MemoryConfig, "memorySearch.", warnings), warnings)
    return parse_config(kept, where), warnings


# ---------------------------------------------------------------------------------------------------------
# Embedding provider, keys and endpoints from OpenClaw's model providers
# ---------------------------------------------------------------------------------------------------------

# mdrecall provider -> the models.providers ids OpenClaw takes its key (and endpoint) from
_PROVIDER_SOURCES = {"openai": ("openai",), "gemini": ("google", "gemini"), "voyage": ("voyage",)}
_OPENAI_APIS = ("openai-completions", "openai-responses", "openai", "ollama")
_KNOWN_PROVIDERS = ("auto", "local", "openai", "gemini", "voyage", "none")
_PROFILE_REF = re.compile(r"^[A-Za-z0-9._-]+:[A-Za-z0-9._-]+$")  # `openclaw models auth` profile ids: name:profile


class AuthProfiles:
    """API keys and tokens saved with `openclaw models auth`, read only when a key is needed and not in the config.

    OpenClaw 2026.9 keeps them in SQLite: the agent's own store (`<state>/agents/<id>/agent/openclaw-agent.sqlite`,
    table `auth_profile_store`) over the shared one (`<state>/state/openclaw.sqlite`, `config_machine_state` row
    `authProfiles.store`), each `{"profiles": {"<provider>:<name>": {"type", "provider", "key"}}}`. Both are
    opened read-only; OAuth profiles are skipped (they do not cover embeddings).
    """

    def __init__(self, state_dir: Path | None, agent_id: str, raw: Mapping[str, Any]) -> None:
        self.state_dir = state_dir
        self.agent_id = agent_id
        self.order = _section(raw, "auth", "order")
        self._profiles: dict[str, dict[str, Any]] | None = None

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._profiles is not None:
            return self._profiles
        found: dict[str, dict[str, Any]] = {}
        if self.state_dir is not None:
            shared = self.state_dir / "state" / "openclaw.sqlite"
            agent = self.state_dir / "agents" / self.agent_id / "agent" / "openclaw-agent.sqlite"
            query = "SELECT value_json FROM config_machine_state WHERE state_key = 'authProfiles.store'"
            for path, sql in ((shared, query), (agent, "SELECT store_key, store_json FROM auth_profile_store")):
                for row in _read_rows(path, sql):
                    found.update(_profiles_of(row))  # the agent's own store is read last: it wins
        self._profiles = found
        return found

    def key(self, profile_id: str) -> str | None:
        entry = self._load().get(profile_id)
        return _profile_secret(entry) if entry else None

    def for_provider(self, providers: tuple[str, ...]) -> str | None:
        """The first usable key: `auth.order.<provider>`, then `<provider>:default`, then any of its profiles."""
        profiles = self._load()
        for provider in providers:
            ordered = self.order.get(provider)
            candidates = [*(ordered if isinstance(ordered, list) else []), f"{provider}:default"]
            candidates += [pid for pid, e in profiles.items() if e.get("provider") == provider]
            for profile_id in candidates:
                entry = profiles.get(str(profile_id))
                secret = _profile_secret(entry) if entry and entry.get("provider", provider) == provider else None
                if secret:
                    return secret
        return None


def _read_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            return list(conn.execute(sql))
        finally:
            conn.close()
    except sqlite3.Error:
        return []  # another schema, locked, unreadable: no profiles from there


def _profiles_of(row: tuple[Any, ...]) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(row[-1])
    except (TypeError, ValueError):
        return {}
    if isinstance(data, dict) and isinstance(data.get("profiles"), dict):
        return {str(k): v for k, v in data["profiles"].items() if isinstance(v, dict)}
    if isinstance(data, dict) and "provider" in data and len(row) > 1:
        return {str(row[0]): data}
    return {}


def _profile_secret(entry: Mapping[str, Any]) -> str | None:
    if entry.get("type") not in ("api_key", "token"):
        return None
    for field in ("key", "token"):
        value = entry.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _secret(value: Any, where: str, warnings: list[str], profiles: AuthProfiles | None = None) -> str | None:
    """A key from config: a literal, `${VAR}` (already expanded), a SecretRef `{source: "env", id: VAR}`, or an
    auth-profile id (`name:profile`) found in OpenClaw's credential store.

    File/exec SecretRefs and profiles that are not there are not read: one warning names each, and the
    provider's environment variable still applies.
    """
    if isinstance(value, Mapping):
        if value.get("source") == "env" and isinstance(value.get("id"), str):
            found = os.environ.get(value["id"], "").strip()
            if not found:
                warnings.append(f"{where}: environment variable {value['id']} is not set")
            return found or None
        warnings.append(f"{where}: a {value.get('source')!r} secret reference is not read by mdrecall; ignored")
        return None
    if not isinstance(value, str) or not value.strip() or value.startswith("${"):
        return None
    if _PROFILE_REF.match(value.strip()):
        found = profiles.key(value.strip()) if profiles else None
        if not found:
            warnings.append(
                f"{where}: names the auth profile {value.strip()!r}, which is not an API key or token in "
                "OpenClaw's credential store: set memory.search.remote.apiKey or the provider's environment variable"
            )
        return found
    return value.strip()


def _provider_from_openclaw(
    memory_search: dict[str, Any], raw: Mapping[str, Any], warnings: list[str], profiles: AuthProfiles | None = None
) -> dict[str, Any]:
    """Map OpenClaw's provider choice onto mdrecall's: custom `models.providers.<id>` with an OpenAI-compatible
    API become `openai` at that endpoint, `openai-compatible` becomes `openai`, and the provider's `apiKey` /
    `baseUrl` fill `[openai]`/`[gemini]`/`[voyage]` (memory.search.remote.* still wins)."""
    listed = _section(raw, "models", "providers")

    def provider(name: str) -> Any:  # `${VAR}` expanded only in the entries read (chat-only keys stay quiet)
        entry = listed.get(name)
        return _expand_env(entry, f"models.providers.{name}", warnings) if isinstance(entry, Mapping) else None

    out = dict(memory_search)
    chosen = out.get("provider")
    if chosen == "openai-compatible":
        out["provider"] = chosen = "openai"
    elif isinstance(chosen, str) and chosen not in _KNOWN_PROVIDERS:
        custom = provider(chosen)
        api = custom.get("api") if isinstance(custom, Mapping) else None
        if isinstance(custom, Mapping) and api in _OPENAI_APIS:
            base = str(custom.get("baseUrl") or "").rstrip("/")
            if api == "ollama" and base and not base.endswith("/v1"):
                base += "/v1"  # Ollama's OpenAI-compatible endpoints
            section = dict(out.get("openai") or {})
            if base:
                section.setdefault("baseUrl", base)
            key = _secret(custom.get("apiKey"), f"models.providers.{chosen}.apiKey", warnings, profiles)
            if key:
                section.setdefault("apiKey", key)
            out["openai"] = section
            out["provider"] = "openai"
            return out
        warnings.append(
            f"memorySearch.provider: {chosen!r} is not supported by mdrecall (local, openai, gemini, voyage, "
            "an OpenAI-compatible models.providers entry, or none); the default provider is used"
        )
        out.pop("provider")
        chosen = None
    for name, sources in _PROVIDER_SOURCES.items():
        for source in sources:
            entry = provider(source)
            if not isinstance(entry, Mapping):
                continue
            section = dict(out.get(name) or {})
            key = _secret(entry.get("apiKey"), f"models.providers.{source}.apiKey", warnings, profiles)
            if key and not section.get("apiKey"):
                section["apiKey"] = key
            if isinstance(entry.get("baseUrl"), str) and entry["baseUrl"].strip() and not section.get("baseUrl"):
                section["baseUrl"] = entry["baseUrl"].strip()
            if section:
                out[name] = section
            break
    remote = out.get("remote")
    if isinstance(remote, Mapping) and "apiKey" in remote:
        key = _secret(remote["apiKey"], "memorySearch.remote.apiKey", warnings, profiles)
        out["remote"] = {**remote, "apiKey": key} if key else {k: v for k, v in remote.items() if k != "apiKey"}
    remote = out.get("remote")
    has_key = isinstance(remote, Mapping) and remote.get("apiKey")
    if chosen in _PROVIDER_SOURCES and not has_key and not (out.get(chosen) or {}).get("apiKey") and profiles:
        # `openclaw onboard` / `openclaw models auth` keep the key as an auth profile, not in the config
        saved = profiles.for_provider((*_PROVIDER_SOURCES[chosen], chosen))
        if saved:
            out[chosen] = {**(out.get(chosen) or {}), "apiKey": saved}
    return out


def _session_source_rule(memory_search: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """OpenClaw indexes transcripts only when `sources` lists "sessions" AND `experimental.sessionMemory` is on."""
    sources = memory_search.get("sources")
    experimental = memory_search.get("experimental")
    enabled = isinstance(experimental, Mapping) and experimental.get("sessionMemory") is True
    listed = isinstance(sources, list) and "sessions" in sources
    if listed and not enabled:
        warnings.append(
            "memorySearch.sources: 'sessions' needs experimental.sessionMemory = true (as in OpenClaw); not indexed"
        )
        return {**memory_search, "sources": [s for s in sources if s != "sessions"] or ["memory"]}
    if enabled and not listed:  # OpenClaw: the flag alone does not add the source
        return {**memory_search, "experimental": {**experimental, "sessionMemory": False}}  # type: ignore[dict-item]
    return memory_search


def mdrecall_index_path(agent_id: str, workspace: Path, state_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where mdrecall keeps its own index for an OpenClaw agent: never inside OpenClaw's state dir."""
    return resolve_state_dir(state_dir) / "openclaw" / f"{agent_id}-{workspace_key(workspace)}.sqlite"


def openclaw_compaction(raw: Mapping[str, Any], agent_id: str | None = None) -> Mapping[str, Any]:
    """The compaction section: `agents.defaults.compaction` merged with the agent's `compaction`."""
    compaction = _section(raw, "agents", "defaults", "compaction")
    found = find_agent(raw, agent_id or default_agent_id(raw))
    if found is not None and isinstance(found[1].get("compaction"), Mapping):
        compaction = deep_merge(compaction, found[1]["compaction"])
    return compaction


def agent_workspace(raw: Mapping[str, Any], agent_id: str, state_dir: Path) -> Path:
    """The agent's workspace folder, resolved the way OpenClaw 2026.9 does.

    The agent's own `workspace`; else for the default agent `agents.defaults.workspace`, else
    $OPENCLAW_WORKSPACE_DIR, else `<state dir>/workspace`; for other agents `<agents.defaults.workspace>/<id>`,
    else `<state dir>/workspace-<id>`.
    """
    found = find_agent(raw, agent_id)
    configured = found[1].get("workspace") if found else None
    if isinstance(configured, str) and configured.strip():
        return _user_path(configured)
    fallback = _section(raw, "agents", "defaults").get("workspace")
    fallback = fallback.strip() if isinstance(fallback, str) and fallback.strip() else None
    if _normalize_id(agent_id) == default_agent_id(raw):
        if fallback:
            return _user_path(fallback)
        env = os.environ.get(WORKSPACE_DIR_ENV, "").strip()
        return _user_path(env) if env else state_dir / "workspace"
    if fallback:
        return _user_path(fallback) / _normalize_id(agent_id)
    return state_dir / f"workspace-{_normalize_id(agent_id)}"


def _user_path(value: str) -> Path:
    return Path(os.path.expandvars(value.strip())).expanduser().resolve()


def resolve_openclaw_settings(
    agent_id: str | None = None,
    workspace: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    db_path: str | os.PathLike[str] | None = None,
) -> tuple[Settings, list[str]]:
    """Settings for an OpenClaw agent (its workspace, index path and memory config) plus warnings.

    A missing config file is fine when none was named explicitly (OpenClaw then runs on defaults);
    an explicitly named one must exist. `workspace` and `db_path` override what the config says.
    """
    warnings: list[str] = []
    state = openclaw_state_dir(state_dir)
    explicit = config_path or os.environ.get(CONFIG_PATH_ENV)
    path = openclaw_config_path(config_path, state)
    if path.is_file() or explicit:
        raw = load_openclaw_config(path)
        used_path: Path | None = path
    else:
        raw, used_path = {}, None
        warnings.append(f"no OpenClaw config at {path}; using OpenClaw defaults")
    agent = _normalize_id(agent_id) if agent_id and agent_id.strip() else default_agent_id(raw)
    config, config_warnings = memory_config_from_openclaw(raw, agent, str(path), state)
    warnings.extend(config_warnings)
    ws = Path(workspace).expanduser() if workspace is not None else agent_workspace(raw, agent, state)
    if db_path is None and ws.is_dir():
        db_path = mdrecall_index_path(agent, ws.resolve())
    settings = resolve_settings(workspace=ws, agent_id=agent, state_dir=state, config=config, db_path=db_path)
    agent_db = state / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    if "sessions" in config.sources and not settings.sessions_dir.is_dir() and agent_db.is_file():
        warnings.append(
            f"sessions: this OpenClaw keeps transcripts in {agent_db}, which mdrecall does not read; "
            "only the markdown memory is indexed"
        )
    return dataclasses.replace(settings, config_path=used_path), warnings


def settings_for(
    openclaw: bool,
    agent_id: str | None = None,
    workspace: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    db_path: str | os.PathLike[str] | None = None,
) -> tuple[Settings, list[str]]:
    """Settings from command-line options: OpenClaw's layout with `openclaw`, else mdrecall's own.

    Shared by the CLI and the MCP server so both read the same options the same way.
    """
    if openclaw:
        return resolve_openclaw_settings(
            agent_id=agent_id, workspace=workspace, config_path=config_path, state_dir=state_dir, db_path=db_path
        )
    settings = resolve_settings(
        workspace=workspace, agent_id=agent_id, state_dir=state_dir, config_path=config_path, db_path=db_path
    )
    return settings, [settings.trust_notice] if settings.trust_notice else []
