"""Run the numpy encoders' mini-batches on every core: one Python thread per core, BLAS single-threaded.

Why not let BLAS thread each matmul: the matmuls are only part of a forward pass (GELU, softmax and
LayerNorm are numpy ufuncs on one core), and multi-threaded OpenBLAS collapsed when other processes held
the cores (measured 0.7 vs 4.0 windows/s on the shared box). numpy ufuncs and BLAS release the GIL, so
whole mini-batches in threads keep every core busy on every operation with no synchronisation between them.

threadpoolctl caps BLAS to one thread while the threads run (process-wide, restored afterwards); without
it the mini-batches run one after another on multi-threaded BLAS, as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def worker_count() -> int:
    """Cores this process may run on (the affinity mask, not the machine's count, where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _single_threaded_blas() -> AbstractContextManager[Any] | None:
    """A context that caps BLAS at one thread, or None when threadpoolctl is not installed."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=1, user_api="blas")


def map_batches(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None) -> list[R]:
    """`[fn(item) for item in items]`, spread over `workers` threads (default: one per core), in order."""
    workers = worker_count() if workers is None else max(1, workers)
    if workers == 1 or len(items) < 2:
        return [fn(item) for item in items]
    limit = _single_threaded_blas()
    if limit is None:
        return [fn(item) for item in items]
    with limit, ThreadPoolExecutor(min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def token_budget_batches(lengths: Sequence[int], max_items: int, max_tokens: int) -> list[list[int]]:
    """Indices grouped by similar length (stable sort), each group at most `max_items` long and at most
    `max_tokens` once padded to its longest member: little padding, and temporaries that stay in cache.
    Groups come longest first, so threads taking them in turn end with the short ones and finish together."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = max(1, lengths[i])  # sorted ascending: the newest member is the longest
        if current and (len(current) >= max_items or (len(current) + 1) * width > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    batches.reverse()
    return batches
