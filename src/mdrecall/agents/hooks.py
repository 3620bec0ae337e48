"""Agent hooks: `mdrecall hook <event>` runs the whole memory loop from an agent's lifecycle events.

Claude Code (and Codex, whose hooks use the same JSON) runs a command per event with a JSON payload on
stdin (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, plus per-event fields) and reads stdout:

| event | what mdrecall does | stdout |
| --- | --- | --- |
| SessionStart | sync the index; inject the most important facts | `hookSpecificOutput.additionalContext` |
| UserPromptSubmit | auto-recall: facts relevant to the prompt | `hookSpecificOutput.additionalContext` |
| PreCompact | auto-capture so far; the flush prompt once per compaction | plain text (compaction instructions) |
| Stop | auto-capture of new user turns; the flush turn near compaction | `{"decision": "block", "reason"}` |
| SessionEnd | auto-capture; the session-memory file (empty sessions too) | nothing |

Per-session bookkeeping (compaction count, last flushed cycle, captures so far, transcript lines already
read) lives in `<state>/hooks/<agent>-<workspace hash>.json`, so "once per compaction" and "a few captures
per conversation" hold across the separate processes each hook call is.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mdrecall.agents.flush import FlushSettings, should_flush
from mdrecall.config.settings import Settings
from mdrecall.errors import MdrecallError
from mdrecall.facts.store import FactStore, format_memories, store_dir
from mdrecall.files import create_private, make_private_dirs, write_atomic
from mdrecall.locks import file_lock

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
_ALIASES = {e.lower(): e for e in EVENTS} | {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}
MAX_SESSIONS_KEPT = 200
MAX_EVENTS_KEPT = 100  # the activity log `mdrecall ui` shows: the newest hook events, oldest dropped


def canonical_event(name: str) -> str:
    """`SessionStart`, `session-start` and `sessionstart` all name the same event."""
    event = _ALIASES.get(name.strip().lower())
    if event is None:
        raise MdrecallError(f"unknown hook event {name!r}: use one of {', '.join(EVENTS)}")
    return event


@dataclass
class HookResult:
    """What to print on stdout (JSON or plain text, "" for nothing) and what was done, for tests and logs."""

    stdout: str = ""
    actions: list[str] | None = None
    stderr: list[str] | None = None
    facts: list[dict[str, Any]] | None = None  # facts captured or injected, for the activity log

    def note(self, action: str) -> None:
        self.actions = [*(self.actions or []), action]

    def warn(self, line: str) -> None:
        """A line for the hook's stderr (the agent shows it; it never changes what stdout means)."""
        self.stderr = [*(self.stderr or []), line]

    def fact(self, kind: str, fact: Mapping[str, Any]) -> None:
        entry = {"kind": kind, **{k: fact.get(k) for k in ("id", "category", "text")}}
        self.facts = [*(self.facts or []), entry]


# ---------------------------------------------------------------------------------------------------------
# Transcripts: Claude Code (`{"type": "user", "message": {...}}`), OpenClaw (`{"type": "message", ...}`)
# and Codex rollouts (`{"type": "response_item", "payload": {"type": "message", ...}}`)
# ---------------------------------------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block.get("text", "")
            for block in content
            if isinstance(block, Mapping)
            and block.get("type") in ("text", "input_text", "output_text")
            and isinstance(block.get("text"), str)
        ]
        return "\n".join(p for p in parts if p)
    return ""


def _entry_turn(entry: Mapping[str, Any]) -> dict[str, str] | None:
    if entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    message: Any = entry
    if isinstance(entry.get("payload"), Mapping):
        message = entry["payload"]
    elif isinstance(entry.get("message"), Mapping):
        message = entry["message"]
    role = message.get("role")
    if role not in ("user", "assistant"):
        return None
    text = _content_text(message.get("content")).strip()
    if not text or text.startswith("/") or text.startswith("<command-") or text.startswith("<local-command"):
        return None
    return {"role": role, "content": text}


def read_transcript_turns(path: str | None, start_line: int = 0) -> tuple[list[dict[str, str]], int]:
    """User/assistant turns from line `start_line` on, and the number of lines read in total."""
    if not path:
        return [], start_line
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return [], start_line
    if start_line > len(lines):  # the transcript was replaced or truncated: read it from the start
        start_line = 0
    turns = []
    for line in lines[start_line:]:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, Mapping):
            turn = _entry_turn(entry)
            if turn:
                turns.append(turn)
    return turns, len(lines)


# ---------------------------------------------------------------------------------------------------------
# Persisted per-session state
# ---------------------------------------------------------------------------------------------------------


