"""`mdrecall install claude-code|codex|openclaw`: register mdrecall where each agent reads it.

Claude Code reads MCP servers from `~/.claude.json` (`mcpServers`, user scope) or from `.mcp.json` at a
project root (project scope), and hooks from `~/.claude/settings.json`. Codex reads MCP servers from
`~/.codex/config.toml` (`[mcp_servers.<name>]`) and hooks from `~/.codex/hooks.json`.

Every file is merged, never replaced: other servers, other hooks and unknown keys stay as they were;
earlier mdrecall entries are replaced (installing twice leaves one of each). An existing file is copied to
`<name>.bak-<time>` first, with its mode, and the new file keeps that mode (a new `~/.claude.json` is 0600,
as Claude Code makes it). A file that cannot be parsed is left alone and the install stops with one line.

Every hook command and the server's arguments name the workspace, the agent and the state dir, so the
hooks never depend on the folder the agent happens to run in.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomllib

from mdrecall.errors import MdrecallError
from mdrecall.files import create_private, make_private_dirs, write_atomic

SERVER_NAME = "mdrecall"
CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
# Codex has no SessionEnd, and its PreCompact hook does not take compaction instructions on stdout.
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
HOOK_TIMEOUTS = {"SessionStart": 60, "UserPromptSubmit": 30, "PreCompact": 60, "Stop": 60, "SessionEnd": 60}
# Events whose matcher selects a tool or trigger; the others take no matcher.
_MATCHED = ("SessionStart", "PreCompact")
MARKERS = ("mdrecall.cli", "mdrecall ")


def cli_base(python: str, workspace: Path, agent: str, state_dir: Path, config: Path | None = None) -> list[str]:
    """`<python> -m mdrecall.cli --workspace W --agent A --state-dir S [--config C]`: what every entry runs."""
    base = [
        python,
        "-m",
        "mdrecall.cli",
        "--workspace",
        str(workspace),
        "--agent",
        agent,
        "--state-dir",
        str(state_dir),
    ]
    if config is not None:
        base += ["--config", str(config)]
    return base


def hook_command(base: Sequence[str], event: str) -> str:
    return " ".join(shlex.quote(part) for part in [*base, "hook", event])


def server_entry(base: Sequence[str]) -> dict[str, Any]:
    return {"type": "stdio", "command": base[0], "args": [*base[1:], "mcp"], "env": {}}


def _is_ours(hook: Any) -> bool:
    command = str(hook.get("command", "")) if isinstance(hook, Mapping) else ""
    return " hook " in f"{command} " and any(marker in command for marker in MARKERS)


def merge_hooks(existing: dict[str, Any], base: Sequence[str], events: Sequence[str]) -> dict[str, Any]:
    """`existing` (a settings.json or hooks.json object) with mdrecall's hook per event, earlier ones replaced."""
    merged = dict(existing)
    hooks = dict(merged.get("hooks") or {}) if isinstance(merged.get("hooks"), Mapping) else {}
    for event in events:
        groups = []
        for group in hooks.get(event) or []:
            if not isinstance(group, Mapping):
                groups.append(group)
                continue
            kept = [h for h in group.get("hooks") or [] if not _is_ours(h)]
            if kept or not group.get("hooks"):
                groups.append({**group, "hooks": kept})
        command = {"type": "command", "command": hook_command(base, event), "timeout": HOOK_TIMEOUTS[event]}
        groups.append({"matcher": "", "hooks": [command]} if event in _MATCHED else {"hooks": [command]})
        hooks[event] = groups
    merged["hooks"] = hooks
    return merged


def merge_server(existing: dict[str, Any], base: Sequence[str]) -> dict[str, Any]:
    """`existing` (~/.claude.json or .mcp.json) with `mcpServers.mdrecall` set; everything else as it was."""
    servers = existing.get("mcpServers")
    servers = dict(servers) if isinstance(servers, Mapping) else {}
    servers[SERVER_NAME] = server_entry(base)
    return {**existing, "mcpServers": servers}


# ---------------------------------------------------------------------------------------------------------
# Claude Code
# ---------------------------------------------------------------------------------------------------------


def install_claude_code(
    base: Sequence[str],
    home: Path,
    project: Path | None = None,
    settings_file: Path | None = None,
    mcp_file: Path | None = None,
) -> dict[str, Any]:
    """Hooks into `settings_file` (default ~/.claude/settings.json); the server into `mcp_file`, else
    `<project>/.mcp.json`, else ~/.claude.json. Returns what was written and the backups made."""
    settings_file = settings_file or home / ".claude" / "settings.json"
    if mcp_file is None:
        mcp_file = project / ".mcp.json" if project is not None else home / ".claude.json"
    written: dict[str, Any] = {
        "hooks": str(settings_file),
        "mcp": str(mcp_file),
        "backups": [],
        "events": list(CLAUDE_EVENTS),
    }
    settings = _load_json_object(settings_file)
    servers_file = _load_json_object(mcp_file) if mcp_file != settings_file else settings
    merged = merge_hooks(settings, base, CLAUDE_EVENTS)
    if mcp_file != settings_file:
        merged = _without_our_server(merged)  # earlier versions put the server here, where Claude Code never looks
        _write_json(mcp_file, merge_server(servers_file, base), written, default_mode=0o600)
        _write_json(settings_file, merged, written, default_mode=0o600)
    else:
        _write_json(settings_file, merge_server(merged, base), written, default_mode=0o600)
    return written


