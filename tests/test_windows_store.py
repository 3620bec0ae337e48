"""The store keeps several vectors per chunk (one per window) and returns each chunk once at its best window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdrecall.storage.sqlite import ChunkRow, Store


def _row(chunk_id: str, path: str, vectors: np.ndarray) -> ChunkRow:
    return ChunkRow(chunk_id, path, "memory", 1, 3, "h-" + chunk_id, "m", f"text of {chunk_id}", vectors)


@pytest.mark.parametrize("vec0", [True, False], ids=["sqlite-vec", "numpy"])
def test_each_chunk_once_scored_by_its_best_window(tmp_path: Path, vec0: bool) -> None:
    store = Store(tmp_path / "w.sqlite", vector_enabled=vec0)
    eye = np.eye(4, dtype=np.float32)
    if vec0:
        assert store.ensure_vector_table(4)
    with store.transaction():
        # "a" has three windows, one of them the query's direction; "b" one window near it; "c" far away
        store.insert_chunks(
            [
                _row("a", "a.md", np.stack([eye[1], eye[0], eye[2]])),
                _row("b", "b.md", (eye[0] * 0.8 + eye[1] * 0.6).astype(np.float32)),
                _row("c", "c.md", eye[3]),
            ]
        )
    hits = store.vector_search(eye[0], "m", ["memory"], 10)
    assert [h.id for h in hits] == ["a", "b", "c"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5) and hits[1].score == pytest.approx(0.8, abs=1e-5)
    assert [h.id for h in store.vector_search(eye[2], "m", ["memory"], 1)] == ["a"]
    if vec0:
        assert store.vector_row_count() == 5  # one vec0 row per window


def test_deleting_a_file_removes_all_its_windows(tmp_path: Path) -> None:
    store = Store(tmp_path / "w.sqlite")
    eye = np.eye(4, dtype=np.float32)
    assert store.ensure_vector_table(4)
    with store.transaction():
        store.insert_chunks([_row("a", "a.md", np.stack([eye[0], eye[1], eye[2]])), _row("b", "b.md", eye[3])])
    with store.transaction():
        store.delete_chunks_for("a.md", "memory")
    assert store.vector_row_count() == 1
    assert [h.id for h in store.vector_search(eye[0], "m", ["memory"], 10)] == ["b"]
