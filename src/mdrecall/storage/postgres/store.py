"""`PgStore`: the builtin `Store`'s interface over one index generation on a PostgreSQL server.

`mdrecall.indexing.sync` (incremental sync, embedding cache, per-file transactions) and
`mdrecall.retrieval.search.run_search` (fusion, decay, minScore, MMR, citations) run unchanged on it: only the
storage differs. A store is bound to a connection (a sync's writer, or a search's REPEATABLE READ snapshot) or
borrows one from the pool per call (status, dirty checks).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from mdrecall.documents.context import with_context
from mdrecall.storage.base import ChunkRow, FileRow, FtsState, SearchRow, VectorState
from mdrecall.storage.identity import META_KEY
from mdrecall.storage.postgres.keyword import BM25_POSTINGS_SQL, BM25_SQL, KeywordQuery, chunk_terms, translate
from mdrecall.storage.postgres.schema import (
    DEFAULT_BUILD_MEMORY_MB,
    build_hnsw_index,
    has_hnsw_index,
    vector_expression,
)
from mdrecall.storage.sqlite import SKIPPED_HASH_PREFIX, now_ms, windows_of
from mdrecall.text.fts_query import quote_term

ACTIVE = "active"
CHUNK_COLUMNS = "generation, id, path, source, start_line, end_line, hash, model, text, tsv, doc_len, updated_at"
VECTOR_COLUMNS = "generation, chunk_id, win, model, source, dims, embedding"
VECTOR_TYPES = ["int8", "text", "int4", "text", "text", "int4", "vector"]
# Below this many windows a generation is searched exactly (a scan of its rows); at and above it, through a
# partial HNSW index of its own (store.postgres.hnswMinVectors).
HNSW_MIN_VECTORS = 10_000


class PgStore:
    """Rows of one generation of one index (`index_id`); `generation=ACTIVE` follows the live generation."""

    keyword_fast = True  # False: every keyword query through BM25_SQL (the reference, in tests and the bench)

    def __init__(
        self,
        pool: Any,
        index_id: int | None,
        generation: int | str | None = ACTIVE,
        conn: Any = None,
        ef_search: int = 200,
        hnsw_min_vectors: int = HNSW_MIN_VECTORS,
        hnsw_build_memory_mb: int = DEFAULT_BUILD_MEMORY_MB,
    ) -> None:
        self.pool = pool
        self.index_id = index_id
        self._generation = generation
        self.conn = conn
        self.ef_search = ef_search
        self.hnsw_min_vectors = hnsw_min_vectors
        self.hnsw_build_memory_mb = hnsw_build_memory_mb
        self.tuned_ef = 0  # ef_search already in force on the bound connection's transaction
        self.fts = FtsState(enabled=True, available=True)
        self.vector = VectorState(enabled=True, available=True, extension_path="pgvector")
        self.path = None
        self.keep_deleted_vectors = False  # no window cache here: deleted rows simply go

    # -- connections -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        if self.conn is not None:
            yield self.conn
        else:
            with self.pool.connection() as conn:
                yield conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction (a savepoint when nested) on the bound connection, or on a borrowed one."""
        if self.conn is not None:
            with self.conn.transaction():
                yield
            return
        with self.pool.connection() as conn:
            self.conn = conn
            try:
                with conn.transaction():
                    yield
            finally:
                self.conn = None

    def generation(self, conn: Any) -> int | None:
        """The generation this store reads and writes (the live one when following ACTIVE)."""
        if self._generation != ACTIVE:
            return self._generation  # type: ignore[return-value]
        if self.index_id is None:
            return None
        row = conn.execute("SELECT active_generation FROM mdrecall_indexes WHERE id = %s", (self.index_id,)).fetchone()
        return row[0] if row else None

    def pin(self) -> PgStore:
        """Fix the generation (a search snapshot must not follow a swap half-way)."""
        with self._connection() as conn:
            self._generation = self.generation(conn)
        return self

    def close(self) -> None:
        """Nothing to close: connections belong to the pool or to the caller."""

    def checkpoint(self) -> None:
        """SQLite's WAL checkpoint has no Postgres counterpart."""

    def refresh_vector_state(self) -> None:
        """Vector support does not change under a running store."""

    # -- meta --------------------------------------------------------------------------------------

    def read_meta_value(self, key: str) -> str | None:
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return None
            row = conn.execute(
                "SELECT value FROM mdrecall_meta WHERE generation = %s AND key = %s", (gen, key)
            ).fetchone()
        return row[0] if row else None

    def write_meta_value(self, key: str, value: str) -> None:
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO mdrecall_meta(generation, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (generation, key) DO UPDATE SET value = excluded.value",
                (self.generation(conn), key, value),
            )

    def read_meta(self) -> dict[str, Any] | None:
        raw = self.read_meta_value(META_KEY)
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def write_meta(self, meta: dict[str, Any]) -> None:
        self.write_meta_value(META_KEY, json.dumps(meta, sort_keys=True))

    # -- files and chunks --------------------------------------------------------------------------

    def get_files(self, source: str) -> dict[str, FileRow]:
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return {}
            rows = conn.execute(
                "SELECT path, source, hash, mtime, size FROM mdrecall_files WHERE generation = %s AND source = %s",
                (gen, source),
            ).fetchall()
        return {r[0]: FileRow(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows}

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of the files a sync recorded as skipped (binary, too large, ...), by path."""
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return []
            rows = conn.execute(
                "SELECT path, substr(hash, %s) FROM mdrecall_files WHERE generation = %s AND starts_with(hash, %s) "
                "ORDER BY path",
                (len(SKIPPED_HASH_PREFIX) + 1, gen, SKIPPED_HASH_PREFIX),
            ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def upsert_file(self, row: FileRow) -> None:
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO mdrecall_files(generation, path, source, hash, mtime, size) "
                "VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (generation, path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
                "mtime = excluded.mtime, size = excluded.size",
                (self.generation(conn), row.path, row.source, row.hash, row.mtime, row.size),
            )

    def delete_file(self, path: str, source: str) -> None:
        self.delete_chunks_for(path, source)
        with self._connection() as conn:
            conn.execute(
                "DELETE FROM mdrecall_files WHERE generation = %s AND path = %s AND source = %s",
                (self.generation(conn), path, source),
            )

    def delete_chunks_for(self, path: str, source: str) -> None:
        """Drop a file's chunks and their windows, and take them out of the BM25 totals, in one statement."""
        with self._connection() as conn:
            gen = self.generation(conn)
            conn.execute(
                "WITH gone AS (DELETE FROM mdrecall_chunks WHERE generation = %(gen)s AND path = %(path)s "
                "AND source = %(source)s RETURNING id, rid, tsv, doc_len), "
                "vectors AS (DELETE FROM mdrecall_vectors v USING gone "
                "WHERE v.generation = %(gen)s AND v.chunk_id = gone.id), "
                "postings AS (DELETE FROM mdrecall_postings p USING gone, unnest(gone.tsv) u "
                "WHERE p.generation = %(gen)s AND p.term = u.lexeme AND p.rid = gone.rid) "
                "UPDATE mdrecall_generations SET n_chunks = n_chunks - (SELECT count(*) FROM gone), "
                "total_len = total_len - (SELECT coalesce(sum(doc_len), 0) FROM gone) WHERE id = %(gen)s",
                {"gen": gen, "path": path, "source": source},
            )

    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None:
        """Chunks (COPY, text format: the tsvector is a literal) and their windows (COPY, binary format),
        then the generation's BM25 totals. The caller removes a file's previous chunks first."""
        if not rows:
            return
        stamp = now_ms()
        total_len = 0
        with self._connection() as conn:
            gen = int(self.generation(conn))  # type: ignore[arg-type]
            with conn.cursor() as cur:
                with cur.copy(f"COPY mdrecall_chunks ({CHUNK_COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        tsv, doc_len = chunk_terms(with_context(row.context, row.text))  # date, headings
                        total_len += doc_len
                        copy.write_row(
                            (gen, row.id, row.path, row.source, row.start_line, row.end_line, row.hash, row.model,
                             row.text, tsv, doc_len, stamp)
                        )  # fmt: skip
                vectors = [(row, windows_of(row.embedding)) for row in rows]
                if any(w is not None for _, w in vectors):
                    with cur.copy(f"COPY mdrecall_vectors ({VECTOR_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                        copy.set_types(VECTOR_TYPES)
                        for row, windows in vectors:
                            for i, window in enumerate(() if windows is None else windows):
                                copy.write_row((gen, row.id, i, row.model, row.source, len(window), window))
            conn.execute(  # the keyword postings, cut from the tsvectors just written (no second encoding)
                "INSERT INTO mdrecall_postings(generation, term, rid, tf, doc_len) "
                "SELECT c.generation, u.lexeme, c.rid, cardinality(u.positions), c.doc_len "
                "FROM mdrecall_chunks c, unnest(c.tsv) u WHERE c.generation = %s AND c.id = ANY(%s)",
                (gen, [row.id for row in rows]),
            )
            conn.execute(
                "UPDATE mdrecall_generations SET n_chunks = n_chunks + %s, total_len = total_len + %s WHERE id = %s",
                (len(rows), total_len, gen),
            )

    def ensure_vector_table(self, dims: int) -> bool:
        """Windows of every width share one table: nothing to create (see `ensure_vector_index`)."""
        self.vector.dims = dims
        return True

    def ensure_vector_index(self, concurrently: bool = True) -> bool:
        """This generation's own HNSW index, once it holds `hnsw_min_vectors` windows (after the bulk load of a
        full reindex, or when incremental syncs grew it). Below that, vector search is an exact scan."""
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None or has_hnsw_index(conn, gen):
                return False
            row = conn.execute(
                "SELECT count(*), min(dims), max(dims) FROM mdrecall_vectors WHERE generation = %s", (gen,)
            ).fetchone()
            count, low, high = int(row[0]), row[1], row[2]
            if count < max(1, self.hnsw_min_vectors) or low != high:  # one model, one width per generation
                return False
            return build_hnsw_index(
                conn, gen, int(low), concurrently=concurrently, count=count, memory_cap_mb=self.hnsw_build_memory_mb
            )

    # -- vectors pending (chunks written keyword-only while the embedding provider was down) -------------

    _PENDING = (
        "FROM mdrecall_chunks c WHERE c.generation = %(gen)s AND c.model = %(model)s AND NOT EXISTS "
        "(SELECT 1 FROM mdrecall_vectors v WHERE v.generation = %(gen)s AND v.chunk_id = c.id)"
    )

    def pending_vector_chunks(self, model: str, limit: int) -> list[tuple[str, str, str]]:
        """(id, hash, text) of chunks of `model` that still wait for their vector."""
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return []
            rows = conn.execute(
                f"SELECT c.id, c.hash, c.text {self._PENDING} ORDER BY c.id LIMIT %(limit)s",
                {"gen": gen, "model": model, "limit": limit},
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def pending_vector_count(self, model: str) -> int:
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return 0
            row = conn.execute(f"SELECT count(*) {self._PENDING}", {"gen": gen, "model": model}).fetchone()
        return int(row[0])

    def set_chunk_vector(self, chunk_id: str, vector: np.ndarray) -> None:
        """Give a pending chunk its vector (one window, as the builtin store does)."""
        window = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._connection() as conn:
            gen = self.generation(conn)
            conn.execute("DELETE FROM mdrecall_vectors WHERE generation = %s AND chunk_id = %s", (gen, chunk_id))
            conn.execute(
                f"INSERT INTO mdrecall_vectors ({VECTOR_COLUMNS}) "
                "SELECT generation, id, 0, model, source, %s, %s FROM mdrecall_chunks "
                "WHERE generation = %s AND id = %s",
                (len(window), window, gen, chunk_id),
            )

    def counts(self) -> dict[str, dict[str, int]]:
        result: dict[str, dict[str, int]] = {}
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return result
            files = conn.execute(
                "SELECT source, count(*) FROM mdrecall_files WHERE generation = %s GROUP BY source", (gen,)
            ).fetchall()
            chunks = conn.execute(
                "SELECT source, count(*) FROM mdrecall_chunks WHERE generation = %s GROUP BY source", (gen,)
            ).fetchall()
        for source, n in files:
            result.setdefault(source, {"files": 0, "chunks": 0})["files"] = int(n)
        for source, n in chunks:
            result.setdefault(source, {"files": 0, "chunks": 0})["chunks"] = int(n)
        return result

    def chunk_counts(self) -> dict[str, int]:
        """Chunks per file path (the inspector's file list)."""
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return {}
            rows = conn.execute(
                "SELECT path, count(*) FROM mdrecall_chunks WHERE generation = %s GROUP BY path", (gen,)
            ).fetchall()
        return {str(path): int(n) for path, n in rows}

    def file_chunks(self, path: str) -> list[tuple[str, int, int]]:
        """(id, start line, end line) of one file's chunks, in file order."""
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return []
            rows = conn.execute(
                "SELECT id, start_line, end_line FROM mdrecall_chunks WHERE generation = %s AND path = %s "
                "ORDER BY start_line, end_line",
                (gen, path),
            ).fetchall()
        return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]

    def vector_row_count(self) -> int:
        """Stored vectors, one per window (as the builtin store counts them)."""
        with self._connection() as conn:
            gen = self.generation(conn)
            row = conn.execute("SELECT count(*) FROM mdrecall_vectors WHERE generation = %s", (gen,)).fetchone()
        return int(row[0])

    def set_vector_identity(self, provider: str, model: str, provider_key: str) -> None:
        """Nothing to record: the server keeps no window rows as cache entries (the cache table is keyed by
        provider, model and key already)."""

    def tidy_fts(self) -> bool:
        """Nothing to merge: the server's keyword index has no segments."""
        return False

    def session_mtimes(self, paths: Sequence[str]) -> dict[str, int]:
        """mtime (ms) of session transcripts, for temporal decay (`mdrecall.retrieval.search`)."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT path, mtime FROM mdrecall_files "
                "WHERE generation = %s AND source = 'sessions' AND path = ANY(%s)",
                (self.generation(conn), list(paths)),
            ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    # -- embedding cache (per index: agents never share vectors) -------------------------------------

    def cache_get(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT hash, embedding FROM mdrecall_embedding_cache WHERE index_id = %s AND provider = %s "
                "AND model = %s AND provider_key = %s AND hash = ANY(%s)",
                (self.index_id, provider, model, provider_key, wanted),
            ).fetchall()
        return {h: np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32) for h, v in rows}

    def cache_touch(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> None:
        with self._connection() as conn:
            conn.execute(
                "UPDATE mdrecall_embedding_cache SET updated_at = %s WHERE index_id = %s AND provider = %s "
                "AND model = %s AND provider_key = %s AND hash = ANY(%s)",
                (now_ms(), self.index_id, provider, model, provider_key, list(hashes)),
            )

    def cache_put(
        self, provider: str, model: str, provider_key: str, entries: Iterable[tuple[str, np.ndarray]]
    ) -> None:
        stamp = now_ms()
        params = [
            (self.index_id, provider, model, provider_key, h, np.asarray(v, dtype=np.float32), len(v), stamp)
            for h, v in entries
        ]
        if not params:
            return
        with self._connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO mdrecall_embedding_cache(index_id, provider, model, provider_key, hash, embedding, dims, "
                "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (index_id, provider, model, provider_key, hash) DO UPDATE SET "
                "embedding = excluded.embedding, dims = excluded.dims, updated_at = excluded.updated_at",
                params,
            )

    def cache_evict(self, max_entries: int | None) -> int:
        if not max_entries:
            return 0
        excess = self.cache_count() - max_entries
        if excess <= 0:
            return 0
        with self._connection() as conn:
            conn.execute(
                "DELETE FROM mdrecall_embedding_cache WHERE (index_id, provider, model, provider_key, hash) IN "
                "(SELECT index_id, provider, model, provider_key, hash FROM mdrecall_embedding_cache "
                "WHERE index_id = %s ORDER BY updated_at ASC LIMIT %s)",
                (self.index_id, excess),
            )
        return excess

    def cache_count(self) -> int:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM mdrecall_embedding_cache WHERE index_id = %s", (self.index_id,)
            ).fetchone()
        return int(row[0])

    # -- queries -----------------------------------------------------------------------------------

    def keyword_search(self, fts_query: str, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        """An FTS5 MATCH string, run as tsquery + BM25; `score` is FTS5's bm25 rank (lower is better).

        Plain words (an OR or an AND of them: what search sends, bar phrases) are scored from the postings
        (`BM25_POSTINGS_SQL`); phrases and other shapes (NOT, prefixes, mixed AND / OR) per matching row
        by `BM25_SQL`. Both give the same scores."""
        query = translate(fts_query)
        if query.tsquery is None or limit <= 0:
            return []
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return []
            params = {
                "terms": query.terms,
                "phrases": query.phrase_keys,
                "phrase_tsq": query.phrase_tsqueries,
                "prefixes": query.prefixes,
                "gen": gen,
                "model": model,
                "sources": list(sources),
                "tsquery": query.tsquery,
                "limit": limit,
            }
            if self.keyword_fast and query.plain_words:
                rows = self._postings_search(conn, query, params)
            else:
                rows = [tuple(r) for r in conn.execute(BM25_SQL, params).fetchall()]
        return [SearchRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], float(r[6])) for r in rows]

    def _postings_search(self, conn: Any, query: KeywordQuery, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The best `limit` chunks by BM25 from the postings; the candidate cut widens while the model /
        source filter leaves fewer than `limit` and more scored chunks exist."""
        params = {**params, "all_terms": query.shape == "and" and query.units > 1, "units": query.units}
        params["prefix_ends"] = query.prefix_ends
        k = params["limit"]
        while True:
            rows = conn.execute(BM25_POSTINGS_SQL, {**params, "k": k}).fetchall()
            hits, scored = [tuple(r[1:8]) for r in rows if r[0] == 0], int(rows[-1][8])
            if len(hits) >= params["limit"] or k >= scored:
                return hits
            k *= 4

    @contextlib.contextmanager
    def _vector_settings(self, conn: Any, k: int) -> Iterator[None]:
        """HNSW breadth and iterative scans (so a filter by source still fills `k`), set for this transaction
        only. A search snapshot set them already, in the same round trip as its BEGIN."""
        ef = max(self.ef_search, 2 * k)
        if self.tuned_ef >= ef:
            yield
            return
        with conn.transaction():
            conn.execute(
                f"SET LOCAL hnsw.ef_search = {int(min(ef, 1000))}; SET LOCAL hnsw.iterative_scan = relaxed_order"
            )
            yield

    def window_vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """chunk id -> its window vectors in window order (as `Store.window_vectors`: search's window blend)."""
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return {}
            rows = conn.execute(
                "SELECT chunk_id, win, embedding FROM mdrecall_vectors WHERE generation = %s AND chunk_id = ANY(%s) "
                "ORDER BY chunk_id, win",
                (gen, ids),
            ).fetchall()
        grouped: dict[str, list[np.ndarray]] = {}
        for chunk_id, _, embedding in rows:
            values = embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding  # pgvector's Vector
            grouped.setdefault(chunk_id, []).append(np.asarray(values, dtype=np.float32))
        return {key: np.stack(vectors) for key, vectors in grouped.items() if len({v.shape for v in vectors}) == 1}

    def terms_present(self, matches: Sequence[str]) -> set[str]:
        """The FTS5-style match units (a quoted term, a prefix) that at least one chunk of this generation
        holds (as `Store.terms_present`)."""
        out: set[str] = set()
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return out
            for match in dict.fromkeys(matches):
                query = translate(match)
                if query.tsquery is None:
                    continue
                row = conn.execute(
                    "SELECT 1 FROM mdrecall_chunks WHERE generation = %s AND tsv @@ %s::tsquery LIMIT 1",
                    (gen, query.tsquery),
                ).fetchone()
                if row is not None:
                    out.add(match)
        return out

    def terms_held(self, chunk_ids: Sequence[str], terms: Sequence[str]) -> dict[str, set[str]]:
        """chunk id -> the query terms its indexed text (context included) holds (as `Store.terms_held`)."""
        ids = list(dict.fromkeys(chunk_ids))
        if not ids or not terms:
            return {}
        out: dict[str, set[str]] = {}
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return {}
            for term in dict.fromkeys(terms):
                query = translate(quote_term(term))
                if query.tsquery is None:
                    continue
                for (chunk_id,) in conn.execute(
                    "SELECT id FROM mdrecall_chunks WHERE generation = %s AND id = ANY(%s) AND tsv @@ %s::tsquery",
                    (gen, ids, query.tsquery),
                ):
                    out.setdefault(chunk_id, set()).add(term)
        return out

    def start_vector_search(
        self, query: np.ndarray, model: str, sources: Sequence[str], limit: int
    ) -> Callable[[], list[SearchRow]]:
        """`vector_search` when the returned function is called: the server does the work, there is no scan in
        this process to run beside the keyword side."""
        return lambda: self.vector_search(query, model, sources, limit)

    def vector_search(
        self, query: np.ndarray, model: str, sources: Sequence[str], limit: int, read: int | None = None
    ) -> list[SearchRow]:
        """Nearest chunks by cosine, each scored by its best window (as the builtin store scores them).

        Nearest windows first (this generation's HNSW index when it has one, else an exact scan of its rows),
        widened while fewer than `limit` distinct chunks came back and more windows exist. `read` changes
        nothing: the rows come with the ranking."""
        if limit <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        dims = int(vector.shape[0])
        expression, _ = vector_expression(dims)
        cast = expression.split("::", 1)[1]
        k = limit
        with self._connection() as conn:
            gen = self.generation(conn)
            if gen is None:
                return []
            while True:
                with self._vector_settings(conn, k):
                    windows = conn.execute(
                        f"SELECT chunk_id, {expression} <=> %(q)s::{cast} AS distance FROM mdrecall_vectors "
                        f"WHERE generation = {int(gen)} AND dims = {dims} AND model = %(model)s "
                        f"AND source = ANY(%(sources)s) ORDER BY {expression} <=> %(q)s::{cast} LIMIT %(k)s",
                        {"q": vector, "model": model, "sources": list(sources), "k": k},
                    ).fetchall()
                best: dict[str, float] = {}
                for chunk_id, distance in windows:  # relaxed_order: near-ties may come out of order
                    best[chunk_id] = min(float(distance), best.get(chunk_id, 2.0))
                if len(best) >= limit or len(windows) < k:
                    break
                k *= 4
            top = sorted(best.items(), key=lambda item: (item[1], item[0]))[:limit]
            rows = conn.execute(
                "SELECT id, path, source, start_line, end_line, text FROM mdrecall_chunks "
                "WHERE generation = %s AND id = ANY(%s)",
                (gen, [chunk_id for chunk_id, _ in top]),
            ).fetchall()
        by_id = {r[0]: r for r in rows}
        hits = [
            SearchRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], 1.0 - distance)
            for chunk_id, distance in top
            if (r := by_id.get(chunk_id)) is not None
        ]
        return hits
