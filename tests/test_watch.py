"""File watcher (real watchdog events, debounced) and the one-worker sync scheduler.

Waits poll with generous timeouts so a loaded CI box only makes them slower, never flaky; the only fixed
sleeps are the short quiet periods that check nothing *more* arrives.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mdrecall.indexing.watch import MemoryWatcher, SyncScheduler

DEBOUNCE_MS = 250
TIMEOUT = 15.0  # upper bound for anything we wait for; normally reached in well under a second


class Recorder:
    """Collects watcher callbacks and lets tests wait on them."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, set[str]]] = []
        self.cond = threading.Condition()

    def __call__(self, paths: set[str]) -> None:
        with self.cond:
            self.calls.append((time.monotonic(), set(paths)))
            self.cond.notify_all()

    def wait(self, predicate: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)

    def wait_calls(self, count: int, timeout: float = TIMEOUT) -> bool:
        return self.wait(lambda: len(self.calls) >= count, timeout)

    def wait_path(self, path: Path, timeout: float = TIMEOUT) -> bool:
        return self.wait(lambda: str(path) in self.seen(), timeout)

    def seen(self) -> set[str]:
        return set().union(*(paths for _, paths in self.calls)) if self.calls else set()

    def count_after_quiet(self, seconds: float = DEBOUNCE_MS / 1000 * 3) -> int:
        time.sleep(seconds)
        with self.cond:
            return len(self.calls)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n")
    (ws / "memory" / "2026-01-31.md").write_text("- a note\n")
    return ws


@pytest.fixture
def make_watcher() -> Iterator[Callable[..., tuple[MemoryWatcher, Recorder]]]:
    watchers: list[MemoryWatcher] = []

    def make(workspace: Path, extra_paths: list[str] | None = None, **kwargs: object) -> tuple[MemoryWatcher, Recorder]:
        recorder = Recorder()
        kwargs.setdefault("debounce_ms", DEBOUNCE_MS)
        watcher = MemoryWatcher(workspace, extra_paths, recorder, **kwargs)  # type: ignore[arg-type]
        watchers.append(watcher)
        watcher.start()
        return watcher, recorder

    yield make
    for watcher in watchers:
        watcher.stop()


def test_editing_a_note_triggers_one_debounced_callback(workspace: Path, make_watcher) -> None:
    _, rec = make_watcher(workspace)
    written_at = time.monotonic()
    (workspace / "MEMORY.md").write_text("# Memory\n- new fact\n")
    assert rec.wait_calls(1)
    called_at, paths = rec.calls[0]
    assert paths == {str(workspace / "MEMORY.md")}
    assert called_at - written_at >= DEBOUNCE_MS / 1000 * 0.9  # trailing edge: not before the quiet period
    assert rec.count_after_quiet() == 1


def test_burst_of_writes_is_coalesced(workspace: Path, make_watcher) -> None:
    _, rec = make_watcher(workspace, debounce_ms=400)
    notes = [workspace / "memory" / f"n{i % 5}.md" for i in range(50)]
    for i, note in enumerate(notes):
        note.write_text(f"write {i}\n")
    assert rec.wait(lambda: rec.seen() >= {str(n) for n in notes})
    calls = rec.count_after_quiet(1.2)
    assert 1 <= calls <= 2, rec.calls


def test_deleting_a_file_is_reported(workspace: Path, make_watcher) -> None:
    _, rec = make_watcher(workspace)
    note = workspace / "memory" / "2026-01-31.md"
    note.unlink()
    assert rec.wait_path(note)


def test_atomic_save_by_rename_is_reported(workspace: Path, make_watcher) -> None:
    _, rec = make_watcher(workspace)
    tmp = workspace / ".MEMORY.md.swp"
    tmp.write_text("# Memory\n- saved atomically\n")
    os.replace(tmp, workspace / "MEMORY.md")
    assert rec.wait_path(workspace / "MEMORY.md")
    assert str(tmp) not in rec.seen()


