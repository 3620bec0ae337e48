"""The storage seam: the row types every store speaks and `IndexStore`, the protocol both stores implement.

Two stores sit behind it: `mdrecall.storage.sqlite.Store` (one SQLite file: FTS5 + vectors) and
`mdrecall.storage.postgres.store.PgStore` (a PostgreSQL server with pgvector). Sync (`mdrecall.indexing`) and
search (`mdrecall.retrieval`) are written against `IndexStore` only: they never probe a store for a method and
never run SQL on its connection. A feature one store lacks still has its method there, doing the right nothing
(`tidy_fts` on Postgres, whose index needs no merging), so callers need no `hasattr`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np


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
    # per window, the hash (hex) of the text embedded: the window's row then serves as its cache entry
    window_hashes: Sequence[str] | None = None


@dataclass(slots=True)
class FileRow:
    """A files-table row (slots: an incremental sync of 100k files holds one per indexed file)."""

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


@runtime_checkable
class IndexStore(Protocol):
    """One index generation of one agent's memory: files, chunks with their text and vectors, meta, cache."""

    fts: FtsState
    vector: VectorState
    path: Path | None
    # Keep the vectors of deleted windows as cache entries (SQLite); a store without a window cache ignores it.
    keep_deleted_vectors: bool

    # -- life cycle and meta ---------------------------------------------------------------------------
    def close(self) -> None: ...
    def checkpoint(self) -> None: ...
    def transaction(self) -> contextlib.AbstractContextManager[None]: ...
    def read_meta(self) -> dict[str, Any] | None: ...
    def write_meta(self, meta: dict[str, Any]) -> None: ...
    def read_meta_value(self, key: str) -> str | None: ...
    def write_meta_value(self, key: str, value: str) -> None: ...
    def counts(self) -> dict[str, dict[str, int]]: ...
    def chunk_counts(self) -> dict[str, int]: ...
    def file_chunks(self, path: str) -> list[tuple[str, int, int]]: ...

    # -- files and chunks --------------------------------------------------------------------------------
    def get_files(self, source: str) -> dict[str, FileRow]: ...
    def skipped_files(self) -> list[tuple[str, str]]: ...
    def upsert_file(self, row: FileRow) -> None: ...
    def delete_file(self, path: str, source: str) -> None: ...
    def delete_chunks_for(self, path: str, source: str) -> None: ...
    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None: ...
    def session_mtimes(self, paths: Sequence[str]) -> dict[str, int]:
        """mtime (ms) of these indexed files, from the files table."""
        ...

    def tidy_fts(self) -> bool:
        """Compact the keyword index after writes when it needs it (True when it did)."""
        ...

    # -- vectors -------------------------------------------------------------------------------------------
    def ensure_vector_table(self, dims: int) -> bool: ...
    def refresh_vector_state(self) -> None: ...
    def set_vector_identity(self, provider: str, model: str, provider_key: str) -> None:
        """Record who embeds the vectors written from now on (a store without a window cache ignores it)."""
        ...

    def set_chunk_vector(self, chunk_id: str, vector: np.ndarray) -> None: ...
    def pending_vector_chunks(self, model: str, limit: int) -> list[tuple[str, str, str]]: ...
    def pending_vector_count(self, model: str) -> int: ...
    def vector_row_count(self) -> int: ...
    def window_vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    # -- embedding cache -----------------------------------------------------------------------------------
    def cache_get(
        self, provider: str, model: str, provider_key: str, hashes: Iterable[str]
    ) -> dict[str, np.ndarray]: ...
    def cache_put(
        self, provider: str, model: str, provider_key: str, entries: Iterable[tuple[str, np.ndarray]]
    ) -> None: ...
    def cache_touch(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> None: ...
    def cache_evict(self, max_entries: int | None) -> int: ...
    def cache_count(self) -> int: ...

    # -- search ----------------------------------------------------------------------------------------------
    def keyword_search(self, fts_query: str, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]: ...
    def vector_search(
        self, query: np.ndarray, model: str, sources: Sequence[str], limit: int, read: int | None = None
    ) -> list[SearchRow]:
        """The best `limit` chunks, best first. `read`: the caller needs only the first `read` of them (the same
        rows as the first `read` of the whole answer); a store may return more."""
        ...

    def start_vector_search(
        self, query: np.ndarray, model: str, sources: Sequence[str], limit: int
    ) -> Callable[[], list[SearchRow]]:
        """`vector_search`, begun now and finished by the returned function (call it once, on this thread): a
        store whose search has a long part that needs no database (the SQLite store's scan of its matrix) runs
        that part beside the caller, who meanwhile runs the keyword side. Same rows as `vector_search`."""
        ...

    def terms_held(self, chunk_ids: Sequence[str], terms: Sequence[str]) -> dict[str, set[str]]: ...
    def terms_present(self, matches: Sequence[str]) -> set[str]: ...
