"""Freshness triggers: a debounced file watcher for memory files and a one-worker sync scheduler.

`MemoryWatcher` reports *which* memory (and session) files changed, once a burst of events has been quiet for
`debounce_ms` (a trailing-edge debounce, the spec's 1.5 s). It never watches the workspace recursively:
workspaces are often project checkouts (`.git`, `node_modules`) where recursive inotify watches are costly and
can exhaust the per-user watch limit. Instead it watches each target's parent directory non-recursively (which
sees `MEMORY.md` edits and `memory/` being created, deleted or moved) and each target directory recursively
while it exists. Whenever a directory on the way to a target appears or disappears, the set of watches is
reconciled, and files found in a newly watched directory are reported as changed (they may have been written
before the watch existed).

`SyncScheduler` runs sync requests in one background thread: callers never block, and requests arriving while
a sync runs are coalesced into a single follow-up run.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

from mdrecall.documents.sessions import is_session_name
from mdrecall.documents.workspace import MEMORY_DIR, ROOT_MEMORY_FILES, resolve_extra_path

logger = logging.getLogger(__name__)

ChangeCallback = Callable[[set[str]], None]

# Opens and close-without-write are left out on purpose: our own sync reads every file, and must not re-trigger.
_EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
_WANTED_TYPES = frozenset(cls.event_type for cls in _EVENT_FILTER)
_LIMIT_ERRNOS = {errno.ENOSPC, errno.EMFILE, errno.ENFILE}
_RECONCILE_ROUNDS = 8


def _norm(path: str | os.PathLike[str] | bytes) -> str:
    return os.path.normpath(os.path.abspath(os.fsdecode(path)))


def _is_under(path: str, root: str) -> bool:
    """path == root or inside it (string-wise on normalised absolute paths)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _is_real_dir(path: str) -> bool:
    """A directory that is not a symlink (discovery never follows links, so neither does the watcher)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _nearest_existing_dir(path: str) -> str | None:
    current = path
    while not _is_real_dir(current):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return current


def _is_markdown(path: str) -> bool:
    return path.lower().endswith(".md")


@dataclass(frozen=True)
class _Target:
    """A place memory lives. kind "memory": the path itself if .md, or .md files below it; "sessions": transcripts
    directly inside it."""

    path: str
    kind: str

    @property
    def recursive(self) -> bool:
        return self.kind == "memory"

    def matches_file(self, path: str) -> bool:
        if self.kind == "sessions":
            return os.path.dirname(path) == self.path and is_session_name(os.path.basename(path))
        return _is_under(path, self.path) and _is_markdown(path)

    def matches_dir(self, path: str) -> bool:
        """A directory created/removed inside a memory tree may carry .md files without per-file events."""
        return self.kind == "memory" and _is_under(path, self.path)


_WatchKey = tuple[str, bool]


class _Handler(FileSystemEventHandler):
    def __init__(self, on_event: Callable[[FileSystemEvent], None]) -> None:
        super().__init__()
        self._on_event = on_event

    def dispatch(self, event: FileSystemEvent) -> None:
        self._on_event(event)


class MemoryWatcher:
    """Watch memory files (and optionally session transcripts); call on_change(paths) after a quiet period.

    Paths are absolute, normalised strings. `max_wait_ms` bounds how long a never-ending stream of events can
    postpone the callback (None: pure trailing edge). The callback runs on the watcher's own thread; exceptions
    from it are logged, never fatal.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        extra_paths: Sequence[str] | None,
        on_change: ChangeCallback,
        debounce_ms: int = 1500,
        sessions_dir: str | os.PathLike[str] | None = None,
        *,
        max_wait_ms: int | None = 30_000,
    ) -> None:
        if debounce_ms < 0:
            raise ValueError("debounce_ms must be >= 0")
        self.workspace = _norm(workspace)
        self.sessions_dir = _norm(sessions_dir) if sessions_dir is not None else None
        self.on_change = on_change
        self.debounce_s = debounce_ms / 1000
        self.max_wait_s = None if max_wait_ms is None else max(max_wait_ms, debounce_ms) / 1000
        self._targets = self._build_targets(Path(self.workspace), list(extra_paths or []))
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._first_event = 0.0
        self._last_event = 0.0
        self._needs_reconcile = False
        self._stopping = False
        self._started = False
        self._stopped = False
        self._watch_lock = threading.Lock()
        self._watches: dict[_WatchKey, tuple[BaseObserver, ObservedWatch]] = {}
        self._removed_dirs: set[str] = set()
        self._handler = _Handler(self._on_event)
        self._observer: BaseObserver | None = None
        self._polling: BaseObserver | None = None
        self._thread: threading.Thread | None = None
        self.callbacks = 0
        self.last_error: BaseException | None = None

    def _build_targets(self, workspace: Path, extra_paths: list[str]) -> list[_Target]:
        paths = [workspace / name for name in ROOT_MEMORY_FILES] + [workspace / MEMORY_DIR]
        paths += [resolve_extra_path(workspace, extra) for extra in extra_paths]
        targets = [_Target(_norm(p), "memory") for p in paths]
        if self.sessions_dir is not None:
            targets.append(_Target(self.sessions_dir, "sessions"))
        return list(dict.fromkeys(targets))

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> MemoryWatcher:
        """Begin watching; returns self. Watches exist when this returns, so later writes are seen."""
        if self._started:
            raise RuntimeError("MemoryWatcher can only be started once")
        self._started = True
        try:
            self._observer = Observer()
        except OSError as err:  # no inotify instance left (max_user_instances): poll instead
            logger.warning("cannot use native file events (%s); polling instead", err)
            self._observer = self._polling = PollingObserver(timeout=1.0)
        self._observer.start()
        self._reconcile(report_new=False)
        self._thread = threading.Thread(target=self._run, name="mdrecall-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop watching and join the threads; pending (not yet reported) changes are dropped. Idempotent."""
        with self._cond:
            if self._stopped:
                return
            self._stopped = self._stopping = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._watch_lock:  # no reconcile can be half-way now
            for observer in dict.fromkeys((self._observer, self._polling)):
                if observer is not None and observer.is_alive():
                    observer.stop()
                    observer.join(timeout)

    def __enter__(self) -> MemoryWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started and not self._stopped

    def watched(self) -> list[tuple[str, bool]]:
        """(directory, recursive) pairs currently watched, for status output and tests."""
        with self._watch_lock:
            return sorted(self._watches)

    def is_session_path(self, path: str) -> bool:
        """Lets the callback route changes: session transcripts go through delta tracking, memory files don't."""
        return self.sessions_dir is not None and os.path.dirname(_norm(path)) == self.sessions_dir

    # -- events (observer thread: never block, never touch the observer from here) -----------------------

    def _relevant(self, path: str, is_directory: bool) -> bool:
        if is_directory:
            return any(t.matches_dir(path) for t in self._targets)
        return any(t.matches_file(path) for t in self._targets)

    def _on_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _WANTED_TYPES:
            return
        if event.is_directory and event.event_type not in ("created", "deleted", "moved"):
            return  # a directory "modified" only echoes file events we already get
        src = _norm(event.src_path) if event.src_path else ""
        dest = _norm(event.dest_path) if event.dest_path else ""
        changed = {p for p in (src, dest) if p and self._relevant(p, event.is_directory)}
        removed = src if event.is_directory and event.event_type in ("deleted", "moved") else ""
        created = ""
        if event.is_directory and event.event_type in ("created", "moved"):
            created = dest if event.event_type == "moved" else src
        structural = bool(removed) or bool(created and any(_is_under(t.path, created) for t in self._targets))
        if not changed and not structural:
            return
        with self._cond:
            if changed:
                self._add_pending(changed)
            if removed:
                self._removed_dirs.add(removed)
            if structural:
                self._needs_reconcile = True
            self._cond.notify_all()

    def _add_pending(self, paths: Iterable[str]) -> None:
        """Caller holds self._cond."""
        now = time.monotonic()
        if not self._pending:
            self._first_event = now
        self._last_event = now
        self._pending.update(paths)

    def _due_at(self) -> float:
        due = self._last_event + self.debounce_s
        if self.max_wait_s is not None:
            due = min(due, self._first_event + self.max_wait_s)
        return due

    # -- worker thread -----------------------------------------------------------------------------------

    def _next_action(self) -> tuple[str, set[str]] | None:
        """Block until there is something to do: ("reconcile", removed dirs), ("flush", paths) or None (stop)."""
        with self._cond:
            while not self._stopping:
                if self._needs_reconcile:
                    self._needs_reconcile = False
                    removed, self._removed_dirs = self._removed_dirs, set()
                    return "reconcile", removed
                if not self._pending:
                    self._cond.wait()
                    continue
                wait = self._due_at() - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                batch, self._pending = self._pending, set()
                return "flush", batch
            return None

    def _run(self) -> None:
        while (action := self._next_action()) is not None:
            kind, paths = action
            if kind == "reconcile":
                found = self._reconcile(report_new=True, removed=paths)
                if found:
                    with self._cond:
                        self._add_pending(found)
            else:
                self._deliver(paths)

    def _deliver(self, paths: set[str]) -> None:
        try:
            self.on_change(paths)
        except Exception as err:  # a failing callback must not end the watcher
            self.last_error = err
            logger.exception("memory watcher callback failed")
        finally:
            self.callbacks += 1

    # -- watches (worker thread and start() only) ----------------------------------------------------------

    def _desired(self) -> dict[_WatchKey, _Target | None]:
        """Each target's nearest existing parent (non-recursive, sees the target come and go), plus the target
        directory itself while it exists (recursive for memory trees). Value: the target to scan, if any."""
        want: dict[_WatchKey, _Target | None] = {}
        for target in self._targets:
            anchor = _nearest_existing_dir(os.path.dirname(target.path))
            if anchor is not None:
                want.setdefault((anchor, False), None)
            if _is_real_dir(target.path):
                want[(target.path, target.recursive)] = target
        return want

    def _reconcile(self, report_new: bool, removed: Iterable[str] = ()) -> set[str]:
        """Bring the watches in line with what exists; return relevant files in newly watched directories."""
        found: set[str] = set()
        with self._watch_lock:
            stale = {key for key in self._watches if any(_is_under(key[0], gone) for gone in removed)}
            # A directory created between computing the plan and placing a watch sends no event to us; so
            # re-plan until the plan matches the watches in place (a handful of rounds at most).
            for _ in range(_RECONCILE_ROUNDS):
                if self._stopping:
                    break
                want = self._desired()
                if not stale and set(want) == set(self._watches):
                    break
                for key in list(self._watches):
                    if key not in want or key in stale:
                        self._unschedule(key)
                stale = set()
                for key in sorted(set(want) - set(self._watches)):
                    if self._schedule(key) and report_new:
                        found |= self._scan(key)
        return found

    def _schedule(self, key: _WatchKey) -> bool:
        path, recursive = key
        assert self._observer is not None
        try:
            watch = self._observer.schedule(self._handler, path, recursive=recursive, event_filter=_EVENT_FILTER)
            self._watches[key] = (self._observer, watch)
            return True
        except OSError as err:
            if err.errno not in _LIMIT_ERRNOS:
                logger.debug("cannot watch %s: %s", path, err)
                return False
        logger.warning("inotify limit reached; polling %s instead (raise fs.inotify.max_user_watches)", path)
        if self._polling is None:
            self._polling = PollingObserver(timeout=1.0)
            self._polling.start()
        try:
            watch = self._polling.schedule(self._handler, path, recursive=recursive, event_filter=_EVENT_FILTER)
        except OSError as err:
            logger.debug("cannot poll %s: %s", path, err)
            return False
        self._watches[key] = (self._polling, watch)
        return True

    def _unschedule(self, key: _WatchKey) -> None:
        observer, watch = self._watches.pop(key)
        try:
            observer.unschedule(watch)
        except (KeyError, OSError) as err:  # already gone with its directory
            logger.debug("unschedule %s: %s", key[0], err)

    def _scan(self, key: _WatchKey) -> set[str]:
        """Relevant files already present in a directory that just got a watch."""
        root, recursive = key
        found: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            for name in filenames:
                path = os.path.join(dirpath, name)
                if self._relevant(path, False):
                    found.add(path)
            dirnames[:] = [d for d in dirnames if recursive and not os.path.islink(os.path.join(dirpath, d))]
        return found


# -- scheduling ------------------------------------------------------------------------------------------


class SyncScheduler:
    """Run `sync_fn(reason)` on one background thread; requests never block and coalesce.

    Requests made while a sync runs become one follow-up run (reasons joined with "+", in arrival order).
    With interval_minutes > 0 an "interval" sync runs that long after the previous one ended. The worker starts
    on the first request (or `start()`). Errors from sync_fn are logged and recorded: `last_error` is the error
    of the most recent run (None when it succeeded), `errors` counts failed runs.
    """

    def __init__(self, sync_fn: Callable[[str], object], interval_minutes: float = 0) -> None:
        if interval_minutes < 0:
            raise ValueError("interval_minutes must be >= 0")
        self.sync_fn = sync_fn
        self.interval_s = interval_minutes * 60
        self._cond = threading.Condition()
        self._reasons: list[str] = []
        self._running = False
        self._stopping = False
        self._warmed = False
        self._thread: threading.Thread | None = None
        self._next_interval = 0.0
        self.runs = 0
        self.errors = 0
        self.last_error: BaseException | None = None
        self.last_reason: str | None = None
        self.last_run_at: float | None = None  # wall clock (time.time()) when the last run finished
        self.last_duration_s: float | None = None
        self.last_result: object = None

    def start(self) -> SyncScheduler:
        """Start the worker (needed only for interval syncs before any request)."""
        with self._cond:
            if self._stopping:
                raise RuntimeError("SyncScheduler was stopped")
            self._ensure_thread()
        return self

    def _ensure_thread(self) -> None:
        """Caller holds self._cond."""
        if self._thread is None:
            self._next_interval = time.monotonic() + self.interval_s
            self._thread = threading.Thread(target=self._run, name="mdrecall-sync", daemon=True)
            self._thread.start()

    def request(self, reason: str = "manual") -> bool:
        """Ask for a sync; returns at once. False when the scheduler is stopped."""
        with self._cond:
            if self._stopping:
                return False
            if reason not in self._reasons:
                self._reasons.append(reason)
            self._cond.notify_all()
            self._ensure_thread()
        return True

    def warm_session(self) -> bool:
        """The spec's `warmSession`: a "session-start" sync, once per scheduler. True if it was requested now."""
        with self._cond:
            if self._warmed or self._stopping:
                return False
            self._warmed = True
        return self.request("session-start")

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._running or bool(self._reasons)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no sync is running or pending; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._running and not self._reasons, timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Drop pending requests, let a running sync finish, join the worker. Idempotent."""
        with self._cond:
            self._stopping = True
            self._reasons.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def __enter__(self) -> SyncScheduler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def status(self) -> dict[str, Any]:
        with self._cond:
            return {
                "running": self._running,
                "pending": list(self._reasons),
                "runs": self.runs,
                "errors": self.errors,
                "last_reason": self.last_reason,
                "last_run_at": self.last_run_at,
                "last_duration_s": self.last_duration_s,
                "last_error": None if self.last_error is None else repr(self.last_error),
                "interval_minutes": self.interval_s / 60,
            }

    def _next_reason(self) -> str | None:
        """Block until a request or the interval is due; None when stopping."""
        with self._cond:
            while not self._stopping:
                if self._reasons:
                    reason = "+".join(self._reasons)
                    self._reasons.clear()
                    self._running = True
                    return reason
                if self.interval_s <= 0:
                    self._cond.wait()
                    continue
                wait = self._next_interval - time.monotonic()
                if wait <= 0:
                    self._reasons.append("interval")
                    continue
                self._cond.wait(wait)
            return None

    def _run(self) -> None:
        while (reason := self._next_reason()) is not None:
            started = time.monotonic()
            error: BaseException | None = None
            result: object = None
            try:
                result = self.sync_fn(reason)
            except Exception as err:  # recorded, never fatal for the worker
                error = err
                logger.warning("background sync (%s) failed: %s", reason, err, exc_info=True)
            with self._cond:
                self._running = False
                self.runs += 1
                self.last_reason = reason
                self.last_run_at = time.time()
                self.last_duration_s = time.monotonic() - started
                self.last_result = result
                if error is not None:
                    self.errors += 1
                self.last_error = error
                self._next_interval = time.monotonic() + self.interval_s
                self._cond.notify_all()
