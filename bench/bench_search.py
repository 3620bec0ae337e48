"""Search at scale on synthetic indexes, beside the floor each measure is judged against.

- vector top-10 over N random 384-d unit vectors (default 100k and 1M): mdrecall's `Store.vector_search`
  (warm: the matrix is read once per process, reported as `load_ms`) against numpy brute force over the same
  in-memory float32 matrix (the floor); optionally sqlite-vec's vec0 KNN (`--vec0`, with and without the
  per-query COUNT(*) the old code ran);
- keyword search at 100k chunks of default size (~400 tokens): 3 common words, and a rare identifier;
- hybrid p50 at 100k chunks with a fixed query vector (query embedding excluded), wall and CPU; with
  `--windows` (the default) every chunk stores one vector per window as the default e5 model does
  (`chunk_windows` with e5's 512-token plan: ~7 windows for a chunk of short bullet lines), and the provider
  is a "local" one, so the best-window blend runs as it does by default; the floor beside it is numpy brute
  force over every window (best window per chunk). From 200k windows on, vector search takes the int8 first
  pass (storage/vectors.py); the same hybrid queries also run on a second connection with `exact_vectors`
  (config store.vector.exact), interleaved query by query, and the share of identical top-6 results is
  reported (`hybrid_same_top6_as_exact`). The synthetic windows are random: recall on real e5 vectors is
  `bench/bench_vector_recall.py`'s;
- the index's FTS segments as written and after `Store.tidy_fts` (what a sync runs at its end);
- index bytes per chunk (file + WAL) with text, 384-d vector and its cache entry.

Rows are written through `Store.insert_chunks`/`cache_put` (the real write path) except for the vector-only
1M index, whose rows are bulk-inserted in the same layout. Figures are printed and written as JSON.

    python bench/bench_search.py                       # 100k text+vectors, 1M vectors
    python bench/bench_search.py --vector-sizes 100000 # skip 1M
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_index import NAMES, TOPICS  # noqa: E402
from mdrecall.config.settings import parse_config  # noqa: E402
from mdrecall.documents.windows import WindowPlan, chunk_windows  # noqa: E402
from mdrecall.embeddings.base import EmbeddingProvider  # noqa: E402
from mdrecall.storage.sqlite import ChunkRow, Store  # noqa: E402

DIMS = 384
MODEL = "bench-model"
CHUNK_CHARS = 1600  # the default chunk: 400 tokens x ~4 characters
COMMON_QUERY = "noted work follow"  # words in nearly every synthetic chunk
QUERIES = 30
E5_PLAN = WindowPlan(3, 3, 512)  # sync.window_plan for the default model (e5: 512 tokens)


def unit_vectors(n: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, dims), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - start), dims), dtype=np.float32)
        out[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def chunk_text(rng: random.Random, i: int) -> tuple[str, str]:
    """A default-size chunk of synthetic notes, with a unique identifier in it."""
    topic = rng.choice(list(TOPICS))
    ident = f"id{i:07d}x"
    lines = [f"# Note {i}: {topic}", ""]
    while sum(len(line) + 1 for line in lines) < CHUNK_CHARS:
        words = " ".join(rng.sample(TOPICS[topic].split(), 4))
        lines.append(
            f"- {rng.choice(NAMES)} noted the {words} work for the {topic} track, follow up {rng.randint(1, 99999)}."
        )
    lines.append(f"- commit {ident}")
    return "\n".join(lines), ident


def p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def timed(fn, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def numpy_floor(matrix: np.ndarray, queries: np.ndarray) -> float:
    """Brute force top-10 over an in-memory float32 matrix: the floor any exact engine is judged against."""

    def one(q: np.ndarray) -> None:
        scores = matrix @ q
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top])]

    return p50_ms([timed(lambda q=q: one(q), 1)[0] for q in queries])


def open_store(path: Path, engine: str) -> Store:
    """A store with the chosen engine, writing vectors and text as the config's defaults say (int10, zlib
    text), as MemoryIndex opens it; older code without those options gets what it has."""
    store_cfg = parse_config({}).store
    try:
        return Store(  # type: ignore[call-arg]
            path,
            engine=engine,  # type: ignore[arg-type]
            encoding=store_cfg.vector.encoding,
            compress_text=store_cfg.compress_text,
        )
    except (TypeError, AttributeError):
        pass
    try:
        return Store(path, engine=engine)  # type: ignore[arg-type, call-arg]
    except TypeError:
        return Store(path)


def uses_vec0(store: Store) -> bool:
    return bool(getattr(store, "uses_vec0", True))


def file_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def build_text_index(
    path: Path, n: int, vectors: np.ndarray | None, engine: str, windows: bool = False, model: str = MODEL
) -> tuple[Store, list[str]]:
    """n default-size chunks through the real write path (and their cache entries when vectors are given).

    With `windows`, chunk i gets one vector per e5 window of its text: the rows of `vectors` from
    offsets[i] on (`window_offsets` gives them)."""
    store = open_store(path, engine)
    if vectors is not None:
        store.ensure_vector_table(DIMS)
    rng = random.Random(3)
    idents = []
    batch = 500
    at = 0
    for start in range(0, n, batch):
        rows = []
        cache = []
        for i in range(start, min(n, start + batch)):
            text, ident = chunk_text(rng, i)
            idents.append(ident)
            vector = None
            if vectors is not None and windows:
                count = len(chunk_windows(text, E5_PLAN))
                vector, at = vectors[at : at + count], at + count
            elif vectors is not None:
                vector = vectors[i]
            rows.append(
                ChunkRow(
                    f"c{i}",
                    f"memory/n{i // 4}.md",
                    "memory",
                    1 + i % 4 * 40,
                    40 + i % 4 * 40,
                    f"h{i}",
                    model,
                    text,
                    vector,
                )
            )
            if vector is not None:
                cache.append((f"h{i}", vector))
        with store.transaction():
            store.insert_chunks(rows)
            if cache:
                store.cache_put("bench", model, "key", cache)
    return store, idents


def window_counts(n: int) -> np.ndarray:
    """How many e5 windows each of the n synthetic chunks has (the same texts `build_text_index` writes)."""
    rng = random.Random(3)
    return np.array([len(chunk_windows(chunk_text(rng, i)[0], E5_PLAN)) for i in range(n)], dtype=np.int64)


def build_vector_only(path: Path, vectors: np.ndarray) -> Store:
    """The vector-only index of the 1M measure: rows bulk-inserted in the store's own layout."""
    store = open_store(path, "numpy")
    store.ensure_vector_table(DIMS)
    n = len(vectors)
    for start in range(0, n, 50_000):
        end = min(n, start + 50_000)
        with store.transaction():
            store.conn.executemany(
                "INSERT INTO chunks(rowid, id, path, source, start_line, end_line, hash, model, text, embedding, "
                "updated_at) VALUES(?, ?, ?, 'memory', 1, 1, ?, ?, '', '', 0)",
                ((i + 1, f"c{i}", f"memory/n{i}.md", f"h{i}", MODEL) for i in range(start, end)),
            )
            if uses_vec0(store):
                store.conn.executemany(
                    "INSERT INTO chunks_vec(id, embedding) VALUES(?, ?)",
                    ((f"c{i}", vectors[i].tobytes()) for i in range(start, end)),
                )
            else:
                store.conn.executemany(
                    "INSERT INTO chunk_vectors(chunk_rowid, window, embedding) VALUES(?, 0, ?)",
                    ((i + 1, vectors[i].tobytes()) for i in range(start, end)),
                )
        if hasattr(store, "_vectors_changed"):
            with store.transaction():
                store._vectors_changed()  # the bulk path bypasses insert_chunks
    return store


