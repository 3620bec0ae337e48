"""Recall of the int8 vector pass against exact best-window search, on real indexes and real queries.

The int8 pass (storage/vectors.py) ranks chunks by their best window in an int8 copy of the matrix and rescores
the best `rescore_count(k)` exactly. Its recall depends on how real vectors spread over the dimensions, so
it is measured here on real e5 windows, never only on synthetic vectors. Each given index (an mdrecall SQLite file,
opened read-only) is searched with real questions embedded by the configured provider, the query vector made
exactly as search makes it (unit, centred). For every query:

- exact top-k: every window scored, each chunk its best window (the floor);
- int8 top-k with K chunks rescored, for K = a share of the chunks (the default pass rescores 200 of 100k
  = 0.2%), for a few fixed K, and for the production K; recall@10 and recall@k (k = the hybrid candidate
  count, 24);
- the int8 rank of each exact top-10 chunk, as a share of all chunks and absolute: the scale-free figure
  (a K of that share at 100k chunks would have kept it).

Then the whole hybrid search (default config, the blend included) runs each query twice on the index, once
exact and once with the int8 pass forced at this size and its rescoring cut to the same share of the chunks
as at 100k (RESCORE_MIN x chunks / 100k, at least 24): `hybrid_same_top10` is the share of queries whose
10 results are the same, in the same order.

    python bench/bench_vector_recall.py --index a.sqlite --queries q.txt [--index b.sqlite --queries r.txt]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mdrecall.config.settings import parse_config
from mdrecall.embeddings.centering import center_query, centering_weight
from mdrecall.embeddings.factory import create_provider
from mdrecall.retrieval.search import run_search
from mdrecall.storage import vectors as vector_index
from mdrecall.storage.sqlite import Store
from mdrecall.storage.vectors import VectorMatrix, quantize, rescore_count

SHARES = (0.002, 0.005, 0.01)
FIXED = (30, 50, 100)
TIE = 1e-6  # exact scores this close are ties (identical windows)
HYBRID_K = 24  # candidate_count(6, 4): what hybrid search asks the vector side for


def default_provider() -> Any:
    provider = create_provider(parse_config({})).provider
    if provider is None:
        sys.exit("no embedding provider available")
    return provider


def query_vectors(texts: list[str]) -> np.ndarray:
    """Unit, centred query vectors, as run_search makes them (default config and provider)."""
    config = parse_config({})
    provider = default_provider()
    weight = centering_weight(provider, config.query.centering)
    out = []
    for text in texts:
        v = np.asarray(provider.embed_query(text), dtype=np.float32)
        v /= np.linalg.norm(v)
        out.append(center_query(provider, v, weight))
    return np.stack(out)


def approx_top(matrix: VectorMatrix, q: np.ndarray, k: int, wide: int) -> np.ndarray:
    """Chunk indexes of the int8 pass's top k with `wide` chunks rescored (as VectorMatrix.top does)."""
    rough = matrix.approximate_scores(q)
    chunks = np.argpartition(-rough, wide - 1)[:wide] if wide < len(matrix) else np.arange(len(matrix))
    scores = matrix.candidate_scores(q, chunks)
    part = np.argsort(-scores, kind="stable")[:k]
    return chunks[part]


def exact_top(matrix: VectorMatrix, q: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-matrix.chunk_scores(q), kind="stable")[:k]


