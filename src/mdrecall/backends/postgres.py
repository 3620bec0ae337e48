"""`PostgresIndex`: one agent's memory indexed on a shared PostgreSQL + pgvector server.

The markdown stays the source of truth; the server holds the derived index of each (agent, workspace). The
builtin pipeline runs unchanged: workspace discovery, chunking, embeddings and the embedding cache,
`mdrecall.indexing.sync.incremental_sync`, and `mdrecall.retrieval.search.run_search` (fusion, decay, minScore, MMR,
citations) over `PgStore`. What differs:

- writers: a session advisory lock per index, so two processes syncing one agent take turns (the second
  finds the work done); rows are keyed by generation, so nothing can be duplicated;
- full reindex: a new generation is built beside the live one and `active_generation` switches in one
  transaction; searches run in one REPEATABLE READ snapshot, so they see the old index or the new one;
- the server going away: one line (`PostgresUnavailableError`), committed files stay committed, the rest is
  redone by the next sync; searches fall back to a local index built from the markdown, with a notice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mdrecall.backends.builtin import LOCK_WAIT_SECONDS, MemoryIndex, SearchRequest
from mdrecall.config.settings import Settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.errors import ConfigError, IndexBusyError, MdrecallError
from mdrecall.indexing.sync import (
    ChunkProgressFn,
    ProgressFn,
    SyncReport,
    expected_meta,
    full_reindex_reason,
    incremental_sync,
)
from mdrecall.retrieval.search import SearchResponse
from mdrecall.storage.postgres.schema import (
    LATEST_VERSION,
    drop_orphan_hnsw_indexes,
    has_hnsw_index,
    migrate,
    schema_version,
)
from mdrecall.storage.postgres.store import ACTIVE, PgStore

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError:  # pragma: no cover - the extra is missing
    psycopg = None  # type: ignore[assignment]

# The pool logs each failed reconnection; the backend reports an unreachable server itself, in one line.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

INSTALL_HINT = "the postgres backend needs its extra: pip install 'mdrecall[postgres]'"


class PostgresUnavailableError(MdrecallError):
    """The server cannot be reached or went away; the message is one line and never holds the DSN."""


def _unavailable_types() -> tuple[type[BaseException], ...]:
    return (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)


def describe_dsn(dsn: str) -> str:
    """`user@host:port/dbname`: enough to recognise a server, never the password or other options."""
    try:
        parts = conninfo_to_dict(dsn)
    except Exception:  # a malformed DSN must not be echoed either
        return "(unparsable DSN)"
    user = parts.get("user") or "?"
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = parts.get("port") or "5432"
    return f"{user}@{host}:{port}/{parts.get('dbname') or user}"


def scrub(message: str, dsn: str) -> str:
    """One line of an error message with the DSN and its password taken out."""
    text = " ".join(str(message).split())
    secrets = [dsn]
    with contextlib.suppress(Exception):
        password = conninfo_to_dict(dsn).get("password")
        if password:
            secrets.append(str(password))
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def resolve_dsn(settings: Settings) -> str:
    """The DSN from the environment variable named by `store.postgres.dsnEnv`, else from `store.postgres.dsn`."""
    cfg = settings.config.store.postgres
    dsn = os.environ.get(cfg.dsn_env) or cfg.dsn
    if not dsn:
        raise ConfigError(f"the postgres backend needs a server: set ${cfg.dsn_env} (or store.postgres.dsn)")
    return dsn


def server_workspace_key(settings: Settings) -> str:
    """The name of this workspace on the server (`store.postgres.workspaceKey`, else its absolute path)."""
    return settings.config.store.postgres.workspace_key or str(settings.workspace)


class PostgresIndex(MemoryIndex):
    """`MemoryIndex` with its index on a PostgreSQL server (see the module docstring)."""

    backend_name = "postgres"

    def __init__(self, settings: Settings, provider_result: ProviderResult | None = None) -> None:
        if psycopg is None:
            raise ConfigError(INSTALL_HINT)
        super().__init__(settings, provider_result)
        self.pg = settings.config.store.postgres
        self.dsn = resolve_dsn(settings)
        self.server = describe_dsn(self.dsn)
        self.workspace_key = server_workspace_key(settings)
        self._pool_obj: Any = None
        self._pool_lock = threading.Lock()
        self._index_id: int | None = None
        self._schema_version: int | None = None
        self._fallback: MemoryIndex | None = None
        self.last_fallback: str | None = None

    # -- connections -------------------------------------------------------------------------------

    def _reset_pool(self) -> None:
        """Drop the pool after a failure: the next call reconnects at once instead of waiting out the pool's
        reconnection back-off (and fails fast, to the fallback, while the server is still down)."""
        with self._pool_lock:
            pool, self._pool_obj = self._pool_obj, None
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.close(timeout=0.5)

    def _unavailable(self, err: BaseException, doing: str) -> PostgresUnavailableError:
        self._reset_pool()
        return PostgresUnavailableError(
            f"postgres server {self.server} unavailable {doing}: {scrub(str(err), self.dsn)}"
        )

    def _configure(self, conn: Any) -> None:
        from pgvector.psycopg import register_vector

        register_vector(conn)

    def _pool(self) -> Any:
        """The connection pool, created (and the schema migrated) on first use."""
        with self._pool_lock:
            if self._pool_obj is None:
                timeout = self.pg.connect_timeout_seconds
                kwargs = {"autocommit": True, "connect_timeout": max(1, int(round(timeout)))}
                with psycopg.connect(self.dsn, **kwargs) as conn:
                    try:
                        self._schema_version = migrate(conn)
                    except RuntimeError as err:
                        raise ConfigError(str(err)) from None
                pool = ConnectionPool(
                    self.dsn,
                    min_size=self.pg.pool_min,
                    max_size=max(self.pg.pool_max, self.pg.pool_min, 1),
                    kwargs=kwargs,
                    configure=self._configure,
                    check=ConnectionPool.check_connection,
                    timeout=timeout,
                    open=False,
                    name=f"mdrecall-{self.settings.agent_id}",
                )
                pool.open(wait=False)
                self._pool_obj = pool
            return self._pool_obj

    def _ensure_index_id(self, conn: Any) -> int:
        if self._index_id is None:
            conn.execute(
                "INSERT INTO mdrecall_indexes(agent_id, workspace_key) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (self.settings.agent_id, self.workspace_key),
            )
            self._index_id = self._lookup_index_id(conn)
        return self._index_id  # type: ignore[return-value]

    def _lookup_index_id(self, conn: Any) -> int | None:
        row = conn.execute(
            "SELECT id FROM mdrecall_indexes WHERE agent_id = %s AND workspace_key = %s",
            (self.settings.agent_id, self.workspace_key),
        ).fetchone()
        return int(row[0]) if row else None

    def _reader_index_id(self) -> int | None:
        if self._index_id is None:
            with self._pool().connection() as conn:
                self._index_id = self._lookup_index_id(conn)
        return self._index_id

    @property
    def read_only(self) -> bool:
        """The index lives on the server: whether the local state dir is writable does not matter."""
        return False

    def _store_options(self) -> dict[str, int]:
        return {
            "ef_search": self.pg.ef_search,
            "hnsw_min_vectors": self.pg.hnsw_min_vectors,
            "hnsw_build_memory_mb": self.pg.hnsw_build_memory_mb,
        }

    @property
    def store(self) -> PgStore:  # type: ignore[override]
        """A store following the live generation, borrowing a pooled connection per call."""
        return PgStore(self._pool(), self._reader_index_id(), ACTIVE, **self._store_options())

    @contextlib.contextmanager
    def _advisory_lock(self, conn: Any) -> Iterator[None]:
        """One writer per (agent, workspace) across processes and machines; released if the connection dies."""
        key = f"mdrecall:{self.settings.agent_id}:{self.workspace_key}"
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while not conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise IndexBusyError(f"another process is indexing agent {self.settings.agent_id!r}; try again later")
            time.sleep(0.05)
        try:
            yield
        finally:
            with contextlib.suppress(*_unavailable_types()):
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    # -- sync --------------------------------------------------------------------------------------

    def full_reindex_reason(self, store: Any = None) -> str | None:  # type: ignore[override]
        store = store or self.store
        return full_reindex_reason(store.read_meta(), expected_meta(self.provider, self.config))

    def sync(
        self,
        force: bool = False,
        reason: str = "manual",
        progress: ProgressFn | None = None,
        respect_session_deltas: bool = False,
        chunk_progress: ChunkProgressFn | None = None,  # the backend protocol's; files-only progress here
    ) -> SyncReport:
        """Incremental sync on the live generation, or a full rebuild in a new one that is then switched in."""
        with self._sync_lock:
            gate = self._session_gate if respect_session_deltas else None
            try:
                report = self._pg_sync(force, reason, progress, gate)
            except _unavailable_types() as err:
                self._reset_pool()
                self._index_id = None  # it may come from a transaction the lost server never committed
                raise PostgresUnavailableError(
                    f"postgres server {self.server} unavailable during sync ({scrub(str(err), self.dsn)}); "
                    "nothing is lost: the markdown is untouched and the next sync picks up where this one stopped"
                ) from None
        if self.on_synced is not None:
            self.on_synced(report)
        return report

    def _pg_sync(self, force: bool, reason: str, progress: ProgressFn | None, gate: Any) -> SyncReport:
        pool = self._pool()
        with pool.connection() as conn:
            index_id = self._ensure_index_id(conn)
            with self._advisory_lock(conn):
                self._dirty_hint = False
                self._drop_stale_generations(conn, index_id)
                live = PgStore(pool, index_id, ACTIVE, conn=conn, **self._store_options()).pin()
                files = self.discover()
                sessions = self.discover_sessions()
                why = "forced" if force else self.full_reindex_reason(live)
                if why is None:
                    report = incremental_sync(
                        live, self.provider, self.config, files, progress, reason, sessions, session_gate=gate
                    )
                    target = live
                    live.ensure_vector_index()  # grown past store.postgres.hnswMinVectors by incremental syncs
                else:
                    target = self._new_generation(pool, conn, index_id)
                    report = incremental_sync(target, self.provider, self.config, files, progress, reason, sessions)
                    report.full_reindex = True
                    report.full_reason = why
                    target.ensure_vector_index()  # built once over the bulk-loaded rows, before readers see them
                    self._switch_generation(conn, index_id, target.generation(conn))
                    drop_orphan_hnsw_indexes(conn)
                self._mark_sessions_synced(target, sessions)
                with target.transaction():
                    target.write_meta_value("last_sync", json.dumps({"at": int(time.time() * 1000), "reason": reason}))
        self.last_sync = report
        return report

    def import_embedding_cache(self, sqlite_path: Path) -> int:
        """Seed this index's embedding cache from a builtin SQLite index file: a first sync on the server then
        re-embeds nothing (`mdrecall migrate --to postgres` copies the whole index instead). Returns how many
        vectors were copied."""
        from mdrecall.storage.postgres.from_sqlite import SqliteSource, copy_cache

        source = SqliteSource(sqlite_path)
        try:
            with self._pool().connection() as conn:
                return copy_cache(source, PgStore(self._pool(), self._ensure_index_id(conn), ACTIVE, conn=conn))
        finally:
            source.close()

    def _new_generation(self, pool: Any, conn: Any, index_id: int) -> PgStore:
        gen = conn.execute(
            "INSERT INTO mdrecall_generations(index_id) VALUES (%s) RETURNING id", (index_id,)
        ).fetchone()[0]
        return PgStore(pool, index_id, int(gen), conn=conn, **self._store_options())

    def _switch_generation(self, conn: Any, index_id: int, generation: int | None) -> None:
        """The swap readers see: one UPDATE; the old generation's rows are dropped after it commits."""
        with conn.transaction():
            old = conn.execute(
                "SELECT active_generation FROM mdrecall_indexes WHERE id = %s FOR UPDATE", (index_id,)
            ).fetchone()[0]
            conn.execute("UPDATE mdrecall_indexes SET active_generation = %s WHERE id = %s", (generation, index_id))
        if old is not None:
            with conn.transaction():
                conn.execute("DELETE FROM mdrecall_generations WHERE id = %s", (old,))

    def _drop_stale_generations(self, conn: Any, index_id: int) -> None:
        """Generations of a rebuild that died before its switch (only the lock holder builds, so none is live)."""
        with conn.transaction():
            conn.execute(
                "DELETE FROM mdrecall_generations g USING mdrecall_indexes i WHERE g.index_id = i.id AND i.id = %s "
                "AND g.id IS DISTINCT FROM i.active_generation",
                (index_id,),
            )

    def has_index(self) -> bool:
        """With the server down, whether it holds an index cannot be known: say yes, so that `status` reports
        the server down instead of trying to build an index there first."""
        try:
            return super().has_index()
        except _unavailable_types():
            self._reset_pool()
            return True

    def is_dirty(self) -> bool:
        """With the server down nothing can be synced: not dirty (the search falls back and says so)."""
        try:
            return super().is_dirty()
        except _unavailable_types():
            self._reset_pool()
            return False

    def ensure_fresh(self, progress: ProgressFn | None = None) -> SyncReport | None:
        """Sync when dirty; with the server down, say nothing here (the search falls back and says so)."""
        try:
            return super().ensure_fresh(progress)
        except PostgresUnavailableError:
            return None
        except _unavailable_types():
            self._reset_pool()
            return None

    def _request_sync_if_dirty(self) -> None:
        try:
            super()._request_sync_if_dirty()
        except _unavailable_types():
            self._reset_pool()

    # -- search ------------------------------------------------------------------------------------

    def answer(self, request: SearchRequest) -> SearchResponse:
        """The builtin search over one snapshot of the server; the fallback index when the server is down."""
        try:
            response = super().answer(request)
        except _unavailable_types() as err:
            return self._fallback_search(self._unavailable(err, "for search"), request)
        self.last_fallback = None
        response.backend = "postgres"
        return response

    @contextlib.contextmanager
    def _search_store(self) -> Iterator[PgStore]:
        """The live generation, pinned, in one REPEATABLE READ snapshot (see `_snapshot`)."""
        pool = self._pool()
        index_id = self._reader_index_id()
        with pool.connection() as conn, self._snapshot(conn):
            snapshot = PgStore(pool, index_id, ACTIVE, conn=conn, **self._store_options())
            snapshot.tuned_ef = self.pg.ef_search
            yield snapshot.pin()

    @contextlib.contextmanager
    def _snapshot(self, conn: Any) -> Iterator[None]:
        """One REPEATABLE READ, read-only transaction for a whole search (keyword side, vector side, the
        generation they read), opened with the HNSW settings in a single round trip."""
        ef = int(self.pg.ef_search)
        conn.execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
            f"SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = relaxed_order"
        )
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _fallback_index(self) -> MemoryIndex:
        """The local index searches use while the server is down (built from the markdown on first use)."""
        if self._fallback is None:
            if self.pg.fallback == "local":
                settings = dataclasses.replace(self.settings, config=self._local_config())
                self._fallback = MemoryIndex(settings, self._provider_result)
            else:
                config = self._local_config()
                config = config.model_copy(update={"provider": "none", "fallback": "none"})
                db = self.settings.db_path.with_name(f"{self.settings.agent_id}.pg-fallback-keyword.sqlite")
                settings = dataclasses.replace(self.settings, config=config, db_path=db)
                self._fallback = MemoryIndex(settings, ProviderResult(None, requested="none"))
        return self._fallback

    def _local_config(self) -> Any:
        store = self.config.store.model_copy(update={"driver": "sqlite"})
        return self.config.model_copy(update={"store": store})

    def _fallback_search(self, err: PostgresUnavailableError, request: SearchRequest) -> SearchResponse:
        if self.pg.fallback == "none":
            raise err
        local = self._fallback_index()
        local.ensure_fresh()
        response = local.answer(request)
        what = "the local keyword index" if self.pg.fallback == "keyword" else "the local index"
        notice = f"{err}; answered from {what} built from the markdown"
        response.notice = f"{notice}; {response.notice}" if response.notice else notice
        response.backend = "builtin"
        response.backend_fallback = {"from": "postgres", "reason": str(err)}
        self.last_fallback = str(err)
        return response

    # -- status and lifecycle ----------------------------------------------------------------------

    def status(self, deep: bool = False) -> dict[str, Any]:
        try:
            out = super().status(deep)
        except _unavailable_types() as err:
            out = self._offline_status(self._unavailable(err, "for status"))
            return out
        out["backend"] = "postgres"
        out["dbPath"] = self.server
        out["postgres"] = self._server_status()
        return out

    def _offline_status(self, err: PostgresUnavailableError) -> dict[str, Any]:
        result = self.provider_result
        return {
            "backend": "postgres",
            "provider": result.provider.id if result.provider else "none",
            "model": result.provider.model if result.provider else None,
            "workspaceDir": str(self.settings.workspace),
            "dbPath": self.server,
            "sources": list(self.config.sources),
            "postgres": {"available": False, "server": self.server, "error": str(err), "fallback": self.pg.fallback},
        }

    def _server_status(self) -> dict[str, Any]:
        with self._pool().connection() as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            schema = schema_version(conn)
            gen = None
            if self._reader_index_id() is not None:
                gen = conn.execute(
                    "SELECT active_generation FROM mdrecall_indexes WHERE id = %s", (self._index_id,)
                ).fetchone()[0]
        info: dict[str, Any] = {
            "available": True,
            "server": self.server,
            "serverVersion": version,
            "pgvector": row[0] if row else None,
            "schemaVersion": schema,
            "schemaLatest": LATEST_VERSION,
            "agent": self.settings.agent_id,
            "workspaceKey": self.workspace_key,
            "generation": gen,
            "keyword": "tsvector + GIN, FTS5-equivalent BM25",
            "vectorIndex": self._vector_index_state(gen),
            "fallback": self.pg.fallback,
        }
        if self.last_fallback:
            info["lastFallback"] = self.last_fallback
        return info

    def _vector_index_state(self, generation: int | None) -> str:
        """Whether this index's vector search walks its own HNSW graph or scans its rows exactly."""
        if generation is None:
            return "none (not indexed yet)"
        with self._pool().connection() as conn:
            if has_hnsw_index(conn, generation):
                return "hnsw (this index's own partial graph)"
        return f"exact scan (a graph is built from {self.pg.hnsw_min_vectors} vectors)"

    def _vector_mode(self) -> str:
        return "off (fts-only)" if self.provider_result.provider is None else "pgvector (hnsw, cosine)"

    def _probe(self) -> dict[str, Any]:
        probe: dict[str, Any] = {}
        provider = self.provider
        if provider is None:
            probe["embeddings"] = {"ok": False, "error": self.provider_result.unavailable_reason}
        else:
            started = time.perf_counter()
            try:
                vector = provider.embed_query("mdrecall status probe")
                probe["embeddings"] = {
                    "ok": True,
                    "dims": int(len(vector)),
                    "ms": round((time.perf_counter() - started) * 1000, 1),
                }
            except Exception as err:  # a probe reports any failure instead of raising
                probe["embeddings"] = {"ok": False, "error": str(err)}
        try:
            probe["vector"] = {"ok": True, "rows": self.store.vector_row_count()}
        except Exception as err:
            probe["vector"] = {"ok": False, "error": scrub(str(err), self.dsn)}
        return probe

    def close(self) -> None:
        self.stop_background()
        if self._fallback is not None:
            self._fallback.close()
            self._fallback = None
        if self._pool_obj is not None:
            self._pool_obj.close()
            self._pool_obj = None
        provider = self._provider_result.provider if self._provider_result else None
        if provider is not None:
            provider.close()


def open_postgres(settings: Settings, provider_result: ProviderResult | None = None) -> PostgresIndex:
    """Backend factory entry (`backend = "postgres"` or `store.driver = "postgres"`)."""
    return PostgresIndex(settings, provider_result)
