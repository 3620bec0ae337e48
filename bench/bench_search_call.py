"""The library's whole search call beside its floor, with every default of the query config.

- vector-only: a top-10 through `run_search` (mode "vector": what `MemoryIndex.search(q, 10, mode="vector")`
  runs below the backend) at 50k chunks with one vector each, against numpy brute force over the same
  float32 vectors (the matrix the library holds in memory), with numpy's default BLAS threads (the floor)
  and on one BLAS thread (`floor_one_thread`: steadier on a busy machine, where a second core is rarely free);
- hybrid: `run_search` with every default (calibrated scores and abstention, query centering, the window
  blend, overlapping results merged, word forms) at 100k chunks that store one vector per e5 window (~7 per
  chunk), p50 and p95, wall and CPU, beside numpy brute force over every window (best window per chunk).

Both are measured query by query with the floor in the same process (the call, then the floor, then a pause
that lets numpy's BLAS threads stop spinning), so a busy machine's noise hits both alike.
Every query is a different one (no cache of an earlier answer helps). With every default most queries list
one result (the tail floor drops the rest); `--all-results` sets `relativeFloor = 0`, so the versions are
compared on all 10.
Several versions of the code can be compared in one run (`--src DIR` per version, each a `src` folder): each
runs in its own worker process on the same index files, and the workers take turns, 40 queries each (the
first version first, then the last first). `--dump FILE` also writes every query's results (path, lines,
score) per version: the same queries must give the same results.

Vectors are synthetic: random unit vectors, a query being one chunk's window plus noise (cosine ~0.8 to it),
its text some of that chunk's words. The model is named as the default e5 so that its calibration applies,
and the provider is a local one (windows, centering). Embedding the query is left out, and embedding 100k
chunks with the real model would take hours here. Rows go through `Store.insert_chunks` with the store's
default encoding (int10 vectors, compressed text), as `bench/bench_search.py` writes them.

    python bench/bench_search_call.py                          # this checkout, 50k and 100k
    python bench/bench_search_call.py --src ../old/src --src src --keep /tmp/bench-call
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mdrecall.embeddings.base import EmbeddingProvider

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
MODEL = "multilingual-e5-small"  # the default model's name: its calibration applies
DIMS = 384
BLAS_IDLE = 0.15  # seconds between queries: OpenBLAS's idle threads spin for up to 2^28 cycles after a product
PASS = 40  # queries a version answers before the next version takes its turn
NOISE = 0.6  # query = window + NOISE * random unit vector, normalised: cosine ~0.86 to the window


def _bench_search() -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import bench_search

    return bench_search


def index_path(folder: Path, chunks: int, windows: bool) -> Path:
    return folder / f"call-{chunks}-{'windows' if windows else 'one'}.sqlite"


def build(folder: Path, chunks: int, windows: bool) -> Path:
    """The index of `chunks` synthetic chunks (reused when `folder` already holds it)."""
    bs = _bench_search()
    path = index_path(folder, chunks, windows)
    if path.exists():
        return path
    counts = bs.window_counts(chunks) if windows else None
    vectors = bs.unit_vectors(int(counts.sum()) if counts is not None else chunks, DIMS, seed=1)
    tmp = path.with_suffix(".building")
    store, _ = bs.build_text_index(tmp, chunks, vectors, "numpy", windows, model=MODEL)
    with store.transaction():
        store.tidy_fts()  # as a sync does at its end
    store.checkpoint()
    store.close()
    tmp.rename(path)
    return path


def query_set(chunks: int, count: int, seed: int = 11) -> list[tuple[str, int]]:
    """(text, target chunk) per query: a few words of the target chunk's text."""
    bs = _bench_search()
    rng = random.Random(seed)
    targets = rng.sample(range(chunks), count)
    texts: dict[int, str] = {}
    gen = random.Random(3)  # the generator build_text_index uses: chunk i's text is the i-th draw
    wanted = set(targets)
    for i in range(max(targets) + 1):
        text, _ = bs.chunk_text(gen, i)
        if i in wanted:
            texts[i] = text
    out = []
    for target in targets:
        lines = texts[target].splitlines()
        topic = lines[0].split(": ", 1)[1]
        words = rng.choice(lines[2:-1]).rstrip(".").split()
        out.append((f"what did {words[1]} note about the {topic} {words[4]} {words[5]}", target))
    return out


