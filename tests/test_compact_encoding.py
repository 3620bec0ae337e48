"""Compact vector encodings (store.vector.encoding): float16, int10 (the default) and int8 with a scale per vector.

Stored blobs are decoded into the same float32 search matrix; these tests check the round trip, that the
rankings of a small index match float32's, and that switching the setting rebuilds from the cache without
embedding again (unless the cache holds only coarser vectors than asked).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdrecall.storage.sqlite import (
    ChunkRow,
    Store,
    blob_precision,
    blob_to_vector,
    decode_blocks,
    encode_vector,
    vector_dims,
)
from test_compact_storage import DIMS, WindowedProvider, _notes


@pytest.mark.parametrize("dims", [7, 8, 384])
def test_each_encoding_round_trips_and_tells_its_own_width(dims: int) -> None:
    rng = np.random.default_rng(dims)
    vector = rng.standard_normal(dims).astype(np.float32)
    vector /= np.linalg.norm(vector)
    for encoding, tolerance, size in (("float32", 0, 4 * dims), ("float16", 1e-3, 1 + 2 * dims)):
        blob = encode_vector(vector, encoding)  # type: ignore[arg-type]
        assert len(blob) == size and vector_dims(blob) == dims
        assert np.abs(blob_to_vector(blob) - vector).max() <= tolerance
    blob = encode_vector(vector, "int8")
    assert len(blob) % 4 and len(blob) <= dims + 6 and vector_dims(blob) == dims
    step = np.abs(vector).max() / 127  # rounding moves a value by half a step; the norm is then restored
    assert np.abs(blob_to_vector(blob) - vector).max() <= step
    assert abs(float(np.linalg.norm(blob_to_vector(encode_vector(vector, "float16")))) - 1) < 1e-6
    rows = [(i, encode_vector(vector * (i + 1), e)) for i, e in enumerate(["int8", "float32", "float16", "int8"])]
    decoded = [np.frombuffer(b, dtype=np.float32) for _, b in decode_blocks(rows)]
    assert [np.allclose(d, blob_to_vector(b)) for d, (_, b) in zip(decoded, rows, strict=True)] == [True] * 4


@pytest.mark.parametrize("dims", [1, 7, 8, 11, 12, 384, 1024])
def test_int10_packs_four_values_in_five_bytes_and_round_trips(dims: int) -> None:
    rng = np.random.default_rng(dims)
    vector = rng.standard_normal(dims).astype(np.float32)
    vector /= np.linalg.norm(vector)
    blob = encode_vector(vector, "int10")
    groups = -(-dims // 4)
    assert len(blob) in (5 + 5 * groups, 6 + 5 * groups) and len(blob) % 4  # never read as float32
    assert vector_dims(blob) == dims and blob_precision(blob) == 10
    step = np.abs(vector).max() / 511  # half a step of rounding, then the unit norm restored
    decoded = blob_to_vector(blob)
    assert decoded.shape == (dims,) and np.abs(decoded - vector).max() <= step
    assert abs(float(np.linalg.norm(decoded)) - 1) < 1e-6
    rows = [(1, blob), (2, encode_vector(vector, "float16")), (3, blob)]
    block = [np.frombuffer(b, dtype=np.float32) for _, b in decode_blocks(rows)]
    assert np.allclose(block[0], decoded) and np.allclose(block[2], decoded)


def _store(path: Path, encoding: str, vectors: np.ndarray) -> Store:
    store = Store(path, encoding=encoding)  # type: ignore[arg-type]
    rows = [
        ChunkRow(f"c{i}", f"n{i}.md", "memory", 1, 3, f"h{i}", "m", f"chunk {i}", vectors[i])
        for i in range(len(vectors))
    ]
    with store.transaction():
        store.insert_chunks(rows)
    return store


def test_rankings_of_a_small_index_match_float32(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((400, 3, 64)).astype(np.float32)  # 400 chunks of 3 windows
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    queries = rng.standard_normal((25, 64)).astype(np.float32)
    exact = _store(tmp_path / "f32.sqlite", "float32", vectors)
    want = [[r.id for r in exact.vector_search(q, "m", ["memory"], 10)] for q in queries]
    for encoding in ("float16", "int10", "int8"):
        store = _store(tmp_path / f"{encoding}.sqlite", encoding, vectors)
        got = [[r.id for r in store.vector_search(q, "m", ["memory"], 10)] for q in queries]
        store.close()
        if encoding == "float16":
            assert got == want  # score error ~1e-4: same order
            continue
        overlap = np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got, want, strict=True)])
        if encoding == "int10":  # score error ~4x float16's: the same best chunks, a near-tie at rank 10 may swap
            assert [g[0] for g in got] == [w[0] for w in want] and overlap >= 0.99
            continue
        # int8 (score error up to ~4e-3 at 64-d) may swap near-ties of random vectors; the eval decides its use
        assert overlap >= 0.97 and np.mean([g[0] == w[0] for g, w in zip(got, want, strict=True)]) >= 0.9
    exact.close()


def test_switching_the_encoding_rebuilds_from_the_cache_and_never_serves_coarser_vectors(
    tmp_path: Path, make_index
) -> None:
    ws = tmp_path / "ws"
    _notes(ws)
    provider = WindowedProvider(dims=DIMS)
    db = tmp_path / "index.sqlite"
    make_index(ws, provider, db_path=db).sync()
    windows = provider.texts_embedded
    compact = make_index(ws, provider, config={"store": {"vector": {"encoding": "int8"}}}, db_path=db)
    assert "vector encoding changed" in (compact.full_reindex_reason() or "")
    compact.sync()
    assert provider.texts_embedded == windows  # re-encoded from the int10 vectors the index held (default)
    lengths = {r[0] for r in compact.store.conn.execute("SELECT length(embedding) FROM chunk_vectors")}
    assert lengths == {len(encode_vector(np.zeros(DIMS, np.float32), "int8"))}
    hit = compact.search("note 2-7: topic2 item7 follows decision 51", mode="vector").results
    assert hit and hit[0].path == "memory/notes-2.md"
    exact = make_index(ws, provider, config={"store": {"vector": {"encoding": "float32"}}}, db_path=db)
    exact.sync()
    assert provider.texts_embedded == 2 * windows  # int8 (and int10) vectors are not good enough for float32
    assert {r[0] for r in exact.store.conn.execute("SELECT length(embedding) FROM chunk_vectors")} == {DIMS * 4}


def test_status_says_how_the_vectors_are_stored(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _notes(ws, files=1)
    index = make_index(ws, WindowedProvider(dims=DIMS), config={"store": {"vector": {"encoding": "int8"}}})
    index.sync()
    assert index.status()["vector"]["encoding"] == "int8"
