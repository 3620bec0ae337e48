"""Compact storage (issue 14): each window vector is stored once, and the cache still does its work.

The window rows of chunk_vectors carry their text's hash and are the cache of the text the index holds;
embedding_cache keeps only vectors no chunk uses. These tests count rows, bytes and provider calls through
the real sync with a windowed provider (id "local": chunks are cut into windows as for the default model).
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw

from conftest import HashingProvider, write
from mdrecall.storage.sqlite import SCHEMA_VERSION, STORAGE_FORMAT, blob_to_vector, vector_to_blob

DIMS = 32


class WindowedProvider(HashingProvider):
    """The counting bag-of-words provider, cut into windows like a local model (short input: many windows)."""

    id = "local"
    max_seq_length = 64


def _notes(ws: Path, files: int = 3, lines: int = 12) -> None:
    for f in range(files):
        body = "\n".join(f"- note {f}-{i}: topic{f} item{i} follows decision {i * 7 + f}" for i in range(lines))
        write(ws, f"memory/notes-{f}.md", f"# Notes {f}\n\n{body}\n")


def _counts(conn: apsw.Connection) -> tuple[int, int, int]:
    """(window rows, embedding_cache rows, distinct hashed windows)."""
    windows = conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0]
    cached = conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0]
    distinct = conn.execute("SELECT COUNT(DISTINCT hash) FROM chunk_vectors WHERE hash IS NOT NULL").fetchone()[0]
    return int(windows), int(cached), int(distinct)


def _synced(tmp_path: Path, make_index, db_path: Path | None = None):  # type: ignore[no-untyped-def]
    """(workspace, provider, index) of the notes workspace, indexed once."""
    ws = tmp_path / "ws"
    _notes(ws)
    provider = WindowedProvider(dims=DIMS)
    index = make_index(ws, provider, db_path=db_path) if db_path is not None else make_index(ws, provider)
    index.sync()
    return ws, provider, index


def test_a_window_vector_is_stored_once(tmp_path: Path, make_index) -> None:
    ws, provider, index = _synced(tmp_path, make_index)
    conn = index.store.conn
    windows, cached, distinct = _counts(conn)
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    assert windows > chunks  # several windows per chunk
    assert cached == 0 and distinct == windows == provider.texts_embedded
    vector_bytes = conn.execute("SELECT SUM(length(embedding)) FROM chunk_vectors").fetchone()[0]
    assert vector_bytes == windows * (1 + 4 + DIMS // 4 * 5)  # int10 (the default encoding), once
    assert index.store.cache_count() == windows


def test_an_edit_embeds_only_the_changed_window_and_keeps_each_vector_once(tmp_path: Path, make_index) -> None:
    ws, provider, index = _synced(tmp_path, make_index)
    windows_before, _, _ = _counts(index.store.conn)
    path = ws / "memory/notes-1.md"
    path.write_text(path.read_text().replace("item5 follows", "item5 now precedes"))
    embedded = provider.texts_embedded
    report = index.sync()
    fresh = provider.texts_embedded - embedded
    file_windows = windows_before // 3
    assert 1 <= fresh <= 2 < file_windows  # the window with the edited line (and one whose cut moved)
    assert report.cache_hits == file_windows - fresh
    windows, cached, distinct = _counts(index.store.conn)
    assert windows == windows_before and distinct == windows
    assert cached == fresh  # the replaced windows' old vectors, kept for an undo, stored nowhere else
    hit = index.search("note 1-5: topic1 item5 now precedes decision 36", mode="vector").results
    assert hit and hit[0].path == "memory/notes-1.md"


def test_a_full_reindex_and_a_deleted_then_restored_file_embed_nothing(tmp_path: Path, make_index) -> None:
    ws, provider, index = _synced(tmp_path, make_index)
    embedded = provider.texts_embedded
    report = index.sync(force=True)  # builds a new file (seeded from this one's cache) and swaps it in
    assert report.full_reindex and provider.texts_embedded == embedded
    windows, cached, _ = _counts(index.store.conn)
    assert cached == 0  # the rebuilt file too holds each vector once
    saved = (ws / "memory/notes-2.md").read_text()
    (ws / "memory/notes-2.md").unlink()
    index.sync()
    after_delete, cached_after_delete, _ = _counts(index.store.conn)
    assert cached_after_delete == windows - after_delete > 0  # the deleted file's windows moved to the cache
    write(ws, "memory/notes-2.md", saved)
    index.sync()
    assert provider.texts_embedded == embedded
    assert _counts(index.store.conn)[:2] == (windows, 0)


def test_another_model_never_reuses_the_vectors(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _notes(ws, files=2)
    first = WindowedProvider(model="hash-a", dims=DIMS)
    make_index(ws, first).sync()
    windows = first.texts_embedded
    second = WindowedProvider(model="hash-b", dims=DIMS)
    index = make_index(ws, second)
    report = index.sync()
    assert report.full_reindex and second.texts_embedded == windows and report.cache_hits == 0
    # the old model's vectors stay as cache entries of its own identity; the index holds the new ones
    identities = {r[0] for r in index.store.conn.execute("SELECT model FROM embedding_cache")}
    assert identities == {"hash-a"}
    assert index.store.cache_get(second.id, "hash-a", second.provider_key, ["x"]) == {}


def test_cache_eviction_never_drops_what_search_uses(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _notes(ws)
    provider = WindowedProvider(dims=DIMS)
    index = make_index(ws, provider, config={"cache": {"maxEntries": 1}})
    index.sync()
    windows, _, _ = _counts(index.store.conn)
    for n in range(3):
        path = ws / "memory/notes-0.md"
        path.write_text(path.read_text() + f"- late entry {n}: topic0 appendix{n}\n")
        index.sync()
    rows, cached, _ = _counts(index.store.conn)
    assert cached == 0 and rows >= windows  # evicted down to nothing beyond the index's own windows
    for f in range(3):
        hits = index.search(f"note {f}-3: topic{f} item3 follows decision {21 + f}", mode="vector").results
        assert hits and hits[0].path == f"memory/notes-{f}.md"


def _version_2_index(tmp_path: Path, make_index) -> tuple[Path, WindowedProvider, Path, int]:  # type: ignore[no-untyped-def]
    """(workspace, provider, db, windows embedded) of an index written in version 2's layout."""
    db = tmp_path / "v2.sqlite"
    ws, provider, index = _synced(tmp_path, make_index, db)
    index.close()
    _downgrade_to_version_2(db)
    return ws, provider, db, provider.texts_embedded


