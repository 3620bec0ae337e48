"""The HNSW build's memory: the session's maintenance_work_mem is raised to the graph's size for the build only.

pgvector builds the graph in memory up to maintenance_work_mem and finishes it on disk past that, many times
slower (the 1M-chunk bench build went from not finishing in 854 s at the 64 MB default to 701 s).
"""

from __future__ import annotations

import psycopg

from mdrecall.config.settings import parse_config
from mdrecall.storage.postgres.schema import build_memory, hnsw_graph_bytes


def _mwm_kb(conn) -> int:
    row = conn.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'").fetchone()
    return int(row[0])


def test_build_memory_raised_capped_and_restored(pg_server):
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        before = _mwm_kb(conn)
        assert hnsw_graph_bytes(1_000_000, 384) > 2 * 1024**3  # ~3 GB: far above the 64 MB default
        with build_memory(conn, 1_000_000, 384, cap_mb=4096):
            assert _mwm_kb(conn) == hnsw_graph_bytes(1_000_000, 384) // 1024 + 1
        assert _mwm_kb(conn) == before
        with build_memory(conn, 1_000_000, 384, cap_mb=512):
            assert _mwm_kb(conn) == 512 * 1024  # the configured cap (store.postgres.hnswBuildMemoryMb)
        with build_memory(conn, 100, 384):
            assert _mwm_kb(conn) == before  # never lowered below the server's setting
        assert _mwm_kb(conn) == before


def test_build_memory_cap_is_configurable():
    config = parse_config({"store": {"driver": "postgres", "postgres": {"hnswBuildMemoryMb": 512}}})
    assert config.store.postgres.hnsw_build_memory_mb == 512
    assert parse_config({}).store.postgres.hnsw_build_memory_mb == 4096
