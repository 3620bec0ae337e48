"""Appending to MEMORY.md and the daily log: format, safety, and no lost writes under concurrency."""

from __future__ import annotations

import multiprocessing
import re
from datetime import date, datetime
from pathlib import Path

import pytest

from mdrecall.documents.writer import append_daily, append_entry, append_long_term, daily_path
from mdrecall.errors import MdrecallError

PROCESSES = 4
ENTRIES_EACH = 200


def test_append_daily_creates_the_days_file(tmp_path: Path) -> None:
    path = append_daily(tmp_path, "- Decided to ship on Friday.", when=date(2026, 11, 2))
    assert path == tmp_path / "memory" / "2026-11-02.md"
    append_daily(tmp_path, "- Dana is out next week.\n", when=datetime(2026, 11, 2, 23, 59))
    assert path.read_text() == "# 2026-11-02\n\n- Decided to ship on Friday.\n\n- Dana is out next week.\n"


def test_append_daily_defaults_to_today(tmp_path: Path) -> None:
    path = append_daily(tmp_path, "note")
    assert path == daily_path(tmp_path) and path.name == f"{date.today().isoformat()}.md"


def test_append_long_term_keeps_existing_content(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Mine\n\nHand-written line without newline")
    append_long_term(tmp_path, "Dana prefers metric units.")
    assert (tmp_path / "MEMORY.md").read_text() == (
        "# Mine\n\nHand-written line without newline\n\nDana prefers metric units.\n"
    )
    fresh = tmp_path / "other"
    fresh.mkdir()
    append_long_term(fresh, "first fact")
    assert (fresh / "MEMORY.md").read_text() == "# Long-term memory\n\nfirst fact\n"


def test_refusals(tmp_path: Path) -> None:
    with pytest.raises(MdrecallError, match="empty"):
        append_daily(tmp_path, "  \n\n")
    with pytest.raises(MdrecallError, match="workspace not found"):
        append_long_term(tmp_path / "missing", "x")
    target = tmp_path / "target.md"
    target.write_text("outside\n")
    (tmp_path / "MEMORY.md").symlink_to(target)
    with pytest.raises(MdrecallError):
        append_long_term(tmp_path, "through the link")
    assert target.read_text() == "outside\n"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(MdrecallError, match="symlink"):
        append_daily(ws, "x")


def _append_many(path: str, worker: int) -> None:
    for i in range(ENTRIES_EACH):
        # Entries of varying size, some bigger than a pipe buffer, so interleaving would show.
        append_entry(path, f"- worker {worker} entry {i} " + "x" * ((i * 37) % 5000) + " end")


def test_concurrent_appends_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "shared.md"
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_append_many, args=(str(path), w)) for w in range(PROCESSES)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    lines = [line for line in path.read_text().split("\n") if line]
    assert len(lines) == PROCESSES * ENTRIES_EACH
    pattern = re.compile(r"- worker (\d+) entry (\d+) (x*) end")
    seen = set()
    for line in lines:
        match = pattern.fullmatch(line)
        assert match, f"torn entry: {line[:80]!r}"
        worker, i = int(match.group(1)), int(match.group(2))
        assert len(match.group(3)) == (i * 37) % 5000
        seen.add((worker, i))
    assert seen == {(w, i) for w in range(PROCESSES) for i in range(ENTRIES_EACH)}
