"""`FallbackBackend`: a primary engine (qmd) in front of the builtin index, which answers whenever it cannot.

"Cannot" is a failure (no binary, an error, a timeout, no embeddings for vsearch/query) and, unless
`qmd.fallbackOnEmpty = false`, an empty answer: qmd `search` needs every term of the query in a note.

The builtin index is kept in sync too, so a fallback answer is as fresh as the markdown. Every answer says
which engine served it (`response.backend`) and, after a failure, why (`response.backend_fallback`); the
next search tries the primary again, so a recovered sidecar serves again without a restart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mdrecall.errors import PathRefusedError

if TYPE_CHECKING:
    from mdrecall.backends.builtin import MemoryIndex
    from mdrecall.backends.qmd import QmdBackend
    from mdrecall.config.settings import Settings
    from mdrecall.documents.sessions import SessionFile
    from mdrecall.documents.workspace import MemoryFile
    from mdrecall.embeddings.factory import ProviderResult
    from mdrecall.indexing.sync import ChunkProgressFn, ProgressFn, SyncReport
    from mdrecall.retrieval.search import SearchMode, SearchResponse

logger = logging.getLogger(__name__)
EMPTY_REASON = "qmd found nothing"


class FallbackBackend:
    """The `MemoryBackend` protocol over qmd (primary) and the builtin index (fallback)."""

    def __init__(self, primary: QmdBackend, fallback: MemoryIndex) -> None:
        self.primary = primary
        self.fallback = fallback
        self.settings = fallback.settings
        self.config = fallback.config
        self.on_synced: Callable[[SyncReport], None] | None = None
        self.last_served = "none"
        self.last_fallback: dict[str, Any] | None = None
        self._timer: Any = None  # a SyncScheduler while background work runs
        self._explicit_sync = False
        fallback.on_synced = self._builtin_synced  # background (watch/interval) syncs update qmd too

    def _builtin_synced(self, report: SyncReport) -> None:
        if not self._explicit_sync:
            changed = bool(report.files_indexed or report.files_deleted or report.full_reindex)
            self.primary.refresh(changed=changed)
        if self.on_synced is not None:
            self.on_synced(report)

    # -- what only the builtin side has (the CLI prints the embedding model of `index`) ------------------

    @property
    def provider(self) -> Any:
        return self.fallback.provider

    @property
    def provider_result(self) -> Any:
        return self.fallback.provider_result

    @property
    def read_only(self) -> bool:
        return bool(self.fallback.read_only)

    @property
    def db_path(self) -> Any:
        return self.fallback.db_path

    # qmd refreshes itself: searches sync inline (`ensure_fresh`), never on a background thread
    background_sync = False

    def has_index(self) -> bool:
        """Always true: qmd builds its own index when it refreshes, so no caller has to build one first."""
        return True

    def dirty_files(self) -> list[str]:
        return self.fallback.dirty_files()

    def full_reindex_reason(self) -> str | None:
        return self.fallback.full_reindex_reason()

    def request_sync(self, reason: str = "search") -> None:
        """The builtin index's background sync; its report reaches qmd through `_builtin_synced`."""
        self.fallback.request_sync(reason)

    def discover(self) -> list[MemoryFile]:
        return self.fallback.discover()

    def discover_sessions(self) -> list[SessionFile] | None:
        return self.fallback.discover_sessions()

    # -- sync --------------------------------------------------------------------------------------

    def sync(
        self,
        force: bool = False,
        reason: str = "manual",
        progress: ProgressFn | None = None,
        respect_session_deltas: bool = False,
        chunk_progress: ChunkProgressFn | None = None,
    ) -> SyncReport:
        """Sync the builtin index, then `qmd update` (+ `qmd embed` when due and the search mode uses vectors);
        a qmd failure is recorded and said once, not raised."""
        self._explicit_sync = True
        try:
            report = self.fallback.sync(force, reason, progress, respect_session_deltas, chunk_progress)
        finally:
            self._explicit_sync = False
        # `mdrecall index` waits for `qmd embed` only when the search mode uses vectors (vsearch, query)
        self.primary.refresh(force=True, wait_embed=self.primary.needs_embeddings)
        return report

    def is_dirty(self) -> bool:
        return self.fallback.is_dirty()

    def ensure_fresh(self, progress: ProgressFn | None = None) -> SyncReport | None:
        """Builtin sync when dirty; qmd on boot, after changes (debounced) and every update.interval."""
        report = self.fallback.ensure_fresh(progress)  # a sync here reaches qmd through _builtin_synced
        if report is None:
            self.primary.refresh()
        return report

    # -- reading -----------------------------------------------------------------------------------

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
        """qmd's answer (it does not say why a result ranked: `explain` then gives none), else the builtin's:
        when qmd fails, and (`qmd.fallbackOnEmpty`) when it finds nothing."""
        from mdrecall.backends.qmd import QmdError

        try:
            response = self.primary.search(query, max_results, min_score, citations=citations, session_key=session_key)
        except Exception as err:  # whatever broke in the sidecar path, the builtin index answers
            reason = str(err) if isinstance(err, QmdError) else f"qmd backend error: {type(err).__name__}: {err}"
            self.primary.notices.once(reason, f"qmd search failed, the builtin index answers: {reason}")
            response = self._builtin(query, max_results, min_score, mode, citations, session_key, explain, reason)
            response.fallback_logged = True  # said on stderr (now or earlier in this run): the CLI skips its note
            self.last_fallback = {"from": "qmd", "reason": reason, "at": int(time.time() * 1000)}
        else:
            if not response.results and response.notice is None and self.primary.cfg.fallback_on_empty:
                # qmd `search` is all-terms BM25: a question worded unlike the note finds nothing there
                builtin = self._builtin(
                    query, max_results, min_score, mode, citations, session_key, explain, EMPTY_REASON
                )
                if builtin.results:
                    response = builtin
            self.last_fallback = None  # qmd works (it found something, or nothing)
        self.last_served = response.backend
        return response

    def _builtin(
        self,
        query: str,
        max_results: int | None,
        min_score: float | None,
        mode: SearchMode,
        citations: str,
        session_key: str | None,
        explain: bool,
        reason: str,
    ) -> SearchResponse:
        with contextlib.suppress(Exception):  # an index never built (qmd answered so far) is built now
            self.fallback.ensure_fresh()
        response = self.fallback.search(
            query, max_results, min_score, mode, citations=citations, session_key=session_key, explain=explain
        )
        response.backend = "builtin"
        response.backend_fallback = {"from": "qmd", "reason": reason}
        return response

    def memory_files(self) -> list[dict[str, Any]]:
        """The workspace's memory files with their chunks in the builtin index (qmd keeps its own)."""
        return self.fallback.memory_files()

    def file_chunks(self, rel_path: str) -> list[dict[str, Any]]:
        return self.fallback.file_chunks(rel_path)

    def read_file(self, rel_path: str, from_line: int | None = None, lines: int | None = None) -> dict[str, str]:
        """`qmd/<collection>/<path>` from that collection's root; anything else by the builtin rules."""
        if self.primary.owns_path(rel_path):
            return self.primary.read_file(rel_path, from_line, lines)
        try:
            return self.fallback.read_file(rel_path, from_line, lines)
        except PathRefusedError as err:
            raise PathRefusedError(f"{err}; qmd collections are read as qmd/<collection>/<path>") from None

    def status(self, deep: bool = False) -> dict[str, Any]:
        out = self.fallback.status(deep)
        out["backend"] = "qmd"
        try:
            out["qmd"] = self.primary.status()
        except Exception as err:  # status must report, not raise
            out["qmd"] = {"available": False, "error": f"{type(err).__name__}: {err}", "collections": []}
        reason = (self.last_fallback or {}).get("reason") or self.primary.unavailable_reason()
        if reason is None and not out["qmd"].get("available", True):
            reason = out["qmd"].get("error")
        # who answered the last search, or (no search yet in this process) who would answer one now
        out["servedBy"] = self.last_served if self.last_served != "none" else ("builtin" if reason else "qmd")
        if reason:
            out["backendFallback"] = {"from": "qmd", "reason": reason}
        return out

    # -- background --------------------------------------------------------------------------------

    def start_background(self, watch: bool | None = None) -> None:
        self.fallback.start_background(watch)
        if self._timer is None and self.primary.interval_seconds > 0:
            from mdrecall.indexing.watch import SyncScheduler

            # `qmd update` when due (the first check on boot), checked at least once a minute: the same
            # scheduler the builtin index uses for its interval syncs
            every = min(self.primary.interval_seconds, 60.0) / 60
            self._timer = SyncScheduler(lambda _reason: self.primary.refresh(force=False), every).start()
            self._timer.request("boot")

    def stop_background(self) -> None:
        if self._timer is not None:
            self._timer.stop(timeout=5)
            self._timer = None
        self.fallback.stop_background()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self.fallback.wait_idle(timeout) and self.primary.wait_idle(timeout)

    def warm_session(self) -> None:
        self.fallback.warm_session()

    def close(self) -> None:
        self.stop_background()
        self.primary.close()
        self.fallback.close()

    def __enter__(self) -> FallbackBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fallback_settings(settings: Settings) -> Settings:
    """The builtin fallback also indexes the `[qmd] paths`, so a failing sidecar never hides those notes."""
    config = settings.config
    extra = list(config.extra_paths)
    for entry in config.qmd.paths:
        if entry.path not in extra:
            extra.append(entry.path)
    if extra == list(config.extra_paths):
        return settings
    return dataclasses.replace(settings, config=config.model_copy(update={"extra_paths": extra}))


def open_qmd(settings: Settings, provider_result: ProviderResult | None = None) -> FallbackBackend:
    """`backend = "qmd"`: qmd first, the builtin index (over the same notes) behind it for every failure."""
    from mdrecall.backends.builtin import MemoryIndex
    from mdrecall.backends.qmd import QmdBackend

    return FallbackBackend(QmdBackend(settings), MemoryIndex(fallback_settings(settings), provider_result))
