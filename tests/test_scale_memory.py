"""Scale: sync's per-file bookkeeping stays small (a streamed walk; no set of every present path unless some
file vanished) and still finds exactly what the plain way finds."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import NamedTuple

from mdrecall.documents.workspace import list_memory_files
from mdrecall.indexing import sync
from mdrecall.storage.sqlite import FileRow

from .conftest import write


class _F(NamedTuple):
    path: str


def _rows(paths: list[str]) -> dict[str, FileRow]:
    return {p: FileRow(p, "memory", "h", 0, 0) for p in paths}


def test_vanished_matches_a_set_difference() -> None:
    rng = random.Random(3)
    names = [f"memory/{rng.choice('abc')}/{i:05d}-{rng.choice(['x', 'Y', 'é', '2'])}.md" for i in range(400)]
    indexed = rng.sample(names, 250)
    present = sorted(rng.sample(names, 300))
    expected = sorted(set(indexed) - set(present))
    assert sync._vanished(_rows(indexed), [_F(p) for p in present]) == expected
    # order does not matter; nothing gone: nothing reported
    assert sync._vanished(_rows(indexed), [_F(p) for p in names]) == []
    shuffled = present[:]
    rng.shuffle(shuffled)
    assert sync._vanished(_rows(indexed), [_F(p) for p in shuffled]) == expected
    assert sync._vanished({}, [_F(p) for p in present]) == []
    assert sync._vanished(_rows(indexed), []) == sorted(indexed)


def test_sync_drops_vanished_files_and_keeps_the_rest(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    for i in range(30):
        write(ws, f"memory/d{i % 3}/note-{i:02d}.md", f"# Note {i}\n\nthe token zz{i:02d}q is here\n")
    index = make_index(ws, None)
    index.sync()
    for i in (0, 7, 29):
        (ws / f"memory/d{i % 3}/note-{i:02d}.md").unlink()
    write(ws, "memory/d1/new.md", "# New\n\nthe token zznewq\n")
    report = index.sync()
    paths = {r[0] for r in index.store.conn.execute("SELECT path FROM files")}
    assert report.files_deleted == 3
    assert "memory/d1/new.md" in paths and len(paths) == 28
    assert not {f"memory/d{i % 3}/note-{i:02d}.md" for i in (0, 7, 29)} & paths


def test_discovery_streams_the_walk_and_still_drops_hard_links(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/a.md", "a\n")
    write(ws, "memory/sub/b.md", "b\n")
    os.link(ws / "memory/a.md", ws / "memory/sub/a-link.md")
    files = list_memory_files(ws)
    assert [f.path for f in files] == sorted(f.path for f in files)
    assert len([f for f in files if f.path in ("memory/a.md", "memory/sub/a-link.md")]) == 1
    assert "memory/sub/b.md" in {f.path for f in files}


def _notes(ws: Path, count: int) -> None:
    for i in range(count):
        body = "\n".join(f"- item {n} of note {i}: the rollout of service {n % 5} went fine" for n in range(40))
        write(ws, f"memory/2024-03-{1 + i % 28:02d}-{i}.md", f"# Note {i}\n\n{body}\n")


def test_single_pass_sync_writes_each_group_before_reading_on(tmp_path: Path, make_index, monkeypatch) -> None:
    """Without progress callbacks nobody needs totals: files are read once, and each group is written before
    the next files are read, so memory holds one group whatever the number of files."""
    from .conftest import HashingProvider

    ws = tmp_path / "ws"
    _notes(ws, 24)
    two_pass = make_index(ws, HashingProvider(), db_path=tmp_path / "two.sqlite")
    two_pass.sync(chunk_progress=lambda done, total: None)

    monkeypatch.setattr(sync, "EMBED_WINDOW_CHUNKS", 6)
    events: list[str] = []
    memory_text, write_file = sync._memory_text, sync._write_file

    def reading(raw, config):  # type: ignore[no-untyped-def]
        events.append("read")
        return memory_text(raw, config)

    def writing(store, item, vectors, model):  # type: ignore[no-untyped-def]
        events.append("write")
        return write_file(store, item, vectors, model)

    monkeypatch.setattr(sync, "_memory_text", reading)
    monkeypatch.setattr(sync, "_write_file", writing)
    single = make_index(ws, HashingProvider(), db_path=tmp_path / "one.sqlite")
    report = single.sync()
    assert events.count("read") == 24  # each file read once (the counting pass reads twice above 64 MB)
    assert events.index("write") < len(events) - 1 - events[::-1].index("read")  # writes began before reads ended

    def rows(index) -> list[tuple]:  # type: ignore[no-untyped-def]
        return sorted(index.store.conn.execute("SELECT path, start_line, end_line, hash, chunk_text(text) FROM chunks"))

    assert rows(single) == rows(two_pass) and report.files_indexed == 24


def _record_walks(monkeypatch, events: list[str]) -> None:  # type: ignore[no-untyped-def]
    from mdrecall.documents import workspace

    walk, write_file = workspace.iter_memory_files, sync._write_file

    def walking(*args, **kwargs):  # type: ignore[no-untyped-def]
        events.append("walk")
        for file in walk(*args, **kwargs):
            events.append("file")
            yield file

    def writing(store, item, vectors, model):  # type: ignore[no-untyped-def]
        events.append("write")
        return write_file(store, item, vectors, model)

    monkeypatch.setattr(workspace, "iter_memory_files", walking)
    monkeypatch.setattr(sync, "_write_file", writing)


def test_single_pass_sync_writes_while_it_walks(tmp_path: Path, make_index, monkeypatch) -> None:
    """No list of every file: the walk is consumed as groups are written, and walked again only when an
    indexed file has vanished."""
    from .conftest import HashingProvider

    ws = tmp_path / "ws"
    _notes(ws, 24)
    monkeypatch.setattr(sync, "EMBED_WINDOW_CHUNKS", 6)
    index = make_index(ws, HashingProvider())
    events: list[str] = []
    _record_walks(monkeypatch, events)
    assert index.sync().files_indexed == 24
    assert events.count("walk") == 1 and events.count("file") == 24
    last_file = len(events) - 1 - events[::-1].index("file")
    assert events.index("write") < last_file  # the first group was written before the walk ended

    events.clear()
    (ws / "memory/2024-03-02-1.md").unlink()
    report = index.sync()
    assert report.files_deleted == 1 and report.files_scanned == 23
    assert events.count("walk") == 2  # a second walk finds which indexed file is gone
    events.clear()
    assert index.sync().files_deleted == 0 and events.count("walk") == 1
