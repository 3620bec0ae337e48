"""Scale: a large sync keeps only chunk counts while it counts the work and reads each file again when its
embedding batch comes; the index it writes is the one a single pass writes."""

from __future__ import annotations

from pathlib import Path

from mdrecall import sync

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
    return sorted(index.store.conn.execute("SELECT path, start_line, end_line, hash, text FROM chunks"))


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


def test_a_file_gone_before_its_batch_is_reported_not_fatal(tmp_path: Path, make_index, monkeypatch) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    monkeypatch.setattr(sync, "STREAM_ABOVE_BYTES", 0)
    reread = sync._reread

    def vanish_then_reread(item, config, report):  # the file disappears between counting and indexing
        if item.file.path == "memory/2024-02-03.md" and item.chunks is None:
            (ws / item.file.path).unlink()
        return reread(item, config, report)

    monkeypatch.setattr(sync, "_reread", vanish_then_reread)
    index = make_index(ws, HashingProvider())
    report = index.sync(chunk_progress=lambda done, total: None)  # totals asked for: the counting pass runs
    assert any(path == "memory/2024-02-03.md" and "unreadable" in why for path, why in report.skipped)
    assert report.files_indexed == 28  # 29 files, one gone
