"""The server going away in the middle of an incremental sync, on the real embedded server.

(The first build cut short is `test_postgres_backend.py::test_server_gone_mid_sync_loses_nothing`.) Here the
index is live when the server dies: the sync stops with one line, searches meanwhile fall back with a
notice, files committed before the cut stay committed (not redone), the rest is done by the next sync, and
nothing is duplicated, in the chunks or in the keyword postings.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from conftest import HashingProvider, sync_until_the_server_stops, write
from mdrecall.backends.postgres import PostgresIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult


def _index(ws: Path, state: Path) -> PostgresIndex:
    settings = resolve_settings(
        workspace=ws,
        agent_id="faults",
        state_dir=state,
        config=parse_config({"store": {"driver": "postgres", "postgres": {"connectTimeoutSeconds": 2}}}),
    )
    return PostgresIndex(settings, ProviderResult(HashingProvider(), requested="test"))  # type: ignore[arg-type]


def _rows(index: PostgresIndex) -> tuple[int, int, int, int]:
    """(chunks, distinct chunk ids, postings, postings expected from the tsvectors) of the live generation."""
    with psycopg.connect(index.dsn, autocommit=True) as conn:
        gen = conn.execute(
            "SELECT active_generation FROM mdrecall_indexes WHERE id = %s", (index._reader_index_id(),)
        ).fetchone()[0]
        chunks, ids = conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM mdrecall_chunks WHERE generation = %s", (gen,)
        ).fetchone()
        postings = conn.execute("SELECT count(*) FROM mdrecall_postings WHERE generation = %s", (gen,)).fetchone()[0]
        expected = conn.execute(
            "SELECT count(*) FROM mdrecall_chunks c, unnest(c.tsv) WHERE c.generation = %s", (gen,)
        ).fetchone()[0]
    return int(chunks), int(ids), int(postings), int(expected)


@pytest.fixture
def durable_dsn(pg_server):
    """A database of its own whose sessions commit durably. The session's server runs with
    synchronous_commit=off (speed), and an immediate stop is a crash: it could lose the last commits, which
    is not what a real server (default: on) does. A database setting outranks the server's command line."""
    dsn = pg_server.fresh_database("mdrecall_faults")
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute("ALTER DATABASE mdrecall_faults SET synchronous_commit = on")
    return dsn


def test_server_gone_mid_incremental_sync(durable_dsn, pg_server, monkeypatch, tmp_path, workspace):
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", durable_dsn)
    for i in range(30):
        write(workspace, f"memory/log-{i:02d}.md", f"# Log {i}\n\nroutine entry {i} about the gateway\n")
    index = _index(workspace, tmp_path / "state")
    try:
        assert index.sync().files_indexed == 33  # with the workspace fixture's own three files
        for i in range(20):
            write(workspace, f"memory/log-{i:02d}.md", f"# Log {i}\n\nrevised entry {i}: zeppelin rollout\n")

        try:
            message = sync_until_the_server_stops(index, pg_server, 8)
            assert "\n" not in message and durable_dsn not in message
            down = index.search("zeppelin rollout", mode="hybrid")
            assert "unavailable" in (down.notice or "")  # the fallback says it is one
        finally:
            pg_server.start()
        report = index.sync()
        assert not report.full_reindex
        assert 0 < report.files_indexed < 20  # what was committed before the cut is not redone
        assert index.status()["files"] == 33
        chunks, ids, postings, expected = _rows(index)
        assert chunks == ids == 33 and postings == expected  # nothing duplicated, postings follow the chunks
        hits = index.search("zeppelin rollout", mode="keyword", max_results=30, min_score=0)
        assert len({r.path for r in hits.results}) == 20 and hits.notice is None
    finally:
        index.close()