def vector_measures(
    store: Store, matrix: np.ndarray, queries: np.ndarray, starts: np.ndarray | None = None
) -> dict[str, Any]:
    """mdrecall's vector top-10 and the numpy floor, interleaved query by query (a busy machine's noise
    then hits both alike). `starts`: first window of each chunk when chunks have several."""
    started = time.perf_counter()
    store.vector_search(queries[0], MODEL, ["memory"], 10)
    load = time.perf_counter() - started
    ours, floor = [], []
    for q in queries:
        ours += timed(lambda q=q: store.vector_search(q, MODEL, ["memory"], 10), 1)
        floor += timed(lambda q=q: _floor_top10(matrix, q, starts), 1)
    exact = 0
    for q in queries[:10]:
        got = [int(r.id[1:]) for r in store.vector_search(q, MODEL, ["memory"], 10)]
        truth = set(_floor_top10(matrix, q, starts).tolist())
        exact += len(truth & set(got))
    return {
        "p50_ms": p50_ms(ours),
        "numpy_floor_p50_ms": p50_ms(floor),
        "first_query_ms": round(load * 1000, 1),
        "recall_at_10": exact / 100,
    }


def _floor_top10(matrix: np.ndarray, q: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    scores = matrix @ q
    if starts is not None:
        scores = np.maximum.reduceat(scores, starts)
    top = np.argpartition(-scores, 10)[:10]
    return top[np.argsort(-scores[top])]


def vec0_measures(store: Store, queries: np.ndarray) -> dict[str, Any]:
    """vec0 KNN as the spec's engine runs it, and the COUNT(*) the old code added to every query."""
    knn = [
        timed(
            lambda q=q: store.conn.execute(
                "SELECT id, distance FROM chunks_vec WHERE embedding MATCH ? AND k = 10 ORDER BY distance",
                (q.tobytes(),),
            ).fetchall(),
            1,
        )[0]
        for q in queries[:10]
    ]
    count = timed(lambda: store.conn.execute("SELECT COUNT(*) FROM chunks_vec").fetchone(), 3)
    return {"knn_p50_ms": p50_ms(knn), "count_p50_ms": p50_ms(count)}


class FixedQueryProvider(EmbeddingProvider):
    """Hybrid search with the query vector given, so the figure excludes query embedding."""

    model = MODEL
    dims = DIMS
    provider_key = "key"
    max_seq_length = 512

    def __init__(self, vector: np.ndarray, local: bool = False) -> None:
        self.vector = vector
        # "local" makes sync.window_plan answer, so the best-window blend runs as for the default model
        self.id = "local" if local else "bench"

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


def cpu_timed(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall, CPU) seconds of one call: on a shared box the CPU time is what the code costs."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def fts_segments(store: Store) -> int:
    return int(store.conn.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def open_exact(path: Path, engine: str) -> Store | None:
    """A second connection that scores every window exactly (None for code without that option)."""
    try:
        return Store(path, engine=engine, exact_vectors=True)  # type: ignore[arg-type, call-arg]
    except TypeError:
        return None


def text_measures(
    store: Store, idents: list[str], queries: np.ndarray, windows: bool = False, exact: Store | None = None
) -> dict[str, Any]:
    from mdrecall.retrieval.search import run_search

    cfg = parse_config({}).query
    rng = random.Random(5)
    rare = rng.sample(idents, QUERIES)
    run_search(store, None, MODEL, cfg, COMMON_QUERY, ["memory"], mode="keyword")
    common = timed(lambda: run_search(store, None, MODEL, cfg, COMMON_QUERY, ["memory"], mode="keyword"), QUERIES)
    rare_t = [timed(lambda r=r: run_search(store, None, MODEL, cfg, r, ["memory"], mode="keyword"), 1)[0] for r in rare]
    out = {"keyword_common_p50_ms": p50_ms(common), "keyword_rare_p50_ms": p50_ms(rare_t)}
    if uses_vec0(store) or store.vector_matrix() is not None:
        hybrid, hybrid_cpu, exact_wall, exact_cpu, same = [], [], [], [], 0
        topics = list(TOPICS)
        started = time.perf_counter()
        run_search(store, FixedQueryProvider(queries[0], windows), MODEL, cfg, "warm up", ["memory"])
        out["hybrid_first_query_ms"] = round((time.perf_counter() - started) * 1000, 1)  # reads the matrix
        if exact is not None:
            run_search(exact, FixedQueryProvider(queries[0], windows), MODEL, cfg, "warm up", ["memory"])
        for i, q in enumerate(queries):
            provider = FixedQueryProvider(q, windows)
            query = (
                f"what did we decide about the {topics[i % len(topics)]} {rng.choice(TOPICS[topics[i % 10]].split())}"
            )
            found = []

            def one(s: Store, p: FixedQueryProvider = provider, t: str = query, found: list = found) -> None:
                found.append([r.path + str(r.start_line) for r in run_search(s, p, MODEL, cfg, t, ["memory"]).results])

            wall, cpu = cpu_timed(lambda: one(store))
            hybrid.append(wall)
            hybrid_cpu.append(cpu)
            if exact is not None:
                wall, cpu = cpu_timed(lambda: one(exact))
                exact_wall.append(wall)
                exact_cpu.append(cpu)
                same += found[0] == found[1]
        out["hybrid_p50_ms"] = p50_ms(hybrid)
        out["hybrid_cpu_p50_ms"] = p50_ms(hybrid_cpu)
        if exact is not None:
            out["hybrid_exact_vectors_p50_ms"] = p50_ms(exact_wall)
            out["hybrid_exact_vectors_cpu_p50_ms"] = p50_ms(exact_cpu)
            out["hybrid_same_top6_as_exact"] = round(same / len(queries), 3)
        out["hybrid_window_blend"] = windows
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mdrecall-bench-search-"))
    results: dict[str, Any] = {"dims": DIMS, "engine": args.engine, "vector": {}}
    results["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    queries = unit_vectors(QUERIES, DIMS, seed=99)
    try:
        n = args.text_chunks
        if n:
            counts = window_counts(n) if args.windows else None
            vectors = unit_vectors(int(counts.sum()) if counts is not None else n, DIMS, seed=1)
            starts = None
            if counts is not None:
                starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            started = time.perf_counter()
            store, idents = build_text_index(root / "text.sqlite", n, vectors, args.engine, args.windows)
            build = time.perf_counter() - started
            segments = fts_segments(store)
            started = time.perf_counter()
            if hasattr(store, "tidy_fts"):
                with store.transaction():
                    store.tidy_fts()  # as a sync does at its end
            tidy = time.perf_counter() - started
            size_wal = file_bytes(store.path)
            store.checkpoint()
            entry: dict[str, Any] = {
                "chunks": n,
                "build_seconds": round(build, 1),
                "bytes_per_chunk": round(file_bytes(store.path) / n),
                "bytes_per_chunk_with_wal_before_checkpoint": round(size_wal / n),
                "windows_per_chunk": round(len(vectors) / n, 2),
                "fts_segments_as_written": segments,
                "fts_segments_after_tidy": fts_segments(store),
                "fts_tidy_seconds": round(tidy, 2),
            }
            exact = open_exact(store.path, args.engine)
            entry.update(text_measures(store, idents, queries, args.windows, exact))
            if exact is not None:
                exact.close()
            entry["vector"] = vector_measures(store, vectors, queries, starts)
            results["text_index"] = entry
            print(json.dumps({"text_index": entry}), flush=True)
            store.close()
            del vectors
        for size in args.vector_sizes:
            vectors = unit_vectors(size, DIMS, seed=2)
            started = time.perf_counter()
            store = build_vector_only(root / f"v{size}.sqlite", vectors)
            entry = {"build_seconds": round(time.perf_counter() - started, 1)}
            if uses_vec0(store):
                entry["numpy_floor_p50_ms"] = numpy_floor(vectors, queries)
                entry.update(vec0_measures(store, queries))
            else:
                entry.update(vector_measures(store, vectors, queries))
            entry["bytes_per_vector"] = round(file_bytes(store.path) / size)
            results["vector"][str(size)] = entry
            print(json.dumps({str(size): entry}), flush=True)
            store.close()
            (root / f"v{size}.sqlite").unlink()
            del vectors
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text-chunks", type=int, default=100_000, help="chunks of the text+vector index (0: skip)")
    parser.add_argument("--vector-sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--engine", default="numpy", choices=["numpy", "sqlite-vec"])
    parser.add_argument(
        "--windows",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="store one vector per e5 window of each chunk and blend windows in hybrid search (default)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/search.json"))
    args = parser.parse_args()
    results = run(args)
    print(json.dumps(results, indent=2))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