def test_a_version_2_index_is_migrated_and_rebuilt_without_embedding_again(tmp_path: Path, make_index) -> None:
    ws, provider, db, windows = _version_2_index(tmp_path, make_index)
    old = make_index(ws, provider, db_path=db)
    query = provider.embed_query("note 1-4: topic1 item4 follows decision 29")
    assert old.store.vector_search(query, provider.model, ["memory"], 1)[0].path == "memory/notes-1.md"  # old layout
    assert "storage format" in (old.full_reindex_reason() or "")
    report = old.sync()
    assert report.full_reindex and provider.texts_embedded == windows  # every window came from the old cache
    conn = old.store.conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert _counts(conn) == (windows, 0, windows)
    assert (
        old.search("note 1-4: topic1 item4 follows decision 29", mode="vector").results[0].path == "memory/notes-1.md"
    )


def _downgrade_to_version_2(db: Path) -> None:
    """What version 2 wrote: chunk_vectors without hashes, every window also in embedding_cache (hex keys)."""
    conn = apsw.Connection(str(db))
    identity = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()[0])
    with conn:
        for rowid, blob in conn.execute("SELECT rowid, embedding FROM chunk_vectors").fetchall():  # float32 then
            conn.execute(
                "UPDATE chunk_vectors SET embedding = ? WHERE rowid = ?",
                (vector_to_blob(blob_to_vector(bytes(blob))), rowid),
            )
        conn.execute(
            "INSERT OR IGNORE INTO embedding_cache SELECT ?, ?, ?, hex(hash), embedding, length(embedding) / 4, 1 "
            "FROM chunk_vectors",
            identity,
        )
        conn.execute("UPDATE embedding_cache SET hash = lower(hash)")
        conn.execute("DROP INDEX idx_chunk_vectors_hash")
        conn.execute("ALTER TABLE chunk_vectors DROP COLUMN hash")
        conn.execute("DELETE FROM meta WHERE key = 'vector_identity'")
        meta = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'memory_index_meta_v1'").fetchone()[0])
        assert meta["storage"] == STORAGE_FORMAT
        meta["storage"] = 2
        conn.execute("UPDATE meta SET value = ? WHERE key = 'memory_index_meta_v1'", (json.dumps(meta),))
        conn.execute("PRAGMA user_version = 2")
    conn.close()


def test_a_version_2_index_opened_read_only_still_searches(tmp_path: Path, make_index) -> None:
    from mdrecall.storage.sqlite import Store

    _, provider, db, _ = _version_2_index(tmp_path, make_index)
    store = Store(db, read_only=True)  # never migrated: a read-only state directory cannot be written
    try:
        query = provider.embed_query("note 2-6: topic2 item6 follows decision 44")
        assert store.vector_search(query, provider.model, ["memory"], 1)[0].path == "memory/notes-2.md"
        windows = store.vector_row_count()
        assert store.cache_count() == windows  # v2: every window also in embedding_cache, none hashed
        assert "hash" not in {r[1] for r in store.conn.execute("PRAGMA table_info(chunk_vectors)")}
    finally:
        store.close()
