"""Versioned schema migrations for the Postgres backend, applied once per server under an advisory lock.

Every table is shared by all agents of a server; rows belong to an index (one per agent and workspace) through
its generations. A full reindex builds a new generation beside the live one and switches
`mdrecall_indexes.active_generation` in one transaction, so a reader sees the old index or the new one.
Add a migration by appending (version, sql) to MIGRATIONS; never edit an applied one.
"""

from __future__ import annotations

from typing import Any

SCHEMA_LOCK_KEY = 0x6D647263616C6C  # "mdrcall": one migrator at a time per server

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE mdrecall_indexes (
  id bigserial PRIMARY KEY,
  agent_id text NOT NULL,
  workspace_key text NOT NULL,
  active_generation bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (agent_id, workspace_key)
);
CREATE TABLE mdrecall_generations (
  id bigserial PRIMARY KEY,
  index_id bigint NOT NULL REFERENCES mdrecall_indexes(id) ON DELETE CASCADE,
  n_chunks bigint NOT NULL DEFAULT 0,
  total_len bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mdrecall_generations_index ON mdrecall_generations (index_id);
CREATE TABLE mdrecall_meta (
  generation bigint NOT NULL REFERENCES mdrecall_generations(id) ON DELETE CASCADE,
  key text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (generation, key)
);
CREATE TABLE mdrecall_files (
  generation bigint NOT NULL REFERENCES mdrecall_generations(id) ON DELETE CASCADE,
  path text NOT NULL,
  source text NOT NULL,
  hash text NOT NULL,
  mtime bigint NOT NULL,
  size bigint NOT NULL,
  PRIMARY KEY (generation, path)
);
CREATE TABLE mdrecall_chunks (
  generation bigint NOT NULL REFERENCES mdrecall_generations(id) ON DELETE CASCADE,
  id text NOT NULL,
  path text NOT NULL,
  source text NOT NULL,
  start_line integer NOT NULL,
  end_line integer NOT NULL,
  hash text NOT NULL,
  model text NOT NULL,
  text text NOT NULL,
  tsv tsvector NOT NULL,
  doc_len integer NOT NULL,
  dims integer,
  embedding vector,
  updated_at bigint NOT NULL,
  PRIMARY KEY (generation, id)
);
CREATE INDEX mdrecall_chunks_file ON mdrecall_chunks (generation, path, source);
CREATE INDEX mdrecall_chunks_tsv ON mdrecall_chunks USING gin (tsv);
CREATE TABLE mdrecall_embedding_cache (
  index_id bigint NOT NULL REFERENCES mdrecall_indexes(id) ON DELETE CASCADE,
  provider text NOT NULL,
  model text NOT NULL,
  provider_key text NOT NULL,
  hash text NOT NULL,
  embedding vector NOT NULL,
  dims integer NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (index_id, provider, model, provider_key, hash)
);
CREATE INDEX mdrecall_embedding_cache_lru ON mdrecall_embedding_cache (index_id, updated_at);
""",
    ),
]
LATEST_VERSION = MIGRATIONS[-1][0]


def schema_version(conn: Any) -> int:
    """The applied version (0 for an empty database)."""
    exists = conn.execute("SELECT to_regclass('mdrecall_schema_version') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    row = conn.execute("SELECT max(version) FROM mdrecall_schema_version").fetchone()
    return int(row[0] or 0)


def migrate(conn: Any) -> int:
    """Apply every missing migration, each in its own transaction; returns the version now in force.

    Raises RuntimeError when the server holds a newer schema than this mdrecall knows (upgrade mdrecall).
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS mdrecall_schema_version ("
            "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)
        if current > LATEST_VERSION:
            raise RuntimeError(
                f"the server's mdrecall schema is version {current}, newer than this mdrecall knows "
                f"({LATEST_VERSION}); upgrade mdrecall"
            )
        for version, sql in MIGRATIONS:
            if version > current:
                conn.execute(sql)
                conn.execute("INSERT INTO mdrecall_schema_version(version) VALUES (%s)", (version,))
                current = version
    return current


def vector_expression(dims: int) -> tuple[str, str]:
    """The typed expression HNSW indexes for `dims` and its operator class (halfvec beyond vector's 2000)."""
    if dims <= 2000:
        return f"embedding::vector({int(dims)})", "vector_cosine_ops"
    return f"embedding::halfvec({int(dims)})", "halfvec_cosine_ops"


def ensure_hnsw_index(conn: Any, dims: int) -> None:
    """One partial HNSW index per embedding width, shared by every index on the server (created once)."""
    expression, opclass = vector_expression(dims)
    name = f"mdrecall_chunks_hnsw_{int(dims)}"
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]
    if exists:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON mdrecall_chunks USING hnsw (({expression}) {opclass}) "
            f"WHERE dims = {int(dims)}"
        )
