"""Read an OpenClaw installation's config and state layout, so mdrecall can serve the same agent's memory.

Where things are (as OpenClaw resolves them):
- state dir: `state_dir`, else $OPENCLAW_STATE_DIR, else `~/.openclaw` (or a legacy `~/.moltbot` when only
  that exists);
- config: `config_path`, else $OPENCLAW_CONFIG_PATH, else `<state>/openclaw.json` (JSON5);
- OpenClaw's own index (`<state>/memory/<agentId>.sqlite` or `memorySearch.store.path`) is never opened:
  mdrecall's index for an OpenClaw agent lives in mdrecall's state dir ($MDRECALL_STATE_DIR or ~/.mdrecall),
  `openclaw/<agentId>-<workspace key>.sqlite`. The two differ in meta, provider key and FTS text, so
  sharing a file would make each rebuild the other's; mdrecall reads OpenClaw's config, workspace and
  transcripts and writes none of OpenClaw's files;
- sessions: `<state>/agents/<agentId>/sessions`;
- workspace: `agents.list[n].workspace`, else for the default agent `agents.defaults.workspace` or
  `~/.openclaw/workspace`, else (other agents) `<state>/workspace-<agentId>`.

The memory config is `agents.defaults.memorySearch` deep-merged with the agent's `agents.list[n].memorySearch`
(objects merge key by key, anything else is replaced), plus `memory.citations` and `memory.backend`. Our
`MemoryConfig` uses the same camelCase keys; OpenClaw keys it does not know are dropped with a warning, while
a known key with a wrong value still fails with a ConfigError naming the key. `${VAR}` in strings is replaced
by the environment variable, as OpenClaw does.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
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


def _agent_entries(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    agents = raw.get("agents")
    entries = agents.get("list") if isinstance(agents, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [dict(e) for e in entries if isinstance(e, Mapping) and isinstance(e.get("id"), str)]


def _normalize_id(agent_id: str) -> str:
    return agent_id.strip().lower()


def default_agent_id(raw: Mapping[str, Any]) -> str:
    """The entry marked `default: true`, else the first listed agent, else `main`."""
    entries = _agent_entries(raw)
    for entry in entries:
        if entry.get("default") is True:
            return _normalize_id(entry["id"])
    return _normalize_id(entries[0]["id"]) if entries else DEFAULT_AGENT_ID


def find_agent(raw: Mapping[str, Any], agent_id: str) -> tuple[int, dict[str, Any]] | None:
    """(index in agents.list, entry) of the agent with this id (case-insensitive), if listed."""
    wanted = _normalize_id(agent_id)
    for position, entry in enumerate(_agent_entries(raw)):
        if _normalize_id(entry["id"]) == wanted:
            return position, entry
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


def memory_config_from_openclaw(
    raw: Mapping[str, Any], agent_id: str, origin: str = "(OpenClaw config)"
) -> tuple[MemoryConfig, list[str]]:
    """The agent's MemoryConfig from a parsed OpenClaw config, and the warnings about what was dropped."""
    warnings: list[str] = []
    merged = _section(raw, "agents", "defaults", "memorySearch")
    where = f"{origin}: agents.defaults.memorySearch"
    found = find_agent(raw, agent_id)
    if found is not None:
        position, entry = found
        override = entry.get("memorySearch")
        if isinstance(override, Mapping):
            merged = deep_merge(merged, override)
            where += f" + agents.list[{position}].memorySearch"
    elif _agent_entries(raw):
        warnings.append(f"agent {agent_id!r} is not in agents.list; using agents.defaults")
    merged = _expand_env(merged, "memorySearch", warnings)
    merged = _drop_gguf_model(_move_hybrid_sections(merged), warnings)
    memory = _section(raw, "memory")
    for key in ("citations", "backend", "qmd"):
        if key in memory:
            if key in merged:
                warnings.append(f"memorySearch.{key}: overridden by memory.{key}")
            merged[key] = memory[key]
    for key in memory:
        if key not in ("citations", "backend", "qmd"):
            warnings.append(f"memory.{key}: not supported by mdrecall; ignored")
    kept = _session_source_rule(_drop_unsupported(merged, MemoryConfig, "memorySearch.", warnings), warnings)
    return parse_config(kept, where), warnings


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
    """The agent's workspace folder, resolved the way OpenClaw does (see the module docstring)."""
    found = find_agent(raw, agent_id)
    configured = found[1].get("workspace") if found else None
    if isinstance(configured, str) and configured.strip():
        return Path(os.path.expandvars(configured.strip())).expanduser().resolve()
    if _normalize_id(agent_id) == default_agent_id(raw):
        fallback = _section(raw, "agents", "defaults").get("workspace")
        if isinstance(fallback, str) and fallback.strip():
            return Path(os.path.expandvars(fallback.strip())).expanduser().resolve()
        return (Path.home() / ".openclaw" / "workspace").resolve()
    return state_dir / f"workspace-{_normalize_id(agent_id)}"


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
    config, config_warnings = memory_config_from_openclaw(raw, agent, str(path))
    warnings.extend(config_warnings)
    ws = Path(workspace).expanduser() if workspace is not None else agent_workspace(raw, agent, state)
    if db_path is None and ws.is_dir():
        db_path = mdrecall_index_path(agent, ws.resolve())
    settings = resolve_settings(workspace=ws, agent_id=agent, state_dir=state, config=config, db_path=db_path)
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