def test_unrelated_files_are_ignored(workspace: Path, make_watcher) -> None:
    (workspace / "other").mkdir()
    _, rec = make_watcher(workspace)
    (workspace / "memory" / "todo.txt").write_text("not markdown\n")
    (workspace / "notes.md").write_text("markdown, but not a memory file\n")
    (workspace / "other" / "x.md").write_text("outside memory/\n")
    (workspace / "MEMORY.md.bak").write_text("backup\n")
    (workspace / "MEMORY.md").read_text()  # reading is not a change
    assert rec.count_after_quiet(1.0) == 0
    control = workspace / "memory" / "ok.md"
    control.write_text("control\n")
    assert rec.wait_calls(1)
    assert rec.calls[0][1] == {str(control)}


def test_memory_dir_created_after_start(tmp_path: Path, make_watcher) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    watcher, rec = make_watcher(ws)
    assert (str(ws / "memory"), True) not in watcher.watched()
    first = ws / "memory" / "first.md"
    first.parent.mkdir()
    first.write_text("written right after mkdir, maybe before the watch exists\n")
    assert rec.wait_path(first)
    assert (str(ws / "memory"), True) in watcher.watched()
    nested = ws / "memory" / "projects" / "deep.md"
    nested.parent.mkdir()
    nested.write_text("later\n")
    assert rec.wait_path(nested)


def test_memory_dir_removed_and_recreated(workspace: Path, make_watcher) -> None:
    watcher, rec = make_watcher(workspace)
    memory = workspace / "memory"
    for child in memory.iterdir():
        child.unlink()
    memory.rmdir()
    assert rec.wait_path(memory)
    assert rec.wait(lambda: (str(memory), True) not in watcher.watched())
    memory.mkdir()
    again = memory / "again.md"
    again.write_text("back\n")
    assert rec.wait_path(again)
    later = memory / "later.md"
    later.write_text("still watched\n")
    assert rec.wait_path(later)


def test_memory_dir_moved_away_stops_reporting_old_location(workspace: Path, make_watcher) -> None:
    watcher, rec = make_watcher(workspace)
    os.rename(workspace / "memory", workspace / "archive")
    assert rec.wait_path(workspace / "memory")
    assert rec.wait(lambda: (str(workspace / "memory"), True) not in watcher.watched())
    (workspace / "archive" / "x.md").write_text("no longer memory\n")
    (workspace / "MEMORY.md").write_text("control\n")
    assert rec.wait_path(workspace / "MEMORY.md")
    assert not any("archive" in p or p.endswith("x.md") for p in rec.seen())


