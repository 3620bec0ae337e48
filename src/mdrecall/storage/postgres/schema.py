"""Versioned schema migrations for the Postgres backend, applied once per server under an advisory lock.

Every table is shared by all agents of a server; rows belong to an index (one per agent and workspace) through
its generations. A full reindex builds a new generation beside the live one and switches
`mdrecall_indexes.active_generation` in one transaction, so a reader sees the old index or the new one.
Add a migration by appending (version, sql) to MIGRATIONS; never edit an applied one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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
    (
        2,
        """
CREATE TABLE mdrecall_vectors (
  generation bigint NOT NULL REFERENCES mdrecall_generations(id) ON DELETE CASCADE,
  chunk_id text NOT NULL,
  win integer NOT NULL,
  model text NOT NULL,
  source text NOT NULL,
  dims integer NOT NULL,
  embedding vector NOT NULL,
  PRIMARY KEY (generation, chunk_id, win)
);
INSERT INTO mdrecall_vectors(generation, chunk_id, win, model, source, dims, embedding)
  SELECT generation, id, 0, model, source, dims, embedding FROM mdrecall_chunks WHERE embedding IS NOT NULL;
-- dropping the column drops version 1's HNSW indexes over it
ALTER TABLE mdrecall_chunks DROP COLUMN embedding, DROP COLUMN dims;
""",
    ),
    (
        3,
        """
-- FTS5's bm25 counts a phrase's hits, not its words': positions where every word follows the one before.
CREATE OR REPLACE FUNCTION mdrecall_phrase_tf(doc tsvector, tokens text[]) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  WITH u AS MATERIALIZED (
    SELECT lexeme, positions::int[] AS positions FROM unnest(ts_filter(setweight(doc, 'A', tokens), '{a}'))
  )
  SELECT count(*)::integer
  FROM (SELECT unnest(positions) AS p FROM u WHERE lexeme = tokens[1]) f
  WHERE NOT EXISTS (
    SELECT 1 FROM generate_subscripts(tokens, 1) AS k
    WHERE k > 1 AND NOT EXISTS (
      SELECT 1 FROM u WHERE u.lexeme = tokens[k] AND f.p + k - 1 = ANY(u.positions)))
$fn$;
""",
    ),
    (
        4,
        """
-- The keyword side's inverted index: one posting (term, chunk, term frequency, chunk length) per distinct
-- term of a chunk, read through a covering index, so BM25 of a query of plain words touches neither the
-- chunks nor their tsvectors (keyword.BM25_POSTINGS_SQL). Chunks get a compact surrogate key for it.
CREATE SEQUENCE mdrecall_chunk_rid AS bigint;
ALTER TABLE mdrecall_chunks ADD COLUMN rid bigint;
UPDATE mdrecall_chunks SET rid = nextval('mdrecall_chunk_rid');
ALTER TABLE mdrecall_chunks ALTER COLUMN rid SET DEFAULT nextval('mdrecall_chunk_rid'),
  ALTER COLUMN rid SET NOT NULL;
CREATE UNIQUE INDEX mdrecall_chunks_rid ON mdrecall_chunks (rid);
-- No foreign key: a check per posting would slow every load; a generation's postings go with it (trigger).
CREATE TABLE mdrecall_postings (
  generation bigint NOT NULL,
  term text NOT NULL,
  rid bigint NOT NULL,
  tf integer NOT NULL,
  doc_len integer NOT NULL
);
CREATE INDEX mdrecall_postings_term ON mdrecall_postings (generation, term, rid) INCLUDE (tf, doc_len);
INSERT INTO mdrecall_postings(generation, term, rid, tf, doc_len)
  SELECT c.generation, u.lexeme, c.rid, cardinality(u.positions), c.doc_len FROM mdrecall_chunks c, unnest(c.tsv) u;
CREATE FUNCTION mdrecall_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM mdrecall_postings WHERE generation IN (SELECT id FROM gone);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER mdrecall_generations_postings AFTER DELETE ON mdrecall_generations
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION mdrecall_drop_postings();
""",
    ),
    (
        5,
        # Byte order for the postings' terms: a word's prefix unit (query.wordForms: "adopt"*) is then one range
        # of the (generation, term, rid) index. Equality, all other queries use, is the same in any collation.
        """
