"""Measure the default local embedding provider (numpy all-MiniLM-L6-v2): load time, chunks/s, ms per query.

Run: `.venv/bin/python bench/bench_embed.py [--chunks 128] [--batch 64] [--queries 50]`.
Prints a summary and writes bench/results/embed.json, so numbers from different machines can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.config import LocalConfig  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402

T = TypeVar("T")
_VOCABULARY = (
    "the gateway index backup notes vault server restart deploy sqlite vector search memory agent session "
    "config token chunk embedding model query result meeting decision migration schema latency cache queue "
    "worker cluster network storage replica snapshot release version branch commit review incident alert "
    "metric dashboard budget roadmap customer feature bug fix test build pipeline docker kubernetes python"
)
_WORDS = tuple(_VOCABULARY.split())


def make_chunk(rng: random.Random, chars: int = 1500) -> str:
    """Markdown-ish prose of about `chars` characters (roughly 300 tokens, so it hits the 256 cap)."""
    parts: list[str] = [f"## Notes {rng.randint(1, 999)}\n"]
    size = len(parts[0])
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:chars]


def timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """(result, seconds) of one call."""
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def run(n_chunks: int, batch_size: int, n_queries: int) -> dict[str, object]:
    """Load once, embed `n_chunks` chunks in batches, then `n_queries` single queries."""
    rng = random.Random(42)
    chunks = [make_chunk(rng) for _ in range(n_chunks)]
    queries = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 10))) for _ in range(n_queries)]
    provider, create_s = timed(create_local_provider, LocalConfig(batch_size=batch_size))
    _, load_s = timed(provider.embed_query, "warm up")  # first call loads weights + tokenizer
    vectors, batch_s = timed(provider.embed_batch, chunks)
    assert vectors.shape == (n_chunks, provider.dims)
    query_times = [timed(provider.embed_query, q)[1] for q in queries]
    tokens = [len(provider._tokenizer.encode(c).ids) for c in chunks]  # private: bench only
    return {
        "model": provider.model,
        "runtime": "numpy",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "numpy": np.__version__},
        "create_s": round(create_s, 4),
        "load_and_first_query_s": round(load_s, 3),
        "chunks": n_chunks,
        "chunk_chars": 1500,
        "mean_chunk_tokens": round(float(np.mean(tokens)), 1),
        "batch_size": batch_size,
        "batch_total_s": round(batch_s, 3),
        "chunks_per_s": round(n_chunks / batch_s, 2),
        "query_ms_median": round(1000 * float(np.median(query_times)), 2),
        "query_ms_p95": round(1000 * float(np.percentile(query_times, 95)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "embed.json")
    args = parser.parse_args()
    result = run(args.chunks, args.batch, args.queries)
    for key, value in result.items():
        print(f"{key:>24}: {value}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
