"""Scale: a large sync keeps only chunk counts while it counts the work and reads each file again when its
embedding batch comes; the index it writes is the one a single pass writes."""

from __future__ import annotations

from pathlib import Path

from mdrecall.indexing import sync

from .conftest import HashingProvider, write


def _workspace(ws: Path) -> None:
    for day in range(1, 29):
        lines = [
            f"# 2024-02-{day:02d}",
            "",
            *(f"- note {n} of day {day}: the deploy of service {n % 7}" for n in range(90)),
        ]
        write(ws, f"memory/2024-02-{day:02d}.md", "\n".join(lines) + "\n")
    write(ws, "MEMORY.md", "# Keys\n\napi_key = sk-live-0123456789abcdef0123456789abcdef\n")


def _rows(index) -> list[tuple]:
    return sorted(index.store.conn.execute("SELECT path, start_line, end_line, hash, chunk_text(text) FROM chunks"))


def test_streamed_sync_writes_what_a_single_pass_writes(tmp_path: Path, make_index, monkeypatch) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    single = make_index(ws, HashingProvider(), db_path=tmp_path / "single.sqlite")
    single.sync()
    monkeypatch.setattr(sync, "STREAM_ABOVE_BYTES", 0)  # every sync streams
    seen: list[tuple[int, int]] = []
    streamed = make_index(ws, HashingProvider(), db_path=tmp_path / "streamed.sqlite")
    report = streamed.sync(chunk_progress=lambda done, total: seen.append((done, total)))
    assert _rows(streamed) == _rows(single) and report.chunks_indexed == len(_rows(single)) > 28
    assert seen[0] == (0, report.chunks_indexed) and seen[-1] == (report.chunks_indexed, report.chunks_indexed)
    assert "sk-live" not in "".join(r[4] for r in _rows(streamed))  # redaction holds on the second read too


def _between_walks(monkeypatch, change) -> None:  # type: ignore[no-untyped-def]
    """Run `change()` after the counting walk, before the walk that indexes."""
    iter_changed, calls = sync._iter_changed, []

    def hooked(store, files, config, report, indexed=None, keep_chunks=True):  # type: ignore[no-untyped-def]
        calls.append(keep_chunks)
        if keep_chunks and calls[:-1] == [False]:
            change()
        return iter_changed(store, files, config, report, indexed, keep_chunks)

    monkeypatch.setattr(sync, "_iter_changed", hooked)


def test_a_file_gone_between_the_walks_is_not_fatal(tmp_path: Path, make_index, monkeypatch) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    monkeypatch.setattr(sync, "STREAM_ABOVE_BYTES", 0)
    _between_walks(monkeypatch, lambda: (ws / "memory/2024-02-03.md").unlink())
    index = make_index(ws, HashingProvider())
    seen: list[tuple[int, int]] = []
    report = index.sync(chunk_progress=lambda done, total: seen.append((done, total)))  # totals: counting walk
    assert report.files_indexed == 28  # 29 files, one gone
    paths = {r[0] for r in index.store.conn.execute("SELECT path FROM files")}
    assert "memory/2024-02-03.md" not in paths and len(paths) == 28
    assert all(done <= total for done, total in seen)


def test_a_file_grown_too_large_between_the_walks_is_reported_once(tmp_path: Path, make_index, monkeypatch) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    monkeypatch.setattr(sync, "STREAM_ABOVE_BYTES", 0)
    big = ws / "memory/2024-02-05.md"
    _between_walks(monkeypatch, lambda: big.write_text("- a line that makes the note too large\n" * 500))
    index = make_index(ws, HashingProvider(), {"maxFileBytes": 15_000})
    report = index.sync(chunk_progress=lambda done, total: None)
    reasons = [why for path, why in report.skipped if path == "memory/2024-02-05.md"]
    assert len(reasons) == 1 and "too large" in reasons[0]
    assert report.files_indexed == 28
