"""The SQLite index: the spec's exact schema, sqlite-vec loading, FTS5, the embedding cache and its LRU.

One file per agent. apsw is used instead of the stdlib module because it can load extensions everywhere.
The store knows nothing about ranking or embeddings providers: it stores rows and answers raw queries.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from .chunk_context import with_context
from .fts_text import index_text
from .index_identity import APPLICATION_ID, check_index_path, remove_own_db_files

META_KEY = "memory_index_meta_v1"
SCHEMA_VERSION = 1
EXPECTED_COLUMNS = {
    "meta": ("key", "value"),
    "files": ("path", "source", "hash", "mtime", "size"),
    "chunks": ("id", "path", "source", "start_line", "end_line", "hash", "model", "text", "embedding", "updated_at"),
    "embedding_cache": ("provider", "model", "provider_key", "hash", "embedding", "dims", "updated_at"),
}
CACHE_LOOKUP_BATCH = 400
# Chunks of the offline models have several vectors (windows, see chunk_windows.py): vec0 holds one row per
# window, keyed `<chunk id>` for the first and `<chunk id>#<i>` for the others; KNN asks for this many rows
# per wanted chunk (and widens when windows of the same chunks fill them), then keeps each chunk's best.
WINDOW_ID_SEP = "#"
KNN_WINDOWS_PER_CHUNK = 8
VEC0_MAX_K = 4096

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY,
  source TEXT NOT NULL DEFAULT 'memory',
  hash TEXT NOT NULL,
  mtime INTEGER NOT NULL,
  size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
  id TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'memory',
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  hash TEXT NOT NULL,
  model TEXT NOT NULL,
  text TEXT NOT NULL,
  embedding TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS embedding_cache (
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  provider_key TEXT NOT NULL,
  hash TEXT NOT NULL,
  embedding TEXT NOT NULL,
  dims INTEGER,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (provider, model, provider_key, hash)
);
CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS idx_chunks_source ON chunks(source);
CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at ON embedding_cache(updated_at);
"""

FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  text,
  id UNINDEXED,
  path UNINDEXED,
  source UNINDEXED,
  model UNINDEXED,
  start_line UNINDEXED,
  end_line UNINDEXED
);
"""


class StoreCorruptError(Exception):
    """The index file cannot be used as it is (corrupt, truncated, foreign schema): rebuild it."""


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class VectorState:
    """Whether sqlite-vec loaded, and if not why: reported verbatim by `status`."""

    enabled: bool
    available: bool = False
    extension_path: str | None = None
    load_error: str | None = None
    dims: int | None = None


@dataclass
class FtsState:
    enabled: bool = True
    available: bool = False
    error: str | None = None


@dataclass
class ChunkRow:
    """A chunk ready to be written: text, position, and its embedding (None in keyword-only mode)."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    hash: str
    model: str
    text: str
    embedding: np.ndarray | None = None
    # context prefix (chunk_context: log date, heading path) keyword-indexed with the text, never stored as it
    context: str = ""


@dataclass
class FileRow:
    path: str
    source: str
    hash: str
    mtime: int
    size: int


@dataclass
class SearchRow:
    """A chunk returned by a keyword or vector query, with the raw score of that side."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    score: float
    extra: dict[str, Any] = field(default_factory=dict)


def vector_to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _vector_to_json(vector: np.ndarray | None) -> str:
    """The spec's JSON vector; a chunk embedded as several windows stores a list of vectors."""
    if vector is None:
        return "[]"
    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim == 2:
        return json.dumps([[round(float(x), 8) for x in row] for row in arr])
    return json.dumps([round(float(x), 8) for x in arr])


def _windows_of(vector: np.ndarray | None) -> np.ndarray | None:
    """A chunk's vectors as a (windows, dims) matrix (one row for most chunks), or None."""
    if vector is None:
        return None
    arr = np.asarray(vector, dtype=np.float32)
    if arr.size == 0:
        return None
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def _stored_window_count(embedding: str | None) -> int:
    """How many windows a stored chunks.embedding holds (a list of lists for several)."""
    if not embedding or not embedding.startswith("[["):
        return 1
    return len(json.loads(embedding))


def window_ids(chunk_id: str, count: int) -> list[str]:
    """The vec0 row ids of a chunk's windows: the chunk id for the first (as the spec has it), then id#i."""
    return [chunk_id] + [f"{chunk_id}{WINDOW_ID_SEP}{i}" for i in range(1, count)]