ALL_RESULTS = "MDRECALL_BENCH_ALL_RESULTS"


# -- worker: one version of the code ------------------------------------------------------------------------


class FixedProvider(EmbeddingProvider):
    """A local e5-like provider whose query vector is given (embedding is left out of the figure)."""

    id = "local"
    model = MODEL
    dims = DIMS
    provider_key = "bench"
    max_seq_length = 512
    recommended_centering = 0.45
    recommended_min_score = 0.1

    def __init__(self, vector: np.ndarray, null: np.ndarray) -> None:
        self.vector, self.null = vector, null

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.null for _ in texts])  # only asked for "" (the centering direction)


def worker(path: Path, chunks: int, mode: str, count: int) -> None:
    """Answer query numbers read from stdin with one JSON line each: ours and the floor, wall and CPU."""
    from threadpoolctl import ThreadpoolController

    from mdrecall.config.settings import parse_config
    from mdrecall.retrieval.search import run_search

    bs = _bench_search()
    store = bs.open_store(path, "numpy")
    # --all-results: no tail floor, so every query lists its 10 results and the versions are compared on all
    cfg = parse_config({"query": {"relativeFloor": 0}} if os.environ.get(ALL_RESULTS) else {}).query
    matrix = store.vector_matrix()
    assert matrix is not None
    rng = np.random.default_rng(7)
    null = rng.standard_normal(DIMS).astype(np.float32)
    null /= np.linalg.norm(null)
    queries = []
    for text, target in query_set(chunks, count + 3):
        at = int(np.searchsorted(matrix.chunk_rowids, target + 1))  # rowid = chunk number + 1
        window = matrix.windows_of(int(matrix.chunk_rowids[at]))
        noise = rng.standard_normal(DIMS).astype(np.float32)
        vector = window[0] + NOISE * noise / np.linalg.norm(noise)
        queries.append((text, FixedProvider(vector / np.linalg.norm(vector), null)))
    limit = 10 if mode == "vector" else None
    starts = matrix.starts
    blas = ThreadpoolController()

    def ours(i: int) -> list[list]:
        text, provider = queries[i]
        response = run_search(store, provider, MODEL, cfg, text, ["memory"], limit, mode=mode)  # type: ignore[arg-type]
        return [[r.path, r.start_line, r.end_line, round(r.score, 6)] for r in response.results]

    def floor(i: int, one_thread: bool = False) -> None:
        if one_thread:
            with blas.limit(limits=1, user_api="blas"):  # a limit costs ~7 us; building the controller ~1 ms
                return floor(i)
        scores = matrix.matrix @ queries[i][1].vector
        if starts is not None:
            scores = np.maximum.reduceat(scores, starts)
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top])]

    for i in range(count, count + 3):  # warm: the matrix and the centering direction are read
        ours(i)
        floor(i)
    import mdrecall

    print(json.dumps({"ready": True, "code": mdrecall.__file__}), flush=True)
    for line in sys.stdin:
        i = int(line)
        out: dict[str, Any] = {}
        for which in ("ours", "floor_one_thread", "floor"):
            wall, cpu = time.perf_counter(), time.process_time()
            found = ours(i) if which == "ours" else floor(i, which == "floor_one_thread")
            out[which] = [time.perf_counter() - wall, time.process_time() - cpu]
            if found is not None:
                out["results"] = found
        # numpy's BLAS threads spin for up to ~0.1 s after a product: the next call must not pay for them
        time.sleep(BLAS_IDLE)
        print(json.dumps(out), flush=True)


# -- parent: interleave the versions ------------------------------------------------------------------------


def ms(samples: list[float], q: float = 0.5) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


