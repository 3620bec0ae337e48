"""`mdrecall migrate --to postgres` against the session's real embedded PostgreSQL (see conftest `pg_server`).

A builtin SQLite index (windows, embedding cache) is moved to the server: nothing is re-embedded, the server
then syncs nothing and answers exactly as SQLite did; a second run is a no-op; faults are one line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import HashingProvider, write
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.backends.postgres import PostgresIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult

runner = CliRunner()
SECRET = "s3cret-pw"


class WindowedHashing(HashingProvider):
    """A "local" provider with a short input: chunks get several embedded windows."""

    id = "local"
    max_seq_length = 64


def run(ws: Path, state: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), *args])


def _results(response):
    hits = [(r.path, r.start_line, r.end_line, round(r.score, 5)) for r in response.results]
    return sorted(hits, key=lambda h: (-h[3], h[0], h[1]))


@pytest.fixture
def migrated_ws(tmp_path: Path, pg_server, monkeypatch):
    """A workspace with a built SQLite index (dated logs, headings, long notes) and the DSN in the env."""
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Long-term memory\n\nDana prefers metric units.\n")
    write(ws, "memory/2026-11-02.md", "# Standup\n\n## Infra\n\nThe gateway moved to the Mac Studio.\n")
    for i in range(4):
        topics = ["gateway", "deploy", "garden"]
        lines = [f"Line {j} of note {i}: the {topics[j % 3]} item {i * j}." for j in range(20)]
        write(ws, f"memory/long-{i}.md", f"# Long note {i}\n\n" + "\n".join(lines) + "\n")
    (ws / "mdrecall.toml").write_text("[store.postgres]\nconnectTimeoutSeconds = 1\n")
    state = tmp_path / "state"
    settings = resolve_settings(workspace=ws, state_dir=state)
    with MemoryIndex(settings, ProviderResult(WindowedHashing(), requested="test")) as lite:
        lite.sync()
    return ws, state


def test_migrate_copies_everything_and_reembeds_nothing(migrated_ws, pg_server):
    ws, state = migrated_ws
    result = run(ws, state, "migrate", "--to", "postgres", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert pg_server.dsn not in result.output
    settings = resolve_settings(workspace=ws, state_dir=state)
    with MemoryIndex(settings, ProviderResult(WindowedHashing(), requested="test")) as lite:
        counts = lite.status()
        assert summary["files"] == counts["files"] and summary["chunks"] == counts["chunks"] > 0
        assert summary["vectors"] == lite.store.vector_row_count() > summary["chunks"]  # windows, not chunks
        assert summary["cacheEntries"] == lite.store.cache_count() > 0
        assert summary["leftForNextSync"] == [] and not summary["alreadyMigrated"]

        pg_cfg = parse_config({"store": {"driver": "postgres", "postgres": {"connectTimeoutSeconds": 1}}})
        pg_settings = resolve_settings(workspace=ws, state_dir=state, config=pg_cfg)
        provider = WindowedHashing()
        with PostgresIndex(pg_settings, ProviderResult(provider, requested="test")) as pg:
            report = pg.sync()
            assert not report.full_reindex and report.files_indexed == 0, report  # nothing to redo
            assert provider.texts_embedded == 0
            assert pg.store.cache_count() == summary["cacheEntries"]
            for query in ["gateway Mac Studio", "metric units", "garden item 12", "November 2026 infra"]:
                for mode in ("hybrid", "keyword", "vector"):
                    got = _results(pg.search(query, min_score=0.0, mode=mode))
                    assert got == _results(lite.search(query, min_score=0.0, mode=mode)) and got, (query, mode)

    again = run(ws, state, "migrate", "--to", "postgres", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["alreadyMigrated"], again.output
    assert json.loads(again.stdout)["generation"] == summary["generation"]


def test_changed_file_is_left_for_the_next_sync(migrated_ws, pg_server):
    ws, state = migrated_ws
    write(ws, "memory/long-1.md", "# Rewritten\n\nOnly the zebrafish now.\n")  # after the SQLite index was built
    result = run(ws, state, "migrate", "--to", "postgres")
    assert result.exit_code == 0, result.output
    assert "1 file(s) changed since the last index" in result.stdout and pg_server.dsn not in result.stdout
    pg_cfg = parse_config({"store": {"driver": "postgres"}})
    provider = WindowedHashing()
    settings = resolve_settings(workspace=ws, state_dir=state, config=pg_cfg)
    with PostgresIndex(settings, ProviderResult(provider, requested="test")) as pg:
        report = pg.sync()
        assert report.files_indexed == 1 and not report.full_reindex
        assert [r.path for r in pg.search("zebrafish", mode="keyword").results][0] == "memory/long-1.md"


@pytest.mark.parametrize(
    ("dsn", "expect"),
    [
        (f"postgresql://postgres:{SECRET}@127.0.0.1:1/postgres", "unavailable|connection"),
        (f"host=127.0.0.1 password={SECRET} nonsense", "not a valid connection string"),
    ],
)
def test_server_faults_are_one_line_without_the_dsn(migrated_ws, monkeypatch, dsn, expect):
    ws, state = migrated_ws
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", dsn)
    result = run(ws, state, "migrate", "--to", "postgres")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert SECRET not in result.output and "nonsense" not in result.output
    assert re.search(expect, lines[0]), lines[0]


def test_user_mistakes_are_one_line(tmp_path, workspace, pg_server, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    no_index = run(workspace, state, "migrate", "--to", "postgres")
    assert no_index.exit_code == 1 and "no SQLite index" in no_index.stderr
    assert len(no_index.stderr.strip().splitlines()) == 1
    wrong = run(workspace, state, "migrate", "--to", "qmd")
    assert wrong.exit_code == 1 and "supported targets are postgres" in wrong.stderr
    monkeypatch.delenv("MDRECALL_POSTGRES_DSN")
    no_dsn = run(workspace, state, "migrate", "--to", "postgres")
    assert no_dsn.exit_code == 1 and "MDRECALL_POSTGRES_DSN" in no_dsn.stderr
