"""Freshness end to end: watcher + background sync, on-search trigger, cross-process lock, readers during
syncs, and session transcripts indexed with JSONL line numbers and secrets redacted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .conftest import HashingProvider, write

SECRET = "sk-proj-ABCDEFGHIJKLMNOPQRSTUV0123456789"


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def paths_for(index, query: str) -> list[str]:
    return [r.path for r in index.search(query, mode="keyword", min_score=0).results]


@pytest.fixture
def watched(workspace: Path, make_index):
    index = make_index(workspace, HashingProvider(), config={"sync": {"watchDebounceMs": 200}})
    index.sync()
    reports = []
    index.on_synced = reports.append
    index.start_background(watch=True)
    yield index, reports
    index.stop_background()


def test_edit_becomes_searchable_and_delete_disappears(workspace: Path, watched) -> None:
    index, _ = watched
    write(workspace, "memory/2026-11-20.md", "Ordered a replacement zeppelin battery.\n")
    assert wait_for(lambda: paths_for(index, "zeppelin") == ["memory/2026-11-20.md"])
    (workspace / "memory" / "2026-11-20.md").unlink()
    assert wait_for(lambda: paths_for(index, "zeppelin") == [])


def test_burst_of_writes_gives_one_or_two_syncs(workspace: Path, watched) -> None:
    index, reports = watched
    target = workspace / "memory" / "burst.md"
    for i in range(50):
        target.write_text(f"burst note revision {i} quokka\n")
        time.sleep(0.002)
    assert wait_for(lambda: paths_for(index, "quokka") == ["memory/burst.md"])
    index.wait_idle(10)
    time.sleep(0.5)
    assert 1 <= len(reports) <= 2, [r.reason for r in reports]
    assert "revision 49" in index.read_file("memory/burst.md")["text"]


def test_search_requests_a_background_sync_without_blocking(workspace: Path, make_index) -> None:
    class SlowProvider(HashingProvider):
        def embed_batch(self, texts):
            time.sleep(0.5)
            return super().embed_batch(texts)

    index = make_index(workspace, SlowProvider())
    index.sync()
    index.start_background(watch=False)
    write(workspace, "memory/later.md", "The wombat census is due in March.\n")
    started = time.monotonic()
    assert paths_for(index, "wombat") == []  # answered from the index as it is, while the sync embeds
    assert time.monotonic() - started < 0.4, "the search did not wait for the sync"
    assert wait_for(lambda: paths_for(index, "wombat") == ["memory/later.md"])


def test_reader_keeps_old_index_during_a_long_full_reindex(workspace: Path, make_index, tmp_path: Path) -> None:
    class SlowProvider(HashingProvider):
        def embed_batch(self, texts):
            time.sleep(1.0)
            return super().embed_batch(texts)

    db = tmp_path / "idx.sqlite"
    writer_index = make_index(workspace, SlowProvider(), db_path=db)
    writer_index.sync()
    reader_index = make_index(workspace, HashingProvider(), db_path=db)
    assert paths_for(reader_index, "a828e60") == ["MEMORY.md"]
    write(workspace, "MEMORY.md", "# Memory\n\nNothing about that commit any more.\n")
    thread = threading.Thread(target=lambda: writer_index.sync(force=True))
    thread.start()
    time.sleep(0.3)
    during = paths_for(reader_index, "a828e60")
    thread.join()
    assert during == ["MEMORY.md"], "old index still served while the rebuild runs"
    assert paths_for(reader_index, "a828e60") == []


SYNC_SCRIPT = """
import sys, time
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.embeddings.factory import ProviderResult
sys.path.insert(0, sys.argv[3])
from conftest import HashingProvider

class Slow(HashingProvider):
    def embed_batch(self, texts):
        time.sleep(0.5)
        return super().embed_batch(texts)