def _without_our_server(settings: dict[str, Any]) -> dict[str, Any]:
    servers = settings.get("mcpServers")
    if not isinstance(servers, Mapping) or SERVER_NAME not in servers:
        return settings
    entry = servers[SERVER_NAME]
    args = entry.get("args") if isinstance(entry, Mapping) else None
    if not (isinstance(args, list) and any(str(a).startswith("mdrecall.cli") for a in args)):
        return settings  # someone else's server of that name
    rest = {k: v for k, v in servers.items() if k != SERVER_NAME}
    out = {k: v for k, v in settings.items() if k != "mcpServers"}
    if rest:
        out["mcpServers"] = rest
    return out


# ---------------------------------------------------------------------------------------------------------
# Codex
# ---------------------------------------------------------------------------------------------------------


def codex_home(home: Path) -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else home / ".codex"


def toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


_HEADER_RE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _table_path(header: str) -> list[str]:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', header)
    return [a or b or c for a, b, c in parts]


def drop_toml_table(text: str, path: Sequence[str]) -> str:
    """`text` without the table `path` and its sub-tables (header line through the line before the next
    header that is not one of them). Comments and everything else are kept byte for byte."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        match = _HEADER_RE.match(line)
        if match:
            skipping = _table_path(match.group(1))[: len(path)] == list(path)
        if not skipping:
            out.append(line)
    return "".join(out)


def codex_server_toml(base: Sequence[str]) -> str:
    args = ", ".join(toml_string(a) for a in [*base[1:], "mcp"])
    return f"[mcp_servers.{SERVER_NAME}]\ncommand = {toml_string(base[0])}\nargs = [{args}]\nstartup_timeout_sec = 60\n"


def merge_codex_config(text: str, base: Sequence[str], origin: Path) -> str:
    """config.toml text with `[mcp_servers.mdrecall]` (re)written at the end; refused when unparsable."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise MdrecallError(f"cannot read {origin} as TOML ({err}); nothing changed") from None
    kept = drop_toml_table(text, ["mcp_servers", SERVER_NAME]).rstrip("\n")
    merged = (kept + "\n\n" if kept else "") + codex_server_toml(base)
    try:
        parsed = tomllib.loads(merged)
    except tomllib.TOMLDecodeError as err:  # e.g. mcp_servers written as an inline table
        raise MdrecallError(
            f"cannot add [mcp_servers.{SERVER_NAME}] to {origin} ({err}); add it by hand; nothing changed"
        ) from None
    if parsed.get("mcp_servers", {}).get(SERVER_NAME, {}).get("command") != base[0]:
        raise MdrecallError(f"cannot add [mcp_servers.{SERVER_NAME}] to {origin}; nothing changed")
    return merged


def install_codex(base: Sequence[str], home: Path) -> dict[str, Any]:
    """`[mcp_servers.mdrecall]` into $CODEX_HOME/config.toml (default ~/.codex) and hooks into hooks.json."""
    root = codex_home(home)
    config_file, hooks_file = root / "config.toml", root / "hooks.json"
    written: dict[str, Any] = {
        "mcp": str(config_file),
        "hooks": str(hooks_file),
        "backups": [],
        "events": list(CODEX_EVENTS),
    }
    current = _read_text(config_file)
    merged_toml = merge_codex_config(current, base, config_file)
    hooks = merge_hooks(_load_json_object(hooks_file), base, CODEX_EVENTS)
    _write_text(config_file, merged_toml, written, default_mode=0o600)
    _write_json(hooks_file, hooks, written, default_mode=0o600)
    return written


# ---------------------------------------------------------------------------------------------------------
# `mdrecall install openclaw`: mdrecall as OpenClaw's memory (an MCP server; OpenClaw's memory plugin off)
# ---------------------------------------------------------------------------------------------------------

OPENCLAW_SERVER = "mdrecall"

OPENCLAW_MEMORY_TOOLS = ("memory_search", "memory_get")


