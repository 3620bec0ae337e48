"""The CLI: JSON shapes, exit codes, one-line errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.cli.app import app

from .conftest import write

runner = CliRunner()


@pytest.fixture
def kw_workspace(workspace: Path) -> Path:
    """The shared workspace, keyword-only (no model load: fast CLI tests)."""
    (workspace / "mdrecall.toml").write_text('provider = "none"\n')
    return workspace


def run(ws: Path, state: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), *args])


def test_index_then_search_json_shape(kw_workspace: Path, tmp_path: Path) -> None:
    result = run(kw_workspace, tmp_path / "s", "index")
    assert result.exit_code == 0, result.output
    assert "3 files / 3 chunks indexed" in result.stdout
    result = run(kw_workspace, tmp_path / "s", "search", "a828e60", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert isinstance(data, list) and data
    assert set(data[0]) == {"path", "startLine", "endLine", "score", "snippet", "source"}
    assert data[0]["path"] == "MEMORY.md" and "a828e60" in data[0]["snippet"]


def test_search_syncs_first_when_index_missing(kw_workspace: Path, tmp_path: Path) -> None:
    result = run(kw_workspace, tmp_path / "s", "search", "memorySearch.query.hybrid", "--json", "--max-results", "1")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [d["path"] for d in data] == ["memory/2026-11-02.md"]
    assert list((tmp_path / "s" / "memory").glob("main-*.sqlite"))


def test_search_picks_up_edits_made_after_indexing(kw_workspace: Path, tmp_path: Path) -> None:
    run(kw_workspace, tmp_path / "s", "index")
    write(kw_workspace, "memory/2026-11-03.md", "Booked the flight to Lisbon for the offsite.\n")
    data = json.loads(run(kw_workspace, tmp_path / "s", "search", "Lisbon offsite", "--json").stdout)
    assert data and data[0]["path"] == "memory/2026-11-03.md"


def test_get_json_and_line_window(kw_workspace: Path, tmp_path: Path) -> None:
    result = run(kw_workspace, tmp_path / "s", "get", "MEMORY.md", "--from", "3", "--lines", "1", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"path": "MEMORY.md", "text": "Dana prefers metric units."}
    plain = run(kw_workspace, tmp_path / "s", "get", "MEMORY.md")
    assert plain.stdout.startswith("# Long-term memory")


def test_get_past_the_end_says_so(kw_workspace: Path, tmp_path: Path) -> None:
    """An empty answer for a line past the end is not an empty range: the answer says how long the file is."""
    total = len(run(kw_workspace, tmp_path / "s", "get", "MEMORY.md").stdout.splitlines())
    data = json.loads(run(kw_workspace, tmp_path / "s", "get", "MEMORY.md", "--from", "900", "--json").stdout)
    assert data == {"path": "MEMORY.md", "text": "", "notice": f"MEMORY.md has {total} lines: line 900 is past its end"}
    plain = run(kw_workspace, tmp_path / "s", "get", "MEMORY.md", "--from", "900")
    assert plain.exit_code == 0 and f"has {total} lines" in plain.output
    inside = json.loads(run(kw_workspace, tmp_path / "s", "get", "MEMORY.md", "--from", str(total), "--json").stdout)
    assert inside["text"] and "notice" not in inside


def test_status_json_fields(kw_workspace: Path, tmp_path: Path) -> None:
    result = run(kw_workspace, tmp_path / "s", "status", "--json")
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    for key in (
        "backend",
        "provider",
        "model",
        "files",
        "chunks",
        "dirty",
        "dbPath",
        "sources",
        "sourceCounts",
        "fts",
        "vector",
        "cache",
    ):
        assert key in status, key
    assert status["searchMode"] == "fts-only" and status["provider"] == "none"
    assert status["files"] == 3 and status["dirty"] is False
    assert status["sourceCounts"] == [{"source": "memory", "files": 3, "chunks": 3}]
    deep = json.loads(run(kw_workspace, tmp_path / "s", "status", "--deep", "--json").stdout)
    assert deep["probe"]["embeddings"]["ok"] is False
    assert deep["probe"]["vector"]["ok"] is True


def test_index_json_report(kw_workspace: Path, tmp_path: Path) -> None:
    report = json.loads(run(kw_workspace, tmp_path / "s", "index", "--force", "--json").stdout)
    assert report["fullReindex"] is True and report["filesIndexed"] == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["get", "../../etc/passwd"], "path refused"),
        (["get", "/etc/passwd"], "path refused"),
        (["get", "memory/missing.md"], "not found"),
    ],
)
def test_user_errors_exit_1_with_one_line(kw_workspace: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    result = run(kw_workspace, tmp_path / "s", *args)
    assert result.exit_code == 1
    assert needle in result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_workspace_and_bad_config(tmp_path: Path) -> None:
    result = run(tmp_path / "nope", tmp_path / "s", "status")
    assert result.exit_code == 1 and "workspace not found" in result.stderr
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", "[query]\nminScore = 5\n")
    result = run(ws, tmp_path / "s", "search", "x")
    assert result.exit_code == 1 and "query.minScore" in result.stderr
    result = runner.invoke(app, ["--workspace", str(ws), "--config", str(tmp_path / "none.toml"), "status"])
    assert result.exit_code == 1 and "config file not found" in result.stderr


def test_real_process_prints_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mdrecall.cli", "--workspace", str(tmp_path / "missing"), "status"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "workspace not found" in proc.stderr