class HookState:
    """A small JSON file of per-session counters, read-modify-written under a lock."""

    def __init__(self, settings: Settings) -> None:
        base = store_dir(settings).name
        self.path = settings.state_dir / "hooks" / f"{base}.json"

    @contextlib.contextmanager
    def session(self, session_id: str) -> Iterator[dict[str, Any]]:
        with file_lock(self.path.with_suffix(".lock")):
            data = self._read()
            sessions = data.setdefault("sessions", {})
            entry = sessions.setdefault(session_id or "default", {})
            entry.setdefault("compactionCount", 0)
            entry.setdefault("lastFlushCount", None)
            entry.setdefault("captured", 0)
            entry.setdefault("linesRead", 0)
            entry.setdefault("compactedAtBytes", 0)
            yield entry
            entry["updatedAt"] = int(time.time() * 1000)
            self._prune(sessions)
            self._write(data)

    def read(self) -> dict[str, Any]:
        return self._read()

    def log_event(self, event: str, session_id: str, result: HookResult) -> None:
        """Append one hook call to the activity log (the newest MAX_EVENTS_KEPT are kept)."""
        with file_lock(self.path.with_suffix(".lock")):
            data = self._read()
            events = [e for e in data.get("events") or [] if isinstance(e, dict)]
            events.append(
                {
                    "at": int(time.time() * 1000),
                    "event": event,
                    "session": session_id,
                    "actions": list(result.actions or []),
                    "facts": list(result.facts or []),
                }
            )
            data["events"] = events[-MAX_EVENTS_KEPT:]
            self._write(data)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"version": 1, "sessions": {}}
        return data if isinstance(data, dict) else {"version": 1, "sessions": {}}

    def _write(self, data: dict[str, Any]) -> None:
        write_atomic(self.path, json.dumps(data, indent=2).encode("utf-8"))

    @staticmethod
    def _prune(sessions: dict[str, Any]) -> None:
        if len(sessions) > MAX_SESSIONS_KEPT:
            oldest = sorted(sessions, key=lambda k: sessions[k].get("updatedAt", 0))
            for key in oldest[: len(sessions) - MAX_SESSIONS_KEPT]:
                del sessions[key]


# ---------------------------------------------------------------------------------------------------------
# The hook runner
# ---------------------------------------------------------------------------------------------------------


def _context_output(event: str, context: str) -> str:
    if not context:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


