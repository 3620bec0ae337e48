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
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mdrecall.errors import MdrecallError
from mdrecall.files import write_atomic
from mdrecall.locks import file_lock

if TYPE_CHECKING:
    from mdrecall.config.settings import Settings
    from mdrecall.facts.store import FactStore

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


def read_transcript_turns(path: str | None, start_line: int = 0) -> tuple[list[dict[str, str]], int]:
    """User/assistant turns from line `start_line` on, and the number of lines read in total."""
    from mdrecall.documents.sessions import transcript_turns  # imported when a transcript is read

    turns, total = transcript_turns(path, start_line)
    return [{"role": role, "content": text} for role, text in turns], total


# ---------------------------------------------------------------------------------------------------------
# Persisted per-session state
# ---------------------------------------------------------------------------------------------------------


class HookState:
    """A small JSON file of per-session counters, read-modify-written under a lock."""

    def __init__(self, settings: Settings) -> None:
        from mdrecall.facts.paths import store_dir

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


def lancedb_missing() -> bool:
    """LanceDB (the `facts` extra) cannot be imported. Found without importing it: the import costs ~1 s."""
    import importlib.util

    try:
        return importlib.util.find_spec("lancedb") is None
    except (ImportError, ValueError):  # a broken or blocked module (sys.modules["lancedb"] = None)
        return True


class HookRunner:
    """Runs one event for one workspace. `store` and `index` are created lazily (the model load is slow).

    A warm server (mdrecall.agents.serve) passes its open `index` and `store` and keeps the runner."""

    def __init__(self, settings: Settings, provider_result: Any = None, index: Any = None, store: Any = None) -> None:
        self.settings = settings
        self.config = settings.config.facts
        self._provider_result = provider_result
        self._index = index
        self._store: FactStore | None = store
        self._state: HookState | None = None

    @property
    def state(self) -> HookState:
        if self._state is None:
            self._state = HookState(self.settings)
        return self._state

    @property
    def facts_on(self) -> bool:
        """Facts are enabled and LanceDB is installed (without it the hooks still sync and write sessions)."""
        return self.config.enabled and not lancedb_missing()

    def _has_facts(self) -> bool:
        """Cheap check before importing LanceDB or loading a model: does facts.md hold any fact line?"""
        if not self.config.enabled:
            return False
        path = self.settings.workspace / self.config.file
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                if not any(line.startswith("- [") for line in handle):
                    return False
        except OSError:
            return False
        return self.facts_on and any(True for _ in self.store.file.parse())

    @property
    def store(self) -> FactStore:
        if self._store is None:
            from mdrecall.facts.store import FactStore

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
        from mdrecall.facts.store import INSTALL_HINT, format_memories

        result = HookResult()
        if self.settings.config.sync.on_session_start:
            if self._index is not None:
                report = self._index.ensure_fresh()
            else:
                from mdrecall.backends import open_backend

                with open_backend(self.settings, self._provider_result) as index:
                    report = index.ensure_fresh()
            result.note(f"synced ({report.files_indexed} files)" if report else "index fresh")
        if self.config.enabled and (self.config.auto_recall or self.config.auto_capture) and lancedb_missing():
            result.warn(f"mdrecall: no auto-recall or auto-capture: {INSTALL_HINT}")
            result.note("facts extra missing")
        if self.config.auto_recall and self._has_facts():
            facts = self.store.top(self.config.recall_limit)
            block = format_memories(facts, self.config.recall_max_chars)
            result.stdout = _context_output("SessionStart", block)
            for fact in facts:
                result.fact("recalled", fact.to_dict())
            result.note(f"recalled {len(facts)}")
        return result

    def user_prompt_submit(self, payload: Mapping[str, Any], now: datetime) -> HookResult:
        result = HookResult()
        prompt = payload.get("prompt")
        if not self.config.auto_recall or not isinstance(prompt, str) or not self._has_facts():
            return result
        from mdrecall.facts.store import auto_recall_hits, format_memories

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
                from mdrecall.agents.flush import FlushSettings

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
            from mdrecall.agents.flush import FlushSettings, should_flush

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
            if not isinstance(transcript, str) or not os.path.isfile(transcript):
                # no conversation happened (Claude Code runs SessionStart/SessionEnd for `claude mcp list`)
                result.note("no transcript: no session file written")
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
