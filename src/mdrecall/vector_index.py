"""Exact vector search at the numpy floor: every stored window in one float32 matrix, scored by one product.

Chosen by measurement (README "Benchmarks"): at 100k and 1M 384-d vectors a matrix-vector product over a
contiguous float32 matrix is several times faster than sqlite-vec's vec0 KNN, and exact, so there is no
recall to trade away. The matrix is read once from `chunk_vectors` and kept until the vectors change (the
store checks a generation token that every vector write renews).

A chunk may have several vectors (windows); it scores as its best window.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

LOAD_BLOCK = 8192  # rows read per block when the matrix is (re)loaded


@cache
def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded BLAS, built once (~1 ms; each limit then costs ~7 us)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """BLAS on one thread for the query's matrix-vector product. The product is memory-bound, and
    multi-threaded OpenBLAS keeps its workers spinning after the call, competing with the rest of the search
    (keyword query, window blend) for the cores. Measured at 100k chunks x 7 windows (interleaved runs):
    at load ~2, hybrid p50 58-60 ms wall / CPU with one thread against 82-85 ms wall, 94-100 ms CPU with two
    (the bare product alone is faster with two: 29 vs 39 ms); at load ~5, 60-64 ms CPU (114-134 ms wall)
    against 83-88 ms (169-176 ms wall)."""
    controller = _blas_controller()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


@dataclass
class VectorMatrix:
    """Unit vectors of every window, sorted by chunk; `starts` marks where each chunk's windows begin."""

    matrix: np.ndarray  # (windows, dims) float32
    window_chunks: np.ndarray  # (windows,) int64 chunk rowid per window
    chunk_rowids: np.ndarray  # (chunks,) int64
    starts: np.ndarray | None  # (chunks,) first window of each chunk; None when every chunk has one window

    @property
    def dims(self) -> int:
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0

    def __len__(self) -> int:
        return int(self.chunk_rowids.shape[0])

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, bytes]], dims: int, count: int) -> VectorMatrix:
        """Build from (chunk_rowid, float32 blob) rows, filled in place (no second copy of the vectors).

        `count` bounds the rows read; blobs of another width are skipped.
        """
        width = dims * 4
        matrix = np.empty((count, dims), dtype=np.float32)
        ids = np.empty(count, dtype=np.int64)
        n = 0
        rows = iter(rows)
        while n < count:
            block = list(itertools.islice(rows, min(LOAD_BLOCK, count - n)))
            if not block:
                break
            good = [(r, b) for r, b in block if isinstance(b, bytes) and len(b) == width]
            if good:
                # one join per block: ~50x faster than a numpy assignment per row, and memory stays bounded
                flat = np.frombuffer(b"".join(b for _, b in good), dtype=np.float32)
                matrix[n : n + len(good)] = flat.reshape(len(good), dims)
                ids[n : n + len(good)] = [r for r, _ in good]
                n += len(good)
        matrix, ids = matrix[:n], ids[:n]
        if n and np.any(ids[1:] < ids[:-1]):
            order = np.argsort(ids, kind="stable")
            ids, matrix = ids[order], matrix[order]
        boundary = np.ones(n, dtype=bool)
        boundary[1:] = ids[1:] != ids[:-1]
        if boundary.all():
            return cls(matrix, ids, ids, None)
        starts = np.flatnonzero(boundary)
        return cls(matrix, ids, ids[starts], starts)

    def chunk_scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query with every chunk (its best window); vectors are stored unit-length."""
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm > 0:
            q = q / norm
        with one_blas_thread():
            sims = self.matrix @ q
        if self.starts is None:
            return sims
        return np.maximum.reduceat(sims, self.starts)

    def top(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best chunks as (chunk rowids, scores), best first."""
        if k <= 0 or len(self) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = self.chunk_scores(query)
        part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        order = part[np.lexsort((self.chunk_rowids[part], -scores[part]))]
        return self.chunk_rowids[order], scores[order]
