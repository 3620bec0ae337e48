"""No secret leaves by mdrecall's hand, end to end: the SessionEnd hook's session file, auto-capture into
facts.md through the hook payloads, notes appended by the writer, and `memory_get` of a transcript through
the MCP client (the indexed, redacted text, never the raw JSONL lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from typer.testing import CliRunner

from mdrecall.agents.tools import MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import resolve_settings
from mdrecall.documents.writer import append_daily, append_long_term
from mdrecall.mcp_server import build_server

DATA = Path(__file__).resolve().parent / "data"
CORPUS = [json.loads(line) for line in (DATA / "secrets_corpus.jsonl").read_text(encoding="utf-8").splitlines()]
SECRETS = [r for r in CORPUS if r["secret"] is not None]
CAPTURE = [json.loads(line) for line in (DATA / "capture_refusals.jsonl").read_text(encoding="utf-8").splitlines()]


def _values(rows: list[dict]) -> list[str]:
    return [s for r in rows for s in (r["secret"] if isinstance(r["secret"], list) else [r["secret"]])]


def _leaks(text: str, rows: list[dict] = SECRETS) -> list[str]:
    return [s for s in _values(rows) if s in text]


def _claude(role: str, text: str) -> dict[str, Any]:
    return {"type": role, "sessionId": "s-1", "message": {"role": role, "content": text}}


def _hook(event: str, ws: Path, state: Path, transcript: Path) -> None:
    payload = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(ws), "hook_event_name": event}
    result = CliRunner().invoke(
        app, ["--workspace", str(ws), "--state-dir", str(state), "hook", event], input=json.dumps(payload)
    )
    assert result.exit_code == 0, result.output


def test_session_end_file_holds_no_secret_and_starts_at_a_user_turn(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    # 17 turns: the 15-turn window starts with an assistant reply; every corpus form is in the last turns
    per_turn = -(-len(SECRETS) // 12)
    bodies = ["\n".join(r["text"] for r in SECRETS[i : i + per_turn]) for i in range(0, len(SECRETS), per_turn)]
    turns = [_claude("user", "hello, first question"), _claude("assistant", "first answer")]
    roles = ["assistant", "user"] * 10
    turns += [_claude(role, f"turn {i}: {body}") for i, (role, body) in enumerate(zip(roles, bodies, strict=False))]
    turns += [_claude("user" if turns[-1]["type"] == "assistant" else "assistant", "closing words")]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    _hook("SessionEnd", ws, state, transcript)

    files = [p for p in (ws / "memory").glob("*.md") if p.name != "facts.md"]
    assert len(files) == 1
    text = files[0].read_text(encoding="utf-8")
    assert _leaks(text) == []
    assert text.count("[REDACTED:") >= len(SECRETS)
    conversation = text.split("## Conversation\n\n", 1)[1]
    assert conversation.startswith("user: "), conversation[:80]
    assert "turn 0:" in conversation or "turn 1:" in conversation  # the secrets were in the window, masked


def test_capture_through_the_hooks_stores_no_secret_and_no_quoted_text(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n\n[facts]\nmaxCapturesPerSession = 100\n')
    controls = ["I prefer tabs over spaces.", "Remember that my dentist is Dr. Chen.", "Eu prefiro respostas curtas."]
    turns: list[dict[str, Any]] = []
    for row in CAPTURE:
        turns += [_claude("user", row["text"]), _claude("assistant", "Noted.")]
    turns += [_claude("user", text) for text in controls]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    _hook("Stop", ws, state, transcript)
    _hook("SessionEnd", ws, state, transcript)

    facts = (ws / "memory" / "facts.md").read_text(encoding="utf-8")
    for control in controls:
        assert control in facts  # capture ran, and kept what the user said of themselves
    fact_lines = [line for line in facts.splitlines() if line.startswith("- [")]
    assert len(fact_lines) == len(controls), fact_lines
    for needle in ("4821", "Tangerine42", "gato1234", "Sonne2024", "abc12345", "curl", "sudo", "assistant must"):
        assert needle not in facts
    session_files = [p for p in (ws / "memory").glob("*.md") if p.name != "facts.md"]
    assert session_files and "Tangerine42" not in session_files[0].read_text(encoding="utf-8")


def test_notes_appended_by_mdrecall_are_redacted(tmp_path: Path) -> None:
    rows = SECRETS[:40]
    daily = append_daily(tmp_path, "\n".join(r["text"] for r in rows))
    long_term = append_long_term(tmp_path, "Deploy notes: docker login -u ci -p Zq8vT3mK9pLw registry.local")
    assert _leaks(daily.read_text(encoding="utf-8"), rows) == []
    assert "Zq8vT3mK9pLw" not in long_term.read_text(encoding="utf-8")


def test_memory_get_on_a_transcript_returns_the_indexed_redacted_text(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\nsources = ["memory", "sessions"]\n')
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    records: list[dict[str, Any]] = [{"type": "session", "id": "s1", "cwd": "/home/ada"}]
    for i, row in enumerate(SECRETS[:60]):
        role = "user" if i % 2 == 0 else "assistant"
        records.append({"type": "message", "message": {"role": role, "content": f"wombat note {i}: {row['text']}"}})
    raw_only = "AKIAZZRAWONLY0000000"
    records.append({"type": "custom", "data": {"note": f"never indexed {raw_only}"}})
    lines = [json.dumps(r, ensure_ascii=False) for r in records] + ["{not json " + raw_only]
    (sessions / "s1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = resolve_settings(workspace=ws, state_dir=state)

    with MemoryIndex(settings) as index:
        index.sync()
        tools = MemoryTools(index)

        async def scenario() -> tuple[dict, dict, dict]:
            async with Client(build_server(tools)) as client:
                searched = await client.call_tool("memory_search", {"query": "wombat note 7"})
                found = json.loads(searched.content[0].text)
                hit = next(h for h in found["results"] if h["path"] == "sessions/s1.jsonl")
                ranged = await client.call_tool(
                    "memory_get",
                    {"path": hit["path"], "from": hit["startLine"], "lines": hit["endLine"] - hit["startLine"] + 1},
                )
                whole = await client.call_tool("memory_get", {"path": "sessions/s1.jsonl"})
                return hit, json.loads(ranged.content[0].text), json.loads(whole.content[0].text)

        hit, ranged, whole = anyio.run(scenario)

    assert ranged["text"] and whole["text"]
    for got in (ranged["text"], whole["text"]):
        assert _leaks(got, SECRETS[:60]) == []
        assert raw_only not in got and '"type"' not in got  # never the JSONL lines themselves
        assert all(line.startswith(("User: ", "Assistant: ")) for line in got.split("\n"))
    assert "wombat note 7" in hit["snippet"] or "wombat note 7" in ranged["text"]
    assert whole["text"].count("\n") + 1 == 60
