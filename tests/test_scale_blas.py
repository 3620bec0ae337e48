"""The query product runs on one BLAS thread, with the same results as brute force."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from mdrecall.storage import vectors as vector_index
from mdrecall.storage.vectors import VectorMatrix


def test_one_thread_product_gives_the_brute_force_top_k(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((3000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [(1 + i // 3, vectors[i].tobytes()) for i in range(len(vectors))]  # 1000 chunks, 3 windows each
    matrix = VectorMatrix.from_rows(rows, 64, len(rows))
    threads: list[int] = []
    controller = vector_index._blas_controller()
    original = vector_index.one_blas_thread

    def spy():  # type: ignore[no-untyped-def]
        ctx = original()
        threads.append(0 if isinstance(ctx, contextlib.nullcontext) else 1)
        return ctx

    monkeypatch.setattr(vector_index, "one_blas_thread", spy)
    query = vectors[17] + 0.1 * vectors[900]
    rowids, scores = matrix.top(query, 10)
    best = (vectors @ (query / np.linalg.norm(query))).reshape(1000, 3).max(axis=1)
    assert rowids.tolist() == (np.argsort(-best, kind="stable")[:10] + 1).tolist()
    assert np.allclose(scores, np.sort(best)[::-1][:10], atol=1e-5)
    assert controller is not None  # threadpoolctl is a dependency: the limit is really applied
    assert threads[0] == 1 and threads[1:] == [0] * (len(threads) - 1)  # one limit, shared by its products
    assert len(threads) >= 2
