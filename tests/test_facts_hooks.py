"""`mdrecall hook <event>` with recorded Claude Code / Codex payloads (tests/fixtures/hooks/), the persisted
once-per-compaction flush bookkeeping, the session-memory file, and `mdrecall install claude-code`."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from facts_fixtures import FIXTURES, hashing_provider, make_settings  # noqa: F401
from mdrecall.agents.hooks import HookRunner, HookState, read_transcript_turns
from mdrecall.cli.app import app


def _payload(name: str, workspace: Path, transcript: Path | str) -> dict[str, Any]:
    text = (FIXTURES / name).read_text()
    text = text.replace("__CWD__", str(workspace)).replace("__TRANSCRIPT__", str(transcript))
    return json.loads(text)


@dataclass
class _Run:
    returncode: int
    stdout: str
    stderr: str


def _cli(args: list[str], stdin: str = "", state: Path | None = None) -> _Run:
    """The real `mdrecall` app, in-process (a subprocess per call would cost seconds of imports)."""
    result = CliRunner().invoke(app, [*(["--state-dir", str(state)] if state else []), *args], input=stdin)
    return _Run(result.exit_code, result.stdout, result.stderr)


def test_hook_runs_as_a_real_process(tmp_path: Path) -> None:
    """One true subprocess: what Claude Code runs (`python -m mdrecall.cli hook <event>`, payload on stdin)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")  # a session that happened, with nothing said: its file is still written
    payload = json.dumps(_payload("SessionEnd.json", ws, transcript))
    command = [sys.executable, "-m", "mdrecall.cli", "--state-dir", str(tmp_path / "state"), "hook", "SessionEnd"]
    done = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(list((ws / "memory").glob("*.md"))) == 1


