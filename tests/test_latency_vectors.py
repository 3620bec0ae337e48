"""The int8 first pass of vector search (large indexes) returns brute force's top k; small indexes and
`store.vector.exact` stay exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig, parse_config
from mdrecall.embeddings.local import create_local_provider
from mdrecall.storage import vectors as vector_index
from mdrecall.storage.sqlite import ChunkRow, Store
from mdrecall.storage.vectors import VectorMatrix, quantize

NAMES = ["Priya", "Tom", "Aiko", "Lars", "Mbali", "Diego"]
DOINGS = [
    "adopted a three-legged greyhound from the shelter",
    "fixed the gears of an old racing bike",
    "baked zucchini bread for the neighbours",
    "moved the team standup to half past nine",
    "filed the quarterly tax forms a day early",
    "planted tomatoes along the new wooden fence",
    "booked a night train to Vienna for the conference",
    "started reading a thousand page novel about sailors",
    "repaired the leaking kitchen tap with a new washer",
    "signed up for a pottery class on Thursday evenings",
]
QUERIES = [
    "Who took in a rescue dog?",
    "bicycle repair",
    "what did someone bake",
    "meeting time changed",
    "taxes",
    "gardening vegetables",
    "travel plans by rail",
    "plumbing problem at home",
]


def brute_force(vectors: np.ndarray, owners: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """Chunk rowids by best window cosine, ties by rowid: the floor every path is compared with."""
    q = query / np.linalg.norm(query)
    best: dict[int, float] = {}
    for owner, sim in zip(owners.tolist(), (vectors @ q).tolist(), strict=True):
        best[owner] = max(best.get(owner, -2.0), sim)
    return sorted(best, key=lambda r: (-best[r], r))[:k]


def windowed(vectors: np.ndarray, per_chunk: int) -> tuple[VectorMatrix, np.ndarray]:
    owners = np.arange(len(vectors)) // per_chunk + 1
    rows = [(int(o), v.tobytes()) for o, v in zip(owners, vectors, strict=True)]
    return VectorMatrix.from_rows(rows, vectors.shape[1], len(rows)), owners


@pytest.fixture(scope="module")
def e5_windows() -> tuple[np.ndarray, np.ndarray]:
    """Real e5 window vectors (60 sentences, 3 per chunk) and real e5 query vectors."""
    provider = create_local_provider(LocalConfig(model="e5-small"))
    texts = [f"{name} {doing}." for doing in DOINGS for name in NAMES]
    windows = np.asarray(provider.embed_batch(texts), dtype=np.float32)
    windows /= np.linalg.norm(windows, axis=1, keepdims=True)
    queries = np.stack([np.asarray(provider.embed_query(q), dtype=np.float32) for q in QUERIES])
    return windows, queries


def test_int8_pass_on_real_e5_vectors_gives_the_brute_force_top_k(
    e5_windows: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "QUANTIZED_MIN_WINDOWS", 0)
    monkeypatch.setattr(vector_index, "RESCORE_MIN", 8)
    monkeypatch.setattr(vector_index, "RESCORE_PER_RESULT", 1)
    windows, queries = e5_windows
    matrix, owners = windowed(windows, 3)
    assert matrix.quantized_pass and matrix.prepare().quantized is not None
    for query in queries:
        rowids, scores = matrix.top(query, 5)
        assert rowids.tolist() == brute_force(windows, owners, query, 5)
        exact = np.sort(matrix.chunk_scores(query))[::-1][:5]
        assert np.allclose(scores, exact, atol=1e-6)  # the scores returned are the exact ones


def test_int8_ranking_follows_the_exact_one_on_real_vectors(e5_windows: tuple[np.ndarray, np.ndarray]) -> None:
    """The approximate window scores order the chunks like the exact cosine does (up to near ties)."""
    windows, queries = e5_windows
    quantized, scales = quantize(windows)
    assert quantized.dtype == np.int8 and np.abs(quantized).max() == 127
    restored = quantized.astype(np.float32) / scales
    assert np.abs(restored - windows).max() < 0.5 / scales.min() + 1e-6  # within half a step per dimension
    for query in queries:
        q = query / np.linalg.norm(query)
        exact, approx = windows @ q, restored @ q
        assert int(np.argmax(approx)) == int(np.argmax(exact))
        assert np.corrcoef(exact, approx)[0, 1] > 0.99


def test_structured_index_large_enough_takes_the_int8_pass_and_matches_brute_force(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Clusters of windows (as real chunks are): the int8 pass finds brute force's top k for each query."""
    monkeypatch.setattr(vector_index, "QUANTIZED_MIN_WINDOWS", 2000)
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, 48)).astype(np.float32)
    vectors = np.repeat(centres, 100, axis=0) + 0.6 * rng.standard_normal((4000, 48)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix, owners = windowed(vectors, 4)  # 1000 chunks of 4 windows
    assert matrix.quantized_pass
    calls: list[int] = []
    original = matrix.candidate_scores
    monkeypatch.setattr(matrix, "candidate_scores", lambda q, c: calls.append(len(c)) or original(q, c))
    for i in range(10):
        query = centres[i * 3] + 0.5 * rng.standard_normal(48).astype(np.float32)
        rowids, _ = matrix.top(query, 10)
        assert rowids.tolist() == brute_force(vectors, owners, query, 10)
    assert calls == [vector_index.rescore_count(10)] * 10  # only the int8 pass's best chunks were rescored


def test_small_index_stays_exact() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((600, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix, owners = windowed(vectors, 3)
    assert len(vectors) < vector_index.QUANTIZED_MIN_WINDOWS
    assert not matrix.quantized_pass and matrix.prepare().quantized is None
    for i in range(5):
        rowids, _ = matrix.top(vectors[i * 50], 7)
        assert rowids.tolist() == brute_force(vectors, owners, vectors[i * 50], 7)


def store_with_windows(path: Path, exact: bool, vectors: np.ndarray, per_chunk: int) -> Store:
    store = Store(path, exact_vectors=exact)
    store.ensure_vector_table(vectors.shape[1])
    rows = [
        ChunkRow(f"c{i}", f"memory/{i}.md", "memory", 1, 3, f"h{i}", "m", f"chunk {i}", windows)
        for i, windows in enumerate(vectors.reshape(-1, per_chunk, vectors.shape[1]))
    ]
    with store.transaction():
        store.insert_chunks(rows)
    return store


def test_exact_config_keeps_every_window_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "QUANTIZED_MIN_WINDOWS", 100)
    assert parse_config({"store": {"vector": {"exact": True}}}).store.vector.exact is True
    assert parse_config({}).store.vector.exact is False
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((900, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = store_with_windows(tmp_path / "exact.sqlite", True, vectors, 3)
    fast = store_with_windows(tmp_path / "fast.sqlite", False, vectors, 3)
    exact_matrix, fast_matrix = exact.vector_matrix(), fast.vector_matrix()
    assert exact_matrix is not None and fast_matrix is not None
    assert exact_matrix.quantized is None and not exact_matrix.quantized_pass
    assert fast_matrix.quantized is not None  # built at load, before any query
    for i in range(5):
        query = vectors[i * 100] + 0.3 * vectors[i * 100 + 50]
        want = [f"c{r - 1}" for r in brute_force(vectors, np.arange(900) // 3 + 1, query, 5)]
        assert [r.id for r in exact.vector_search(query, "m", ["memory"], 5)] == want
        assert [r.id for r in fast.vector_search(query, "m", ["memory"], 5)] == want
    exact.close()
    fast.close()


@pytest.mark.parametrize("wide", [5, 40, 300])
def test_threshold_selection_keeps_the_chunks_with_the_best_approximate_window(
    wide: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """approximate_top (a sampled threshold) picks what a per-chunk max over every window would, also when
    a few chunks hold most windows (few chunks clear the first threshold: it is lowered)."""
    monkeypatch.setattr(vector_index, "QUANTIZED_MIN_WINDOWS", 0)
    monkeypatch.setattr(vector_index, "SAMPLE_WINDOWS", 256)
    rng = np.random.default_rng(11)
    counts = np.concatenate([[400, 300], rng.integers(1, 9, 600)])  # two huge chunks, then small ones
    vectors = rng.standard_normal((int(counts.sum()), 24)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    owners = np.repeat(np.arange(len(counts)) + 1, counts)
    rows = [(int(o), v.tobytes()) for o, v in zip(owners, vectors, strict=True)]
    matrix = VectorMatrix.from_rows(rows, 24, len(rows)).prepare()
    for _ in range(20):
        query = rng.standard_normal(24).astype(np.float32)
        scores = matrix.approximate_scores(query)
        got = matrix.approximate_top(query, wide)
        kth = np.sort(scores)[::-1][wide - 1]
        assert len(set(got.tolist())) == wide
        assert np.all(scores[got] >= kth)  # the wide best (any of a tie at the boundary)


# -- the exact pruned pass (PRUNED_MIN_WINDOWS .. QUANTIZED_MIN_WINDOWS windows) --------------------------------


def full_top(matrix: VectorMatrix, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top k by the full float32 product over every window: the path below the pruned pass."""
    return matrix._best(np.arange(len(matrix)), matrix.chunk_scores(query), k)


def clustered(rng: np.random.Generator, rows: int, dims: int, skew: bool = False) -> np.ndarray:
    """Unit vectors around 40 centres (a few dimensions much larger than the rest when `skew`, as e5's are)."""
    centres = rng.standard_normal((40, dims)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, rows)] + 0.8 * rng.standard_normal((rows, dims)).astype(np.float32)
    if skew:
        vectors[:, :3] *= 6.0
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize(("rows", "per_chunk", "skew"), [(6007, 1, False), (6003, 3, True), (4099, 1, True)])
def test_the_pruned_pass_gives_the_full_products_top_k_to_the_bit(
    monkeypatch: pytest.MonkeyPatch, rows: int, per_chunk: int, skew: bool
) -> None:
    monkeypatch.setattr(vector_index, "PRUNED_MIN_WINDOWS", 1000)
    monkeypatch.setattr(vector_index, "SPLIT_MIN_WINDOWS", 2048)  # the scan in two halves, as at 50k
    monkeypatch.setattr(vector_index, "SPLIT_ALIGN", 1024)
    rng = np.random.default_rng(rows)
    vectors = clustered(rng, rows - rows % per_chunk, 48, skew)
    matrix, _ = windowed(vectors, per_chunk)
    assert matrix.pruned_pass and not matrix.quantized_pass and matrix.prepare().quantized is not None
    pruned = 0
    for i in range(12):
        query = vectors[rng.integers(len(vectors))] + 0.3 * rng.standard_normal(48).astype(np.float32)
        if i == 0:
            query = vectors[-1]  # a chunk among the matrix's last rows (scored by a product of their own)
        chunks = matrix.pruned_candidates(query, 20)
        pruned += chunks is not None
        got, want = matrix.top(query, 20), full_top(matrix, query, 20)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])  # rowids, scores: every bit
    assert pruned >= 10  # the pruned pass answered (not the full product it falls back to)


def test_the_int8_error_bound_holds_for_every_window() -> None:
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 5000, 64, skew=True)
    matrix, _ = windowed(vectors, 1)
    matrix.quantized, matrix.scales = quantize(matrix.matrix)
    norms = vector_index.quantized_norms(matrix.matrix, matrix.quantized, matrix.scales)
    for query in [vectors[7], vectors[99] + rng.standard_normal(64).astype(np.float32), -vectors[3]]:
        q, q8, factor = matrix._int8_query(query)
        exact = vectors.astype(np.float64) @ (query / np.linalg.norm(query)).astype(np.float64)
        approximate = (matrix.quantized.astype(np.int64) @ q8.astype(np.int64)) / factor
        bound = vector_index.int8_error_bound(q, q8, factor, norms)
        assert np.abs(exact - approximate).max() <= bound - vector_index.BOUND_SLACK
        assert bound < 0.2  # and it prunes: far below the spread of cosines


def test_the_pruned_pass_falls_back_to_the_full_product_and_breaks_ties_by_rowid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "PRUNED_MIN_WINDOWS", 1000)
    rng = np.random.default_rng(9)
    vectors = clustered(rng, 3000, 32)
    vectors[1000:1040] = vectors[5]  # 40 chunks tie with chunk 6: the top 10 keeps the lowest rowids
    matrix, _ = windowed(vectors, 1)
    got = matrix.top(vectors[5], 10)
    assert got[0].tolist() == [6, *range(1001, 1010)]
    assert np.array_equal(got[0], full_top(matrix, vectors[5], 10)[0])
    calls: list[int] = []
    original = matrix.chunk_scores
    monkeypatch.setattr(matrix, "chunk_scores", lambda q: calls.append(1) or original(q))
    zero = np.zeros(32, dtype=np.float32)  # every chunk scores 0: nothing can be pruned
    assert matrix.pruned_candidates(zero, 10) is None
    assert matrix.top(zero, 10)[0].tolist() == list(range(1, 11)) and calls == [1]


def test_the_pruned_pass_on_real_e5_vectors_gives_the_full_products_top_k(
    e5_windows: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    windows, queries = e5_windows
    monkeypatch.setattr(vector_index, "PRUNED_MIN_WINDOWS", 10)
    monkeypatch.setattr(vector_index, "PRUNED_MAX_SHARE", 1.0)  # 20 chunks: never fall back to the full product
    matrix, owners = windowed(windows, 3)
    assert matrix.pruned_pass and matrix.prepare().quantized is not None
    for query in queries:
        q, q8, factor = matrix._int8_query(query)
        exact = windows.astype(np.float64) @ (query / np.linalg.norm(query)).astype(np.float64)
        approximate = (matrix.quantized.astype(np.int64) @ q8.astype(np.int64)) / factor
        assert np.abs(exact - approximate).max() <= vector_index.int8_error_bound(q, q8, factor, matrix._norms)
        assert matrix.pruned_candidates(query, 5) is not None
        got, want = matrix.top(query, 5), full_top(matrix, query, 5)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert got[0].tolist() == brute_force(windows, owners, query, 5)


def test_top_indexes_are_the_k_largest_whatever_the_order_and_ties() -> None:
    """The sampled threshold only narrows what is ranked: the k indexes it gives hold the k largest scores, on
    shuffled, sorted (the best ones between two sampled rows) and tied scores."""
    rng = np.random.default_rng(5)
    for n in (10, 500, 20_000, 50_000, 120_000):
        for k in (k for k in (1, 13, 40) if k <= n):
            for shape in ("random", "ascending", "descending", "ties", "one best block"):
                scores = rng.standard_normal(n).astype(np.float32)
                if shape == "ascending":
                    scores.sort()
                elif shape == "descending":
                    scores[::-1].sort()
                elif shape == "ties":
                    scores = np.round(scores, 1)
                elif shape == "one best block":
                    scores[n // 3 : n // 3 + k] += 100.0  # all of the best between two sampled rows
                got = vector_index.top_indexes(scores, k)
                kth = np.sort(scores)[::-1][k - 1]
                assert len(set(got.tolist())) == k and bool((scores[got] >= kth).all()), (n, k, shape)