def merge_openclaw_config(
    existing: Mapping[str, Any],
    base: list[str],
    env: Mapping[str, str] | None = None,
    keep_memory_plugin: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """OpenClaw's config with `mcp.servers.mdrecall` (stdio: `<base> mcp`) and OpenClaw's memory tools gone.

    OpenClaw names an MCP server's tools `<server>__<tool>` (`mdrecall__memory_search`). By default the memory
    slot is set to "none": OpenClaw's memory plugin (its `memory_search` / `memory_get`, its index, and the
    pre-compaction memory flush it plans) is off. With `keep_memory_plugin` the plugin stays (so its flush
    keeps writing memory/*.md) and only its two tools are denied (`tools.deny`). Either way the agent sees
    one set of memory tools. Everything else in the config is kept. Returns the merged config and notes.
    """
    from mdrecall.config.openclaw import deep_merge

    notes: list[str] = []
    server: dict[str, Any] = {"command": base[0], "args": [*base[1:], "mcp"]}
    if env:
        server["env"] = dict(env)
    plugins = existing.get("plugins") if isinstance(existing.get("plugins"), Mapping) else {}
    slots = plugins.get("slots") if isinstance(plugins.get("slots"), Mapping) else {}  # type: ignore[union-attr]
    previous = slots.get("memory")  # type: ignore[union-attr]
    servers = existing.get("mcp", {}).get("servers") if isinstance(existing.get("mcp"), Mapping) else None
    if isinstance(servers, Mapping) and OPENCLAW_SERVER in servers:
        notes.append(f"mcp.servers.{OPENCLAW_SERVER} replaced")
    if keep_memory_plugin:
        merged = deep_merge(existing, {})
        tools = dict(merged.get("tools") or {}) if isinstance(merged.get("tools"), Mapping) else {}
        deny = list(tools.get("deny") or []) if isinstance(tools.get("deny"), list) else []
        lowered = {str(d).lower() for d in deny}
        deny += [name for name in OPENCLAW_MEMORY_TOOLS if name not in lowered]
        tools["deny"] = deny
        merged["tools"] = tools
        if previous == "none":
            notes.append('plugins.slots.memory is "none": OpenClaw\'s memory plugin stays off')
    else:
        if isinstance(previous, str) and previous not in ("none", ""):
            notes.append(f'plugins.slots.memory was "{previous}"; now "none" (mdrecall serves memory)')
        merged = deep_merge(existing, {"plugins": {"slots": {"memory": "none"}}})
    mcp = dict(merged.get("mcp") or {}) if isinstance(merged.get("mcp"), Mapping) else {}
    mcp_servers = dict(mcp.get("servers") or {}) if isinstance(mcp.get("servers"), Mapping) else {}
    mcp_servers[OPENCLAW_SERVER] = server  # replaced whole: no stale args from an earlier install
    mcp["servers"] = mcp_servers
    merged["mcp"] = mcp
    return merged, notes


def install_openclaw(
    config_file: Path, base: list[str], env: Mapping[str, str] | None = None, keep_memory_plugin: bool = False
) -> dict[str, Any]:
    """Merge mdrecall into OpenClaw's config file (JSON5 read, JSON written); the old file is backed up."""
    from mdrecall.config.openclaw import load_openclaw_config
    from mdrecall.errors import ConfigError

    written: dict[str, Any] = {"config": str(config_file), "backups": [], "notes": []}
    current: dict[str, Any] = {}
    if config_file.exists():
        try:
            current = load_openclaw_config(config_file)
            text = config_file.read_text(encoding="utf-8-sig")
        except (ConfigError, OSError) as err:
            raise MdrecallError(f"{err}; nothing changed") from None
        try:
            json.loads(text)
        except ValueError:  # JSON5 (comments, unquoted keys): the rewrite is plain JSON, the backup keeps the rest
            written["notes"].append("the file was JSON5: it is rewritten as JSON (comments are kept in the backup)")
        if any(isinstance(v, str) and k == "$include" for k, v in current.items()):
            written["notes"].append("$include at the top level is kept; included files are not changed")
    merged, notes = merge_openclaw_config(current, base, env, keep_memory_plugin)
    written["notes"].extend(notes)
    _write_json(config_file, merged, written, default_mode=0o600)
    written["server"] = merged["mcp"]["servers"][OPENCLAW_SERVER]
    return written


# ---------------------------------------------------------------------------------------------------------
# Files: parse or refuse, back up with the same mode, replace atomically with the same mode
# ---------------------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as err:
        raise MdrecallError(f"cannot read {path} ({err}); nothing changed") from None


def _load_json_object(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    try:
        data = json.loads(text or "{}")
    except ValueError as err:
        raise MdrecallError(f"cannot read {path} as JSON ({err}); nothing changed") from None
    if not isinstance(data, dict):
        raise MdrecallError(f"{path} does not hold a JSON object; nothing changed")
    return data


def _write_json(path: Path, data: dict[str, Any], written: dict[str, Any], default_mode: int) -> None:
    _write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", written, default_mode)


def _write_text(path: Path, text: str, written: dict[str, Any], default_mode: int) -> None:
    """Back up what exists (same mode), then replace atomically, keeping the file's mode (or `default_mode`)."""
    if path.is_symlink():
        raise MdrecallError(f"refusing to replace a symlink: {path}; nothing changed")
    make_private_dirs(path.parent)
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1, 1000):
            backup = path.with_name(f"{path.name}.bak-{stamp}" + (f"-{n}" if n > 1 else ""))
            try:
                create_private(backup, path.read_bytes(), mode)
            except FileExistsError:
                continue
            break
        written["backups"].append(str(backup))
    write_atomic(path, text.encode("utf-8"), mode=default_mode)
