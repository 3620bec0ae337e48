"""Bounded inputs on the Postgres backend: a NUL byte in a memory file or a query is handled as on SQLite
(U+FFFD in the text, on the real embedded server), and with the server down every CLI command ends with one
line while `status` shows the server down (exit code 1)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("psycopg")

from conftest import HashingProvider, write  # noqa: E402
from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.backends.postgres import PostgresIndex  # noqa: E402
from mdrecall.cli.app import app  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult  # noqa: E402

NUL_NOTE = b"# Vault\n\n" + b"x" * 9000 + b"\nThe vault\x00code is kept offline.\n"  # NUL past the binary sniff


def _settings(ws: Path, state: Path, driver: str):  # type: ignore[no-untyped-def]
    config = {"store": {"driver": driver, "postgres": {"connectTimeoutSeconds": 2}}}
    return resolve_settings(workspace=ws, agent_id="nul", state_dir=state, config=parse_config(config))


def test_a_nul_byte_indexes_on_postgres_as_on_sqlite(pg_server, monkeypatch, tmp_path: Path, workspace: Path) -> None:
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.fresh_database("mdrecall_nul"))
    (workspace / "memory" / "vault.md").write_bytes(NUL_NOTE)
    provider = ProviderResult(HashingProvider(), requested="test")  # type: ignore[arg-type]
    held: dict[str, list[str]] = {}
    for driver, cls in (("sqlite", MemoryIndex), ("postgres", PostgresIndex)):
        with cls(_settings(workspace, tmp_path / driver, driver), provider) as index:
            report = index.sync()
            assert report.files_indexed == 4 and not [s for s in report.skipped if "vault" in s[0]], report.skipped
            found = index.search("vault code offline", min_score=0.0)
            assert found.backend == driver.replace("sqlite", "builtin")
            hits = [r for r in found.results if r.path == "memory/vault.md"]
            assert hits and "vault\ufffdcode" in hits[0].snippet
            assert index.search("vault\x00code", min_score=0.0).results  # a NUL in a query too
            held[driver] = sorted(r.snippet for r in hits)
    assert held["sqlite"] == held["postgres"]


def _port_nobody_listens_on() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["index"], 1),
        (["index", "--force"], 1),
        (["search", "a828e60"], 0),  # answered by the local fallback, with a note
        (["get", "MEMORY.md"], 0),  # files are read from the workspace, not the server
        (["status"], 1),
        (["status", "--json"], 1),
        (["status", "--deep"], 1),
        (["status", "--index"], 1),
        (["watch"], 1),
        (["facts", "list"], 0),
        (["migrate", "--to", "postgres"], 1),
    ],
)
def test_every_command_with_the_server_down_ends_in_one_line(args, code, monkeypatch, tmp_path, workspace) -> None:
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", f"postgresql://postgres@127.0.0.1:{_port_nobody_listens_on()}/x")
    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    state = tmp_path / "state"
    base = ["--workspace", str(workspace), "--state-dir", str(state)]
    if args[0] == "migrate":  # a builtin index to copy from
        assert CliRunner().invoke(app, [*base, "index"]).exit_code == 0
    postgres = '\n[store]\ndriver = "postgres"\n[store.postgres]\nconnectTimeoutSeconds = 1\n'
    write(workspace, "mdrecall.toml", 'provider = "none"\n' + postgres)
    result = CliRunner().invoke(app, [*base, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr and len(errors) <= 1, result.stderr
    if code and args[0] != "status":
        assert errors and "postgres server" in errors[0], result.stderr
    if args[0] == "status":
        shown = result.stdout
        assert ("DOWN" in shown) or ('"available": false' in shown), shown
