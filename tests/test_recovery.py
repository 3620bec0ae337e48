"""Self-healing: corrupt, truncated or foreign index files are rebuilt from the markdown; hostile files skipped."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from mdrecall.errors import ForeignFileError
from mdrecall.indexing.sync import temp_db_path
from mdrecall.storage.sqlite import Store

from .conftest import HashingProvider, write


def _build(make_index, workspace: Path, db: Path, provider=None):
    index = make_index(workspace, provider if provider is not None else HashingProvider(), db_path=db)
    index.sync()
    return index


def test_truncated_index_is_rebuilt_from_markdown(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    _build(make_index, workspace, db).close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])  # the header (with mdrecall's application_id) survives
    markdown_before = {p: p.read_bytes() for p in workspace.rglob("*.md")}
    index = make_index(workspace, HashingProvider(), db_path=db)
    index.ensure_fresh()
    assert index.search("a828e60").results[0].path == "MEMORY.md"
    status = index.status()
    assert status["files"] == 3 and status["dirty"] is False
    assert "rebuilt" in (index.recovery or "")
    assert {p: p.read_bytes() for p in workspace.rglob("*.md")} == markdown_before


@pytest.mark.parametrize("damage", ["garbage", "empty-header"])
def test_unidentifiable_file_at_the_index_path_is_refused_untouched(
    workspace: Path, make_index, tmp_path: Path, damage: str
) -> None:
    """Without its header nothing proves the file is mdrecall's: it is refused, never rebuilt over."""
    db = tmp_path / "idx.sqlite"
    _build(make_index, workspace, db).close()
    data = db.read_bytes()
    db.write_bytes(b"this is not a database at all" * 100 if damage == "garbage" else b"\0" * 100 + data[100:])
    before = db.read_bytes()
    index = make_index(workspace, HashingProvider(), db_path=db)
    with pytest.raises(ForeignFileError, match="idx.sqlite"):
        index.sync()
    assert db.read_bytes() == before


