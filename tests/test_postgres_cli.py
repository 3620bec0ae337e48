"""The CLI on the Postgres backend (chosen through the backend seam by `store.driver = "postgres"`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.backends import backend_name, open_backend
from mdrecall.backends.postgres import PostgresIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import parse_config, resolve_settings

runner = CliRunner()


@pytest.fixture
def pg_workspace(workspace: Path, pg_server, monkeypatch) -> Path:
    """The shared workspace, keyword-only (no model load) on the session's server."""
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    (workspace / "mdrecall.toml").write_text(
        'provider = "none"\n[store]\nbackend = "postgres"\n[store.postgres]\nconnectTimeoutSeconds = 1\n'
    )
    return workspace


def run(ws: Path, state: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), *args])


def test_seam_picks_postgres(tmp_path: Path, workspace: Path, pg_server, monkeypatch) -> None:
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    for data in ({"store": {"driver": "postgres"}}, {"backend": "postgres"}):
        settings = resolve_settings(workspace=workspace, state_dir=tmp_path, config=parse_config(data))
        assert backend_name(settings) == "postgres"
        with open_backend(settings) as backend:
            assert isinstance(backend, PostgresIndex)


def test_cli_index_search_status(pg_workspace: Path, tmp_path: Path) -> None:
    result = run(pg_workspace, tmp_path / "s", "index")
    assert result.exit_code == 0, result.output
    result = run(pg_workspace, tmp_path / "s", "search", "a828e60", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data and data[0]["path"] == "MEMORY.md"
    assert not (tmp_path / "s" / "memory" / "main.sqlite").exists()  # the index lives on the server
    status = json.loads(run(pg_workspace, tmp_path / "s", "status", "--json").stdout)
    assert status["backend"] == "postgres" and status["files"] == 3 and status["postgres"]["schemaVersion"] >= 1


def test_cli_server_down_is_one_line(pg_workspace: Path, tmp_path: Path, monkeypatch, pg_server) -> None:
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn.replace(f":{pg_server.port}/", ":1/"))
    result = run(pg_workspace, tmp_path / "s", "index")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "unavailable" in lines[0] and "Traceback" not in result.output
    result = run(pg_workspace, tmp_path / "s", "search", "a828e60", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["path"] == "MEMORY.md"  # answered by the local keyword fallback