def test_claude_code_hook_loop_through_the_cli(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n[facts]\nmaxCapturesPerSession = 3\n')
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_transcript.jsonl").read_text())

    start = _cli(["hook", "SessionStart"], json.dumps(_payload("SessionStart.json", ws, transcript)), state)
    assert start.returncode == 0, start.stderr
    assert start.stdout == ""  # nothing stored yet: nothing to inject

    stop = _cli(["hook", "Stop"], json.dumps(_payload("Stop.json", ws, transcript)), state)
    assert stop.returncode == 0, stop.stderr
    facts = (ws / "memory" / "facts.md").read_text()
    assert "We decided to deploy the API on Fly.io" in facts and "Priya Raman" in facts
    assert "I prefer short answers" in facts  # the third capture: the cap (3) stops here
    for never in ("Heroku config around", "dark mode", "sk-proj", "metric units", "health check"):
        assert never not in facts
    # over the cap: not stored, but said on stderr (never silently lost), and kept in the hook state
    assert "session cap of 3" in stop.stderr and "metric units" in stop.stderr
    [hook_state] = (state / "hooks").glob("*.json")
    assert "metric units" in json.dumps(json.loads(hook_state.read_text()))

    prompt = _cli(["hook", "UserPromptSubmit"], json.dumps(_payload("UserPromptSubmit.json", ws, transcript)), state)
    out = json.loads(prompt.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert out["additionalContext"].startswith("<relevant-memories>") and "Fly.io" in out["additionalContext"]

    again = _cli(["hook", "SessionStart"], json.dumps(_payload("SessionStart.json", ws, transcript)), state)
    context = json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.count("\n") >= 3 and "untrusted" in context

    compact = _cli(["hook", "PreCompact"], json.dumps(_payload("PreCompact.json", ws, transcript)), state)
    assert compact.returncode == 0 and "NO_REPLY" in compact.stdout and "memory/" in compact.stdout

    end = _cli(["hook", "SessionEnd"], json.dumps(_payload("SessionEnd.json", ws, transcript)), state)
    assert end.returncode == 0, end.stderr
    [session_file] = [p for p in (ws / "memory").glob("*.md") if p.name != "facts.md"]
    text = session_file.read_text()
    assert "8f2c1d7e" in text and "We decided to deploy" in text and "SessionEnd" in text

    bad = _cli(["hook", "Stop"], "{not json", state)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    unknown = _cli(["hook", "Teardown"], "{}", state)
    assert unknown.returncode == 1 and "unknown hook event" in unknown.stderr


def test_flush_once_per_compaction_is_persisted(tmp_path: Path, hashing_provider) -> None:  # noqa: F811
    settings = make_settings(tmp_path / "ws", tmp_path / "state", {"facts": {"contextWindow": 30000}})
    transcript = tmp_path / "t.jsonl"
    line = json.dumps({"type": "assistant", "message": {"role": "assistant", "content": "x" * 990}}) + "\n"
    transcript.write_text(line * 30)  # ~30 KB ≈ 7.5k tokens > threshold 30000 - 20000 - 4000 = 6000
    payload = _payload("Stop.json", tmp_path / "ws", transcript)

    def run(event: str, **extra: Any) -> Any:
        runner = HookRunner(settings, hashing_provider)  # a fresh runner per call, like a fresh process
        try:
            return runner.run(event, {**payload, "hook_event_name": event, **extra})
        finally:
            runner.close()

    first = json.loads(run("Stop").stdout)
    assert first["decision"] == "block" and "NO_REPLY" in first["reason"]
    assert run("Stop").stdout == ""  # already flushed in this compaction cycle
    assert run("Stop", stop_hook_active=True).stdout == ""
    assert run("PreCompact").stdout == ""  # the flush already ran for this cycle
    state = HookState(settings).read()["sessions"][payload["session_id"]]
    assert state["compactionCount"] == 1 and state["lastFlushCount"] == 0
    assert run("Stop").stdout == ""  # after compaction the context is small again
    with transcript.open("a") as handle:
        handle.write(line * 30)
    assert json.loads(run("Stop").stdout)["decision"] == "block"  # a new cycle flushes once more
    assert HookState(settings).read()["sessions"][payload["session_id"]]["lastFlushCount"] == 1
    assert run("PreCompact").stdout == ""  # cycle 1 was flushed by the Stop turn
    compact = run("PreCompact")  # cycle 2, not flushed: PreCompact hands over the flush prompt
    assert "NO_REPLY" in compact.stdout
    state = HookState(settings).read()["sessions"][payload["session_id"]]
    assert state["compactionCount"] == 3 and state["lastFlushCount"] == 2


def test_session_memory_file_for_an_empty_session(tmp_path: Path, hashing_provider) -> None:  # noqa: F811
    settings = make_settings(tmp_path / "ws", tmp_path / "state")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    runner = HookRunner(settings, hashing_provider)
    result = runner.run("SessionEnd", _payload("SessionEnd.json", tmp_path / "ws", empty))
    again = runner.run("SessionEnd", _payload("SessionEnd.json", tmp_path / "ws", empty))
    runner.close()
    [path] = list((tmp_path / "ws" / "memory").glob("*.md"))
    assert "(no messages)" in path.read_text() and "wrote" in " ".join(result.actions or [])
    assert "already written" in " ".join(again.actions or [])


def test_codex_rollout_is_read_and_captured(tmp_path: Path, hashing_provider) -> None:  # noqa: F811
    rollout = FIXTURES / "codex_rollout.jsonl"
    turns, lines = read_transcript_turns(str(rollout))
    assert lines == 4 and [t["role"] for t in turns] == ["user", "user", "assistant"]
    settings = make_settings(tmp_path / "ws", tmp_path / "state")
    runner = HookRunner(settings, hashing_provider)
    runner.run("Stop", _payload("codex_Stop.json", tmp_path / "ws", rollout))
    texts = [f.text for f in runner.store.list()]
    runner.close()
    assert texts == ["From now on, release notes go in CHANGELOG.md, not the wiki."]


@pytest.mark.parametrize("name", ["SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"])
def test_recorded_payloads_have_the_fields_the_hooks_read(name: str) -> None:
    payload = json.loads((FIXTURES / f"{name}.json").read_text())
    assert payload["hook_event_name"] == name and {"session_id", "transcript_path", "cwd"} <= set(payload)


def test_without_lancedb_the_cli_says_how_to_install_and_hooks_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)  # `import lancedb` now raises ImportError
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    missing = _cli(["--workspace", str(ws), "facts", "list"], state=tmp_path / "state")
    assert missing.returncode == 1 and missing.stderr.strip() == (
        "error: the fact store needs LanceDB: pip install 'mdrecall[facts]'"
    )
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_transcript.jsonl").read_text())
    end = _cli(["hook", "SessionEnd"], json.dumps(_payload("SessionEnd.json", ws, transcript)), tmp_path / "state")
    assert end.returncode == 0, end.stderr
    assert not (ws / "memory" / "facts.md").exists() and len(list((ws / "memory").glob("*.md"))) == 1


def test_no_session_file_without_a_transcript(tmp_path: Path, hashing_provider) -> None:  # noqa: F811
    """Claude Code runs SessionStart/SessionEnd for `claude mcp list`: no conversation, no file in memory/."""
    settings = make_settings(tmp_path / "ws", tmp_path / "state")
    runner = HookRunner(settings, hashing_provider)
    result = runner.run("SessionEnd", _payload("SessionEnd.json", tmp_path / "ws", tmp_path / "missing.jsonl"))
    runner.close()
    assert not list((tmp_path / "ws").rglob("*.md")) and "no transcript" in " ".join(result.actions or [])


def test_the_recall_block_masks_a_secret_stored_before_its_rule(tmp_path: Path) -> None:
    from mdrecall.facts.model import Fact
    from mdrecall.facts.store import format_memories

    block = format_memories([Fact("abcd1234", "The staging password is hunter2-Staging!", "fact")])
    assert "hunter2-Staging!" not in block and "staging password" in block