def test_unknown_schema_version_is_rebuilt(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    _build(make_index, workspace, db).close()
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    index = make_index(workspace, HashingProvider(), db_path=db)
    assert "schema version 99" in index.status()["recovered"]
    index.sync()
    assert index.store.counts()["memory"]["files"] == 3


def test_foreign_schema_is_refused_untouched(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE chunks (id TEXT, body TEXT)")
    conn.close()
    before = db.read_bytes()
    index = make_index(workspace, HashingProvider(), db_path=db)
    with pytest.raises(ForeignFileError, match="another program"):
        index.sync()
    assert db.read_bytes() == before


def test_stale_temp_files_of_a_killed_reindex_are_removed(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    index = _build(make_index, workspace, db)
    dead = temp_db_path(db)
    killed = Store(dead, vector_enabled=False)  # a reindex's temp DB, left open as a kill would leave it
    with killed.transaction():
        killed.write_meta_value("x", "y")
    (tmp_path / f"{dead.name}-shm").write_bytes(b"")
    mine = [tmp_path / "idx.sqlite.tmp-mine", tmp_path / f"idx.sqlite.tmp-{'0' * 32}"]
    mine[0].write_bytes(b"user data")
    mine[1].write_bytes(b"not a database")
    index.sync()
    killed.close()
    assert sorted(tmp_path.glob("idx.sqlite.tmp-*")) == sorted(mine)
    assert mine[0].read_bytes() == b"user data"


def test_losing_sqlite_vec_switches_to_numpy_and_reindexes(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    _build(make_index, workspace, db).close()
    broken = {"store": {"vector": {"extensionPath": str(tmp_path / "missing-vec0.so")}}}
    index = make_index(workspace, HashingProvider(), config=broken, db_path=db)
    status = index.status()
    assert status["vector"]["available"] is False and "numpy" in status["vector"]["mode"]
    assert status["vector"]["loadError"]
    assert index.full_reindex_reason() == "sqlite-vec availability changed"
    index.sync()
    hits = index.search("gateway Mac Studio closet", mode="vector", min_score=0).results
    assert hits and hits[0].path == "memory/topics/infra.md"


def test_binary_and_oversized_files_are_skipped_with_a_reason(
    workspace: Path, make_index, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "memory" / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    write(workspace, "memory/huge.md", "word " * 5000)
    write(workspace, "memory/empty.md", "")
    index = make_index(workspace, HashingProvider(), config={"maxFileBytes": 10_000})
    report = index.sync()
    reasons = dict(report.skipped)
    assert "binary" in reasons["memory/blob.md"]
    assert "too large" in reasons["memory/huge.md"]
    assert report.files_indexed == 4  # the three normal files and the empty one (no chunks)
    assert not index.is_dirty(), "skipped files are recorded, so they are not retried until they change"
    again = index.sync()
    assert again.skipped == [] and again.files_unchanged == 6


class InterruptedProvider(HashingProvider):
    """The user presses Ctrl-C while the third group of files is being embedded."""

    def embed_batch(self, texts: list[str]):  # type: ignore[no-untyped-def]
        if self.batch_calls == 2:
            raise KeyboardInterrupt
        return super().embed_batch(texts)


def test_ctrl_c_during_a_full_index_keeps_what_was_embedded(
    make_index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted first index (a full rebuild in a temp DB) leaves its vectors in the index's cache: the
    re-run embeds only what was not embedded yet (with a paid API, nobody pays twice)."""
    from mdrecall.indexing import sync

    monkeypatch.setattr(sync, "EMBED_WINDOW_CHUNKS", 4)  # one embedding call per 4 files
    ws = tmp_path / "big"
    for i in range(20):
        write(ws, f"memory/note-{i:02d}.md", f"# Note {i}\n\ntopic{i} decision number {i} about things.\n")
    db = tmp_path / "idx.sqlite"
    interrupted = InterruptedProvider()
    index = make_index(ws, interrupted, db_path=db)
    with pytest.raises(KeyboardInterrupt):
        index.sync()
    index.close()
    assert interrupted.texts_embedded > 0
    assert not list(tmp_path.glob("idx.sqlite.tmp-*"))  # the temp DB is removed as before

    again = HashingProvider()
    report = make_index(ws, again, db_path=db).sync()
    assert report.files_indexed == 20 and report.full_reindex
    assert report.cache_hits == interrupted.texts_embedded
    fresh = HashingProvider()
    make_index(ws, fresh, db_path=tmp_path / "fresh.sqlite").sync()
    assert again.texts_embedded == fresh.texts_embedded - interrupted.texts_embedded


def test_index_says_why_an_unreadable_index_was_rebuilt(workspace: Path, tmp_path: Path) -> None:
    """`mdrecall index` over an index of an unknown schema version (a newer mdrecall's) names that reason, not
    'no index metadata' (what the discarded file looks like once it is recreated empty)."""
    import json
    import subprocess
    import sys

    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    state = tmp_path / "s"
    code = "import sys; from mdrecall.cli.fast import main; sys.argv[0] = 'mdrecall'; main()"
    base = [sys.executable, "-c", code, "--workspace", str(workspace), "--state-dir", str(state)]
    assert subprocess.run([*base, "index"], capture_output=True, timeout=120).returncode == 0
    (db,) = (state / "memory").glob("*.sqlite")
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    result = subprocess.run([*base, "index", "--json"], capture_output=True, text=True, timeout=120)
    report = json.loads(result.stdout)
    assert report["fullReindex"] and report["filesIndexed"] == 3
    assert "schema version 99" in report["fullReason"] and "rebuilt from the markdown" in report["fullReason"]
    shown = subprocess.run([*base, "index", "--force"], capture_output=True, text=True, timeout=120)
    assert "schema version" not in shown.stdout  # only the run that rebuilt it says so


def test_a_note_skipped_by_the_sync_a_search_runs_is_reported_and_status_lists_it(
    workspace: Path, tmp_path: Path
) -> None:
    """A note that cannot be indexed (binary) is recorded so it is not retried; when the sync that found it was
    the one `search` runs first, its warning was dropped and every later `index` said 'unchanged': the user never
    learned the note is not searched. Now that search says so, and `status` lists skipped notes every time."""
    import json
    import subprocess
    import sys

    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    state = tmp_path / "s"
    code = "import sys; from mdrecall.cli.fast import main; sys.argv[0] = 'mdrecall'; main()"
    base = [sys.executable, "-c", code, "--workspace", str(workspace), "--state-dir", str(state)]
    assert subprocess.run([*base, "index"], capture_output=True, timeout=120).returncode == 0
    (workspace / "memory" / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    found = subprocess.run([*base, "search", "a828e60", "--json"], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0 and json.loads(found.stdout)[0]["path"] == "MEMORY.md"
    assert "warning: memory/blob.md:" in found.stderr and "binary" in found.stderr
    status = json.loads(subprocess.run([*base, "status", "--json"], capture_output=True, text=True).stdout)
    assert [s["path"] for s in status["skippedFiles"]] == ["memory/blob.md"]
    assert "binary" in status["skippedFiles"][0]["reason"]
    table = subprocess.run([*base, "status"], capture_output=True, text=True, timeout=120).stdout
    assert "skipped" in table and "memory/blob.md" in table
    (workspace / "memory" / "blob.md").write_text("# Now text\n", encoding="utf-8")
    assert subprocess.run([*base, "index"], capture_output=True, timeout=120).returncode == 0
    healed = json.loads(subprocess.run([*base, "status", "--json"], capture_output=True, text=True).stdout)
    assert not healed.get("skippedFiles")


KILLED_CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from conftest import HashingProvider
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.indexing import sync

sync.EMBED_WINDOW_CHUNKS = 4

class Stalls(HashingProvider):
    def embed_batch(self, texts):
        if self.batch_calls == 2:
            Path({marker!r}).write_text(str(self.texts_embedded))
            time.sleep(600)  # killed here, in the middle of the rebuild
        return super().embed_batch(texts)

settings = resolve_settings(workspace={ws!r}, state_dir={state!r}, config=parse_config({{}}), db_path={db!r})
MemoryIndex(settings, ProviderResult(Stalls(), requested="test")).sync()
"""


def test_a_rebuild_killed_outright_leaves_its_vectors_to_the_next_sync(make_index, tmp_path: Path) -> None:
    """SIGKILL (an OOM kill, `timeout -s KILL`, a power cut) gives no chance to clean up: the killed rebuild's
    temp DB is found by the next sync, which takes its vectors into the cache before removing it."""
    import signal
    import subprocess
    import sys
    import time

    ws = tmp_path / "big"
    for i in range(20):
        write(ws, f"memory/note-{i:02d}.md", f"# Note {i}\n\ntopic{i} decision number {i} about things.\n")
    db, marker = tmp_path / "idx.sqlite", tmp_path / "embedded"
    script = KILLED_CHILD.format(
        tests=str(Path(__file__).parent), marker=str(marker), ws=str(ws), state=str(tmp_path / "st"), db=str(db)
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the child never reached its third batch"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    embedded_before = int(marker.read_text())
    assert embedded_before > 0 and list(tmp_path.glob("idx.sqlite.tmp-*"))  # the killed rebuild's temp DB

    again = HashingProvider()
    report = make_index(ws, again, db_path=db).sync()
    assert report.files_indexed == 20 and report.cache_hits == embedded_before
    assert not list(tmp_path.glob("idx.sqlite.tmp-*"))
