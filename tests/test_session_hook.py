"""The session-memory hook: file naming, never overwriting, slug fallback, and what gets saved."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from mdrecall.agents.session_hook import recent_turns, sanitize_slug, save_session_memory

NOW = datetime(2026, 11, 2, 14, 3, 22, tzinfo=timezone.utc)


def _message(role: str, content: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": content}}


def _transcript(count: int) -> list[dict[str, Any]]:
    return [_message("user" if i % 2 == 0 else "assistant", f"message number {i}") for i in range(count)]


def _write_jsonl(path: Path, entries: list[Any]) -> Path:
    path.write_text("\n".join(e if isinstance(e, str) else json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return path


def test_names_file_by_date_and_slug(tmp_path: Path) -> None:
    path = save_session_memory(tmp_path, _transcript(4), now=NOW, slugify=lambda text: "Vendor Pitch: ACME!")
    assert path == tmp_path / "memory" / "2026-11-02-vendor-pitch-acme.md"


def test_slug_fallback_is_the_time(tmp_path: Path) -> None:
    def failing(text: str) -> str:
        raise TimeoutError("LLM did not answer")

    for slugify in (None, failing, lambda text: None, lambda text: "", lambda text: "!!! ???"):
        path = save_session_memory(tmp_path, _transcript(2), now=NOW, slugify=slugify)
        assert path is not None and path.name.startswith("2026-11-02-140322")


def test_never_overwrites(tmp_path: Path) -> None:
    first = save_session_memory(tmp_path, [_message("user", "first")], now=NOW, slugify=lambda t: "chat")
    second = save_session_memory(tmp_path, [_message("user", "second")], now=NOW, slugify=lambda t: "chat")
    third = save_session_memory(tmp_path, [_message("user", "third")], now=NOW, slugify=lambda t: "chat")
    assert [p.name for p in (first, second, third)] == [  # type: ignore[union-attr]
        "2026-11-02-chat.md",
        "2026-11-02-chat-2.md",
        "2026-11-02-chat-3.md",
    ]
    assert "user: first" in first.read_text()  # type: ignore[union-attr]
    assert "user: third" in third.read_text()  # type: ignore[union-attr]


def test_content_has_metadata_and_recent_turns(tmp_path: Path) -> None:
    entries = [
        {"type": "session", "id": "abc"},
        _message("user", "/new"),
        _message("system", "you are helpful"),
        _message("user", [{"type": "text", "text": "Where is the gateway?"}, {"type": "image", "data": "..."}]),
        _message("assistant", [{"type": "toolCall", "name": "memory_search"}]),
        _message("assistant", [{"type": "text", "text": "On the Mac Studio."}, {"type": "text", "text": "Closet."}]),
        {"type": "message", "message": {"role": "toolResult", "content": "ignored"}},
    ]
    path = save_session_memory(
        tmp_path, entries, now=NOW, session_id="sess-42", session_key="agent:main:main", source="telegram"
    )
    assert path is not None
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Session: 2026-11-02 14:03:22 UTC\n")
    for line in ("- **Date**: 2026-11-02", "- **Session ID**: sess-42", "- **Session Key**: agent:main:main"):
        assert line in text
    assert "- **Source**: telegram" in text
    body = text.split("## Conversation\n", 1)[1]
    assert body.strip() == "user: Where is the gateway?\n\nassistant: On the Mac Studio.\nCloset."
    assert "/new" not in text and "you are helpful" not in text and "ignored" not in text


def test_keeps_only_the_last_messages_starting_at_a_user_turn(tmp_path: Path) -> None:
    path = save_session_memory(tmp_path, _transcript(40), now=NOW)
    text = path.read_text()  # type: ignore[union-attr]
    # the last 15 are 25..39; 25 is an assistant reply whose question was cut off, so the file starts at 26
    assert "message number 39" in text and "message number 26" in text
    assert "message number 25" not in text and "message number 24" not in text
    assert text.split("## Conversation\n\n", 1)[1].startswith("user: message number 26")
    last = recent_turns(_transcript(40), 5)
    assert [t.role for t in last] == ["user", "assistant", "user", "assistant"]
    assert recent_turns(_transcript(3), 0) == []


def test_reads_jsonl_and_skips_bad_lines(tmp_path: Path) -> None:
    transcript = _write_jsonl(
        tmp_path / "s.jsonl",
        [_message("user", "remember the blue door"), "{not json", "[1]", _message("assistant", "noted")],
    )
    path = save_session_memory(tmp_path / "ws", transcript, now=NOW, slugify=lambda t: "door")
    assert path == tmp_path / "ws" / "memory" / "2026-11-02-door.md"
    assert "user: remember the blue door\n\nassistant: noted" in path.read_text()
    assert save_session_memory(tmp_path / "ws", str(transcript), now=NOW) is not None  # str paths too


def test_nothing_to_save(tmp_path: Path) -> None:
    assert save_session_memory(tmp_path, [], now=NOW) is None
    assert save_session_memory(tmp_path, [_message("user", "/new")], now=NOW) is None
    assert save_session_memory(tmp_path, tmp_path / "missing.jsonl", now=NOW) is None
    assert not (tmp_path / "memory").exists()


def test_slug_fn_sees_the_conversation(tmp_path: Path) -> None:
    seen: list[str] = []
    save_session_memory(tmp_path, _transcript(2), now=NOW, slugify=lambda t: seen.append(t) or "x")
    assert seen == ["user: message number 0\n\nassistant: message number 1"]


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("Vendor Pitch", "vendor-pitch"),
        ("../../etc/passwd", "etc-passwd"),
        ("Café_Plans 2026", "caf-plans-2026"),
        ("---", ""),
        (None, ""),
        ("a" * 100, "a" * 60),
    ],
)
def test_sanitize_slug(raw: str | None, slug: str) -> None:
    assert sanitize_slug(raw) == slug


def test_refuses_symlinked_memory_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(Exception, match="symlink"):
        save_session_memory(ws, _transcript(2), now=NOW)
    assert list(elsewhere.iterdir()) == []


def test_one_transcript_reader_for_every_agent_format(tmp_path: Path) -> None:
    """The index, the hooks and the session-memory file read transcripts through documents/sessions.py."""
    import json
    import os
    import threading

    from mdrecall.agents.hooks import read_transcript_turns
    from mdrecall.documents.sessions import conversation_turn, transcript_turns

    entries = [
        {"type": "message", "message": {"role": "user", "content": "OpenClaw says hello"}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "Claude Code too"}]}},
        {
            "type": "response_item",
            "payload": {"role": "assistant", "content": [{"type": "output_text", "text": "Codex"}]},
        },
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "meta"}},
        {"type": "user", "message": {"role": "user", "content": "/new"}},
        {"type": "message", "message": {"role": "tool", "content": "tool output"}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\nnot json\n")
    turns, total = transcript_turns(path)
    assert turns == [("user", "OpenClaw says hello"), ("user", "Claude Code too"), ("assistant", "Codex")]
    assert total == 7 and conversation_turn(entries[3]) is None
    assert read_transcript_turns(str(path), 2)[0] == [{"role": "assistant", "content": "Codex"}]
    assert [t.text for t in recent_turns(path, 10)] == ["OpenClaw says hello", "Claude Code too", "Codex"]

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(read_transcript_turns(str(fifo))), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert done == [([], 0)]  # refused at once, never blocks the hook
