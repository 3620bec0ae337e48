"""The builtin backend: `MemoryIndex` wires discovery, embeddings, the SQLite store, sync and search together."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from mdrecall.backends.base import checked_limits
from mdrecall.config.settings import Settings
from mdrecall.documents.sessions import (
    SESSIONS_PREFIX,
    SessionDeltaTracker,
    SessionFile,
    list_session_files,
    resolve_session_path,
    transcript_text,
)
from mdrecall.documents.workspace import (
    MemoryFile,
    MemoryWalk,
    bounded_text,
    escaped,
    list_memory_files,
    read_memory_lines,
    read_regular_bytes,
    resolve_memory_path,
)
from mdrecall.embeddings.base import EmbeddingProvider
from mdrecall.embeddings.factory import ProviderResult, ProviderSwitchedError, create_provider
from mdrecall.errors import (
    EmbeddingError,
    IndexBusyError,
    IndexWriteError,
    MdrecallError,
    WorkspaceError,
    describe_os_error,
)
from mdrecall.indexing.sync import (
    MEMORY_SOURCE,
    NO_INDEX_META,
    SESSIONS_SOURCE,
    ChunkProgressFn,
    ProgressFn,
    SyncReport,
    expected_meta,
    full_reindex_reason,
    incremental_sync,
    index_model,
    safe_reindex,
)
from mdrecall.locks import file_lock
from mdrecall.retrieval.calibration import calibration_for
from mdrecall.retrieval.rerank import rerank_probe, rerank_status
from mdrecall.retrieval.search import SearchMode, SearchResponse, run_search
from mdrecall.storage.identity import check_index_path, stale_temp_files
from mdrecall.storage.sqlite import Store, StoreCorruptError, remove_db_files
from mdrecall.text.redact import redact

LOCK_WAIT_SECONDS = 600.0
WORKSPACE_META_KEY = "workspace"


_WRITE_FAULTS = (OSError, apsw.FullError, apsw.ReadOnlyError, apsw.CantOpenError, apsw.IOError, apsw.PermissionsError)


def _write_fault(err: BaseException) -> BaseException | None:
    """The disk/permission fault behind an error, if any (SQLite may roll back on its own after a full disk,
    so the error seen last can be a failed ROLLBACK whose context holds the real cause)."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, _WRITE_FAULTS):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _keyword_only(response: SearchResponse, why: str) -> SearchResponse:
    """A keyword-index answer, saying why there are no vector results (never an error)."""
    note = f"{why}; keyword results only"
    response.notice = f"{note}; {response.notice}" if response.notice else note
    return response


@dataclass(frozen=True)
class SearchRequest:
    """One search's arguments, handed whole to the layers that answer it (`MemoryIndex.answer` and the
    backends that extend it), so the signature is written once."""

    query: str
    max_results: int | None = None
    min_score: float | None = None
    mode: SearchMode = "hybrid"
    citations: str = "off"
    session_key: str | None = None
    explain: bool = False  # each result says why it ranked (retrieval/explain.py)


