"""The backend seam: what the CLI, the agent tools and the MCP server may ask of a memory backend.

A backend answers `sync`, `search`, `read_file`, `status` and `close` (plus the small freshness helpers the
callers use). Three implementations sit behind it:

- builtin: `mdrecall.backends.builtin.MemoryIndex` (SQLite + FTS5 + sqlite-vec), the default;
- qmd: `mdrecall.backends.qmd.QmdBackend` (the qmd CLI as a sidecar), always wrapped in
  `mdrecall.backends.fallback.FallbackBackend` so the builtin index answers when qmd cannot;
- a server database (Postgres) registers itself in `mdrecall.backends.factory.BACKENDS`.

Ranking helpers (`mdrecall.retrieval.ranking`, `mdrecall.retrieval.search.finish_results`) are pure
functions every backend may reuse, so results look and clamp the same whichever engine served them.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from mdrecall.config.settings import MemoryConfig, Settings
    from mdrecall.documents.sessions import SessionFile
    from mdrecall.documents.workspace import MemoryFile
    from mdrecall.embeddings.base import EmbeddingProvider
    from mdrecall.embeddings.factory import ProviderResult
    from mdrecall.indexing.sync import ChunkProgressFn, ProgressFn, SyncReport
    from mdrecall.retrieval.search import SearchMode, SearchResponse


def checked_limits(max_results: Any, min_score: Any) -> tuple[int | None, float | None]:
    """A caller's `max_results` and `min_score` as plain numbers: an integer >= 1 and a number in 0..1 (None:
    the configured default). Anything else is one MdrecallError naming the argument, as the CLI and the tools
    refuse it, instead of an empty answer or an error from inside the ranking."""
    from mdrecall.errors import MdrecallError

    count: int | None = None
    if max_results is not None:
        try:
            count = None if isinstance(max_results, bool) else operator.index(max_results)
        except TypeError:
            count = None
        if count is None or count < 1:
            raise MdrecallError(f"max_results must be an integer >= 1 (got {max_results!r})")
    floor: float | None = None
    if min_score is not None:
        ok = isinstance(min_score, numbers.Real) and not isinstance(min_score, bool)
        floor = float(min_score) if ok else None
        if floor is None or not 0.0 <= floor <= 1.0:  # NaN fails both comparisons
            raise MdrecallError(f"min_score must be a number between 0 and 1 (got {min_score!r})")
    return count, floor


@runtime_checkable
class MemoryBackend(Protocol):
    """One agent's memory: the markdown stays the source of truth, the backend holds a derived index."""

    settings: Settings
    config: MemoryConfig
    on_synced: Callable[[SyncReport], None] | None
    # True when `request_sync` runs a sync on a background thread, so a search may answer from a stale index
    # while it catches up; False: callers sync inline (`ensure_fresh`) before answering.
    background_sync: bool
    # the index file (None for a server database); named in messages
    db_path: Path | None

    @property
    def provider(self) -> EmbeddingProvider | None:
        """The embedding model answering now (None: keyword-only)."""
        ...

    @property
    def provider_result(self) -> ProviderResult | None:
        """The embedding provider chosen for this backend and why (fallback from/reason), if any."""
        ...

    @property
    def read_only(self) -> bool:
        """True when the index may be searched but not written (callers then skip syncing)."""
        ...

    def sync(
        self,
        force: bool = False,
        reason: str = "manual",
        progress: ProgressFn | None = None,
        respect_session_deltas: bool = False,
        chunk_progress: ChunkProgressFn | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the files (a full rebuild when `force`); `progress` counts files,
        `chunk_progress` chunks embedded (for a rate and an ETA)."""
        ...

    def is_dirty(self) -> bool:
        """True when a file changed since the last sync (callers then sync before answering)."""
        ...

    def ensure_fresh(self, progress: ProgressFn | None = None) -> SyncReport | None:
        """Sync when dirty; None when nothing had to be done."""
        ...

    def has_index(self) -> bool:
        """Whether the index has been built at least once (a missing index is the one reason to block)."""
        ...

    def dirty_files(self) -> list[str]:
        """Paths whose file differs from what the index holds (new, changed and vanished ones)."""
        ...

    def full_reindex_reason(self) -> str | None:
        """Why the whole index must be rebuilt (model or settings changed), or None."""
        ...

    def request_sync(self, reason: str = "search") -> None:
        """Queue a sync (on the background thread when `background_sync`); never blocks."""
        ...

    def discover(self) -> list[MemoryFile]:
        """The memory files this backend serves."""
        ...

    def discover_sessions(self) -> list[SessionFile] | None:
        """Session transcripts when the sessions source is on, else None."""
        ...

    def search(
        self,
        query: str,
        max_results: int | None = None,
        min_score: float | None = None,
        mode: SearchMode = "hybrid",
        *,
        citations: str = "off",
        session_key: str | None = None,
        explain: bool = False,
    ) -> SearchResponse:
        """Ranked snippets; `response.backend` names the engine that served them. `explain`: each result's
        `explain` says why it ranked (None where the engine does not say)."""
        ...

    def memory_files(self) -> list[dict[str, Any]]:
        """The memory files the backend reads: path, size, mtimeMs and chunks (their count in the index)."""
        ...

    def file_chunks(self, rel_path: str) -> list[dict[str, Any]]:
        """One file's chunks in the index (id, startLine, endLine), in file order."""
        ...

    def read_file(self, rel_path: str, from_line: int | None = None, lines: int | None = None) -> dict[str, str]:
        """Text of one file the backend may serve (raises PathRefusedError for anything else)."""
        ...

    def status(self, deep: bool = False) -> dict[str, Any]:
        """The spec's MemoryProviderStatus: `backend` plus the backend's own details."""
        ...

    def start_background(self, watch: bool | None = None) -> None: ...

    def stop_background(self) -> None: ...

    def wait_idle(self, timeout: float | None = None) -> bool: ...

    def warm_session(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> MemoryBackend: ...

    def __exit__(self, *exc: object) -> None: ...
