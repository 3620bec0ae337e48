"""Incremental sync, full reindex detection, safe reindex with atomic swap, and one sync at a time."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from mdrecall.documents.chunking import chunk_markdown, hash_text
from mdrecall.storage.sqlite import Store

from .conftest import HashingProvider, write


def _chunk_rows(index) -> list[tuple]:
    return index.store.conn.execute(
        "SELECT id, path, start_line, end_line, hash, model FROM chunks ORDER BY id"
    ).fetchall()


def _stray_temp_files(db_path: Path) -> list[str]:
    return [p.name for p in db_path.parent.iterdir() if ".tmp-" in p.name]


def test_first_sync_indexes_everything_with_spec_chunk_ids(workspace: Path, make_index) -> None:
    provider = HashingProvider()
    index = make_index(workspace, provider)
    report = index.sync()
    assert report.full_reindex and report.files_indexed == 3 and report.chunks_indexed == 3
    text = (workspace / "MEMORY.md").read_text()
    [chunk] = chunk_markdown(text)
    expected_id = hash_text(f"memory:MEMORY.md:{chunk.start_line}:{chunk.end_line}:{chunk.hash}:{provider.model}")
    ids = {row[0] for row in _chunk_rows(index)}
    assert expected_id in ids
    counts = index.store.counts()["memory"]
    assert counts == {"files": 3, "chunks": 3}
    assert index.store.vector_row_count() == 3
    assert index.store.conn.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0] == 3
    assert _stray_temp_files(index.db_path) == []


def test_unchanged_files_are_skipped_without_embedding(workspace: Path, make_index) -> None:
    provider = HashingProvider()
    index = make_index(workspace, provider)
    index.sync()
    calls = provider.batch_calls
    report = index.sync()
    assert not report.full_reindex
    assert report.files_unchanged == 3 and report.files_indexed == 0
    assert provider.batch_calls == calls
    assert not index.is_dirty()


def test_touched_but_identical_file_is_rehashed_not_reembedded(workspace: Path, make_index) -> None:
    provider = HashingProvider()
    index = make_index(workspace, provider)
    index.sync()
    target = workspace / "MEMORY.md"
    os.utime(target, (time.time() + 100, time.time() + 100))
    assert index.is_dirty()
    report = index.sync()
    assert report.files_indexed == 0 and report.files_unchanged == 3
    assert not index.is_dirty()


def test_changed_file_is_reindexed_and_old_chunks_removed(workspace: Path, make_index) -> None:
    provider = HashingProvider()
    index = make_index(workspace, provider)
    index.sync()
    write(workspace, "memory/topics/infra.md", "# Infra\n\nThe gateway moved to a rack server named orion.\n")
    report = index.sync()
    assert report.files_indexed == 1 and report.files_unchanged == 2
    texts = [
        r[0]
        for r in index.store.conn.execute("SELECT chunk_text(text) FROM chunks WHERE path='memory/topics/infra.md'")
    ]
    assert len(texts) == 1 and "orion" in texts[0]
    assert index.search("orion", mode="keyword").results[0].path == "memory/topics/infra.md"
    assert index.search("Studio closet", mode="keyword").results == []
    assert index.store.vector_row_count() == 3


def test_deleted_file_is_purged_from_every_table(workspace: Path, make_index) -> None:
    index = make_index(workspace, HashingProvider())
    index.sync()
    (workspace / "memory" / "2026-11-02.md").unlink()
    report = index.sync()
    assert report.files_deleted == 1
    conn = index.store.conn
    assert conn.execute("SELECT COUNT(*) FROM files WHERE path='memory/2026-11-02.md'").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM chunks WHERE path='memory/2026-11-02.md'").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE path='memory/2026-11-02.md'").fetchone()[0] == 0
    assert index.store.vector_row_count() == 2


def test_model_change_forces_full_reindex_and_reuses_nothing_stale(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    first = make_index(workspace, HashingProvider(model="hash-a"), db_path=db)
    first.sync()
    first.close()
    second_provider = HashingProvider(model="hash-b", dims=32)
    second = make_index(workspace, second_provider, db_path=db)
    assert second.is_dirty()
    assert "model changed" in second.full_reindex_reason()
    report = second.sync()
    assert report.full_reindex and report.files_indexed == 3
    models = {r[5] for r in _chunk_rows(second)}
    assert models == {"hash-b"}
    assert second.store.vector.dims == 32
    assert second.store.read_meta()["model"] == "hash-b"
    assert _stray_temp_files(db) == []


def test_chunking_change_forces_full_reindex(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    make_index(workspace, HashingProvider(), db_path=db).sync()
    other = make_index(workspace, HashingProvider(), config={"chunking": {"tokens": 200, "overlap": 20}}, db_path=db)
    assert "chunk tokens changed" in other.full_reindex_reason()


def test_forced_reindex_reuses_the_embedding_cache(workspace: Path, make_index) -> None:
    provider = HashingProvider()
    index = make_index(workspace, provider)
    index.sync()
    embedded = provider.texts_embedded
    report = index.sync(force=True)
    assert report.full_reindex
    assert provider.texts_embedded == embedded, "cache copied into the temp DB: no new embedding"
    assert report.cache_hits == 3


def test_failed_reindex_keeps_the_old_index_and_leaves_no_temp_files(
    workspace: Path, make_index, tmp_path: Path
) -> None:
    db = tmp_path / "idx.sqlite"
    good = make_index(workspace, HashingProvider(model="hash-a"), db_path=db)
    good.sync()
    before = _chunk_rows(good)
    good.close()
    failing = HashingProvider(model="hash-b", fail_after=0)
    broken = make_index(workspace, failing, db_path=db)
    with pytest.raises(RuntimeError, match="injected"):
        broken.sync()
    assert _stray_temp_files(db) == []
    broken.close()
    reopened = Store(db)
    assert (
        reopened.conn.execute("SELECT id, path, start_line, end_line, hash, model FROM chunks ORDER BY id").fetchall()
        == before
    )
    assert reopened.read_meta()["model"] == "hash-a"
    reopened.close()


def test_keyword_only_index_without_provider(workspace: Path, make_index) -> None:
    index = make_index(workspace, None)
    report = index.sync()
    assert report.files_indexed == 3 and report.texts_embedded == 0
    assert index.store.read_meta()["model"] == "fts-only"
    assert index.store.read_meta()["provider"] == "none"
    hits = index.search("a828e60").results
    assert hits and hits[0].path == "MEMORY.md"
    assert index.status()["searchMode"] == "fts-only"


def test_provider_appearing_later_triggers_full_reindex(workspace: Path, make_index, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    make_index(workspace, None, db_path=db).sync()
    upgraded = make_index(workspace, HashingProvider(), db_path=db)
    assert "provider changed" in upgraded.full_reindex_reason()
    assert upgraded.sync().full_reindex
    assert upgraded.store.vector_row_count() == 3


def test_one_sync_at_a_time(workspace: Path, make_index) -> None:
    class SlowProvider(HashingProvider):
        active = 0
        peak = 0

        def embed_batch(self, texts: list[str]):
            SlowProvider.active += 1
            SlowProvider.peak = max(SlowProvider.peak, SlowProvider.active)
            time.sleep(0.1)
            SlowProvider.active -= 1
            return super().embed_batch(texts)

    for i in range(5):
        write(workspace, f"memory/extra-{i}.md", f"note {i}\n")
    index = make_index(workspace, SlowProvider())
    errors: list[BaseException] = []

    def run() -> None:
        try:
            index.sync(force=True)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert SlowProvider.peak == 1
    assert index.store.counts()["memory"]["files"] == 8


def test_undecodable_bytes_are_replaced_and_reported(workspace: Path, make_index) -> None:
    (workspace / "memory" / "latin1.md").write_bytes("caf\xe9 notes about espresso\n".encode("latin-1"))
    index = make_index(workspace, None)
    report = index.sync()
    assert report.files_indexed == 4
    assert any(path == "memory/latin1.md" and "UTF-8" in why for path, why in report.skipped)
    assert index.search("espresso").results[0].path == "memory/latin1.md"