def measure(matrix: VectorMatrix, queries: np.ndarray) -> dict[str, Any]:
    n = len(matrix)
    started = time.perf_counter()
    matrix.quantized, matrix.scales = quantize(matrix.matrix)
    out: dict[str, Any] = {
        "chunks": n,
        "windows": int(matrix.matrix.shape[0]),
        "queries": len(queries),
        "quantize_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    ranks: list[float] = []
    absolute: list[int] = []
    truth10 = [exact_top(matrix, q, 10) for q in queries]
    truthk = [exact_top(matrix, q, HYBRID_K) for q in queries]
    for q, t10 in zip(queries, truth10, strict=True):
        rough = matrix.approximate_scores(q)
        order = np.empty(n, dtype=np.int64)
        order[np.argsort(-rough, kind="stable")] = np.arange(n)
        absolute += [int(order[c]) + 1 for c in t10]
        ranks += [(int(order[c]) + 1) / n for c in t10]
    errors, gaps = [], []
    for q in queries:
        exact = matrix.chunk_scores(q)
        unit = q / np.linalg.norm(q) / matrix.scales
        approx = matrix.approximate_scores(q) * float(np.abs(unit).max()) / 127.0  # back to cosine units
        errors.append(np.abs(approx - exact))
        ordered = np.sort(exact)[::-1]
        gaps.append(float(ordered[HYBRID_K - 1] - ordered[min(len(ordered), 200) - 1]))
    out["int8_chunk_score_error"] = {
        "p50": round(float(np.percentile(np.concatenate(errors), 50)), 5),
        "p99": round(float(np.percentile(np.concatenate(errors), 99)), 5),
        "max": round(float(np.concatenate(errors).max()), 5),
    }
    out[f"exact_score_gap_rank{HYBRID_K}_to_rank200_p50"] = round(float(np.median(gaps)), 4)
    out["int8_rank_of_exact_top10"] = {
        "share_p99": round(float(np.percentile(ranks, 99)), 5),
        "share_max": round(float(max(ranks)), 5),
        "p99": float(np.percentile(absolute, 99)),
        "max": int(max(absolute)),
    }
    wides = {f"share_{s}": max(HYBRID_K, int(round(s * n))) for s in SHARES}
    wides.update({f"fixed_{w}": w for w in FIXED})
    wides["production"] = rescore_count(HYBRID_K)
    for name, wide in wides.items():
        r10 = rk = 0
        for q, t10, tk in zip(queries, truth10, truthk, strict=True):
            got = approx_top(matrix, q, HYBRID_K, wide)
            exact = matrix.chunk_scores(q)
            # a chunk tied with the exact k-th (same score: duplicate text) counts as found
            r10 += min(10, int(np.sum(exact[got[:10]] >= exact[t10[-1]] - TIE)))
            rk += min(HYBRID_K, int(np.sum(exact[got] >= exact[tk[-1]] - TIE)))
        out[name] = {
            "candidates": wide,
            "recall_at_10": round(r10 / (10 * len(queries)), 4),
            f"recall_at_{HYBRID_K}": round(rk / (HYBRID_K * len(queries)), 4),
        }
    return out


def private_copy(index: Path, folder: Path) -> Path:
    """A copy of the index (and its WAL) to open: the original is never opened for writing."""
    copy = folder / "index.sqlite"
    shutil.copyfile(index, copy)
    if Path(f"{index}-wal").exists():
        shutil.copyfile(f"{index}-wal", f"{copy}-wal")
    return copy


def load_matrix(copy: Path) -> VectorMatrix:
    store = Store(copy)
    matrix = store.vector_matrix()
    store.close()
    if matrix is None or matrix.starts is None:
        sys.exit(f"{copy}: no windowed vectors")
    return matrix


def hybrid_agreement(copy: Path, texts: list[str], chunks: int) -> dict[str, Any]:
    """Full hybrid search, exact against the int8 pass forced (rescoring the 100k-chunk share)."""
    provider = default_provider()
    cfg = parse_config({}).query
    model = provider.model
    rescore = max(24, vector_index.RESCORE_MIN * chunks // 100_000)
    saved = (vector_index.QUANTIZED_MIN_WINDOWS, vector_index.RESCORE_MIN, vector_index.RESCORE_PER_RESULT)
    exact, fast = Store(copy, exact_vectors=True), Store(copy)
    same = 0
    try:
        vector_index.QUANTIZED_MIN_WINDOWS, vector_index.RESCORE_MIN, vector_index.RESCORE_PER_RESULT = 0, rescore, 1
        for text in texts:
            got = [
                [(r.path, r.start_line) for r in run_search(s, provider, model, cfg, text, ["memory"], 10).results]
                for s in (exact, fast)
            ]
            same += got[0] == got[1]
    finally:
        vector_index.QUANTIZED_MIN_WINDOWS, vector_index.RESCORE_MIN, vector_index.RESCORE_PER_RESULT = saved
        exact.close()
        fast.close()
    return {"hybrid_rescored_chunks": rescore, "hybrid_same_top10": round(same / len(texts), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, action="append", required=True)
    parser.add_argument("--queries", type=Path, action="append", required=True, help="one question a line")
    parser.add_argument("--out", type=Path, default=Path("bench/results/vector_recall.json"))
    args = parser.parse_args()
    if len(args.index) != len(args.queries):
        sys.exit("give one --queries file per --index")
    results = {}
    for index, qfile in zip(args.index, args.queries, strict=True):
        texts = [line.strip() for line in qfile.read_text().splitlines() if line.strip()]
        with tempfile.TemporaryDirectory() as tmp:
            copy = private_copy(index, Path(tmp))
            matrix = load_matrix(copy)
            entry = measure(matrix, query_vectors(texts))
            entry.update(hybrid_agreement(copy, texts, len(matrix)))
        results[index.name if index.name != "index.sqlite" else index.parent.name] = entry
        print(json.dumps({str(index): entry}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
