"""Move an agent's builtin SQLite index to the Postgres server without re-embedding anything.

`migrate_from_sqlite` copies the index as it is: files, chunks, every vector (one row per window) and the
embedding cache, into a new generation on the server that is switched in at the end (readers see the old
server index or the migrated one, never a mix). The SQLite file is only read.

What cannot be copied verbatim is the keyword text: FTS5 is contentless, and each chunk is keyword-indexed
with its context (the log's date, the headings above it; `chunk_context`). That context is recomputed from
the markdown file, so a file is copied only when it is unchanged since the SQLite index read it (same hash);
a changed or vanished file is left out, and the next sync on the server indexes it (from the copied cache).

Idempotent: the migrated generation records a fingerprint of the SQLite index; running again against the
same index finds it live and does nothing (`--force` copies again).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from mdrecall.documents.chunking import hash_text
from mdrecall.documents.context import chunk_prefixes
from mdrecall.documents.workspace import MEMORY_SOURCE, decode_text
from mdrecall.errors import MdrecallError
from mdrecall.storage.identity import APPLICATION_ID, check_index_path
from mdrecall.storage.postgres.store import PgStore
from mdrecall.storage.sqlite import (
    META_KEY,
    SKIPPED_HASH_PREFIX,
    ChunkRow,
    FileRow,
    blob_to_vector,
    cache_rows,
    stored_text,
)
from mdrecall.text.redact import redact

MIGRATED_KEY = "migrated_from"
CHUNK_BATCH = 1_000
CACHE_BATCH = 2_000
REQUIRED_TABLES = ("meta", "files", "chunks", "chunk_vectors", "embedding_cache")

# (done, total, what): chunks and cache entries copied so far
MigrateProgress = Callable[[int, int, str], None]


@dataclass
class MigrationReport:
    """What was copied; `as_json()` is the `--json` summary (never holds the DSN)."""

    source: str
    server: str
    agent: str
    workspace_key: str
    already_migrated: bool = False
    generation: int | None = None
    files: int = 0
    chunks: int = 0
    vectors: int = 0
    cache_entries: int = 0
    hnsw_index: bool = False
    left_for_next_sync: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.server,
            "agent": self.agent,
            "workspaceKey": self.workspace_key,
            "alreadyMigrated": self.already_migrated,
            "generation": self.generation,
            "files": self.files,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "cacheEntries": self.cache_entries,
            "hnswIndex": self.hnsw_index,
            "leftForNextSync": self.left_for_next_sync,
            "seconds": round(self.seconds, 2),
        }


class SqliteSource:
    """The builtin index file, opened read-only (never written, never claimed)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise MdrecallError(
                f"no SQLite index at {self.path}: run `mdrecall index` with the builtin backend first, "
                "or pass --db to name the index file"
            )
        check_index_path(self.path)
        try:
            self.conn = apsw.Connection(
                f"file:{self.path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
            )
            self.conn.set_busy_timeout(30_000)
            self.conn.create_scalar_function("chunk_text", stored_text, 1, deterministic=True)
            app_id = self.conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except apsw.Error as err:
            raise MdrecallError(f"cannot read the SQLite index {self.path}: {err}") from None
        if app_id != APPLICATION_ID and app_id != 0:
            raise MdrecallError(f"{self.path} is not an mdrecall index")
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise MdrecallError(
                f"the SQLite index {self.path} is in an older format (no {', '.join(missing)}): "
                "run `mdrecall index` once with the builtin backend, then migrate"
            )

    def close(self) -> None:
        self.conn.close()

    def meta_value(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def files(self) -> list[FileRow]:
        rows = self.conn.execute("SELECT path, source, hash, mtime, size FROM files ORDER BY source, path")
        return [FileRow(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows]

    def count(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def fingerprint(self) -> str:
        """Changes whenever the index does: its meta, every file row, and the row counts."""
        digest = hashlib.sha256()
        digest.update((self.meta_value(META_KEY) or "").encode())
        for row in self.files():
            digest.update(f"\0{row.source}\0{row.path}\0{row.hash}\0{row.mtime}\0{row.size}".encode())
        for table in ("chunks", "chunk_vectors"):
            digest.update(f"\0{table}:{self.count(table)}".encode())
        return digest.hexdigest()

    def chunks_of(self, path: str, source: str) -> list[tuple[int, ChunkRow]]:
        """A file's chunks (rowid, row) with their windows as one matrix per chunk, in line order."""
        rows = self.conn.execute(
            "SELECT rowid, id, path, source, start_line, end_line, hash, model, chunk_text(text) FROM chunks "
            "WHERE path = ? AND source = ? ORDER BY start_line, rowid",
            (path, source),
        ).fetchall()
        if not rows:
            return []
        marks = ",".join("?" * len(rows))
        windows: dict[int, list[np.ndarray]] = {}
        for rowid, _window, blob in self.conn.execute(
            f"SELECT chunk_rowid, window, embedding FROM chunk_vectors WHERE chunk_rowid IN ({marks}) "
            "ORDER BY chunk_rowid, window",
            tuple(r[0] for r in rows),
        ):
            windows.setdefault(int(rowid), []).append(blob_to_vector(blob))
        out = []
        for r in rows:
            found = windows.get(int(r[0]))
            matrix = None if not found else np.stack(found)
            out.append((int(r[0]), ChunkRow(r[1], r[2], r[3], int(r[4]), int(r[5]), r[6], r[7], r[8], matrix)))
        return out

    def cache_rows(self) -> Iterator[tuple[str, str, str, str, np.ndarray]]:
        """The cache entries and the hashed window rows (which are the cache of the indexed text)."""
        yield from cache_rows(self.conn)


def _memory_texts(index: Any) -> dict[str, str]:
    """Current text of every memory file (as sync reads it: decoded, redacted when configured), by path."""
    texts: dict[str, str] = {}
    for file in index.discover():
        try:
            raw = file.abs_path.read_bytes()
        except OSError:
            continue
        text, _ = decode_text(raw)
        texts[file.path] = redact(text) if index.config.redact_memory else text
    return texts


def _with_contexts(path: str, chunks: list[tuple[int, ChunkRow]], text: str) -> list[ChunkRow]:
    prefixes = chunk_prefixes(path, text, [row.start_line for _, row in chunks])
    for (_, row), prefix in zip(chunks, prefixes, strict=True):
        row.context = prefix
    return [row for _, row in chunks]


def migrate_from_sqlite(
    index: Any, sqlite_path: Path, progress: MigrateProgress | None = None, force: bool = False
) -> MigrationReport:
    """Copy the builtin index at `sqlite_path` into `index` (a `PostgresIndex`) on its server."""
    started = time.perf_counter()
    source = SqliteSource(sqlite_path)
    report = MigrationReport(str(sqlite_path), index.server, index.settings.agent_id, index.workspace_key)
    try:
        fingerprint = source.fingerprint()
        pool = index._pool()
        with pool.connection() as conn:
            index_id = index._ensure_index_id(conn)
            with index._advisory_lock(conn):
                live = PgStore(pool, index_id, conn=conn).pin()
                if not force and _already(live, fingerprint):
                    report.already_migrated = True
                    report.generation = live.generation(conn)
                    report.seconds = time.perf_counter() - started
                    return report
                index._drop_stale_generations(conn, index_id)
                target = index._new_generation(pool, conn, index_id)
                _copy(index, source, target, report, progress)
                with target.transaction():
                    for key in (META_KEY, "last_sync"):
                        value = source.meta_value(key)
                        if value is not None:
                            target.write_meta_value(key, value)
                    target.write_meta_value(
                        MIGRATED_KEY, json.dumps({"fingerprint": fingerprint, "at": int(time.time() * 1000)})
                    )
                report.hnsw_index = target.ensure_vector_index()
                report.generation = target.generation(conn)
                index._switch_generation(conn, index_id, report.generation)
                from mdrecall.storage.postgres.schema import drop_orphan_hnsw_indexes

                drop_orphan_hnsw_indexes(conn)
    finally:
        source.close()
    report.seconds = time.perf_counter() - started
    return report


def _already(live: PgStore, fingerprint: str) -> bool:
    raw = live.read_meta_value(MIGRATED_KEY)
    if raw is None:
        return False
    try:
        return json.loads(raw).get("fingerprint") == fingerprint
    except (json.JSONDecodeError, AttributeError):
        return False


def _copy(
    index: Any, source: SqliteSource, target: PgStore, report: MigrationReport, progress: MigrateProgress | None
) -> None:
    """Files with their chunks and windows (one transaction per batch of files), then the embedding cache."""
    total = source.count("chunks") + source.count("embedding_cache") + source.count("chunk_vectors")
    done = 0
    texts = _memory_texts(index)
    batch_files: list[FileRow] = []
    batch_rows: list[ChunkRow] = []

    def flush() -> None:
        with target.transaction():
            target.insert_chunks(batch_rows)
            for row in batch_files:
                target.upsert_file(row)
        batch_files.clear()
        batch_rows.clear()

    for file in source.files():
        chunks = source.chunks_of(file.path, file.source)
        if file.source == MEMORY_SOURCE and not file.hash.startswith(SKIPPED_HASH_PREFIX):
            text = texts.get(file.path)
            if text is None or hash_text(text) != file.hash:
                report.left_for_next_sync.append(file.path)  # changed or gone since: the next sync decides
                done += len(chunks)
                continue
            rows = _with_contexts(file.path, chunks, text)
        else:
            rows = [row for _, row in chunks]  # transcripts are indexed without a context prefix
        batch_files.append(file)
        batch_rows.extend(rows)
        report.files += 1
        report.chunks += len(rows)
        report.vectors += sum(0 if r.embedding is None else len(r.embedding) for r in rows)
        done += len(rows)
        if len(batch_rows) >= CHUNK_BATCH:
            flush()
        if progress is not None:
            progress(done, total, file.path)
    flush()
    report.cache_entries = copy_cache(source, target, progress, done, total)


def copy_cache(
    source: SqliteSource, target: PgStore, progress: MigrateProgress | None = None, done: int = 0, total: int = 0
) -> int:
    """Every embedding cache entry (upserted: copying twice is harmless). Returns how many."""
    copied = 0
    pending: dict[tuple[str, str, str], list[tuple[str, np.ndarray]]] = {}

    def flush() -> None:
        with target.transaction():
            for (provider, model, key), entries in pending.items():
                target.cache_put(provider, model, key, entries)
        pending.clear()

    for provider, model, key, text_hash, vector in source.cache_rows():
        pending.setdefault((provider, model, key), []).append((text_hash, vector))
        copied += 1
        if copied % CACHE_BATCH == 0:
            flush()
            if progress is not None:
                progress(done + copied, total, "embedding cache")
    flush()
    if progress is not None:
        progress(done + copied, total, "embedding cache")
    return copied