ALTER TABLE mdrecall_postings ALTER COLUMN term TYPE text COLLATE "C";
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


def hnsw_index_name(generation: int) -> str:
    return f"mdrecall_vectors_hnsw_g{int(generation)}"


def has_hnsw_index(conn: Any, generation: int) -> bool:
    return bool(conn.execute("SELECT to_regclass(%s) IS NOT NULL", (hnsw_index_name(generation),)).fetchone()[0])


HNSW_M = 16  # pgvector's defaults (m, ef_construction), kept: see docs/postgres.md, "Speed"
DEFAULT_BUILD_MEMORY_MB = 4096


def hnsw_graph_bytes(count: int, dims: int, m: int = HNSW_M) -> int:
    """What pgvector's in-memory build needs for `count` vectors: each element's value (halfvec above 2,000
    dims), its layer-0 neighbours (2m candidates of 16 bytes), upper layers (~m/(m-1) more) and its header.
    25 % headroom: a graph that outgrows maintenance_work_mem is finished on disk, many times slower."""
    value = 8 + dims * (4 if dims <= 2000 else 2)
    neighbours = (2 * m + m // max(1, m - 1) * m) * 16 + 64
    return int(count * (value + neighbours + 160) * 1.25)


@contextlib.contextmanager
def build_memory(conn: Any, count: int, dims: int, cap_mb: int = DEFAULT_BUILD_MEMORY_MB) -> Iterator[None]:
    """Raise this session's maintenance_work_mem to what the graph needs (up to `cap_mb`, never lowered),
    for the build only. Session level (SET, then back): CREATE INDEX CONCURRENTLY cannot run in a
    transaction block, so SET LOCAL is not an option."""
    current_kb = int(
        conn.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'").fetchone()[0]
    )
    wanted_kb = min(hnsw_graph_bytes(count, dims) // 1024 + 1, int(cap_mb) * 1024)
    if wanted_kb <= current_kb:
        yield
        return
    conn.execute(f"SET maintenance_work_mem = '{int(wanted_kb)}kB'")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # the connection may be gone; the pool discards it then
            conn.execute(f"SET maintenance_work_mem = '{current_kb}kB'")


def build_hnsw_index(
    conn: Any,
    generation: int,
    dims: int,
    concurrently: bool = True,
    count: int = 0,
    memory_cap_mb: int = DEFAULT_BUILD_MEMORY_MB,
) -> bool:
    """An HNSW index over one generation's windows only (a partial index: `WHERE generation = N`).

    Why per generation rather than one over every agent's rows: a search reads one generation, so a shared
    graph must be walked past other agents' rows (iterative scans, and recall suffers when the agent is a
    small share); a partial graph holds only the rows a search may return, is built once after a full
    reindex's bulk load (much faster than row-by-row inserts into a graph), and goes with its generation.
    `conn` must be in autocommit mode when `concurrently` (other agents keep writing during the build).
    `count` (the generation's vectors) sizes the session's maintenance_work_mem for the build (`build_memory`).
    Returns whether an index was built.
    """
    if has_hnsw_index(conn, generation):
        return False
    expression, opclass = vector_expression(dims)
    how = "CONCURRENTLY " if concurrently else ""
    with build_memory(conn, count, dims, memory_cap_mb):
        conn.execute(
            f"CREATE INDEX {how}IF NOT EXISTS {hnsw_index_name(generation)} ON mdrecall_vectors "
            f"USING hnsw (({expression}) {opclass}) WHERE generation = {int(generation)}"
        )
    return True


def drop_orphan_hnsw_indexes(conn: Any) -> int:
    """Drop the HNSW indexes of generations that are gone (replaced by a reindex, or their agent removed).

    CONCURRENTLY: a plain DROP INDEX would lock the shared table against every agent's reads for a moment.
    `conn` must be in autocommit mode. Returns how many were dropped."""
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'mdrecall_vectors' "
        "AND indexname LIKE 'mdrecall\\_vectors\\_hnsw\\_g%' "
        "AND substring(indexname from 'g([0-9]+)$')::bigint NOT IN (SELECT id FROM mdrecall_generations)"
    ).fetchall()
    for (name,) in rows:
        conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
    return len(rows)
