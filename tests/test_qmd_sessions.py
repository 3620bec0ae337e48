"""Session transcripts exported, sanitised, to a qmd `sessions` collection (memory.qmd.sessions), with retention."""
# ruff: noqa: F811  (pytest fixtures imported from qmd_helpers are redefined as parameters)

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from mdrecall.agents.tools import MemoryTools

from .qmd_helpers import FakeQmd, fake_qmd, make_qmd, qmd_workspace, write  # noqa: F401

SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"


def _message(role: str, text: str) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": text}})


def _transcript(sessions_dir: Path, name: str, *turns: tuple[str, str], age_days: float = 0) -> Path:
    lines = [json.dumps({"type": "session", "id": name}), *(_message(r, t) for r, t in turns), "{broken"]
    path = write(sessions_dir, name, "\n".join(lines) + "\n")
    if age_days:
        stamp = time.time() - age_days * 86400
        os.utime(path, (stamp, stamp))
    return path


def test_sessions_are_exported_sanitised_and_searchable(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    _transcript(sessions, "abc.jsonl", ("user", f"the toucan api key is {SECRET}"), ("assistant", "Noted the toucan."))
    backend = make_qmd({"sessions": {"enabled": True}})
    backend.sync()
    export = tmp_path / "state" / "agents" / "main" / "qmd" / "sessions" / "abc-jsonl.md"
    text = export.read_text()
    assert "User: the toucan api key is" in text and "Assistant: Noted the toucan." in text
    assert SECRET not in text and "{broken" not in text and '"type"' not in text
    index_yml = tmp_path / "state/agents/main/qmd/xdg-config/qmd/index.yml"
    assert json.loads(index_yml.read_text())["collections"]["sessions"]["path"] == str(export.parent)
    result = MemoryTools(backend).call("memory_search", {"query": "toucan"})
    (hit,) = [r for r in result["results"] if r["source"] == "sessions"]
    assert hit["path"] == "qmd/sessions/abc-jsonl.md"
    assert SECRET not in json.dumps(result)
    assert "toucan" in MemoryTools(backend).call("memory_get", {"path": hit["path"]})["text"]


def test_retention_removes_old_exports_but_never_foreign_files(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    old = _transcript(sessions, "old.jsonl", ("user", "ancient heron talk"))
    _transcript(sessions, "new.jsonl", ("user", "fresh heron talk"))
    backend = make_qmd({"sessions": {"enabled": True, "retentionDays": 7}})
    export_dir = tmp_path / "state" / "agents" / "main" / "qmd" / "sessions"
    write(export_dir, "mine.md", "a file the user put here\n")
    backend.sync()
    assert sorted(p.name for p in export_dir.iterdir()) == ["mine.md", "new-jsonl.md", "old-jsonl.md"]
    stamp = time.time() - 30 * 86400
    os.utime(old, (stamp, stamp))
    backend.sync()
    assert sorted(p.name for p in export_dir.iterdir()) == ["mine.md", "new-jsonl.md"]
    assert [r.path for r in backend.search("heron").results] == ["qmd/sessions/new-jsonl.md"]


def test_sessions_off_exports_nothing(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    _transcript(tmp_path / "state" / "agents" / "main" / "sessions", "abc.jsonl", ("user", "hello"))
    backend = make_qmd()
    backend.sync()
    assert not (tmp_path / "state" / "agents" / "main" / "qmd" / "sessions").exists()
    assert "sessions" not in [c.name for c in backend.primary.collections()]
