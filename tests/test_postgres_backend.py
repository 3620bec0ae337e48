"""The Postgres + pgvector backend against a real server (one embedded PostgreSQL 18 per test session).

Each test uses its own workspace (and so its own index on the shared server); tests that take the server
away bring it back before they end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from conftest import HashingProvider, sync_until_the_server_stops, write
from mdrecall.agents.tools import MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.backends.postgres import PostgresIndex, PostgresUnavailableError
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.errors import ConfigError
from mdrecall.storage.postgres.schema import LATEST_VERSION, migrate

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pg_env(pg_server, monkeypatch):
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    return pg_server


@pytest.fixture
def open_pg(pg_env, tmp_path):
    opened: list[MemoryIndex] = []

    def factory(ws: Path, provider=None, agent: str = "main", extra: dict | None = None, sqlite: bool = False):
        cfg = {"store": {"driver": "sqlite" if sqlite else "postgres", "postgres": {"connectTimeoutSeconds": 2}}}
        cfg["store"]["vector"] = {"encoding": "float32"}  # as pgvector stores them: identical scores to compare
        cfg["store"]["postgres"].update(extra or {})
        settings = resolve_settings(
            workspace=ws, agent_id=agent, state_dir=tmp_path / "state", config=parse_config(cfg)
        )
        cls = MemoryIndex if sqlite else PostgresIndex
        index = cls(settings, ProviderResult(provider, requested="test"))
        opened.append(index)
        return index

    yield factory
    for index in opened:
        index.close()


def _many_files(ws: Path, count: int) -> None:
    for i in range(count):
        write(ws, f"memory/notes-{i:03d}.md", f"# Note {i}\n\nTopic {i % 7} about deploys and the gateway.\nid n{i}x\n")


def _results(response):
    return [(r.path, r.start_line, r.end_line, round(r.score, 5)) for r in response.results]


def test_same_results_as_sqlite(open_pg, workspace):
    """Same chunks, same BM25, same cosines, same fusion: identical ranked results in every mode."""
    write(
        workspace,
        "memory/2026-11-05.md",
        "# Deploys\n\nThe gateway deploy moved to Fridays.\nCafé notes: naïve résumé.\n\nTwo gateways deployed.\n",
    )
    pg = open_pg(workspace, HashingProvider())
    lite = open_pg(workspace, HashingProvider(), sqlite=True)
    pg.sync()
    lite.sync()
    # word forms: "deploying" is the prefix unit "deploy"*, which FTS5 counts in "deploy" and "deployed" alike
    queries = ["gateway deploy", "a828e60", "metric units Dana", "resume naive cafe", "hybrid 0.7"]
    queries.append("deploying gateways")
    for query in queries:
        for mode in ("hybrid", "keyword", "vector"):
            assert _results(pg.search(query, mode=mode)) == _results(lite.search(query, mode=mode)), (query, mode)
    assert _results(pg.search("gateway deploy"))  # not vacuous


def test_prefix_units_score_as_fts5(open_pg, workspace):
    """A word's prefix (query.wordForms: "deploying" -> "deploy"*) is one bm25 unit counting every lexeme that
    starts with it, on PostgreSQL as in FTS5; also where the chunk holds only other forms ("deployed")."""
    write(workspace, "memory/a.md", "# A\n\nTwo gateways deployed, then deployed again.\n")
    write(workspace, "memory/b.md", "# B\n\nWe deploy the gateway.\n\nMore notes about other things here.\n")
    pg = open_pg(workspace, HashingProvider())
    lite = open_pg(workspace, HashingProvider(), sqlite=True)
    pg.sync()
    lite.sync()
    for query in ['"deploy"*', '"deploy"* OR "gateway"', '"gatew"* OR "notes"']:
        found = [
            [(r.path, round(r.score, 9)) for r in i.store.keyword_search(query, i.provider.model, ["memory"], 10)]
            for i in (pg, lite)
        ]
        assert found[0] == found[1], query
        assert len(found[1]) >= 2, query


def test_incremental_sync_by_hash_and_deletions(open_pg, workspace):
    provider = HashingProvider()
    pg = open_pg(workspace, provider)
    first = pg.sync()
    assert first.full_reindex and first.files_indexed == 3
    again = pg.sync()
    assert (again.files_indexed, again.files_unchanged, again.full_reindex) == (0, 3, False)
    write(workspace, "memory/topics/infra.md", "# Infra\n\nThe gateway moved to a rack in the basement.\n")
    (workspace / "memory/2026-11-02.md").unlink()
    changed = pg.sync()
    assert (changed.files_indexed, changed.files_deleted) == (1, 1)
    status = pg.status()
    assert status["backend"] == "postgres" and status["files"] == 2 and "skippedFiles" not in status
    assert [r.path for r in pg.search("basement rack", mode="keyword").results] == ["memory/topics/infra.md"]
    (workspace / "memory" / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")  # recorded as skipped
    pg.sync()
    assert [s["path"] for s in pg.status()["skippedFiles"]] == ["memory/blob.md"]
    assert pg.search("memorySearch hybrid", mode="keyword").results == []


def test_model_change_reindexes_atomically(open_pg, workspace):
    """A reader sees the whole old index until the switch, then the whole new one (keyword-only, as SQLite
    answers a reader whose model differs from the index): never a mix."""
    _many_files(workspace, 30)
    writer_old = open_pg(workspace, HashingProvider(model="hash-a"))
    writer_old.sync()
    reader = open_pg(workspace, HashingProvider(model="hash-a"))
    full = len(reader.search("deploys gateway", max_results=50, mode="keyword", min_score=0).results)
    assert full >= 30
    seen: list[int] = []

    def during(done: int, total: int, _path: str) -> None:
        if 0 < done < total and done % 10 == 0:
            seen.append(len(reader.search("deploys gateway", max_results=50, mode="keyword", min_score=0).results))

    writer_new = open_pg(workspace, HashingProvider(model="hash-b"))
    report = writer_new.sync(progress=during)
    assert report.full_reindex and "model changed" in (report.full_reason or "")
    assert seen and all(n == full for n in seen)
    after = reader.search("deploys gateway", max_results=50, mode="keyword", min_score=0)
    # as on SQLite: the reader's model no longer matches the index, so it gets the new index's keyword side
    assert len(after.results) == full and "the index holds hash-b vectors" in (after.notice or "")
    assert len(writer_new.search("deploys gateway", max_results=50, mode="keyword", min_score=0).results) == full
    with psycopg.connect(writer_new.dsn) as conn:
        gens = conn.execute(
            "SELECT count(*) FROM mdrecall_generations WHERE index_id = %s", (writer_new._index_id,)
        ).fetchone()[0]
    assert gens == 1  # the old generation is gone


SYNC_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from mdrecall.backends.postgres import PostgresIndex
    from mdrecall.config.settings import parse_config, resolve_settings
    from mdrecall.embeddings.factory import ProviderResult
    cfg = parse_config({"store": {"driver": "postgres"}})
    settings = resolve_settings(workspace=sys.argv[1], state_dir=sys.argv[2], config=cfg)
    with PostgresIndex(settings, ProviderResult(None, requested="none")) as index:
        report = index.sync(force=sys.argv[3] == "force")
        print(report.files_indexed)
    """
)


