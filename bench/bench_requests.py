"""How many HTTP requests (and how long) it takes to embed 1000 chunks with the OpenAI provider.

Runs against the fake embedding server of the test suite (127.0.0.1, no network), three ways:
- sync: token-bounded batches (8000 tokens, 1 char ≈ 1 token) on 4 threads — the default path;
- sync, concurrency 1: the same requests one after another, to show what the thread pool buys;
- batch API: one upload + create + poll + download job (`remote.batch.enabled`).

Prints a table and writes `bench/results/requests.json`.

    .venv/bin/python bench/bench_requests.py [--chunks 1000] [--chars 1600] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from fake_embedding_server import FakeEmbeddingServer  # noqa: E402
from mdrecall.embeddings.batch_api import BatchOptions  # noqa: E402
from mdrecall.embeddings.http import RemoteOptions  # noqa: E402
from mdrecall.embeddings.openai import OpenAIEmbeddingProvider  # noqa: E402

WORDS = [
    "memory", "index", "vector", "chunk", "markdown", "agent", "session",
    "note", "search", "hybrid", "keyword", "recall", "sqlite",
]  # fmt: skip


def synthetic_chunks(count: int, chars: int, seed: int = 42) -> list[str]:
    """Distinct markdown-ish chunks of about `chars` characters (the default chunk size is 400 tokens × 4)."""
    rng = random.Random(seed)
    chunks = []
    for i in range(count):
        words = [f"## Note {i}"]
        while sum(len(w) + 1 for w in words) < chars:
            words.append(rng.choice(WORDS))
        chunks.append(" ".join(words)[:chars])
    return chunks


def run(server: FakeEmbeddingServer, chunks: list[str], label: str, **kwargs: Any) -> dict[str, Any]:
    server.reset()
    server.delay = kwargs.pop("latency", 0.0)
    provider = OpenAIEmbeddingProvider(base_url=server.openai_base, api_key="bench-key", **kwargs)
    started = time.perf_counter()
    vectors = provider.embed_batch(chunks)
    elapsed = time.perf_counter() - started
    provider.close()
    requests = server.requests_for("embeddings")
    return {
        "mode": label,
        "chunks": len(chunks),
        "http_requests": provider.request_count,
        "embedding_requests": len(requests),
        "max_chars_per_request": max((sum(len(t) for t in r.json["input"]) for r in requests), default=0),
        "max_in_flight": server.max_in_flight,
        "seconds": round(elapsed, 3),
        "dims": int(vectors.shape[1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=1600)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="simulated server latency per request")
    args = parser.parse_args()

    chunks = synthetic_chunks(args.chunks, args.chars)
    latency = args.latency_ms / 1000.0
    with FakeEmbeddingServer(dims=1536) as server:
        results = [
            run(server, chunks, "sync (concurrency 4)", latency=latency),
            run(server, chunks, "sync (concurrency 1)", latency=latency, options=RemoteOptions(concurrency=1)),
            run(server, chunks, "batch API", batch=BatchOptions(enabled=True, poll_interval_ms=20)),
        ]
    naive = {"mode": "one request per chunk (for reference)", "http_requests": len(chunks)}

    print(f"{len(chunks)} chunks of ~{args.chars} chars, simulated latency {args.latency_ms:g} ms/request")
    print(f"{'mode':<38} {'requests':>9} {'max chars/req':>14} {'in flight':>10} {'seconds':>8}")
    for r in results:
        print(
            f"{r['mode']:<38} {r['http_requests']:>9} {r['max_chars_per_request']:>14} "
            f"{r['max_in_flight']:>10} {r['seconds']:>8.3f}"
        )
    print(f"{naive['mode']:<38} {naive['http_requests']:>9}")

    out = ROOT / "bench" / "results" / "requests.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "chunks": len(chunks),
        "chars_per_chunk": args.chars,
        "latency_ms": args.latency_ms,
        "results": results,
        "baseline": naive,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