def measure(path: Path, chunks: int, mode: str, sources: list[Path], passes: int) -> dict[str, Any]:
    count = PASS * passes
    procs = []
    for src in sources:
        env = dict(os.environ, PYTHONPATH=str(src.resolve()))
        cmd = [sys.executable, __file__, "--worker", str(path), str(chunks), mode, str(count)]
        procs.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
    for src, proc in zip(sources, procs, strict=True):
        assert proc.stdout is not None
        code = json.loads(proc.stdout.readline())["code"]
        if not Path(code).resolve().is_relative_to(src.resolve()):
            raise SystemExit(f"the worker for {src} imported {code}")
    kinds = ("ours", "floor", "floor_one_thread")
    samples: list[dict[str, list]] = [{f"{k}{cpu}": [] for k in kinds for cpu in ("", "_cpu")} for _ in procs]
    results: list[dict[int, list]] = [{} for _ in procs]
    for n in range(passes):
        order = list(range(len(procs)))
        if n % 2:
            order.reverse()
        for k in order:
            # one version at a time: a version's idle BLAS threads spin for a while after its last product
            # and would take a core from the other one's
            time.sleep(0.5)
            proc = procs[k]
            assert proc.stdin is not None and proc.stdout is not None
            for i in range(n * PASS, (n + 1) * PASS):
                proc.stdin.write(f"{i}\n")
                proc.stdin.flush()
                got = json.loads(proc.stdout.readline())
                for kind in kinds:
                    samples[k][kind].append(got[kind][0])
                    samples[k][f"{kind}_cpu"].append(got[kind][1])
                results[k][i] = got["results"]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    versions = []
    for src, s, found in zip(sources, samples, results, strict=True):
        ours, floor = ms(s["ours"]), ms(s["floor"])
        versions.append(
            {
                "src": str(src),
                "p50_ms": ours,
                "p95_ms": ms(s["ours"], 0.95),
                "cpu_p50_ms": ms(s["ours_cpu"]),
                "floor_p50_ms": floor,
                "floor_cpu_p50_ms": ms(s["floor_cpu"]),
                "ratio_to_floor": round(ours / floor, 2) if floor else None,
                "floor_one_thread_p50_ms": ms(s["floor_one_thread"]),
                "ratio_to_floor_one_thread": round(ours / ms(s["floor_one_thread"]), 2),
                "paired_ratio_p50": round(
                    statistics.median(a / b for a, b in zip(s["ours"], s["floor"], strict=True) if b > 0), 2
                ),
                "empty_answers": sum(1 for r in found.values() if not r),
                "results": found,
            }
        )
    same = [sum(found["results"][i] == versions[0]["results"][i] for i in range(count)) for found in versions]
    return {"chunks": chunks, "mode": mode, "queries": count, "versions": versions, "same_results_as_first": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vector-chunks", type=int, default=50_000, help="chunks of the vector-only measure (0: skip)")
    parser.add_argument("--hybrid-chunks", type=int, default=100_000, help="chunks of the hybrid measure (0: skip)")
    parser.add_argument("--src", type=Path, action="append", help="a version's src folder (repeatable)")
    parser.add_argument("--passes", type=int, default=3, help=f"turns of {PASS} queries per version")
    parser.add_argument("--keep", type=Path, help="folder keeping the built indexes between runs")
    parser.add_argument("--dump", type=Path, help="write every query's results per version here")
    parser.add_argument("--out", type=Path, default=Path("bench/results/search_call.json"))
    parser.add_argument(
        "--all-results",
        action="store_true",
        help="no tail floor (relativeFloor 0): every query lists 10 results, all compared between versions",
    )
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.all_results:
        os.environ[ALL_RESULTS] = "1"  # read by the workers this process starts
    if args.worker:
        worker(Path(args.worker[0]), int(args.worker[1]), args.worker[2], int(args.worker[3]))
        return
    sources = args.src or [ROOT / "src"]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="mdrecall-bench-call-"))
    folder.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    try:
        for key, chunks, windows, mode in (
            ("vector_only", args.vector_chunks, False, "vector"),
            ("hybrid", args.hybrid_chunks, True, "hybrid"),
        ):
            if not chunks:
                continue
            path = build(folder, chunks, windows)
            entry = measure(path, chunks, mode, sources, args.passes)
            report[key] = entry
            brief = {k: v for k, v in entry.items() if k != "versions"}
            brief["versions"] = [{k: v for k, v in ver.items() if k != "results"} for ver in entry["versions"]]
            print(json.dumps({key: brief}), flush=True)
    finally:
        if args.keep is None:
            for leftover in folder.iterdir():
                leftover.unlink()
            folder.rmdir()
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.dump:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        args.dump.write_text(json.dumps(report, indent=1) + "\n")
    for key in ("vector_only", "hybrid"):
        for version in report.get(key, {}).get("versions", []):
            version.pop("results")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