class MemoryIndex:
    """A workspace's memory index: `sync()`, `search()`, `read_file()`, `status()`, `close()`.

    The embedding provider is created lazily (loading a model is the slow part and `status` should not
    pay for it unless it has to).
    """

    background_sync = True

    def __init__(self, settings: Settings, provider_result: ProviderResult | None = None) -> None:
        self.settings = settings
        self.config = settings.config
        self.db_path = settings.db_path
        self._provider_result = provider_result
        self._sync_lock = threading.Lock()
        self._store: Store | None = None
        self.last_sync: SyncReport | None = None
        self.recovery: str | None = None
        self.on_synced: Callable[[SyncReport], None] | None = None
        self._scheduler: Any = None
        self._watcher: Any = None
        self._tracker: SessionDeltaTracker | None = None
        self._dirty_hint = False
        self.discovery_skipped: list[tuple[str, str]] = []

    # -- wiring ------------------------------------------------------------------------------------

    @property
    def provider_result(self) -> ProviderResult:
        if self._provider_result is None:
            self._provider_result = create_provider(self.config)
        return self._provider_result

    @property
    def provider(self) -> EmbeddingProvider | None:
        return self.provider_result.provider

    def _open_store(self, path: Path, read_only: bool = False) -> Store:
        vector_cfg = self.config.store.vector
        return Store(
            path,
            vector_enabled=vector_cfg.enabled,
            extension_path=vector_cfg.extension_path,
            read_only=read_only,
            engine=vector_cfg.engine,
            json_embeddings=vector_cfg.json_embeddings,
            exact_vectors=vector_cfg.exact,
            encoding=vector_cfg.encoding,
            compress_text=self.config.store.compress_text,
        )

    @property
    def read_only(self) -> bool:
        """An existing index in a state directory (or file) we may not write: searched read-only, never synced."""
        path = self.db_path
        if not path.is_file():
            return False
        return not (os.access(path.parent, os.W_OK) and os.access(path, os.W_OK))

    @property
    def store(self) -> Store:
        if self._store is None:
            if self.read_only:
                self._store = self._open_store(self.db_path, read_only=True)
                self._check_owner(self._store)
                return self._store
            self._cleanup_at_start()
            try:
                self._store = self._open_store(self.db_path)
            except StoreCorruptError as err:
                self._discard_index(str(err))
                self._store = self._open_store(self.db_path)
            self._check_owner(self._store)
        return self._store

    def _check_owner(self, store: Store) -> None:
        """An index serves the workspace it was built from; another workspace must never resync (empty) it."""
        owner = store.read_meta_value(WORKSPACE_META_KEY)
        mine = escaped(self.settings.workspace)  # as text: a folder name may hold bytes that are not UTF-8
        if owner and owner != mine:
            if store is self._store:
                self._release_store()
            raise WorkspaceError(
                f"the index {self.db_path} belongs to workspace {owner}, not {mine}: "
                f"run in {owner} (or pass --workspace {owner}), or use another --agent or --db for this folder"
            )

    def has_index(self) -> bool:
        """Whether this index has been built at least once (a missing index is the only reason to block)."""
        return self.store.read_meta() is not None

    def _cleanup_at_start(self) -> None:
        """Remove a crashed reindex's temp files now, if no other process is syncing (never blocks)."""
        if not stale_temp_files(self.db_path):
            return
        check_index_path(self.db_path)
        with contextlib.suppress(OSError), file_lock(f"{self.db_path}.lock", timeout=0) as held:
            if held:  # else another process is syncing: its temp files are not stale
                self._remove_stale_temp_files()

    def _discard_index(self, reason: str) -> None:
        """Throw away an unusable index file; the markdown is the source of truth and the next sync rebuilds."""
        if self._store is not None:
            self._store.close()
            self._store = None
        remove_db_files(self.db_path)
        self.recovery = f"{reason}; index rebuilt from the markdown files"

    def _remove_stale_temp_files(self) -> None:
        """Temp DBs of a reindex that was killed before its swap (only called while holding the sync lock).

        What they embedded goes into the index's embedding cache first, so a killed rebuild is not paid twice."""
        leftovers = stale_temp_files(self.db_path)
        if not leftovers:
            return
        if self.config.cache.enabled:
            self._keep_vectors_of(leftovers)
        for leftover in leftovers:
            with contextlib.suppress(OSError):
                leftover.unlink()

    def _keep_vectors_of(self, leftovers: list[Path]) -> None:
        """Copy the vectors of killed rebuilds' temp DBs into the live index's cache (best effort: a temp DB cut
        mid-write may be unreadable, and the live index may need rebuilding itself)."""
        databases = [p for p in leftovers if not p.name.endswith(("-wal", "-shm", "-journal"))]
        if not databases:
            return
        with contextlib.suppress(Exception):
            live = self._open_store(self.db_path)
            try:
                for database in databases:
                    scratch_dir = tempfile.TemporaryDirectory(dir=self.db_path.parent)  # 0700, removed after
                    with contextlib.suppress(Exception), scratch_dir as scratch:
                        # read a copy (the file and its WAL, never its -shm): a stale shared-memory file
                        # another handle still maps could fault the process that reads it
                        copy = Path(scratch) / "salvage.sqlite"
                        shutil.copyfile(database, copy)
                        wal = database.with_name(f"{database.name}-wal")
                        if wal.is_file():
                            shutil.copyfile(wal, Path(scratch) / "salvage.sqlite-wal")
                        live.copy_cache_from(copy)
            finally:
                live.close()

    def _release_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def close(self) -> None:
        self.stop_background()
        self._release_store()
        provider = self._provider_result.provider if self._provider_result else None
        if provider is not None:
            provider.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def discover(self) -> list[MemoryFile]:
        """Memory files; names that cannot be indexed go to `discovery_skipped` (reported by the next sync)."""
        self.discovery_skipped = []
        return list_memory_files(self.settings.workspace, self.config.extra_paths, self.discovery_skipped)

    def discover_streamed(self) -> MemoryWalk:
        """`discover` as a walk that starts again on each iteration: a single-pass sync holds no file list."""
        self.discovery_skipped = []
        return MemoryWalk(self.settings.workspace, self.config.extra_paths, self.discovery_skipped)

    @property
    def sessions_enabled(self) -> bool:
        return SESSIONS_SOURCE in self.config.sources

    def discover_sessions(self) -> list[SessionFile] | None:
        """Transcripts under `<state>/agents/<agent>/sessions` when the sessions source is on, else None.

        Reset archives (`*.jsonl.reset.*`) only with `sync.sessions.includeResetArchives`."""
        if not self.sessions_enabled:
            return None
        files = list_session_files(self.settings.sessions_dir, self.discovery_skipped)
        if not self.config.sync.sessions.include_reset_archives:
            files = [f for f in files if not f.archived]
        return files

    # -- sync --------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _process_lock(self) -> Iterator[None]:
        """One sync at a time across processes: an advisory lock on `{db}.lock`."""
        check_index_path(self.db_path)  # before the .lock is created beside something that is not ours
        with file_lock(f"{self.db_path}.lock", timeout=LOCK_WAIT_SECONDS) as held:
            if not held:
                raise IndexBusyError(f"another process is indexing {self.db_path}; try again later")
            yield

    def full_reindex_reason(self, store: Store | None = None) -> str | None:
        store = store or self.store
        stored = store.read_meta()
        reason = full_reindex_reason(stored, expected_meta(self.provider, self.config))
        vector_changed = stored is not None and bool(stored.get("vectorTable")) != store.vector.available
        if reason is None and self.provider is not None and vector_changed:
            reason = "sqlite-vec availability changed"
        return reason

    def sync(
        self,
        force: bool = False,
        reason: str = "manual",
        progress: ProgressFn | None = None,
        respect_session_deltas: bool = False,
        chunk_progress: ChunkProgressFn | None = None,
    ) -> SyncReport:
        """Bring the index up to date; a full rebuild (temp DB, then swapped in) when forced or the meta changed.

        Syncs write through their own connection, so searches on `self.store` keep reading the last
        committed state meanwhile. A corrupt index found on the way is discarded and rebuilt, once.
        """
        if self.read_only:
            raise IndexWriteError(f"cannot update the index: {self.db_path} is read-only (searching it as it is)")
        try:
            try:
                report = self._locked_sync(force, reason, progress, respect_session_deltas, chunk_progress)
            except ProviderSwitchedError:  # the fallback took over: rebuild under its identity (once)
                report = self._locked_sync(force, reason, progress, respect_session_deltas, chunk_progress)
        except (OSError, apsw.Error) as err:
            fault = _write_fault(err)
            if fault is None:
                raise
            raise IndexWriteError(describe_os_error(fault, "index not updated (what was indexed is kept)")) from None
        if self.on_synced is not None:
            self.on_synced(report)
        return report

    def _locked_sync(
        self,
        force: bool,
        reason: str,
        progress: ProgressFn | None,
        respect_session_deltas: bool,
        chunk_progress: ChunkProgressFn | None = None,
    ) -> SyncReport:
        with self._sync_lock, self._process_lock():
            self._remove_stale_temp_files()
            gate = self._session_gate if respect_session_deltas else None
            try:
                return self._sync_with_writer(force, reason, progress, gate, chunk_progress)
            except (apsw.CorruptError, apsw.NotADBError, StoreCorruptError) as err:
                self._discard_index(f"index file is corrupt: {err}")
                return self._sync_with_writer(True, reason, progress, None, chunk_progress)

    def _open_writer(self) -> Store:
        try:
            return self._open_store(self.db_path)
        except StoreCorruptError as err:
            self._discard_index(str(err))
            return self._open_store(self.db_path)

    def _sync_with_writer(
        self,
        force: bool,
        reason: str,
        progress: ProgressFn | None,
        gate: Callable[[SessionFile], bool] | None,
        chunk_progress: ChunkProgressFn | None = None,
    ) -> SyncReport:
        writer = self._open_writer()
        try:
            self._check_owner(writer)
            self._dirty_hint = False
            files = self.discover_streamed()
            sessions = self.discover_sessions()
            why = "forced" if force else self.full_reindex_reason(writer)
            if why == NO_INDEX_META and self.recovery:  # the file was discarded: say why, not that it is empty
                why = self.recovery
            if why is None:
                report = incremental_sync(
                    writer,
                    self.provider,
                    self.config,
                    files,
                    progress,
                    reason,
                    sessions,
                    session_gate=gate,
                    chunk_progress=chunk_progress,
                )
            else:
                report = safe_reindex(
                    writer,
                    self._open_store,
                    self.provider,
                    self.config,
                    files,
                    progress,
                    reason,
                    sessions,
                    chunk_progress=chunk_progress,
                )
                report.full_reason = why
            report.skipped[:0] = self.discovery_skipped
            self._mark_sessions_synced(writer, sessions)
            with writer.transaction():
                writer.write_meta_value("last_sync", json.dumps({"at": int(time.time() * 1000), "reason": reason}))
                writer.write_meta_value(WORKSPACE_META_KEY, escaped(self.settings.workspace))
            self.last_sync = report
            return report
        finally:
            writer.checkpoint()
            writer.close()
            if self._store is not None:
                self._store.refresh_vector_state()

    def dirty_files(self) -> list[str]:
        """Paths whose file on disk differs (by mtime/size) from its row, plus new and vanished ones."""
        found: list[MemoryFile | SessionFile] = list(self.discover())
        sources = [MEMORY_SOURCE]
        sessions = self.discover_sessions()
        if sessions is not None:
            found += sessions
            sources.append(SESSIONS_SOURCE)
        indexed = {}
        for source in sources:
            indexed.update(self.store.get_files(source))
        on_disk = {f.path: f for f in found}
        changed = [
            path
            for path, f in on_disk.items()
            if path not in indexed or (indexed[path].mtime, indexed[path].size) != (f.mtime_ms, f.size)
        ]
        vanished = [path for path in indexed if path not in on_disk]
        return sorted(changed + vanished)

    # -- freshness: session deltas, background sync, watcher -----------------------------------------

    def _session_gate(self, file: SessionFile) -> bool:
        """Re-index a changed transcript only once its delta crosses the thresholds (watch mode)."""
        tracker = self._session_tracker()
        tracker.observe(file.abs_path, file.size, file.abs_path, archived=file.archived)
        return tracker.due(file.abs_path)

    def _session_tracker(self) -> SessionDeltaTracker:
        """Delta tracker, seeded with the indexed sizes so only bytes appended since the last sync count."""
        if self._tracker is None:
            deltas = self.config.sync.sessions
            tracker = SessionDeltaTracker(deltas.delta_bytes, deltas.delta_messages)
            for path, row in self.store.get_files(SESSIONS_SOURCE).items():
                tracker.mark_synced(self.settings.sessions_dir / path.removeprefix("sessions/"), row.size)
            self._tracker = tracker
        return self._tracker

    def _mark_sessions_synced(self, store: Store, sessions: list[SessionFile] | None) -> None:
        if not sessions:
            return
        tracker = self._session_tracker()
        rows = store.get_files(SESSIONS_SOURCE)
        for file in sessions:
            row = rows.get(file.path)
            if row is not None:
                tracker.mark_synced(file.abs_path, row.size, archived=file.archived)

    def start_background(self, watch: bool | None = None) -> None:
        """Sync in a background thread from now on: on file changes (watcher), on an interval, on demand."""
        from mdrecall.indexing.watch import MemoryWatcher, SyncScheduler

        if self._scheduler is None:
            self._scheduler = SyncScheduler(self._background_sync, self.config.sync.interval_minutes).start()
        use_watch = self.config.sync.watch if watch is None else watch
        if use_watch and self._watcher is None:
            self._watcher = MemoryWatcher(
                self.settings.workspace,
                list(self.config.extra_paths),
                self._on_files_changed,
                debounce_ms=self.config.sync.watch_debounce_ms,
                sessions_dir=self.settings.sessions_dir if self.sessions_enabled else None,
            ).start()

    def request_sync(self, reason: str = "search") -> None:
        """Ask for a sync on the background thread (started on first use, no watcher); never blocks."""
        if self._scheduler is None:
            self.start_background(watch=False)
        self._scheduler.request(reason)

    def _background_sync(self, reason: str) -> SyncReport:
        return self.sync(reason=reason, respect_session_deltas=True)

    def _on_files_changed(self, paths: set[str]) -> None:
        """Watcher callback (its own thread): mark dirty and hand the work to the scheduler, never sync here."""
        watcher = self._watcher
        session_paths = {p for p in paths if watcher is not None and watcher.is_session_path(p)}
        if paths - session_paths:
            self._dirty_hint = True
            self._scheduler.request("watch")
        if session_paths:
            tracker = self._session_tracker()
            due = [p for p in session_paths if tracker.observe(p, read_tail=p)]
            if due:
                self._scheduler.request("session-delta")

    def warm_session(self) -> None:
        """Session start: sync in the background (or inline when no background runner) if configured."""
        if not self.config.sync.on_session_start:
            return
        if self._scheduler is not None:
            self._scheduler.warm_session()
        else:
            self.ensure_fresh()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for background syncs to finish (tests, CLI shutdown)."""
        return True if self._scheduler is None else bool(self._scheduler.wait_idle(timeout))

    def stop_background(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None

    def _request_sync_if_dirty(self) -> None:
        """On-search trigger: never blocks the search; results may lag until the background sync lands."""
        if self._scheduler is None or not self.config.sync.on_search:
            return
        dirty = self._dirty_hint if self._watcher is not None else self.is_dirty()
        if dirty:
            self._scheduler.request("search")

    def is_dirty(self) -> bool:
        return self.full_reindex_reason() is not None or bool(self.dirty_files())

    def ensure_fresh(self, progress: ProgressFn | None = None) -> SyncReport | None:
        """Sync when the index is missing or dirty (what search/get/status do before answering)."""
        if self.is_dirty():
            return self.sync(reason="stale", progress=progress)
        return None

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
        """Hybrid search. `citations` ("on" | "off" | "auto" with `session_key`) appends `Source:` lines;
        the memory_search tool passes the configured mode, library and CLI callers get plain snippets.
        `explain`: each result carries the score after every ranking stage (`SearchResult.explain`)."""
        max_results, min_score = checked_limits(max_results, min_score)
        return self.answer(SearchRequest(query, max_results, min_score, mode, citations, session_key, explain))

    def answer(self, request: SearchRequest) -> SearchResponse:
        """Answer one search; where a backend adds its recovery (here: a corrupt index file is rebuilt once)."""
        try:
            return self._search(request)
        except (apsw.CorruptError, apsw.NotADBError) as err:
            with self._sync_lock:
                self._discard_index(f"index file is corrupt: {err}")
            self.sync(force=True, reason="recovery")
            return self._search(request)

    def effective_min_score(self, explicit: float | None = None) -> tuple[float, str]:
        """The minimum score in force and where it comes from.

        The spec's 0.35 is calibrated for large remote models. A provider may recommend its own floor
        (small local models give lower cosines for the same relevance); an explicit argument or a
        `query.minScore` in the config always wins.
        """
        if explicit is not None:
            return explicit, "argument"
        if "min_score" in self.config.query.model_fields_set:
            return self.config.query.min_score, "config"
        recommended = self.provider.recommended_min_score if self.provider is not None else None
        if recommended is not None:
            return float(recommended), "model default"
        return self.config.query.min_score, "default"

    @contextlib.contextmanager
    def _search_store(self) -> Iterator[Any]:
        """The store one search reads: the open index file here (a backend may hand out a snapshot)."""
        yield self.store

    def _search(self, request: SearchRequest) -> SearchResponse:
        """`run_search` over `_search_store()` with the model the index holds: keyword-only (with a notice)
        when the provider's model differs from the index's or the provider fails."""
        self._request_sync_if_dirty()
        min_score, source = self.effective_min_score(request.min_score)
        explicit = source in ("argument", "config")  # a hard floor; otherwise the search's default rules
        with self._search_store() as store:

            def run(provider: EmbeddingProvider | None, model: str) -> SearchResponse:
                return run_search(
                    store,
                    provider,
                    model,
                    self.config.query,
                    request.query,
                    sources=self.config.sources,
                    max_results=request.max_results,
                    min_score=min_score if explicit else None,
                    mode=request.mode,
                    citations=request.citations,  # type: ignore[arg-type]
                    session_key=request.session_key,
                    default_min_score=None if explicit else min_score,
                    explain=request.explain,
                )

            provider = self.provider
            meta = store.read_meta() or {}
            stored_model, stored_dims = meta.get("model"), meta.get("vectorDims")
            if provider is None:
                return run(None, index_model(None))
            if stored_model and stored_model != provider.model:
                why = f"the index holds {stored_model} vectors, the provider now is {provider.model}"
                return _keyword_only(run(None, stored_model), why)
            if stored_dims and provider.dims and stored_dims != provider.dims:  # same name, another width
                why = (
                    f"the index holds vectors of {stored_dims} numbers, {provider.model} gives {provider.dims} "
                    "(a sync rebuilds it)"
                )
                return _keyword_only(run(None, stored_model or provider.model), why)
            try:
                return run(provider, provider.model)
            except ProviderSwitchedError as err:
                if stored_model == provider.model:  # switched to the fallback the index was built with
                    return run(provider, provider.model)
                return _keyword_only(run(None, stored_model or provider.model), str(err))
            except EmbeddingError as err:
                why = f"embedding provider unavailable: {err}"
                return _keyword_only(run(None, stored_model or provider.model), why)

    def memory_files(self) -> list[dict[str, Any]]:
        """Every memory file the index reads, with its chunk count in the index (0: not indexed yet)."""
        counts = self.store.chunk_counts()
        files = [
            {"path": f.path, "size": f.size, "mtimeMs": f.mtime_ms, "chunks": counts.get(f.path, 0)}
            for f in self.discover()
        ]
        return sorted(files, key=lambda f: f["path"])

    def file_chunks(self, rel_path: str) -> list[dict[str, Any]]:
        """One file's chunks in the index, in file order: id and line range."""
        return [{"id": cid, "startLine": s, "endLine": e} for cid, s, e in self.store.file_chunks(rel_path)]

    def read_file(self, rel_path: str, from_line: int | None = None, lines: int | None = None) -> dict[str, str]:
        """Text of a memory file, optionally `lines` lines starting at 1-based `from_line`."""
        if from_line is not None and from_line < 1:
            raise MdrecallError("from must be a line number >= 1")
        if lines is not None and lines < 1:
            raise MdrecallError("lines must be >= 1")
        session = self.sessions_enabled and (rel_path or "").strip().startswith(SESSIONS_PREFIX)
        if session:
            abs_path = resolve_session_path(self.settings.sessions_dir, rel_path)
        else:
            abs_path = resolve_memory_path(self.settings.workspace, rel_path, self.config.extra_paths)
        if session:  # a transcript: its indexed, redacted text, never the raw JSONL lines
            raw = read_regular_bytes(abs_path, rel_path, self.config.max_file_bytes)  # larger ones are not indexed
            return {"path": rel_path.strip(), **bounded_text(transcript_text(raw, from_line, lines))}
        # regular files only, bounded; secrets masked as the index masks them (`redactMemory`)
        mask = redact if self.config.redact_memory else None
        return read_memory_lines(abs_path, rel_path, from_line, lines, mask=mask)

    # -- status ------------------------------------------------------------------------------------

    def status(self, deep: bool = False) -> dict[str, Any]:
        """The spec's MemoryProviderStatus fields; `deep` also probes embeddings and the vector path."""
        result = self.provider_result
        provider = result.provider
        store = self.store
        counts = store.counts()
        meta = store.read_meta() or {}
        out: dict[str, Any] = {
            "backend": "builtin",
            "provider": provider.id if provider else "none",
            "model": provider.model if provider else None,
            "requestedProvider": result.requested,
            "providerReason": result.reason,
            "searchMode": "hybrid" if provider else "fts-only",
            "files": sum(c["files"] for c in counts.values()),
            "chunks": sum(c["chunks"] for c in counts.values()),
            "dirty": self.is_dirty(),
            "workspaceDir": str(self.settings.workspace),
            "dbPath": str(self.db_path),
            "extraPaths": list(self.config.extra_paths),
            "sources": list(self.config.sources),
            "sourceCounts": [
                {"source": s, "files": counts.get(s, {}).get("files", 0), "chunks": counts.get(s, {}).get("chunks", 0)}
                for s in self.config.sources
            ],
            "cache": {"enabled": self.config.cache.enabled, "entries": store.cache_count()},
            "fts": {"enabled": store.fts.enabled, "available": store.fts.available},
            "vector": {
                "enabled": store.vector.enabled,
                "available": store.vector.available,
                "mode": self._vector_mode(),
                "dims": store.vector.dims or meta.get("vectorDims"),
                # how the index stores its vectors on disk (store.vector.encoding when it was built)
                "encoding": meta.get("vectorEncoding", "float32") if meta.get("vectorDims") else None,
            },
        }
        if self.config.cache.max_entries:
            out["cache"]["maxEntries"] = self.config.cache.max_entries
        if store.fts.error:
            out["fts"]["error"] = store.fts.error
        if store.vector.extension_path:
            out["vector"]["extensionPath"] = store.vector.extension_path
        if store.vector.load_error:
            out["vector"]["loadError"] = store.vector.load_error
        if result.unavailable_reason:
            out["providerUnavailable"] = result.unavailable_reason
        fallback_from = result.fallback_from or (provider.fallback_from if provider is not None else None)
        if fallback_from:
            reason = result.fallback_reason or (provider.fallback_reason if provider is not None else None)
            out["fallback"] = {"from": fallback_from, "reason": reason}
        batch = provider.batch_status() if provider is not None else None
        if batch:
            out["batch"] = batch
        min_score, min_score_source = self.effective_min_score()
        query_cfg = self.config.query
        calibration = calibration_for(provider.model if provider is not None else None, query_cfg.scoring)
        abstain = query_cfg.abstain_below
        if calibration is not None and min_score_source not in ("argument", "config"):
            min_score, min_score_source = 0.0, "calibrated"
            abstain = calibration.abstain_below if abstain is None else abstain
        relative_floor = 0.0  # the tail floor (retrieval/tail.py) works on calibrated scores only
        if calibration is not None:
            default_floor = calibration.relative_floor if min_score_source != "config" else 0.0
            relative_floor = default_floor if query_cfg.relative_floor is None else query_cfg.relative_floor
        out["query"] = {
            "maxResults": self.config.query.max_results,
            "minScore": min_score,
            "minScoreSource": min_score_source,
            "scoring": "calibrated" if calibration is not None else "fused",
            "abstainBelow": abstain or 0.0,
            "relativeFloor": relative_floor,
            "hybrid": self.config.query.hybrid.enabled,
            "rerank": rerank_status(self.config.query.rerank),
        }
        if self.recovery:
            out["recovered"] = self.recovery
        skipped = store.skipped_files()
        if skipped:  # recorded so they are not retried until they change: said here every time
            out["skippedFiles"] = [{"path": path, "reason": reason} for path, reason in skipped]
        if provider is not None:
            out["vectorsPending"] = store.pending_vector_count(meta.get("model") or provider.model)
        if self.last_sync is not None and self.last_sync.provider_error:
            out["providerError"] = self.last_sync.provider_error
        last = store.read_meta_value("last_sync")
        if last:
            out["lastSync"] = json.loads(last)
        if deep:
            out["probe"] = self._probe()
        return out

    def _vector_mode(self) -> str:
        if self.provider_result.provider is None:
            return "off (fts-only)"
        if self.store.uses_vec0:
            return "sqlite-vec (vec0 KNN)"
        if self.config.store.vector.engine == "sqlite-vec":
            return "numpy fallback (sqlite-vec unavailable)"
        from mdrecall.storage.vectors import PRUNED_MIN_WINDOWS, QUANTIZED_MIN_WINDOWS, simsimd_available

        windows = self.store.vector_row_count()
        if not self.config.store.vector.exact and simsimd_available():
            if windows >= QUANTIZED_MIN_WINDOWS:
                return f"numpy (int8 first pass over {windows} windows, exact float32 rescoring)"
            if windows >= PRUNED_MIN_WINDOWS:
                skips = f"an int8 pass over {windows} windows skips chunks that cannot rank"
                return f"numpy (exact, float32 matrix; {skips})"
        return "numpy (exact, float32 matrix)"

    def _probe(self) -> dict[str, Any]:
        """Embed a short text and run a vector query: proves the provider and the vector path work."""
        probe: dict[str, Any] = {}
        provider = self.provider
        if provider is None:
            skipped = self.provider_result.requested == "none"  # keyword-only by choice is not a failure
            probe["embeddings"] = {"ok": False, "error": self.provider_result.unavailable_reason}
            if skipped:
                probe["embeddings"]["skipped"] = True
        else:
            started = time.perf_counter()
            try:
                outcome = provider.probe()  # remote providers check key and endpoint themselves
                if outcome is not None:
                    probe["embeddings"] = dict(outcome)
                else:
                    vector = provider.embed_query("mdrecall status probe")
                    probe["embeddings"] = {"ok": True, "dims": int(len(vector))}
                probe["embeddings"]["ms"] = round((time.perf_counter() - started) * 1000, 1)
            except Exception as err:  # a probe reports any failure instead of raising
                probe["embeddings"] = {"ok": False, "error": str(err)}
        try:
            store = self.store
            ok = store.vec_version() is not None
            probe["vector"] = {"ok": ok, "rows": store.vector_row_count()}
            if not ok:
                probe["vector"]["error"] = store.vector.load_error or "sqlite-vec disabled"
                if not store.vector.enabled:  # store.vector.enabled = false: numpy search by choice
                    probe["vector"]["skipped"] = True
        except Exception as err:
            probe["vector"] = {"ok": False, "error": str(err)}
        if self.config.query.rerank.enabled:
            probe["rerank"] = rerank_probe(self.config.query.rerank)
        return probe


BuiltinBackend = MemoryIndex


def open_builtin(settings: Settings, provider_result: ProviderResult | None = None) -> MemoryIndex:
    return MemoryIndex(settings, provider_result)
