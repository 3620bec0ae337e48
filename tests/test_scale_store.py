"""Scale work must not change behaviour: deletes are exact, fast vector search is exact, progress counts chunks."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from conftest import HashingProvider, random_word_store, write
from mdrecall.storage.sqlite import blob_to_vector, vector_dims

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "amber",
    "basil",
    "cedar",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "jasper",
    "kelp",
    "lotus",
    "maple",
    "nectar",
    "onyx",
    "pearl",
    "quartz",
    "raven",
    "sage",
    "topaz",
    "umber",
    "violet",
    "willow",
]


def _random_workspace(root: Path, files: int, seed: int = 3) -> dict[str, str]:
    """Files of random word salad (distinct vectors, no ties), each with a unique marker word."""
    rng = random.Random(seed)
    texts = {}
    for i in range(files):
        lines = [" ".join(rng.choices(WORDS, k=12)) for _ in range(rng.randint(2, 40))]
        text = f"# note {i}\n\nmarker{i:03d} " + "\n".join(lines) + "\n"
        rel = f"memory/n{i:03d}.md"
        write(root, rel, text)
        texts[rel] = text
    return texts


def _stored_vectors(index) -> list[tuple[str, str, np.ndarray]]:
    """(chunk id, path, vector) as stored: the embedded text may carry a context prefix besides the chunk."""
    rows = index.store.conn.execute(
        "SELECT c.id, c.path, v.embedding FROM chunk_vectors v JOIN chunks c ON c.rowid = v.chunk_rowid"
    ).fetchall()
    return [(cid, path, blob_to_vector(blob)) for cid, path, blob in rows]


def _rows_per_path(index) -> dict[str, int]:
    rows = index.store.conn.execute("SELECT path, count(*) FROM chunks GROUP BY path").fetchall()
    return dict(rows)


def test_deleting_one_file_leaves_every_other_files_rows(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    texts = _random_workspace(ws, 12)
    provider = HashingProvider(dims=64)
    index = make_index(ws, provider)
    index.sync()
    before = _rows_per_path(index)
    chunks = _stored_vectors(index)
    vectors_before = index.store.vector_row_count()
    victim = "memory/n005.md"
    assert before[victim] >= 1

    (ws / victim).unlink()
    report = index.sync()
    assert report.files_deleted == 1

    after = _rows_per_path(index)
    assert victim not in after
    assert after == {p: n for p, n in before.items() if p != victim}
    assert index.store.vector_row_count() == vectors_before - before[victim]
    assert not index.search("marker005", mode="keyword").results
    for i, rel in enumerate(texts):
        if rel == victim:
            continue
        hits = index.search(f"marker{i:03d}", mode="keyword").results
        assert [h.path for h in hits][:1] == [rel], rel  # FTS rows of every other file are intact
    for chunk_id, path, vector in chunks:
        top = index.store.vector_search(vector, provider.model, ["memory"], 5)
        if path == victim:
            assert all(hit.path != victim for hit in top)
        else:
            assert top[0].id == chunk_id and top[0].score > 0.999  # and so are their vectors


def test_vector_search_returns_the_brute_force_top_k(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _random_workspace(ws, 30, seed=11)
    provider = HashingProvider(dims=48)
    index = make_index(ws, provider)
    index.sync()
    rows = _stored_vectors(index)
    assert len(rows) > 40
    matrix = np.stack([vector for _, _, vector in rows])
    rng = random.Random(5)
    for _ in range(15):
        query = provider._vector(" ".join(rng.choices(WORDS, k=6)))
        sims = matrix @ query
        order = np.argsort(-sims, kind="stable")[:10]
        expected = [(rows[i][0], float(sims[i])) for i in order]
        got = index.store.vector_search(query, provider.model, ["memory"], 10)
        assert len(got) == 10
        np.testing.assert_allclose([g.score for g in got], [s for _, s in expected], atol=1e-5)
        # same ids, up to the order of exact ties
        assert {g.id for g in got if g.score > expected[-1][1] + 1e-6} <= {i for i, _ in expected}
        assert {i for i, s in expected if s > expected[-1][1] + 1e-6} <= {g.id for g in got}


class SteppedProvider(HashingProvider):
    """A provider the indexer treats as a slow local model: it embeds in steps and reports each one."""

    id = "local"


def test_progress_callback_reports_embedded_chunks(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _random_workspace(ws, 120, seed=4)
    provider = SteppedProvider(dims=32)
    index = make_index(ws, provider, config={"cache": {"enabled": True}})
    seen: list[tuple[int, int]] = []
    report = index.sync(chunk_progress=lambda done, total: seen.append((done, total)))
    total = report.chunks_indexed
    assert total > 64
    assert seen[0] == (0, total)
    assert seen[-1] == (total, total)
    assert all(t == total for _, t in seen)
    dones = [d for d, _ in seen]
    assert dones == sorted(dones)
    assert len([d for d in dones if 0 < d < total]) >= 1  # it moves during the embedding, not only at the end
    assert provider.texts_embedded == report.texts_embedded

    # a forced rebuild takes every vector from the cache: progress still reaches the total
    seen.clear()
    report = index.sync(force=True, chunk_progress=lambda done, total: seen.append((done, total)))
    assert report.texts_embedded == 0 and report.cache_hits >= report.chunks_indexed  # windows may be cached
    assert seen[-1] == (report.chunks_indexed, report.chunks_indexed)


def test_keyword_only_progress_counts_chunks_written(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _random_workspace(ws, 8, seed=9)
    index = make_index(ws, None)
    seen: list[tuple[int, int]] = []
    report = index.sync(chunk_progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (report.chunks_indexed, report.chunks_indexed)
    assert len(seen) == 1 + 8


def test_a_chunk_with_several_windows_scores_as_its_best_window(tmp_path: Path) -> None:
    from mdrecall.storage.sqlite import ChunkRow, Store

    store = Store(tmp_path / "w.sqlite")
    eye = np.eye(4, dtype=np.float32)
    rows = [
        ChunkRow("a", "a.md", "memory", 1, 9, "ha", "m", "text a", np.stack([eye[0], eye[1]])),
        ChunkRow("b", "b.md", "memory", 1, 9, "hb", "m", "text b", eye[2]),
        ChunkRow("c", "c.md", "memory", 1, 9, "hc", "m", "text c", np.stack([eye[3], (eye[1] + eye[2]) / 2**0.5])),
    ]
    with store.transaction():
        store.insert_chunks(rows)
    got = store.vector_search(eye[1], "m", ["memory"], 3)
    assert [g.id for g in got] == ["a", "c", "b"]
    np.testing.assert_allclose([g.score for g in got], [1.0, 2**-0.5, 0.0], atol=1e-6)
    with store.transaction():
        store.delete_chunks_for("a.md", "memory")
    assert [g.id for g in store.vector_search(eye[1], "m", ["memory"], 3)] == ["c", "b"]
    assert store.vector_search(eye[1], "other-model", ["memory"], 3) == []
    store.close()


def test_vectors_are_float32_blobs_and_the_spec_json_column_is_opt_in(tmp_path: Path, make_index, workspace) -> None:
    index = make_index(workspace, HashingProvider(dims=16))
    index.sync()
    conn = index.store.conn
    assert {r[0] for r in conn.execute("SELECT embedding FROM chunks")} == {""}
    assert {r[0] for r in conn.execute("SELECT typeof(embedding) FROM chunk_vectors")} == {"blob"}
    assert {vector_dims(r[0]) for r in conn.execute("SELECT embedding FROM chunk_vectors")} == {16}
    # each vector once: the window rows are the cache entries of the indexed text (test_compact_storage.py)
    assert conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0] == 0
    spec = make_index(
        workspace,
        HashingProvider(dims=16),
        config={"store": {"vector": {"jsonEmbeddings": True}}},
        db_path=workspace.parent / "spec.sqlite",
    )
    spec.sync()
    stored = spec.store.conn.execute("SELECT embedding FROM chunks LIMIT 1").fetchone()[0]
    assert len(json.loads(stored)) == 16


def test_a_version_1_index_is_rebuilt_in_the_compact_format(tmp_path: Path, make_index, workspace) -> None:
    import apsw

    from mdrecall.config.settings import parse_config
    from mdrecall.indexing.sync import expected_meta

    meta = expected_meta(None, parse_config({}))
    del meta["storage"]  # what a version-1 index recorded
    db = tmp_path / "old.sqlite"
    old = apsw.Connection(str(db))
    old.execute("PRAGMA user_version = 1")
    old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    old.execute("CREATE TABLE files (path TEXT PRIMARY KEY, source TEXT, hash TEXT, mtime INTEGER, size INTEGER)")
    old.execute(
        "CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT, source TEXT, start_line INTEGER, end_line INTEGER, "
        "hash TEXT, model TEXT, text TEXT, embedding TEXT, updated_at INTEGER)"
    )
    old.execute("INSERT INTO meta VALUES ('memory_index_meta_v1', ?)", (json.dumps(meta),))
    old.close()
    index = make_index(workspace, None, db_path=db)
    assert "storage format" in index.full_reindex_reason()
    index.sync()
    assert index.search("a828e60", mode="keyword").results
    from mdrecall.storage.sqlite import SCHEMA_VERSION

    assert index.store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_keyword_ranking_without_common_terms_matches_full_bm25(tmp_path: Path, monkeypatch) -> None:
    from mdrecall.storage import sqlite as store_module

    store = random_word_store(tmp_path / "k.sqlite", WORDS, ["common", "usual"], "rare")

    def full(query: str, k: int) -> list[tuple[int, float]]:
        sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
        return store.conn.execute(sql, (query, k)).fetchall()

    queries = ['"common" OR "rare" OR "usual"', '"common" AND "rare"', '"rare" OR "alpha"', '"common" AND "usual"']
    expected = {q: full(q, 10) for q in queries}
    monkeypatch.setattr(store_module, "COMMON_TERM_MIN_ROWS", 0)
    assert store._common_terms(['"common"', '"rare"', '"usual"']) == ['"common"', '"usual"']
    for query in queries:
        got = store._ranked_rowids(query, 10)
        want = expected[query]
        assert len(got) == len(want), query
        informative = [rowid for rowid, rank in want if rank < -1e-3]  # rows scored by a rare term
        assert [rowid for rowid, _ in got[: len(informative)]] == informative, query
        matching = {r for (r,) in store.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (query,))}
        assert {rowid for rowid, _ in got} <= matching, query  # never a chunk the full query does not match
    store.close()


def test_common_term_answers_follow_writes_of_this_and_other_connections(tmp_path: Path) -> None:
    from mdrecall.storage.sqlite import ChunkRow, Store

    def rows(start: int, n: int, text: str) -> list[ChunkRow]:
        return [ChunkRow(f"c{i}", f"n{i}.md", "memory", 1, 1, f"h{i}", "m", text) for i in range(start, start + n)]

    store = Store(tmp_path / "c.sqlite")
    with store.transaction():
        store.insert_chunks(rows(0, 300, "shared words here"))
    assert store._common_terms(['"shared"', '"other"']) == ['"shared"']
    with store.transaction():  # this connection's write: most chunks no longer hold "shared"
        store.insert_chunks(rows(300, 900, "other words"))
    assert store._common_terms(['"shared"', '"other"']) == ['"other"']
    second = Store(tmp_path / "c.sqlite")
    with second.transaction():  # another connection's write
        second.insert_chunks(rows(1200, 3000, "fresh words"))
    second.close()
    assert store._common_terms(['"shared"', '"other"', '"words"']) == ['"words"']
    store.close()
