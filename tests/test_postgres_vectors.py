"""Postgres vectors: one row per embedded window (as SQLite), per-generation HNSW indexes, schema 1 -> 2.

Against the session's real embedded PostgreSQL 18 + pgvector (see conftest.py `pg_server`).
"""

from __future__ import annotations

import numpy as np
import psycopg

from conftest import HashingProvider, write
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.backends.postgres import PostgresIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.errors import EmbeddingError
from mdrecall.storage.postgres.schema import MIGRATIONS, hnsw_index_name, migrate


class WindowedHashing(HashingProvider):
    """A "local" provider with a short input: `sync.window_plan` cuts chunks into several windows."""

    id = "local"
    max_seq_length = 64


def _open(pg_server, monkeypatch, tmp_path, ws, provider, driver: str, **pg: object):
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    # SQLite at float32, as pgvector stores vectors: the tests compare scores to 5 decimals
    vector = {"encoding": "float32"}
    cfg = parse_config({"store": {"driver": driver, "vector": vector, "postgres": {"connectTimeoutSeconds": 2, **pg}}})
    settings = resolve_settings(workspace=ws, agent_id="vec", state_dir=tmp_path / "state", config=cfg)
    cls = PostgresIndex if driver == "postgres" else MemoryIndex
    return cls(settings, ProviderResult(provider, requested="test"))


def _results(response):
    """Ranked hits; chunks of equal score in path order (SQLite breaks such ties by rowid, Postgres by id)."""
    hits = [(r.path, r.start_line, r.end_line, round(r.score, 5)) for r in response.results]
    return sorted(hits, key=lambda h: (-h[3], h[0], h[1]))


def _long_notes(ws, count: int = 6) -> None:
    for i in range(count):
        topics = ["gateway", "deploy", "garden", "invoice"]
        lines = [f"Line {j} of note {i}: the {topics[j % 4]} item {i * j}." for j in range(24)]
        write(ws, f"memory/long-{i}.md", f"# Long note {i}\n\n" + "\n".join(lines) + "\n")


def test_windows_are_stored_and_scored_like_sqlite(pg_server, monkeypatch, tmp_path, workspace):
    _long_notes(workspace)
    pg = _open(pg_server, monkeypatch, tmp_path, workspace, WindowedHashing(), "postgres")
    lite = _open(pg_server, monkeypatch, tmp_path, workspace, WindowedHashing(), "sqlite")
    try:
        pg.sync()
        lite.sync()
        chunks = pg.status()["chunks"]
        assert pg.status()["postgres"]["vectorIndex"].startswith("exact scan")
        assert pg.store.vector_row_count() == lite.store.vector_row_count() > chunks  # several windows a chunk
        for query in ["gateway item 30", "garden invoice", "note 4 deploy"]:
            for mode in ("vector", "hybrid"):
                got = _results(pg.search(query, min_score=0.0, mode=mode))
                want = _results(lite.search(query, min_score=0.0, mode=mode))
                assert got == want and got, (query, mode)
        write(workspace, "memory/long-0.md", "# Short now\n\nOnly the gateway.\n")
        pg.sync()
        assert pg.store.vector_row_count() < lite.store.vector_row_count()  # the old windows went with the chunks
    finally:
        pg.close()
        lite.close()


def test_hnsw_per_generation(pg_server, monkeypatch, tmp_path, workspace):
    """Past hnswMinVectors a generation gets its own partial HNSW index; a reindex builds the next one and
    drops the old; results stay those of the exact (SQLite) search."""
    for i in range(30):
        words = " ".join(f"w{(i * 7 + k * 13) % 41}" for k in range(3 + i % 6))
        write(workspace, f"memory/n{i:02d}.md", f"# N{i}\n\nTopic {i % 5} about deploys, gateways, {words}.\n")
    pg = _open(pg_server, monkeypatch, tmp_path, workspace, HashingProvider(), "postgres", hnswMinVectors=20)
    lite = _open(pg_server, monkeypatch, tmp_path, workspace, HashingProvider(), "sqlite")
    try:
        pg.sync()
        lite.sync()
        status = pg.status()["postgres"]
        first = status["generation"]
        assert status["vectorIndex"].startswith("hnsw")
        with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
            exists = "SELECT to_regclass(%s) IS NOT NULL"
            assert conn.execute(exists, (hnsw_index_name(first),)).fetchone()[0]
            # a tiny table on a server the other tests share: only whether the index can serve the query
            conn.execute("SET enable_seqscan = off; SET enable_sort = off")
            plan = conn.execute(
                f"EXPLAIN SELECT chunk_id FROM mdrecall_vectors WHERE generation = {first} AND dims = 64 "
                "ORDER BY embedding::vector(64) <=> %s::vector(64) LIMIT 5",
                (str([0.1] * 64),),
            ).fetchall()
            assert hnsw_index_name(first) in " ".join(r[0] for r in plan)
        for query in ["topic 3 deploys w5 w18", "gateways w31 w7"]:
            got = _results(pg.search(query, min_score=0.0, mode="vector"))
            assert got == _results(lite.search(query, min_score=0.0, mode="vector")) and got
        pg.sync(force=True)
        second = pg.status()["postgres"]["generation"]
        assert second != first
        with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
            assert conn.execute(exists, (hnsw_index_name(second),)).fetchone()[0]
            assert not conn.execute(exists, (hnsw_index_name(first),)).fetchone()[0]
    finally:
        pg.close()
        lite.close()