class HookRunner:
    """Runs one event for one workspace. `store` and `index` are created lazily (the model load is slow)."""

    def __init__(self, settings: Settings, provider_result: Any = None) -> None:
        self.settings = settings
        self.config = settings.config.facts
        self._provider_result = provider_result
        self._store: FactStore | None = None
        self.state = HookState(settings)

    @property
    def facts_on(self) -> bool:
        """Facts are enabled and LanceDB is importable (without it the hooks still sync and write sessions)."""
        if not self.config.enabled:
            return False
        try:
            import lancedb  # noqa: F401
        except ImportError:
            return False
        return True

    def _has_facts(self) -> bool:
        """Cheap check before loading a model: is there any fact line at all?"""
        return self.facts_on and any(True for _ in self.store.file.parse())

    @property
    def store(self) -> FactStore:
        if self._store is None:
            self._store = FactStore(self.settings, self._provider_result)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def run(self, event: str, payload: Mapping[str, Any], now: datetime | None = None) -> HookResult:
        handler = {
            "SessionStart": self.session_start,
            "UserPromptSubmit": self.user_prompt_submit,
            "PreCompact": self.pre_compact,
            "Stop": self.stop,
            "SessionEnd": self.session_end,
        }[canonical_event(event)]
        result = handler(payload, now or datetime.now().astimezone())
        with contextlib.suppress(OSError):  # the activity log is for people; a hook never fails for it
            self.state.log_event(canonical_event(event), str(payload.get("session_id") or "default"), result)
        return result

    # -- events ------------------------------------------------------------------------------------

    def session_start(self, payload: Mapping[str, Any], now: datetime) -> HookResult:
        result = HookResult()
        if self.settings.config.sync.on_session_start:
            from mdrecall.backends import open_backend

            with open_backend(self.settings, self._provider_result) as index:
                report = index.ensure_fresh()
            result.note(f"synced ({report.files_indexed} files)" if report else "index fresh")
        if self.config.auto_recall and self._has_facts():
            facts = self.store.top(self.config.recall_limit)
            block = format_memories(facts, self.config.recall_max_chars)
            result.stdout = _context_output("SessionStart", block)
            for fact in facts:
                result.fact("recalled", fact.to_dict())
            result.note(f"recalled {len(facts)}")
        return result

    def user_prompt_submit(self, payload: Mapping[str, Any], now: datetime) -> HookResult:
        from mdrecall.facts.store import auto_recall_hits

        result = HookResult()
        prompt = payload.get("prompt")
        if not self.config.auto_recall or not isinstance(prompt, str) or not self._has_facts():
            return result
        hits = auto_recall_hits(self.store, prompt)
        block = format_memories(hits, self.config.recall_max_chars)
        for hit in hits:
            result.fact("recalled", hit.fact.to_dict())
        result.stdout = _context_output("UserPromptSubmit", block)
        result.note("recalled" if block else "nothing relevant")
        return result

    def pre_compact(self, payload: Mapping[str, Any], now: datetime) -> HookResult:
        """Capture what the session said so far, and hand over the flush prompt once per compaction."""
        result = HookResult()
        session_id = str(payload.get("session_id") or "default")
        transcript = payload.get("transcript_path")
        with self.state.session(session_id) as entry:
            self._capture(entry, transcript, result)
            cycle = entry["compactionCount"]
            if entry["lastFlushCount"] != cycle and self._flush_enabled():
                prompts = FlushSettings.from_compaction_config(None).prompts(now)
                result.stdout = prompts.prompt
                entry["lastFlushCount"] = cycle
                result.note(f"flush prompt (cycle {cycle})")
            else:
                result.note(f"already flushed this cycle ({cycle})")
            entry["compactionCount"] = cycle + 1
            entry["compactedAtBytes"] = _size(transcript)
        return result

    def stop(self, payload: Mapping[str, Any], now: datetime) -> HookResult:
        """Capture new user turns; near compaction (estimated from the transcript) ask for the flush turn."""
        result = HookResult()
        session_id = str(payload.get("session_id") or "default")
        transcript = payload.get("transcript_path")
        with self.state.session(session_id) as entry:
            self._capture(entry, transcript, result)
            if payload.get("stop_hook_active") or not self._flush_enabled():
                return result
            grown = max(0, _size(transcript) - int(entry.get("compactedAtBytes") or 0))
            settings = FlushSettings.from_compaction_config(None)
            decision = should_flush(
                None,
                self.config.context_window,
                settings.reserve_tokens_floor,
                settings.soft_threshold_tokens,
                compaction_count=entry["compactionCount"],
                last_flush_count=entry["lastFlushCount"],
                transcript_bytes=grown,
            )
            result.note(f"flush: {decision.reason}")
            if decision.flush:
                prompts = settings.prompts(now)
                reason = f"{prompts.system_prompt}\n\n{prompts.prompt}"
                result.stdout = json.dumps({"decision": "block", "reason": reason})
                entry["lastFlushCount"] = entry["compactionCount"]
        return result

    def session_end(self, payload: Mapping[str, Any], now: datetime) -> HookResult:
        from mdrecall.agents.session_hook import save_session_memory

        result = HookResult()
        session_id = str(payload.get("session_id") or "default")
        transcript = payload.get("transcript_path")
        with self.state.session(session_id) as entry:
            self._capture(entry, transcript, result)
            if entry.get("sessionFile"):
                result.note("session file already written")
                return result
            turns, _ = read_transcript_turns(transcript)
            reason = payload.get("reason") or payload.get("hook_event_name") or "end"
            path = save_session_memory(
                self.settings.workspace,
                turns,
                session_id=session_id,
                source=f"agent hook SessionEnd ({reason})",
                now=now,
                write_empty=True,
            )
            if path is not None:
                entry["sessionFile"] = path.relative_to(self.settings.workspace).as_posix()
                result.note(f"wrote {entry['sessionFile']}")
        return result

    # -- helpers -----------------------------------------------------------------------------------

    def _flush_enabled(self) -> bool:
        return os.access(self.settings.workspace, os.W_OK)

    def _capture(self, entry: dict[str, Any], transcript: Any, result: HookResult) -> None:
        """Auto-capture from transcript lines not read before, within the per-session cap."""
        from mdrecall.facts.capture import auto_capture, dropped_by_cap, extractor_from_config

        turns, lines = read_transcript_turns(transcript if isinstance(transcript, str) else None, entry["linesRead"])
        entry["linesRead"] = lines
        cap = self.config.max_captures_per_session
        room = cap - int(entry["captured"])
        if not (self.facts_on and self.config.auto_capture) or cap <= 0 or not turns:
            return
        if not any(t["role"] == "user" for t in turns):
            return
        try:
            outcomes = auto_capture(self.store, turns, limit=room, extractor=extractor_from_config(self.store))
        except MdrecallError:
            raise
        except Exception as err:  # the LLM extractor's endpoint may be down: capture is best effort
            result.note(f"capture failed: {err}")
            return
        stored = [o for o in outcomes if o.get("stored")]
        for outcome in stored:
            result.fact("captured", outcome.get("fact") or {})
        entry["captured"] = int(entry["captured"]) + len(stored)
        result.note(f"captured {len(stored)}")
        dropped = dropped_by_cap(outcomes)
        if dropped:
            # Never silently lost: said on stderr and kept in the session's hook state (`droppedByCap`).
            entry["droppedByCap"] = [*entry.get("droppedByCap", []), *dropped][-50:]
            result.note(f"dropped {len(dropped)} over the cap")
            for text in dropped:
                result.warn(
                    f"mdrecall: not captured, the session cap of {cap} (facts.maxCapturesPerSession) is reached: "
                    f"{text[:200]} (store it with memory_store or `mdrecall facts store` if it matters)"
                )