def test_two_processes_syncing_one_agent(pg_env, open_pg, workspace, tmp_path):
    """Advisory lock: concurrent syncs take turns; nothing is duplicated or half-written."""
    _many_files(workspace, 80)
    env = {"MDRECALL_POSTGRES_DSN": pg_env.dsn, "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SYNC_SCRIPT, str(workspace), str(tmp_path / "state"), mode],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for mode in ("incremental", "force")
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    pg = open_pg(workspace)
    status = pg.status()
    assert status["files"] == 83
    with psycopg.connect(pg_env.dsn) as conn:
        index_id = conn.execute(
            "SELECT id FROM mdrecall_indexes WHERE workspace_key = %s", (str(workspace.resolve()),)
        ).fetchone()[0]
        gens = conn.execute("SELECT count(*) FROM mdrecall_generations WHERE index_id = %s", (index_id,)).fetchone()[0]
        dupes = conn.execute(
            "SELECT count(*) FROM (SELECT path, start_line FROM mdrecall_chunks c JOIN mdrecall_indexes i "
            "ON c.generation = i.active_generation WHERE i.id = %s GROUP BY path, start_line HAVING count(*) > 1) d",
            (index_id,),
        ).fetchone()[0]
    assert gens == 1 and dupes == 0
    assert status["chunks"] == 83


def test_agents_are_isolated(open_pg, tmp_path):
    """Agent A's tools cannot read agent B's memory, whether or not they share a workspace key."""
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    write(ws_a, "MEMORY.md", "# A\n\nAgent A likes tea.\n")
    write(ws_b, "MEMORY.md", "# B\n\nAgent B keeps the launch code zebra-4471.\n")
    write(ws_b, "memory/secret.md", "# Secret\n\nzebra-4471 opens the vault.\n")
    a = open_pg(ws_a, HashingProvider(), agent="alice", extra={"workspaceKey": "team"})
    b = open_pg(ws_b, HashingProvider(), agent="bob", extra={"workspaceKey": "team"})
    b.sync()
    a.sync()
    assert b.search("zebra-4471", mode="keyword").results
    tools = MemoryTools(a)
    found = tools.call("memory_search", {"query": "zebra-4471 launch code vault"})
    assert all("zebra" not in r["snippet"] for r in found["results"])
    assert all(r["path"] == "MEMORY.md" and "tea" in r["snippet"] for r in found["results"])
    got = tools.call("memory_get", {"path": "memory/secret.md"})
    assert got["text"] == "" and "vault" not in json.dumps(got)  # A reads only its own workspace
    assert a.status()["files"] == 1 and b.status()["files"] == 2


def test_server_gone_mid_sync_loses_nothing(pg_env, open_pg, workspace):
    _many_files(workspace, 40)
    provider = HashingProvider()
    pg = open_pg(workspace, provider)

    try:
        message = sync_until_the_server_stops(pg, pg_env, 15)
        assert "\n" not in message and pg_env.dsn not in message and "nothing is lost" in message
        # keyword fallback while the server is down: answered from the markdown, with a notice
        response = pg.search("gateway deploys", mode="hybrid")
        assert response.results and "unavailable" in (response.notice or "")
        assert "local keyword index" in (response.notice or "")
        offline = pg.status()
        assert offline["postgres"]["available"] is False
    finally:
        pg_env.start()
    report = pg.sync()
    assert report.full_reindex  # the first build never switched in: redone, nothing half-visible
    status = pg.status()
    assert status["files"] == 43 and status["chunks"] == 43
    back = pg.search("gateway deploys", min_score=0)  # the fake provider's scores sit below the 0.35 default
    assert back.results and back.notice is None


def test_dsn_is_never_printed(pg_env, open_pg, workspace, monkeypatch):
    secret_dsn = pg_env.dsn.replace("postgres@", "postgres:s3cr3t-pw@")
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", secret_dsn)
    pg = open_pg(workspace, HashingProvider())
    pg.sync()
    text = json.dumps(pg.status(deep=True))
    assert "s3cr3t-pw" not in text and pg.status()["dbPath"].startswith("postgres@127.0.0.1:")
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", secret_dsn.replace(str(pg_env.port), "1"))
    down = open_pg(workspace, HashingProvider(), extra={"fallback": "none"})
    with pytest.raises(PostgresUnavailableError) as caught:
        down.search("gateway")
    assert "s3cr3t-pw" not in str(caught.value) and "127.0.0.1:1" in str(caught.value)


def test_missing_dsn_is_a_config_error(tmp_path, workspace, monkeypatch):
    monkeypatch.delenv("MDRECALL_POSTGRES_DSN", raising=False)
    settings = resolve_settings(
        workspace=workspace, state_dir=tmp_path / "s", config=parse_config({"store": {"backend": "postgres"}})
    )
    with pytest.raises(ConfigError, match="MDRECALL_POSTGRES_DSN"):
        PostgresIndex(settings)


def test_migrations_are_versioned(pg_env):
    dsn = pg_env.fresh_database("mig_test")
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert migrate(conn) == LATEST_VERSION
        assert migrate(conn) == LATEST_VERSION  # idempotent
        applied = [r[0] for r in conn.execute("SELECT version FROM mdrecall_schema_version ORDER BY version")]
        assert applied == list(range(1, LATEST_VERSION + 1))
        conn.execute("INSERT INTO mdrecall_schema_version(version) VALUES (%s)", (LATEST_VERSION + 1,))
        with pytest.raises(RuntimeError, match="upgrade mdrecall"):
            migrate(conn)


def test_a_question_in_another_language_answers_as_on_sqlite(open_pg, tmp_path):
    """The cross-language scoring asks the store whether the question's keywords are indexed anywhere: on
    PostgreSQL as on SQLite (the real default model, English notes, a German and a Spanish question)."""
    from mdrecall.embeddings.factory import create_provider

    ws = tmp_path / "team"
    write(ws, "MEMORY.md", "# Team memory\n\n- Payroll vendor: we picked Remote over Deel for the contractors.\n")
    write(ws, "memory/2026-06-12.md", "# 2026-06-12\n\n- Sofia: Acme renewed for 40 seats; the outage report is due.\n")
    write(ws, "memory/2026-04-20.md", "# 2026-04-20\n\n- Omar: the team offsite is in Lisbon, three days in May.\n")
    provider = create_provider(parse_config({})).provider
    pg, lite = open_pg(ws, provider), open_pg(ws, provider, sqlite=True)
    pg.sync()
    lite.sync()
    assert pg.store.read_meta()["model"] == "multilingual-e5-small"  # the calibrated model: the cross model applies
    for question in ["Wie viele Lizenzen hat Acme verlängert?", "¿Cómo tejo una bufanda?"]:
        on_pg, on_lite = pg.search(question), lite.search(question)
        assert [(r.path, round(r.score, 3)) for r in on_pg.results] == [
            (r.path, round(r.score, 3)) for r in on_lite.results
        ]
    assert pg.search("Wie viele Lizenzen hat Acme verlängert?").results[0].path == "memory/2026-06-12.md"
    assert pg.search("¿Cómo tejo una bufanda?").results == []