def _best_window_per_chunk(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """KNN rows (window id, distance), nearest first -> (chunk id, its nearest window's distance)."""
    best: dict[str, float] = {}
    for vec_id, distance in hits:
        best.setdefault(vec_id.split(WINDOW_ID_SEP, 1)[0], distance)
    return list(best.items())


def _sqlite_vec_path(extension_path: str | None) -> str:
    if extension_path:
        return extension_path
    import sqlite_vec

    return sqlite_vec.loadable_path()


class Store:
    """A connection to one index file with the schema in place."""

    def __init__(
        self, path: Path, vector_enabled: bool = True, extension_path: str | None = None, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        check_index_path(self.path)  # never open (and so never write) a file mdrecall did not create
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = _connect(self.path, read_only)
        except apsw.Error as err:
            raise StoreCorruptError(f"cannot open index file: {err}") from err
        try:
            self.conn.set_busy_timeout(30_000)
            self._check_schema_version()
            self._check_columns()
            if not read_only:
                self._claim()
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.execute(SCHEMA)
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (apsw.CorruptError, apsw.NotADBError, apsw.SQLError) as err:
            self.close()
            raise StoreCorruptError(f"index file is corrupt: {err}") from err
        except StoreCorruptError:
            self.close()
            raise
        self.fts = self._ensure_fts()
        self.vector = self._load_vector_extension(vector_enabled, extension_path)
        if self.vector.available:
            self.vector.dims = self._vec_table_dims()

    def _claim(self) -> None:
        """Mark the file as mdrecall's (in the header, before WAL mode, so even a truncated file keeps it)."""
        if self.conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _check_schema_version(self) -> None:
        """Refuse files written by an unknown schema version (the caller rebuilds them from markdown)."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise StoreCorruptError(f"index schema version {version} is not supported (expected {SCHEMA_VERSION})")

    def _check_columns(self) -> None:
        """Tables that exist with other columns (another tool's file, an old layout) are not ours."""
        for table, expected in EXPECTED_COLUMNS.items():
            columns = tuple(r[1] for r in self.conn.execute(f"PRAGMA table_info({table})"))
            if columns and columns != expected:
                raise StoreCorruptError(f"table {table} has columns {columns}, expected {expected}")

    # -- setup -------------------------------------------------------------------------------------

    def _ensure_fts(self) -> FtsState:
        try:
            self.conn.execute(FTS_SCHEMA)
            return FtsState(enabled=True, available=True)
        except apsw.Error as err:  # an SQLite built without FTS5
            return FtsState(enabled=True, available=False, error=str(err))

    def _load_vector_extension(self, enabled: bool, extension_path: str | None) -> VectorState:
        if not enabled:
            return VectorState(enabled=False)
        try:
            path = _sqlite_vec_path(extension_path)
            self.conn.enable_load_extension(True)
            self.conn.load_extension(path)
            self.conn.enable_load_extension(False)
            return VectorState(enabled=True, available=True, extension_path=path)
        except (apsw.Error, ImportError, AttributeError, OSError) as err:
            return VectorState(enabled=True, available=False, extension_path=extension_path, load_error=str(err))

    def _vec_table_dims(self) -> int | None:
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
        if not row or not row[0]:
            return None
        sql = row[0].lower()
        start = sql.find("float[")
        if start < 0:
            return None
        end = sql.find("]", start)
        return int(sql[start + 6 : end])

    def ensure_vector_table(self, dims: int) -> bool:
        """Create chunks_vec for `dims`, dropping and refilling it when the width changed."""
        if not self.vector.available:
            return False
        if self.vector.dims == dims:
            return True
        with self.transaction():
            self.conn.execute("DROP TABLE IF EXISTS chunks_vec")
            self.conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0(\n"
                f"  id TEXT PRIMARY KEY,\n  embedding FLOAT[{int(dims)}]\n)"
            )
        self.vector.dims = dims
        return True

    def close(self) -> None:
        with contextlib.suppress(apsw.Error):
            self.conn.close()

    def replace_contents(self, source: Store) -> None:
        """Make this database an exact copy of `source` in one write transaction (SQLite's backup API).

        This is the "swap" of a full reindex. Unlike renaming files, it is safe for every other connection
        to this index, in this process or another: readers keep their snapshot until the copy commits, a
        kill mid-copy rolls back, and no stale WAL or shared-memory file can meet the new content.
        """
        with self.conn.backup("main", source.conn, "main") as backup:
            backup.step(-1)
        self.refresh_vector_state()

    def refresh_vector_state(self) -> None:
        """Re-read the vec0 table's width (another connection may have recreated it)."""
        self.vector.dims = self._vec_table_dims() if self.vector.available else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (a savepoint when nested): all or nothing."""
        with self.conn:
            yield

    def checkpoint(self) -> None:
        with contextlib.suppress(apsw.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- meta --------------------------------------------------------------------------------------

    def read_meta(self) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if not row:
            return None
        try:
            value = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def write_meta(self, meta: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (META_KEY, json.dumps(meta, sort_keys=True)),
        )

    def read_meta_value(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def write_meta_value(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- files and chunks --------------------------------------------------------------------------

    def get_files(self, source: str) -> dict[str, FileRow]:
        rows = self.conn.execute("SELECT path, source, hash, mtime, size FROM files WHERE source = ?", (source,))
        return {r[0]: FileRow(*r) for r in rows}

    def upsert_file(self, row: FileRow) -> None:
        self.conn.execute(
            "INSERT INTO files(path, source, hash, mtime, size) VALUES(?, ?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
            "mtime = excluded.mtime, size = excluded.size",
            (row.path, row.source, row.hash, row.mtime, row.size),
        )

    def delete_file(self, path: str, source: str) -> None:
        """Remove a file and all its chunks from every table."""
        self.delete_chunks_for(path, source)
        self.conn.execute("DELETE FROM files WHERE path = ? AND source = ?", (path, source))

    def delete_chunks_for(self, path: str, source: str) -> None:
        if self.vector.available and self.vector.dims is not None:
            found = self.conn.execute(
                "SELECT id, embedding FROM chunks WHERE path = ? AND source = ?", (path, source)
            ).fetchall()
            for chunk_id, embedding in found:
                for vec_id in window_ids(chunk_id, _stored_window_count(embedding)):
                    self.conn.execute("DELETE FROM chunks_vec WHERE id = ?", (vec_id,))
        if self.fts.available:
            # FTS rows share the chunk's rowid, so this is an indexed delete, not a scan of chunks_fts.
            self.conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE path = ? AND source = ?)",
                (path, source),
            )
        self.conn.execute("DELETE FROM chunks WHERE path = ? AND source = ?", (path, source))

    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None:
        """Write new chunks to chunks, chunks_vec (when loaded and the row has a vector) and chunks_fts.

        The caller removes a file's previous chunks first (`delete_chunks_for`), so plain INSERTs suffice.
        """
        stamp = now_ms()
        for row in rows:
            self.conn.execute(
                "INSERT INTO chunks(id, path, source, start_line, end_line, hash, model, text, "
                "embedding, updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.id,
                    row.path,
                    row.source,
                    row.start_line,
                    row.end_line,
                    row.hash,
                    row.model,
                    row.text,
                    _vector_to_json(row.embedding),
                    stamp,
                ),
            )
            rowid = self.conn.last_insert_rowid()
            windows = _windows_of(row.embedding)
            if windows is not None and self.vector.available and self.vector.dims == windows.shape[1]:
                for vec_id, vector in zip(window_ids(row.id, len(windows)), windows, strict=True):
                    # an orphan vector row (e.g. left by a crash between tables) must not block the insert
                    self.conn.execute("DELETE FROM chunks_vec WHERE id = ?", (vec_id,))
                    self.conn.execute(
                        "INSERT INTO chunks_vec(id, embedding) VALUES(?, ?)", (vec_id, vector_to_blob(vector))
                    )
            if self.fts.available:
                self.conn.execute(
                    "INSERT INTO chunks_fts(rowid, text, id, path, source, model, start_line, end_line) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rowid,
                        index_text(with_context(row.context, row.text)),
                        row.id,
                        row.path,
                        row.source,
                        row.model,
                        row.start_line,
                        row.end_line,
                    ),
                )

    # -- vectors pending (chunks written keyword-only while the embedding provider was down) -------------

    def pending_vector_chunks(self, model: str, limit: int) -> list[tuple[str, str, str]]:
        """(id, hash, text) of chunks of `model` that still wait for their vector."""
        rows = self.conn.execute(
            "SELECT id, hash, text FROM chunks WHERE model = ? AND embedding = '[]' LIMIT ?", (model, limit)
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def pending_vector_count(self, model: str) -> int:
        row = self.conn.execute("SELECT COUNT(*) FROM chunks WHERE model = ? AND embedding = '[]'", (model,))
        return int(row.fetchone()[0])

    def set_chunk_vector(self, chunk_id: str, vector: np.ndarray) -> None:
        """Give a pending chunk its vector (chunks and chunks_vec)."""
        self.conn.execute("UPDATE chunks SET embedding = ? WHERE id = ?", (_vector_to_json(vector), chunk_id))
        if self.vector.available and self.vector.dims == len(vector):
            self.conn.execute("DELETE FROM chunks_vec WHERE id = ?", (chunk_id,))
            self.conn.execute("INSERT INTO chunks_vec(id, embedding) VALUES(?, ?)", (chunk_id, vector_to_blob(vector)))

    def counts(self) -> dict[str, dict[str, int]]:
        """Files and chunks per source."""
        result: dict[str, dict[str, int]] = {}
        for source, n in self.conn.execute("SELECT source, COUNT(*) FROM files GROUP BY source"):
            result.setdefault(source, {"files": 0, "chunks": 0})["files"] = n
        for source, n in self.conn.execute("SELECT source, COUNT(*) FROM chunks GROUP BY source"):
            result.setdefault(source, {"files": 0, "chunks": 0})["chunks"] = n
        return result

    def vector_row_count(self) -> int:
        if not (self.vector.available and self.vector.dims):
            return 0
        return int(self.conn.execute("SELECT COUNT(*) FROM chunks_vec").fetchone()[0])

    # -- embedding cache ---------------------------------------------------------------------------

    def cache_get(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text hashes (looked up in batches of 400)."""
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), CACHE_LOOKUP_BATCH):
            batch = wanted[start : start + CACHE_LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            rows = self.conn.execute(
                f"SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? "
                f"AND provider_key = ? AND hash IN ({marks})",
                (provider, model, provider_key, *batch),
            )
            for text_hash, blob in rows:
                found[text_hash] = np.asarray(json.loads(blob), dtype=np.float32)
        return found

    def cache_touch(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> None:
        """Mark cache entries as used now, so LRU eviction keeps what is in use."""
        stamp = now_ms()
        for text_hash in hashes:
            self.conn.execute(
                "UPDATE embedding_cache SET updated_at = ? WHERE provider = ? AND model = ? "
                "AND provider_key = ? AND hash = ?",
                (stamp, provider, model, provider_key, text_hash),
            )

    def cache_put(
        self, provider: str, model: str, provider_key: str, entries: Iterable[tuple[str, np.ndarray]]
    ) -> None:
        stamp = now_ms()
        for text_hash, vector in entries:
            self.conn.execute(
                "INSERT INTO embedding_cache(provider, model, provider_key, hash, embedding, dims, updated_at) "
                "VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(provider, model, provider_key, hash) DO UPDATE SET "
                "embedding = excluded.embedding, dims = excluded.dims, updated_at = excluded.updated_at",
                (provider, model, provider_key, text_hash, _vector_to_json(vector), len(vector), stamp),
            )

    def cache_evict(self, max_entries: int | None) -> int:
        """Drop the least recently used entries beyond max_entries; returns how many were dropped."""
        if not max_entries:
            return 0
        total = self.cache_count()
        excess = total - max_entries
        if excess <= 0:
            return 0
        self.conn.execute(
            "DELETE FROM embedding_cache WHERE rowid IN "
            "(SELECT rowid FROM embedding_cache ORDER BY updated_at ASC, rowid ASC LIMIT ?)",
            (excess,),
        )
        return excess

    def cache_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0])

    def copy_cache_from(self, other_db: Path) -> int:
        """Seed this store's embedding cache from another index file (used by the safe full reindex)."""
        if not other_db.exists():
            return 0
        before = self.cache_count()
        self.conn.execute("ATTACH DATABASE ? AS old", (str(other_db),))
        try:
            has_table = self.conn.execute(
                "SELECT 1 FROM old.sqlite_master WHERE type = 'table' AND name = 'embedding_cache'"
            ).fetchone()
            if has_table:
                with self.transaction():
                    self.conn.execute(
                        "INSERT OR IGNORE INTO embedding_cache SELECT provider, model, provider_key, hash, "
                        "embedding, dims, updated_at FROM old.embedding_cache"
                    )
        finally:
            self.conn.execute("DETACH DATABASE old")
        return self.cache_count() - before

    # -- queries -----------------------------------------------------------------------------------

    def keyword_search(self, fts_query: str, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        """FTS5 MATCH ranked by bm25 (lower is better); the score field holds the raw bm25 rank."""
        if not self.fts.available:
            return []
        marks = ",".join("?" * len(sources))
        sql = (
            "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, bm25(chunks_fts) AS rank "
            "FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND chunks_fts.model = ? AND chunks_fts.source IN ({marks}) "
            "ORDER BY rank ASC LIMIT ?"
        )
        rows = self.conn.execute(sql, (fts_query, model, *sources, limit))
        return [SearchRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], float(r[6])) for r in rows]

    def vector_search(self, query: np.ndarray, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        """Top chunks by cosine similarity: sqlite-vec KNN when loaded, numpy over stored JSON otherwise."""
        if self.vector.available and self.vector.dims == len(query):
            return self._knn_search(query, model, sources, limit)
        return self._numpy_search(query, model, sources, limit)

    def _knn_search(self, query: np.ndarray, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        """KNN over every window (a chunk may have several rows), then each chunk once at its best window."""
        # vec0 (spec DDL, L2 metric) over unit vectors: cosine = 1 - d^2 / 2, same order as cosine distance.
        total = self.vector_row_count()
        k = min(limit * KNN_WINDOWS_PER_CHUNK, total, VEC0_MAX_K)
        results: list[SearchRow] = []
        while k > 0:
            rows = self.conn.execute(
                "SELECT id, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (vector_to_blob(query), k),
            ).fetchall()
            results = self._join_chunks(_best_window_per_chunk(rows), model, sources)
            if len(results) >= limit or k >= min(total, VEC0_MAX_K):
                break
            k = min(total, k * 4, VEC0_MAX_K)  # windows of the same chunks, or filtered out: widen the net
        return results[:limit]

    def _join_chunks(self, hits: list[tuple[str, float]], model: str, sources: Sequence[str]) -> list[SearchRow]:
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = self.conn.execute(
            f"SELECT id, path, source, start_line, end_line, text FROM chunks WHERE id IN ({marks}) AND model = ?",
            (*[h[0] for h in hits], model),
        )
        by_id = {r[0]: r for r in rows}
        wanted = set(sources)
        out = []
        for chunk_id, distance in hits:
            r = by_id.get(chunk_id)
            if r is None or r[2] not in wanted:
                continue
            out.append(SearchRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], 1.0 - float(distance) ** 2 / 2.0))
        return out

    def _numpy_search(self, query: np.ndarray, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        marks = ",".join("?" * len(sources))
        rows = self.conn.execute(
            "SELECT id, path, source, start_line, end_line, text, embedding FROM chunks "
            f"WHERE model = ? AND source IN ({marks}) AND embedding != '[]'",
            (model, *sources),
        ).fetchall()
        if not rows:
            return []
        # each chunk's windows (one row for most chunks); a chunk scores as its best window
        per_chunk = [np.asarray(json.loads(r[6]), dtype=np.float32).reshape(-1, len(query)) for r in rows]
        owner = np.repeat(np.arange(len(rows)), [len(m) for m in per_chunk])
        matrix = np.concatenate(per_chunk) if per_chunk else np.zeros((0, len(query)), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
        window_sims = matrix @ np.asarray(query, dtype=np.float32) / np.where(norms == 0, 1.0, norms)
        sims = np.full(len(rows), -np.inf, dtype=np.float32)
        np.maximum.at(sims, owner, window_sims)
        top = np.argsort(-sims, kind="stable")[:limit]
        return [
            SearchRow(rows[i][0], rows[i][1], rows[i][2], int(rows[i][3]), int(rows[i][4]), rows[i][5], float(sims[i]))
            for i in top
        ]


def _connect(path: Path, read_only: bool) -> apsw.Connection:
    """Read-write, or read-only and immutable (a read-only state directory cannot hold WAL/-shm files)."""
    if not read_only:
        return apsw.Connection(str(path))
    from urllib.parse import quote

    uri = f"file:{quote(os.fsencode(path).decode('utf-8', 'surrogateescape'))}?mode=ro&immutable=1"
    return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


def remove_db_files(path: Path) -> None:
    """Delete an index file with its WAL and shared-memory companions, only if it is mdrecall's own."""
    remove_own_db_files(path)
