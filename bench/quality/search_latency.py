"""Search latency at ~10k chunks, model cost left out: what ranking itself costs (keyword side, fusion, dates).

    python bench/quality/search_latency.py [--files 2000] [--out bench/results/search_latency.json]

Generates daily logs and topic notes (about 5 chunks each), indexes them with a hashing embedder (384-d,
instant, so the figure is the index + ranking work), and times `MemoryIndex.search` with the default config
over 60 question-like queries. To compare two versions, run it with each on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.append(str(ROOT / "src"))

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult  # noqa: E402

WORDS = [
    "deploy",
    "billing",
    "gateway",
    "kitten",
    "boiler",
    "painting",
    "concert",
    "schema",
    "migration",
    "review",
    "budget",
    "invoice",
    "laptop",
    "garden",
    "recipe",
    "marathon",
    "guitar",
    "holiday",
    "flight",
    "hotel",
    "museum",
    "pottery",
    "camping",
    "sunset",
    "adoption",
    "workshop",
    "counseling",
    "school",
    "teacher",
    "project",
    "launch",
    "database",
    "cache",
    "latency",
    "outage",
    "incident",
    "release",
    "customer",
]
NAMES = ["Ana", "Ben", "Caroline", "Melanie", "Dave", "Tom", "Dana"]


class HashProvider:
    """384-d feature-hashed bag of words: costs nothing, so timings are the index's and the ranking's."""

    id = "local"  # as the default offline models: chunks are embedded as windows (documents/windows.py)
    max_seq_length = 512
    model = "hash-384"
    dims = 384
    provider_key = "bench-hash-384"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dims, dtype=np.float32)
        for word in text.lower().split():
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            vec[int.from_bytes(digest[:2], "little") % self.dims] += 1.0 if digest[2] % 2 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dims), np.float32)


def generate(ws: Path, files: int, rng: random.Random) -> None:
    start = date(2023, 1, 1)
    for i in range(files):
        day = start + timedelta(days=i)
        lines = [f"# {day.isoformat()}", "", f"## 10:{i % 60:02d} {rng.choice(NAMES)} and {rng.choice(NAMES)}", ""]
        for _ in range(60):
            words = " ".join(rng.choice(WORDS) for _ in range(12))
            lines.append(f"{rng.choice(NAMES)}: {words}.")
        path = ws / "memory" / f"{day.isoformat()}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def queries(rng: random.Random, count: int) -> list[str]:
    forms = [
        "When did {n} go to the {a}?",
        "What did {n} say about the {a} and the {b}?",
        "{a} {b}",
        "Did {n} mention a {a} in May 2023?",
        "what happened with the {a} last week",
    ]
    return [
        rng.choice(forms).format(n=rng.choice(NAMES), a=rng.choice(WORDS), b=rng.choice(WORDS)) for _ in range(count)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        generate(ws, args.files, rng)
        settings = resolve_settings(workspace=ws, state_dir=Path(tmp) / "state", config=parse_config({}))
        index = MemoryIndex(settings, ProviderResult(HashProvider(), requested="bench"))  # type: ignore[arg-type]
        index.sync()
        chunks = index.store.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        qs = queries(rng, args.queries)
        for q in qs[:5]:
            index.search(q, max_results=6)  # warm caches
        times, cpu = [], []
        for q in qs:
            t0, c0 = time.perf_counter(), time.process_time()
            index.search(q, max_results=6)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        index.close()
    result = {
        "chunks": chunks,
        "queries": len(qs),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(sorted(times)[int(0.95 * len(times)) - 1], 2),
        # CPU time of the process: on a shared machine wall time mostly measures waiting for a core
        "p50_cpu_ms": round(statistics.median(cpu), 2),
    }
    print(json.dumps(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