def test_extra_paths_files_and_directories(tmp_path: Path, workspace: Path, make_watcher) -> None:
    (workspace / "notes").mkdir()
    extra_file = workspace / "notes" / "extra.md"
    extra_file.write_text("extra\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    later_dir = tmp_path / "later"
    _, rec = make_watcher(workspace, ["notes/extra.md", str(shared), "../later"])
    (workspace / "notes" / "sibling.md").write_text("same folder, not configured\n")
    extra_file.write_text("extra, edited\n")
    (shared / "sub").mkdir()
    (shared / "sub" / "deep.md").write_text("deep\n")
    later_dir.mkdir()
    (later_dir / "l.md").write_text("created after start\n")
    for path in (extra_file, shared / "sub" / "deep.md", later_dir / "l.md"):
        assert rec.wait_path(path), path
    assert str(workspace / "notes" / "sibling.md") not in rec.seen()


def test_sessions_dir_is_optional_and_filtered(tmp_path: Path, workspace: Path, make_watcher) -> None:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    watcher, rec = make_watcher(workspace, sessions_dir=sessions)
    sessions.mkdir(parents=True)  # created after start, several levels deep
    transcript = sessions / "abc.jsonl"
    transcript.write_text('{"type":"message"}\n')
    (sessions / "sessions.json").write_text("{}")
    assert rec.wait_path(transcript)
    with transcript.open("a") as handle:
        handle.write('{"type":"message"}\n')
    archived = sessions / "old.jsonl.reset.2026-01-31T10-00-00Z"
    os.rename(transcript, archived)
    assert rec.wait_path(archived)
    assert str(sessions / "sessions.json") not in rec.seen()
    assert watcher.is_session_path(str(archived))
    assert not watcher.is_session_path(str(workspace / "MEMORY.md"))


def test_callback_errors_do_not_stop_the_watcher(workspace: Path) -> None:
    calls: list[set[str]] = []
    done = threading.Event()

    def flaky(paths: set[str]) -> None:
        calls.append(paths)
        if len(calls) == 1:
            raise RuntimeError("boom")
        done.set()

    with MemoryWatcher(workspace, None, flaky, debounce_ms=DEBOUNCE_MS) as watcher:
        (workspace / "MEMORY.md").write_text("one\n")
        deadline = time.monotonic() + TIMEOUT
        while not calls and time.monotonic() < deadline:
            time.sleep(0.02)
        (workspace / "MEMORY.md").write_text("two\n")
        assert done.wait(TIMEOUT)
        assert isinstance(watcher.last_error, RuntimeError)


def test_max_wait_bounds_a_never_ending_stream(workspace: Path, make_watcher) -> None:
    _, rec = make_watcher(workspace, debounce_ms=300, max_wait_ms=600)
    note = workspace / "memory" / "busy.md"
    end = time.monotonic() + 2.0
    i = 0
    while time.monotonic() < end:
        note.write_text(f"{i}\n")
        i += 1
        time.sleep(0.05)
    assert rec.wait_calls(2)


def test_stop_is_clean_and_idempotent(workspace: Path) -> None:
    rec = Recorder()
    before = set(threading.enumerate())
    watcher = MemoryWatcher(workspace, None, rec, debounce_ms=DEBOUNCE_MS).start()
    assert watcher.running
    (workspace / "MEMORY.md").write_text("pending at stop\n")
    watcher.stop()
    watcher.stop()
    assert not watcher.running
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert leftover == []
    (workspace / "MEMORY.md").write_text("after stop\n")
    assert rec.count_after_quiet(0.5) == 0
    with pytest.raises(RuntimeError):
        watcher.start()


# -- scheduler ---------------------------------------------------------------------------------------


def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_requests_during_a_slow_sync_are_coalesced() -> None:
    started = threading.Event()
    release = threading.Event()
    reasons: list[str] = []

    def slow_sync(reason: str) -> None:
        reasons.append(reason)
        started.set()
        release.wait(TIMEOUT)

    scheduler = SyncScheduler(slow_sync)
    try:
        assert scheduler.request("watch")
        assert started.wait(TIMEOUT)
        t0 = time.monotonic()
        for i in range(10):
            assert scheduler.request("search" if i % 2 else "watch")
        assert time.monotonic() - t0 < 1.0  # never blocks behind the running sync
        assert not scheduler.wait_idle(0.05)
        release.set()
        assert scheduler.wait_idle(TIMEOUT)
        assert scheduler.runs == 2
        assert reasons == ["watch", "watch+search"]
        assert scheduler.last_reason == "watch+search"
        assert scheduler.last_run_at is not None and scheduler.last_error is None
    finally:
        release.set()
        scheduler.stop()


def test_errors_are_recorded_and_the_worker_survives() -> None:
    calls: list[str] = []

    def failing(reason: str) -> str:
        calls.append(reason)
        if reason == "bad":
            raise ValueError("index locked")
        return "done"

    scheduler = SyncScheduler(failing)
    try:
        scheduler.request("bad")
        assert scheduler.wait_idle(TIMEOUT)
        assert isinstance(scheduler.last_error, ValueError)
        assert scheduler.errors == 1 and scheduler.runs == 1 and scheduler.last_reason == "bad"
        assert scheduler.status()["last_error"] is not None
        scheduler.request("good")
        assert scheduler.wait_idle(TIMEOUT)
        assert calls == ["bad", "good"]
        assert scheduler.runs == 2 and scheduler.errors == 1
        assert scheduler.last_error is None and scheduler.last_result == "done"
    finally:
        scheduler.stop()


def test_warm_session_runs_once() -> None:
    reasons: list[str] = []
    scheduler = SyncScheduler(reasons.append)
    try:
        assert scheduler.warm_session()
        assert not scheduler.warm_session()
        assert scheduler.wait_idle(TIMEOUT)
        assert not scheduler.warm_session()
        assert scheduler.wait_idle(TIMEOUT)
        assert reasons == ["session-start"]
    finally:
        scheduler.stop()


def test_interval_trigger() -> None:
    reasons: list[str] = []
    scheduler = SyncScheduler(reasons.append, interval_minutes=0.2 / 60).start()
    try:
        assert wait_until(lambda: len(reasons) >= 2)
        assert set(reasons) == {"interval"}
    finally:
        scheduler.stop()


def test_no_interval_means_no_spontaneous_runs() -> None:
    reasons: list[str] = []
    scheduler = SyncScheduler(reasons.append).start()
    try:
        time.sleep(0.3)
        assert reasons == []
        assert scheduler.wait_idle(0)
    finally:
        scheduler.stop()


def test_stop_is_clean() -> None:
    started = threading.Event()
    release = threading.Event()
    reasons: list[str] = []

    def sync(reason: str) -> None:
        reasons.append(reason)
        started.set()
        release.wait(TIMEOUT)

    scheduler = SyncScheduler(sync)
    scheduler.request("first")
    assert started.wait(TIMEOUT)
    scheduler.request("dropped")
    threading.Timer(0.2, release.set).start()
    scheduler.stop(timeout=TIMEOUT)  # lets the running sync finish, drops the pending one
    assert reasons == ["first"]
    assert scheduler._thread is not None and not scheduler._thread.is_alive()
    scheduler.stop()
    assert scheduler.request("late") is False
    assert not scheduler.warm_session()
    with pytest.raises(RuntimeError):
        scheduler.start()


def test_stop_without_start_and_context_manager() -> None:
    SyncScheduler(lambda r: None).stop()
    reasons: list[str] = []
    with SyncScheduler(reasons.append) as scheduler:
        scheduler.request("cli")
        assert scheduler.wait_idle(TIMEOUT)
    assert reasons == ["cli"]
    with pytest.raises(ValueError):
        SyncScheduler(lambda r: None, interval_minutes=-1)


def test_wiring_watcher_tracker_scheduler(tmp_path: Path, workspace: Path) -> None:
    """The intended integration: memory edits sync at once, transcripts only past their delta thresholds."""
    from mdrecall.documents.sessions import SessionDeltaTracker

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    transcript = sessions / "s1.jsonl"
    transcript.write_text("")
    tracker = SessionDeltaTracker(delta_bytes=1_000_000, delta_messages=3)
    tracker.mark_synced(transcript, 0)
    reasons: list[str] = []
    scheduler = SyncScheduler(reasons.append)
    batches: list[set[str]] = []

    def on_change(paths: set[str]) -> None:
        batches.append(paths)
        session_paths = {p for p in paths if watcher.is_session_path(p)}
        if paths - session_paths:
            scheduler.request("watch")
        if any(tracker.observe(p) for p in session_paths):
            scheduler.request("session-delta")

    watcher = MemoryWatcher(workspace, None, on_change, debounce_ms=DEBOUNCE_MS, sessions_dir=sessions)
    try:
        watcher.start()
        with transcript.open("a") as handle:
            handle.write('{"a":1}\n{"a":2}\n')
        assert wait_until(lambda: len(batches) >= 1)
        assert scheduler.wait_idle(TIMEOUT) and reasons == []
        with transcript.open("a") as handle:
            handle.write('{"a":3}\n')
        assert wait_until(lambda: reasons == ["session-delta"])
        tracker.mark_synced(transcript, transcript.stat().st_size)
        (workspace / "MEMORY.md").write_text("edited\n")
        assert wait_until(lambda: reasons == ["session-delta", "watch"])
    finally:
        watcher.stop()
        scheduler.stop()
