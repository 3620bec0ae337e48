"""Do compact vector encodings keep vector rankings? Measured on the real window vectors of built indexes.

For each index file given (built with float32 vectors, e.g. by bench/quality/locomo_eval.py), every window
vector is encoded as float16, int10 and int8 (store.encode_vector) and decoded again; sampled windows of the
index serve as queries (real e5 geometry, no query embedding needed; the query's own chunk is left out),
and each chunk scores as its best window, as in search. Reported per encoding: share of queries with the
same top-1 chunk, mean overlap of the top-10 sets, share of queries whose top-10 is identical in order, and
the largest score error.

    python bench/bench_encoding_rankings.py /tmp/locomo-cache/<key>/conv-*.sqlite
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from mdrecall.storage.sqlite import blob_to_vector, encode_vector

QUERIES_PER_INDEX = 300


def load(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(windows x dims float32 matrix, chunk rowid per window) of one index file, read-only."""
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    rows = conn.execute("SELECT chunk_rowid, embedding FROM chunk_vectors ORDER BY chunk_rowid, window").fetchall()
    conn.close()
    return np.stack([blob_to_vector(bytes(b)) for _, b in rows]), np.array([r for r, _ in rows])


def top10(
    matrix: np.ndarray, chunks: np.ndarray, starts: np.ndarray, query: np.ndarray, own: int
) -> tuple[list, np.ndarray]:
    """The 10 best chunks for a query window, its own chunk left out (it would win trivially)."""
    scores = np.maximum.reduceat(matrix @ query, starts)
    scores[chunks[starts] == own] = -np.inf
    order = np.lexsort((chunks[starts], -scores))[:10]
    return [int(c) for c in chunks[starts][order]], scores


def compare(matrix: np.ndarray, chunks: np.ndarray, encoding: str, rng: np.random.Generator) -> dict[str, Any]:
    decoded = np.stack([blob_to_vector(encode_vector(v, encoding)) for v in matrix])  # type: ignore[arg-type]
    starts = np.flatnonzero(np.r_[True, chunks[1:] != chunks[:-1]])
    picks = rng.choice(len(matrix), size=min(QUERIES_PER_INDEX, len(matrix)), replace=False)
    same_top1 = identical = 0
    overlap = err = 0.0
    for i in picks:
        want, exact = top10(matrix, chunks, starts, matrix[i], int(chunks[i]))
        got, approx = top10(decoded, chunks, starts, matrix[i], int(chunks[i]))
        same_top1 += want[0] == got[0]
        identical += want == got
        overlap += len(set(want) & set(got)) / len(want)
        finite = np.isfinite(exact)
        err = max(err, float(np.abs(exact[finite] - approx[finite]).max()))
    n = len(picks)
    return {
        "queries": n,
        "same_top1": round(same_top1 / n, 4),
        "top10_overlap": round(overlap / n, 4),
        "top10_identical_order": round(identical / n, 4),
        "max_score_error": round(err, 6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("indexes", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=Path("bench/results/encoding_rankings.json"))
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    results: dict[str, Any] = {"indexes": {}, "totals": {}}
    sums: dict[str, dict[str, float]] = {}
    for path in args.indexes:
        matrix, chunks = load(path)
        entry: dict[str, Any] = {"windows": len(matrix), "chunks": int(len(set(chunks.tolist())))}
        for encoding in ("float16", "int10", "int8"):
            entry[encoding] = compare(matrix, chunks, encoding, rng)
            total = sums.setdefault(encoding, {"queries": 0, "same_top1": 0, "top10_overlap": 0, "identical": 0})
            q = entry[encoding]["queries"]
            total["queries"] += q
            total["same_top1"] += entry[encoding]["same_top1"] * q
            total["top10_overlap"] += entry[encoding]["top10_overlap"] * q
            total["identical"] += entry[encoding]["top10_identical_order"] * q
        results["indexes"][path.name] = entry
        print(json.dumps({path.name: entry}), flush=True)
    for encoding, t in sums.items():
        q = t["queries"]
        results["totals"][encoding] = {
            "queries": int(q),
            "same_top1": round(t["same_top1"] / q, 4),
            "top10_overlap": round(t["top10_overlap"] / q, 4),
            "top10_identical_order": round(t["identical"] / q, 4),
        }
    print(json.dumps(results["totals"], indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