def test_schema_1_vectors_move_to_windows(pg_server):
    """A server on schema 1 (one vector column on chunks) keeps its vectors as window 0 after migrating."""
    dsn = pg_server.fresh_database("mig_v1")
    with psycopg.connect(dsn, autocommit=True) as conn:
        monkey = MIGRATIONS[:1]
        original = list(MIGRATIONS)
        MIGRATIONS[:] = monkey
        try:
            assert migrate(conn) == 1
        finally:
            MIGRATIONS[:] = original
        conn.execute("INSERT INTO mdrecall_indexes(agent_id, workspace_key) VALUES ('a', 'w')")
        conn.execute("INSERT INTO mdrecall_generations(index_id) VALUES (1)")
        conn.execute(
            "CREATE INDEX mdrecall_chunks_hnsw_3 ON mdrecall_chunks "
            "USING hnsw ((embedding::vector(3)) vector_cosine_ops) WHERE dims = 3"
        )
        conn.execute(
            "INSERT INTO mdrecall_chunks VALUES (1, 'c1', 'memory/a.md', 'memory', 1, 2, 'h', 'm', 't', "
            "'''t'':1', 1, 3, '[1,0,0]', 0)"
        )
        assert migrate(conn) == original[-1][0]
        row = conn.execute("SELECT chunk_id, win, dims, model, source, embedding::text FROM mdrecall_vectors")
        row = row.fetchone()
        assert row == ("c1", 0, 3, "m", "memory", "[1,0,0]")
        assert not conn.execute("SELECT to_regclass('mdrecall_chunks_hnsw_3') IS NOT NULL").fetchone()[0]


class DownProvider(HashingProvider):
    """An embedding service that is down: sync writes chunks keyword-only and leaves their vectors pending."""

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        raise EmbeddingError("service unavailable")


def test_pending_vectors_are_filled(pg_server, monkeypatch, tmp_path, workspace):
    """Chunks written keyword-only while the provider failed get their vectors on the next sync."""
    write(workspace, "memory/a.md", "# A\n\nThe gateway deploy moved to Fridays.\n")
    failing = DownProvider()
    pg = _open(pg_server, monkeypatch, tmp_path, workspace, failing, "postgres")
    try:
        report = pg.sync()
        if not report.vectors_pending:
            raise AssertionError(f"the failing provider should leave vectors pending: {report}")
        pg._provider_result = ProviderResult(HashingProvider(), requested="test")
        pg.sync()
        assert pg.store.pending_vector_count("hash-64") == 0
        assert pg.store.vector_row_count() >= 1
        assert np.isfinite(pg.search("gateway", mode="vector").results[0].score)
    finally:
        pg.close()


def test_phrase_bm25_equals_fts5(pg_server, monkeypatch, tmp_path, workspace):
    """A phrase of several words scores as one unit (its own df and hit count), as FTS5's bm25 does."""
    write(workspace, "memory/a.md", "# A\n\nUse field(default_factory=list); default_factory runs per instance.\n")
    write(workspace, "memory/b.md", "# B\n\nThe default value and the factory function are separate here.\n")
    write(workspace, "memory/c.md", "# C\n\nlogging.basicConfig sets the level; basicConfig logging is once.\n")
    pg = _open(pg_server, monkeypatch, tmp_path, workspace, None, "postgres")
    lite = _open(pg_server, monkeypatch, tmp_path, workspace, None, "sqlite")
    try:
        pg.sync()
        lite.sync()
        model = "fts-only"
        for fts in ['"default_factory"', '"default_factory" OR "default"', '"logging.basicConfig" AND "level"',
                    '"default factory"', '"factory" OR "logging basicconfig"']:  # fmt: skip
            got = [(r.path, round(r.score, 5)) for r in pg.store.keyword_search(fts, model, ["memory"], 10)]
            want = [(r.path, round(r.score, 5)) for r in lite.store.keyword_search(fts, model, ["memory"], 10)]
            assert got == want and got, fts
    finally:
        pg.close()
        lite.close()
