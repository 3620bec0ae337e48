"""Exact vector search at the numpy floor: every stored window in one float32 matrix, scored by one product.

Chosen by measurement (README "Benchmarks"): at 100k and 1M 384-d vectors a matrix-vector product over a
contiguous float32 matrix is several times faster than sqlite-vec's vec0 KNN, and exact, so there is no
recall to trade away. The matrix is read once from `chunk_vectors` and kept until the vectors change (the
store checks a generation token that every vector write renews).

A chunk may have several vectors (windows); it scores as its best window.

Large indexes take a quantised first pass: with the default e5 model a chunk stores ~7 windows, and at 100k
chunks the float32 product reads 1 GB per query (~45 ms, memory-bound). From QUANTIZED_MIN_WINDOWS windows
on, a copy of the matrix in int8 (per-dimension scales, built at load) is scored by simsimd's SIMD int8 dot
product (a quarter of the bytes, ~10 ms at 700k windows), each chunk takes its best approximate window, and
the best `rescore_count(k)` chunks are scored again exactly in float32. Scores returned are exact; the set
is exact unless quantisation moved a chunk from the true top k below the rescored ones: recall@10 against
exact, measured on real e5 windows, is in README "Benchmarks" (bench/bench_vector_recall.py). Smaller
indexes, an index without simsimd, and `exact=True` (config store.vector.exact) score every window exactly.

Between PRUNED_MIN_WINDOWS and QUANTIZED_MIN_WINDOWS windows the int8 copy only skips work (`pruned_top`): the
error of an int8 dot product is bounded (`int8_error_bound`), so after the best k chunks by the int8 pass are
scored exactly, every chunk whose int8 score plus that bound could still reach the k-th exact score is scored
exactly too, and the others cannot be in the top k. The answer is the full product's, scores to the bit.

A scan over SPLIT_MIN_WINDOWS windows or more uses both cores: in two halves on this thread and a helper
thread (vector-only search), or whole on the helper while the caller runs the keyword side (hybrid search,
`start_top`). Both products release the GIL; the scores are the same to the bit as one scan's.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

LOAD_BLOCK = 8192  # rows read per block when the matrix is (re)loaded
# The int8 pass runs from this many windows on; below it the exact float32 product takes ~3 ms or less. At
# 100k windows the one-thread float32 product took 5.0-5.2 ms against 3.4-3.6 ms for numpy's own (two BLAS
# threads), the int8 pass 1.6-1.7 ms with recall@10 1.0 (round 6, bench_search.py; it ran from 200k before).
QUANTIZED_MIN_WINDOWS = 100_000
# Chunks rescored exactly after the int8 pass: at least RESCORE_MIN, and RESCORE_PER_RESULT per chunk asked
# for (hybrid asks for 24). Rescoring 200 chunks costs ~0.3 ms.
RESCORE_MIN = 200
RESCORE_PER_RESULT = 8
QUANT_BLOCK = 65536  # rows quantised at a time (bounds the float temporaries at load)
# approximate_top: the threshold comes from every n-th window's score (~SAMPLE_WINDOWS of them) and first
# aims at keeping SAMPLED_WINDOWS_PER_CANDIDATE windows per chunk wanted
SAMPLE_WINDOWS = 16384
SAMPLED_WINDOWS_PER_CANDIDATE = 16
# The exact pruned pass (`pruned_top`) runs from this many windows on (below QUANTIZED_MIN_WINDOWS): at 50k
# windows the int8 scan took 0.9 ms against 2.2-2.7 ms for the float32 product (both split on two threads), and
# ~200 synthetic (3 % of real e5) chunks were left to score exactly (bench/bench_search_call.py).
PRUNED_MIN_WINDOWS = 32_768
# More chunks than this share left to score exactly after the int8 pass: the full product is cheaper.
PRUNED_MAX_SHARE = 0.125
# Added to the int8 error bound (`int8_error_bound`, with the float32 roundings it counts)
BOUND_SLACK = 1e-4
# Rows are scored in products of a multiple of this many rows (but for the matrix's last ones), so that a row
# scored again among a few others gets the same bits (`VectorMatrix.window_scores`)
EXACT_ALIGN = 16
# From this many windows on, a query's scan over every window (the exact product or the int8 pass) runs in
# two halves on two threads (this one and a helper thread), each product on one BLAS thread: at 50k vectors
# the exact product took 2.3 ms on one thread and 1.4 ms split, as numpy's own two BLAS threads do, without
# OpenBLAS's workers spinning after the call. A half starts at a multiple of SPLIT_ALIGN rows, so every row
# is scored by the same kernel path as in one product: the scores are the same to the bit.
SPLIT_MIN_WINDOWS = 32_768
SPLIT_ALIGN = 4096


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
    if controller is None or getattr(_ONE_THREAD, "held", False):
        return contextlib.nullcontext()  # (inside a limit already: a query's products share one, ~20 us each)
    return _one_thread(controller)


_ONE_THREAD = threading.local()  # .held: this thread is inside `one_blas_thread`


@contextlib.contextmanager
def _one_thread(controller: Any) -> Any:
    with controller.limit(limits=1, user_api="blas"):
        _ONE_THREAD.held = True
        try:
            yield
        finally:
            _ONE_THREAD.held = False


_HELPER: ThreadPoolExecutor | None = None
_HELPER_LOCK = threading.Lock()
_CORES = os.cpu_count() or 1


def _helper() -> ThreadPoolExecutor:
    """The one helper thread (started on first use): it scores the second half of a large scan, or a whole
    scan while the caller runs the keyword side (`VectorMatrix.start_top`)."""
    global _HELPER
    with _HELPER_LOCK:
        if _HELPER is None:
            _HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdrecall-scan")
        return _HELPER


def _forget_helper() -> None:
    """In a forked child the helper thread does not exist: start a new one when needed."""
    global _HELPER, _HELPER_LOCK
    _HELPER, _HELPER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_helper)
_BESIDE = threading.local()  # .active: this thread is the helper, running a whole scan beside the caller


def split_point(rows: int) -> int:
    """Where a scan over `rows` rows is cut in two (0: not cut: small, one core, or already on the helper)."""
    if rows < SPLIT_MIN_WINDOWS or _CORES < 2 or getattr(_BESIDE, "active", False):
        return 0
    return (rows // 2 // SPLIT_ALIGN) * SPLIT_ALIGN


def _beside(fn: Any, *args: Any) -> Any:
    _BESIDE.active = True
    try:
        return fn(*args)
    finally:
        _BESIDE.active = False


def scan(rows: int, score: Any, out: np.ndarray, split: bool = True) -> np.ndarray:
    """`score(start, end, out[start:end])` over rows 0..rows, in two halves on two threads when large (and
    `split`)."""
    half = split_point(rows) if split else 0
    if not half:
        score(0, rows, out)
        return out
    second = _helper().submit(score, half, rows, out[half:])
    score(0, half, out[:half])
    second.result()
    return out


@dataclass
class VectorMatrix:
    """Unit vectors of every window, sorted by chunk; `starts` marks where each chunk's windows begin."""

    matrix: np.ndarray  # (windows, dims) float32
    window_chunks: np.ndarray  # (windows,) int64 chunk rowid per window
    chunk_rowids: np.ndarray  # (chunks,) int64
    starts: np.ndarray | None  # (chunks,) first window of each chunk; None when every chunk has one window
    exact: bool = False  # score every window exactly on every query, never the int8 pass
    # int8 copy of `matrix` and its per-dimension scales (window ~ quantized / scales), built by `prepare`
    quantized: np.ndarray | None = field(default=None, repr=False)
    scales: np.ndarray | None = field(default=None, repr=False)
    _owners: np.ndarray | None = field(default=None, repr=False)  # chunk index of each window (int8 pass)
    # the largest L2 norm over rows of the int8 copy and of its rounding error (pruned pass), built by `prepare`
    _norms: tuple[float, float] | None = field(default=None, repr=False)

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

    @property
    def quantized_pass(self) -> bool:
        """Whether `top` scores the int8 copy first (large index, simsimd installed, exact not forced)."""
        return not self.exact and int(self.matrix.shape[0]) >= QUANTIZED_MIN_WINDOWS and _simsimd() is not None

    @property
    def pruned_pass(self) -> bool:
        """Whether `top` lets the int8 copy skip chunks that cannot be in the top k (`pruned_top`): exact."""
        windows = int(self.matrix.shape[0])
        return not self.exact and PRUNED_MIN_WINDOWS <= windows < QUANTIZED_MIN_WINDOWS and _simsimd() is not None

    def prepare(self) -> VectorMatrix:
        """Build the int8 copy when the quantised or the pruned pass will use it (at load, so no query pays)."""
        if (self.quantized_pass or self.pruned_pass) and self.quantized is None:
            self.quantized, self.scales = quantize(self.matrix)
            if self.starts is not None and self.quantized_pass:
                self._window_chunk()
        if self.pruned_pass and self._norms is None:
            self._norms = quantized_norms(self.matrix, self.quantized, self.scales)
        return self

    def chunk_scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query with every chunk (its best window); vectors are stored unit-length."""
        q = _unit(query)
        matrix = self.matrix

        def score(start: int, end: int, out: np.ndarray) -> None:
            np.matmul(matrix[start:end], q, out=out)

        body = _body(len(matrix))
        sims = np.empty(len(matrix), dtype=np.float32)
        with one_blas_thread():
            scan(body, score, sims[:body])
            if body < len(matrix):  # the last rows, by a product of their own (`window_scores`)
                score(body, len(matrix), sims[body:])
        if self.starts is None:
            return sims
        return np.maximum.reduceat(sims, self.starts)

    def windows_of(self, rowid: int) -> np.ndarray | None:
        """The window vectors of one chunk (a view, in stored order), or None when it has none."""
        at = int(np.searchsorted(self.chunk_rowids, rowid))
        if at >= len(self.chunk_rowids) or int(self.chunk_rowids[at]) != rowid:
            return None
        if self.starts is None:
            return self.matrix[at : at + 1]
        end = int(self.starts[at + 1]) if at + 1 < len(self.starts) else int(self.matrix.shape[0])
        return self.matrix[int(self.starts[at]) : end]

    def _int8_query(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(q / scales, its int8 copy, the factor between them): q . w ~ (q / scales) . quantized, and the
        int8 dot product is ~factor x that."""
        self.prepare()
        assert self.scales is not None
        q = _unit(query) / self.scales
        peak = float(np.abs(q).max()) or 1.0
        factor = 127.0 / peak
        return q, np.clip(np.rint(q * factor), -127, 127).astype(np.int8), factor

    def window_approximations(self, query: np.ndarray) -> np.ndarray:
        """Every window's int8 dot product with the query (a monotone stand-in for the cosine)."""
        q8 = self._int8_query(query)[1][None, :]
        return self._int8_scan(q8)

    def _int8_scan(self, q8: np.ndarray, split: bool = True) -> np.ndarray:
        assert self.quantized is not None
        quantized, simsimd = self.quantized, _simsimd()

        def score(start: int, end: int, out: np.ndarray) -> None:
            simsimd.cdist(q8, quantized[start:end], metric="dot", threads=1, out=out.reshape(1, -1))

        return scan(len(quantized), score, np.empty(len(quantized), dtype=np.float32), split)

    def approximate_scores(self, query: np.ndarray) -> np.ndarray:
        """Every chunk's best window by the int8 dot product."""
        sims = self.window_approximations(query)
        return sims if self.starts is None else np.maximum.reduceat(sims, self.starts)

    def approximate_top(self, query: np.ndarray, wide: int) -> np.ndarray:
        """The `wide` chunks (indexes) with the best approximate window, in no order.

        The same chunks as the top of `approximate_scores` (up to ties), without a pass over every chunk:
        a threshold from a strided sample keeps a few thousand windows, and every chunk whose best window
        clears it is among them with that best window. Too few chunks clear it: a lower threshold."""
        sims = self.window_approximations(query)
        if self.starts is None:
            return np.argpartition(-sims, wide - 1)[:wide]
        step = max(1, len(sims) // SAMPLE_WINDOWS)
        sample = np.sort(sims[::step])
        target = SAMPLED_WINDOWS_PER_CANDIDATE * wide
        while target // step < len(sample):
            threshold = sample[len(sample) - max(1, target // step)]
            hits = np.flatnonzero(sims >= threshold)
            owners = self._window_chunk()[hits]  # non-decreasing: windows are stored chunk by chunk
            first = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
            if len(first) >= wide:
                best = np.maximum.reduceat(sims[hits], first)
                return owners[first[np.argpartition(-best, wide - 1)[:wide]]]
            target *= 4
        scores = np.maximum.reduceat(sims, self.starts)
        return np.argpartition(-scores, wide - 1)[:wide]

    def _window_chunk(self) -> np.ndarray:
        """The chunk index of every window (int32, built once)."""
        if self._owners is None:
            assert self.starts is not None
            lengths = np.diff(np.append(self.starts, self.matrix.shape[0]))
            self._owners = np.repeat(np.arange(len(self.starts), dtype=np.int32), lengths)
        return self._owners

    def candidate_scores(self, query: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        """Exact best-window cosine of the given chunks (indexes into chunk_rowids), in that order."""
        q = _unit(query)
        if self.starts is None:
            return self.window_scores(q, chunks)
        ends = np.empty_like(self.starts)
        ends[:-1] = self.starts[1:]
        ends[-1] = self.matrix.shape[0]
        first, lengths = self.starts[chunks], ends[chunks] - self.starts[chunks]
        offsets = np.zeros(len(chunks), dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        rows = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(first - offsets, lengths)
        return np.maximum.reduceat(self.window_scores(q, rows), offsets)

    def window_scores(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The cosines of these windows (indexes into the matrix) with the unit query `q`, to the bit those of
        `chunk_scores`. BLAS scores rows in groups (of 4 here) and the rows left over at the end of a product
        take another code path, whose sums may differ in the last bit. So `chunk_scores` scores the matrix's
        last len % EXACT_ALIGN rows by a product of their own; here the other rows are scored by a product
        padded to whole groups, and those last rows by that same product of their own."""
        body = _body(int(self.matrix.shape[0]))
        out = np.empty(len(rows), dtype=np.float32)
        inside = rows < body
        picked = rows[inside] if not inside.all() else rows
        with one_blas_thread():
            if len(picked):
                padded = np.concatenate((picked, np.repeat(picked[-1:], -len(picked) % EXACT_ALIGN)))
                out[inside] = (self.matrix[padded] @ q)[: len(picked)]
            if len(picked) < len(rows):
                out[~inside] = (self.matrix[body:] @ q)[rows[~inside] - body]
        return out

    def top(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best chunks as (chunk rowids, scores), best first."""
        if k <= 0 or len(self) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        with one_blas_thread():  # one limit for every product of the query
            return self._top(query, k)

    def _top(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        wide = rescore_count(k)
        if self.quantized_pass and wide < len(self):
            chunks = self.approximate_top(query, wide)
            return self._best(chunks, self.candidate_scores(query, chunks), k)
        if self.pruned_pass and k < len(self):
            chunks = self.pruned_candidates(query, k)
            if chunks is not None:
                return self._best(chunks, self.candidate_scores(query, chunks), k)
        return self._best(np.arange(len(self)), self.chunk_scores(query), k)

    def pruned_candidates(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """The chunks (indexes, ascending) that may be among the k best by their exact score, found by the int8
        pass: every chunk whose int8 score plus its error bound reaches the k-th best exact score of the int8
        pass's best k. None when more than PRUNED_MAX_SHARE of the chunks are left (the full product is then
        cheaper). A chunk left out scores below k chunks that were kept, so the top k is the full product's."""
        q, q8, factor = self._int8_query(query)
        # integers (exact below 2^24: up to 1040 dimensions). On one thread: at 50k windows the int8 scan took
        # 0.67-0.74 ms alone against 0.76-0.80 ms split on two (100k: 1.33 vs 1.48 ms), at load ~1, queries
        # 0.15 s apart (the helper thread's wake-up costs more than half the scan saves)
        sims = self._int8_scan(q8[None, :], split=False)
        if self.starts is not None:
            sims = np.maximum.reduceat(sims, self.starts)
        first = top_indexes(sims, k)
        kth = float(self.candidate_scores(query, first).min())
        bound = int8_error_bound(q, q8, factor, self._norms)
        chunks = np.flatnonzero(sims >= (kth - bound) * factor)
        return chunks if len(chunks) <= PRUNED_MAX_SHARE * len(self) else None

    def start_top(self, query: np.ndarray, k: int) -> Any:
        """`top` begun now: on the helper thread when the scan is long (and there are two cores), whole, so the
        caller can run something else meanwhile (hybrid search: the keyword side); the returned function waits
        for its answer. Otherwise `top` runs when the function is called."""
        if not split_point(int(self.matrix.shape[0])):
            return lambda: self.top(query, k)
        return _helper().submit(_beside, self.top, query, k).result

    def _best(self, chunks: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best of these chunks by score (ties by rowid: a tie at the k-th score keeps the lowest rowids,
        whichever chunks were scored), best first."""
        part = np.arange(len(scores))
        if k < len(scores):
            order = np.argpartition(-scores, k - 1)
            kth = scores[order[k - 1]]
            part = order[:k]
            tied = np.flatnonzero(scores == kth)
            if len(tied) > 1:
                above = part[scores[part] > kth]
                tied = tied[np.argsort(self.chunk_rowids[chunks[tied]], kind="stable")]
                part = np.concatenate((above, tied[: k - len(above)]))
        rowids = self.chunk_rowids[chunks[part]]
        order = np.lexsort((rowids, -scores[part]))
        return rowids[order], scores[part][order]


# `top_indexes` reads a threshold from every n-th score (~TOP_SAMPLE of them) that about TOP_KEPT_PER_WANTED x k
# scores clear, and ranks only those: ~13 us instead of ~50 us for an argpartition over 50k scores
TOP_SAMPLE = 4096
TOP_KEPT_PER_WANTED = 4


def top_indexes(scores: np.ndarray, k: int) -> np.ndarray:
    """The indexes of the k largest scores, in no order (ties broken either way); 0 < k <= len(scores)."""
    n = len(scores)
    step = n // TOP_SAMPLE
    if step < 2 or n <= TOP_KEPT_PER_WANTED * k * 4:
        return np.argpartition(-scores, k - 1)[:k]
    sample = scores[::step]
    rank = min(len(sample) - 1, -(-TOP_KEPT_PER_WANTED * k // step))  # about that many sampled scores above
    threshold = np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
    kept = np.flatnonzero(scores >= threshold)
    if len(kept) < k:  # (a sample can mislead: then every score is ranked)
        return np.argpartition(-scores, k - 1)[:k]
    return kept[np.argpartition(-scores[kept], k - 1)[:k]]


def _body(rows: int) -> int:
    """The rows of a matrix of `rows` rows scored in whole groups (`VectorMatrix.window_scores`)."""
    return rows - rows % EXACT_ALIGN


def rescore_count(k: int) -> int:
    """How many chunks the int8 pass hands to exact rescoring when k are asked for."""
    return max(RESCORE_MIN, RESCORE_PER_RESULT * k)


def quantize(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 copy of a float32 matrix with one scale per dimension (its largest magnitude maps to 127)."""
    peaks = np.abs(matrix).max(axis=0) if len(matrix) else np.ones(matrix.shape[1], dtype=np.float32)
    scales = (127.0 / np.where(peaks > 0, peaks, 1.0)).astype(np.float32)
    out = np.empty(matrix.shape, dtype=np.int8)
    for start in range(0, len(matrix), QUANT_BLOCK):
        block = matrix[start : start + QUANT_BLOCK] * scales
        out[start : start + len(block)] = np.clip(np.rint(block), -127, 127)
    return out, scales


def quantized_norms(matrix: np.ndarray, quantized: np.ndarray, scales: np.ndarray) -> tuple[float, float]:
    """(largest L2 norm of a row of the int8 copy, largest L2 norm of a row's rounding error matrix x scales -
    quantized): what `int8_error_bound` needs of the matrix. In float32: its relative error (< 1e-4 over 384
    dimensions) is far inside the bound's margin."""
    peak_q, peak_err = 0.0, 0.0
    for start in range(0, len(matrix), LOAD_BLOCK):  # temporaries of ~12 MB at most
        held = quantized[start : start + LOAD_BLOCK].astype(np.float32)
        error = matrix[start : start + len(held)] * scales - held
        peak_q = max(peak_q, float(np.sqrt(np.einsum("ij,ij->i", held, held).max(initial=0.0))))
        peak_err = max(peak_err, float(np.sqrt(np.einsum("ij,ij->i", error, error).max(initial=0.0))))
    return peak_q, peak_err


def int8_error_bound(q: np.ndarray, q8: np.ndarray, factor: float, norms: tuple[float, float] | None) -> float:
    """How far a window's cosine q . w can be from its int8 score (the int8 dot product / factor).

    With u = w x scales (so q . w = (q / scales) . u) and the int8 copies u8 ~ u and q8 ~ factor x (q / scales):
    q . w - q8 . u8 / factor = (q / scales) . (u - u8) + (q / scales - q8 / factor) . u8, each term at most
    the product of the two L2 norms (Cauchy-Schwarz), whatever the window. `norms`: `quantized_norms`."""
    if norms is None:
        return math.inf
    peak_q, peak_err = norms
    scaled = q.astype(np.float64)
    residual = scaled - q8.astype(np.float64) / factor
    bound = float(np.linalg.norm(scaled)) * peak_err + float(np.linalg.norm(residual)) * peak_q
    # float32 roundings: an exact score's sum (< dims x 2^-24 for unit vectors, counted twice), the int8 dot
    # product's conversion to float32 (< 2^-24 of its largest value), the norms (the 0.1 %)
    dims = len(q)
    rounding = 2 * dims * 2.0**-24 + float(np.linalg.norm(q8.astype(np.float64))) * peak_q * 2.0**-24 / factor
    return bound * 1.001 + rounding + BOUND_SLACK


@cache
def _simsimd() -> Any:
    """The simsimd module (SIMD int8 dot products), or None when it is not installed."""
    try:
        import simsimd
    except ImportError:
        return None
    return simsimd


def simsimd_available() -> bool:
    """Whether the int8 first pass can run here (status reports which engine answers)."""
    return _simsimd() is not None


def _unit(query: np.ndarray) -> np.ndarray:
    """The query as float32 of length 1 (unchanged when zero)."""
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q