settings = resolve_settings(
    workspace=sys.argv[1], db_path=sys.argv[2], config=parse_config({"cache": {"enabled": False}})
)
index = MemoryIndex(settings, ProviderResult(Slow(), "test"))
start = time.time()
report = index.sync(force=True)
print(f"{start:.3f} {time.time():.3f} {report.files_indexed}")
"""


def test_two_processes_syncing_at_once_take_turns(workspace: Path, tmp_path: Path) -> None:
    for i in range(4):
        write(workspace, f"memory/p{i}.md", f"process note {i}\n")
    script = tmp_path / "sync_once.py"
    script.write_text(SYNC_SCRIPT)
    db = tmp_path / "shared.sqlite"
    tests_dir = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(workspace), str(db), tests_dir],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-800:] for o in outputs]
    ends = sorted(float(o[0].split()[1]) for o in outputs)
    assert all(o[0].split()[2] == "7" for o in outputs)
    # each sync embeds for >= 0.5 s; run together they would end together, in turn >= 0.5 s apart
    assert ends[1] - ends[0] >= 0.45
    from mdrecall.storage.sqlite import Store

    store = Store(db)
    assert store.counts()["memory"] == {"files": 7, "chunks": 7}
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store.close()


def _transcript(path: Path, messages: list[tuple[str, str]], extra_lines: list[str] = ()) -> None:
    lines = [json.dumps({"type": "session", "id": "s1"})]
    for role, text in messages:
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({"type": "message", "message": {"role": role, "content": content}}))
    lines.extend(extra_lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def test_session_transcripts_are_indexed_with_jsonl_lines_and_redacted(workspace: Path, make_index) -> None:
    index = make_index(workspace, HashingProvider(), config={"sources": ["memory", "sessions"]})
    sessions = index.settings.sessions_dir
    _transcript(
        sessions / "abc.jsonl",
        [("user", "Remember the capybara sanctuary visit"), ("assistant", f"Noted. Key {SECRET} stored")],
        extra_lines=["{not json"],
    )
    report = index.sync()
    assert ("sessions/abc.jsonl", "1 malformed JSONL line(s) skipped") in report.skipped
    [hit] = [r for r in index.search("capybara sanctuary", min_score=0).results if r.source == "sessions"]
    assert hit.path == "sessions/abc.jsonl" and (hit.start_line, hit.end_line) == (2, 3)
    assert "User: Remember the capybara sanctuary visit" in hit.snippet
    db_bytes = index.db_path.read_bytes() + Path(f"{index.db_path}-wal").read_bytes()
    assert SECRET.encode() not in db_bytes
    status = index.status()
    assert {"source": "sessions", "files": 1, "chunks": 1} in status["sourceCounts"]
    assert status["lastSync"]["reason"] == "manual"


def test_session_deltas_gate_background_resyncs(workspace: Path, make_index) -> None:
    config = {"sources": ["memory", "sessions"], "sync": {"sessions": {"deltaBytes": 100_000, "deltaMessages": 3}}}
    index = make_index(workspace, HashingProvider(), config=config)
    path = index.settings.sessions_dir / "live.jsonl"
    _transcript(path, [("user", "first message about otters")])
    index.sync()
    with path.open("a") as handle:
        handle.write(json.dumps({"type": "message", "message": {"role": "user", "content": "second: badgers"}}) + "\n")
    gated = index.sync(respect_session_deltas=True)
    assert gated.sessions_pending == 1 and paths_for(index, "badgers") == []
    with path.open("a") as handle:
        for word in ("ferrets", "stoats"):
            handle.write(json.dumps({"type": "message", "message": {"role": "user", "content": word}}) + "\n")
    assert index.sync(respect_session_deltas=True).files_indexed == 1
    assert paths_for(index, "badgers") == ["sessions/live.jsonl"]
    archived = index.settings.sessions_dir / "old.jsonl.reset.1700000000"
    _transcript(archived, [("user", "archived walrus chat")])
    index.sync(respect_session_deltas=True)
    assert paths_for(index, "walrus") == [f"sessions/{archived.name}"]


def test_watch_command_runs_and_stops_cleanly_on_ctrl_c(workspace: Path, tmp_path: Path) -> None:
    (workspace / "mdrecall.toml").write_text('provider = "none"\n')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mdrecall.cli",
            "--workspace",
            str(workspace),
            "--state-dir",
            str(tmp_path / "s"),
            "watch",
            "--debounce-ms",
            "100",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell starts background jobs with SIGINT ignored, and Python then keeps it ignored: restore the
        # default so Ctrl-C reaches the watcher however the suite itself was started
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        lines: list[str] = []
        assert wait_for(lambda: lines.append(proc.stdout.readline()) or "watching" in lines[-1], timeout=60)
        write(workspace, "memory/2026-11-21.md", "platypus\n")
        assert wait_for(lambda: lines.append(proc.stdout.readline()) or "(watch)" in lines[-1], timeout=30)
        assert "1 indexed" in lines[-1]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