def _size(path: Any) -> int:
    try:
        return os.path.getsize(path) if isinstance(path, str) and path else 0
    except OSError:
        return 0


def read_payload(text: str) -> dict[str, Any]:
    """The hook payload from stdin; empty input is an empty payload, anything else must be a JSON object."""
    if not text.strip():
        return {}
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as err:
        raise MdrecallError(f"hook payload on stdin is not JSON ({err.msg})") from None
    if not isinstance(payload, dict):
        raise MdrecallError("hook payload on stdin must be a JSON object")
    return payload


# ---------------------------------------------------------------------------------------------------------
# `mdrecall install claude-code`: merge hooks and the MCP server into a settings file
# ---------------------------------------------------------------------------------------------------------

HOOK_TIMEOUTS = {"SessionStart": 60, "UserPromptSubmit": 30, "PreCompact": 60, "Stop": 60, "SessionEnd": 60}
MARKER = "mdrecall.cli"


def hook_command(base: list[str], event: str) -> str:
    import shlex

    return " ".join(shlex.quote(part) for part in [*base, "hook", event])


def _is_ours(hook: Any) -> bool:
    command = str(hook.get("command", "")) if isinstance(hook, Mapping) else ""
    return MARKER in command and " hook " in command


def merge_claude_settings(existing: dict[str, Any], base: list[str], mcp: bool = True) -> dict[str, Any]:
    """Settings with mdrecall's hooks (replacing earlier mdrecall entries only) and MCP server added."""
    merged = dict(existing)
    hooks = dict(merged.get("hooks") or {}) if isinstance(merged.get("hooks"), Mapping) else {}
    for event in EVENTS:
        groups = []
        for group in hooks.get(event) or []:
            if not isinstance(group, Mapping):
                groups.append(group)
                continue
            kept = [h for h in group.get("hooks") or [] if not _is_ours(h)]
            if kept or not group.get("hooks"):
                groups.append({**group, "hooks": kept})
        command = {"type": "command", "command": hook_command(base, event), "timeout": HOOK_TIMEOUTS[event]}
        groups.append(
            {"hooks": [command]}
            if event in ("UserPromptSubmit", "Stop", "SessionEnd")
            else {"matcher": "", "hooks": [command]}
        )
        hooks[event] = groups
    merged["hooks"] = hooks
    if mcp:
        servers = dict(merged.get("mcpServers") or {}) if isinstance(merged.get("mcpServers"), Mapping) else {}
        servers["mdrecall"] = {"type": "stdio", "command": base[0], "args": [*base[1:], "mcp"]}
        merged["mcpServers"] = servers
    return merged


def install_claude_code(settings_file: Path, base: list[str], mcp_file: Path | None = None) -> dict[str, Any]:
    """Merge into `settings_file` (and `mcp_file`, when given, for the MCP server); back up what existed."""
    written: dict[str, Any] = {"settings": str(settings_file), "backups": []}
    current = _load_json_object(settings_file)
    merged = merge_claude_settings(current, base, mcp=mcp_file is None)
    _write_with_backup(settings_file, merged, written)
    if mcp_file is not None:
        mcp_current = _load_json_object(mcp_file)
        servers = dict(mcp_current.get("mcpServers") or {})
        servers["mdrecall"] = {"type": "stdio", "command": base[0], "args": [*base[1:], "mcp"]}
        _write_with_backup(mcp_file, {**mcp_current, "mcpServers": servers}, written)
        written["mcp"] = str(mcp_file)
    written["events"] = list(EVENTS)
    return written


def _load_json_object(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as err:
        raise MdrecallError(f"cannot read {path} as JSON ({err}); nothing changed") from None
    if not isinstance(data, dict):
        raise MdrecallError(f"{path} does not hold a JSON object; nothing changed")
    return data


def _write_with_backup(path: Path, data: dict[str, Any], written: dict[str, Any]) -> None:
    """Replace `path` keeping its mode (a new file is 0600); the backup of what was there gets the same mode."""
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
    write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


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
    _write_with_backup(config_file, merged, written)
    written["server"] = merged["mcp"]["servers"][OPENCLAW_SERVER]
    return written
