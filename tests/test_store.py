"""The SQLite index: exact schema, sqlite-vec loading and vec0 table, the embedding cache and its LRU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mdrecall.storage.sqlite import ChunkRow, Store


def _tables(store: Store) -> dict[str, str]:
    return {name: kind for name, kind in store.conn.execute("SELECT name, type FROM sqlite_master")}


def test_schema_has_exactly_the_spec_tables_and_indexes(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.sqlite", engine="sqlite-vec")
    store.ensure_vector_table(8)
    objects = _tables(store)
    for table in ("meta", "files", "chunks", "embedding_cache", "chunks_fts", "chunks_vec", "chunk_vectors"):
        assert objects.get(table) == "table", table
    for index in ("idx_chunks_path", "idx_chunks_source", "idx_embedding_cache_updated_at"):
        assert objects.get(index) == "index", index
    columns = [r[1] for r in store.conn.execute("PRAGMA table_info(chunks)")]
    assert columns == [
        "id",
        "path",
        "source",
        "start_line",
        "end_line",
        "hash",
        "model",
        "text",
        "embedding",
        "updated_at",
    ]
    cache_pk = [r[1] for r in store.conn.execute("PRAGMA table_info(embedding_cache)") if r[5]]
    assert cache_pk == ["provider", "model", "provider_key", "hash"]
    fts_sql = store.conn.execute("SELECT sql FROM sqlite_master WHERE name='chunks_fts'").fetchone()[0]
    assert "fts5" in fts_sql and "id UNINDEXED" in fts_sql
    assert store.fts.available and store.vector.available
    store.close()


def test_vec_table_is_recreated_when_dims_change(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.sqlite", engine="sqlite-vec")
    store.ensure_vector_table(4)
    store.conn.execute("INSERT INTO chunks_vec(id, embedding) VALUES('x', ?)", (np.ones(4, np.float32).tobytes(),))
    store.ensure_vector_table(6)
    assert store.vector.dims == 6
    assert store.conn.execute("SELECT COUNT(*) FROM chunks_vec").fetchone()[0] == 0
    store.close()
    reopened = Store(tmp_path / "a.sqlite", engine="sqlite-vec")
    assert reopened.vector.dims == 6
    reopened.close()


def test_missing_extension_falls_back_to_numpy(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.sqlite", extension_path=str(tmp_path / "no-such-vec0.so"))
    assert not store.vector.available and store.vector.load_error
    assert store.ensure_vector_table(3) is False
    vectors = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.7071, 0.7071, 0.0]}
    store.insert_chunks(
        [
            ChunkRow(k, f"{k}.md", "memory", 1, 1, k, "m", f"text {k}", np.asarray(v, np.float32))
            for k, v in vectors.items()
        ]
    )
    rows = store.vector_search(np.asarray([1.0, 0.1, 0.0], np.float32), "m", ["memory"], 2)
    assert [r.id for r in rows] == ["a", "c"]
    assert rows[0].score > rows[1].score > 0.5
    store.close()


def test_knn_scores_are_cosine_similarities(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.sqlite")
    store.ensure_vector_table(3)
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(50, 3)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.insert_chunks(
        [ChunkRow(f"c{i}", "x.md", "memory", i + 1, i + 1, f"h{i}", "m", "t", v) for i, v in enumerate(vecs)]
    )
    query = vecs[7]
    rows = store.vector_search(query, "m", ["memory"], 5)
    expected = np.argsort(-(vecs @ query))[:5]
    assert [r.id for r in rows] == [f"c{i}" for i in expected]
    assert np.allclose([r.score for r in rows], (vecs @ query)[expected], atol=1e-5)
    store.close()


def test_cache_roundtrip_and_lru_eviction(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.sqlite")
    entries = [(f"h{i}", np.full(3, i, np.float32)) for i in range(5)]
    store.cache_put("p", "m", "k", entries)
    got = store.cache_get("p", "m", "k", ["h1", "h4", "zzz"])
    assert set(got) == {"h1", "h4"}
    assert np.allclose(got["h4"], 4) and np.allclose(got["h1"], 1)
    assert store.cache_get("p", "m", "other-key", ["h1"]) == {}
    store.conn.execute("UPDATE embedding_cache SET updated_at = 1000 + CAST(substr(hash, 2) AS INTEGER)")
    store.conn.execute("UPDATE embedding_cache SET updated_at = 5000 WHERE hash = 'h0'")  # recently used
    assert store.cache_evict(3) == 2
    assert set(store.cache_get("p", "m", "k", [f"h{i}" for i in range(5)])) == {"h0", "h3", "h4"}
    store.close()


def test_cache_lookup_handles_more_than_one_batch(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.sqlite")
    store.cache_put("p", "m", "k", [(f"h{i}", np.zeros(2, np.float32)) for i in range(1000)])
    assert len(store.cache_get("p", "m", "k", [f"h{i}" for i in range(1000)])) == 1000
    store.close()


def test_copy_cache_from_another_index(tmp_path: Path) -> None:
    old = Store(tmp_path / "old.sqlite")
    old.cache_put("p", "m", "k", [("h1", np.ones(2, np.float32))])
    old.close()
    new = Store(tmp_path / "new.sqlite")
    assert new.copy_cache_from(tmp_path / "old.sqlite") == 1
    assert set(new.cache_get("p", "m", "k", ["h1"])) == {"h1"}
    new.close()
