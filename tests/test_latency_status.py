"""`status` names the vector engine that answers: exact float32 (with or without the int8 pass that skips chunks),
or the int8 first pass of a large index."""

from __future__ import annotations

from pathlib import Path

from mdrecall.storage import vectors as vector_index

from .conftest import HashingProvider, write


def test_status_says_when_the_int8_first_pass_answers(tmp_path: Path, make_index, monkeypatch) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/2026-01-02.md", "# Notes\n\n- the gateway moved to the Mac Studio\n- backups at 02:00\n")
    index = make_index(ws, HashingProvider())
    index.sync()
    assert index.status()["vector"]["mode"] == "numpy (exact, float32 matrix)"
    windows = index.store.vector_row_count()
    monkeypatch.setattr(vector_index, "PRUNED_MIN_WINDOWS", windows)  # the exact pruned pass
    assert index.status()["vector"]["mode"] == (
        f"numpy (exact, float32 matrix; an int8 pass over {windows} windows skips chunks that cannot rank)"
    )
    monkeypatch.setattr(vector_index, "QUANTIZED_MIN_WINDOWS", windows)  # this tiny index counts as large
    assert index.status()["vector"]["mode"].startswith(f"numpy (int8 first pass over {windows} windows")
    exact = make_index(ws, HashingProvider(), {"store": {"vector": {"exact": True}}}, db_path=tmp_path / "x.sqlite")
    exact.sync()
    assert exact.status()["vector"]["mode"] == "numpy (exact, float32 matrix)"
