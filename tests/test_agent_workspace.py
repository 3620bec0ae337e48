"""Hooks never write into a folder that is not a memory workspace: without --workspace they use the agent's
folder only when it already holds memory, else the default memory home; `status` says which and why."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from facts_fixtures import FIXTURES
from mdrecall.agents.home import choose_workspace
from mdrecall.cli.app import app


def _payload(name: str, cwd: Path, transcript: Path) -> str:
    text = (FIXTURES / name).read_text().replace("__CWD__", str(cwd)).replace("__TRANSCRIPT__", str(transcript))
    return json.dumps(json.loads(text))


def _hook(state: Path, event: str, payload: str, *extra: str) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "mdrecall.cli", "--state-dir", str(state), *extra, "hook", event],
        input=payload,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_hooks_in_a_code_repository_write_to_the_memory_home(tmp_path: Path) -> None:
    repo, state = tmp_path / "repo", tmp_path / "st"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "payments.py").write_text("def charge():\n    pass\n")
    before = _tree(repo)
    home = state / "workspace"
    home.mkdir(parents=True)
    (home / "mdrecall.toml").write_text('provider = "none"\n')  # keyword-only: no model in this test
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_transcript.jsonl").read_text())
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"):
        done = _hook(state, event, _payload(f"{event}.json", repo, transcript))
        assert done.returncode == 0, (event, done.stderr)
    assert _tree(repo) == before  # nothing created next to the code
    written = {p.name for p in (home / "memory").glob("*.md")}
    assert "facts.md" in written and len(written) == 2  # the capture and the session-memory file
    assert "Fly.io" in (home / "memory" / "facts.md").read_text()


def test_a_folder_that_holds_memory_is_used_and_workspace_wins(tmp_path: Path) -> None:
    state = tmp_path / "st"
    notes = tmp_path / "notes"
    (notes / "memory").mkdir(parents=True)
    assert choose_workspace(None, str(notes), state) == (notes, "the agent's folder holds memory files")
    assert choose_workspace(tmp_path / "x", str(notes), state) == (tmp_path / "x", "--workspace")
    repo = tmp_path / "repo"
    repo.mkdir()
    where, why = choose_workspace(None, str(repo), state)
    assert where == state / "workspace" and why.startswith("default memory home") and where.is_dir()

    empty = tmp_path / "t.jsonl"
    empty.write_text("")
    (notes / "mdrecall.toml").write_text('provider = "none"\n')
    done = _hook(state, "SessionEnd", _payload("SessionEnd.json", notes, empty))
    assert done.returncode == 0, done.stderr
    assert len(list((notes / "memory").glob("*.md"))) == 1

    other = tmp_path / "other"
    other.mkdir()
    (other / "mdrecall.toml").write_text('provider = "none"\n')
    done = _hook(state, "SessionEnd", _payload("SessionEnd.json", repo, empty), "--workspace", str(other))
    assert done.returncode == 0, done.stderr
    assert len(list((other / "memory").glob("*.md"))) == 1 and not list(repo.iterdir())


def test_status_says_which_workspace_and_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "st"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mdrecall.toml").write_text('provider = "none"\n')
    monkeypatch.chdir(repo)
    out = json.loads(CliRunner().invoke(app, ["--state-dir", str(state), "status", "--json"]).stdout)
    assert out["workspaceSource"] == "current folder" and "hooksWorkspace" not in out  # mdrecall.toml: a workspace
    assert out["warmServer"]["running"] is False and out["warmServer"]["socket"].startswith(str(state.resolve()))

    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    (state / "workspace").mkdir(parents=True, exist_ok=True)
    result = CliRunner().invoke(app, ["--state-dir", str(state), "status"])
    assert "hooks workspace" in result.stdout and str(state.resolve() / "workspace") in result.stdout

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    result = CliRunner().invoke(app, ["--workspace", str(ws), "--state-dir", str(state), "status"])
    rows = dict(
        re.split(r"\s{2,}", line, maxsplit=1)
        for line in result.stdout.splitlines()
        if line.startswith(("workspace", "why"))
    )
    assert rows == {"workspace": str(ws.resolve()), "why this workspace": "--workspace"}
