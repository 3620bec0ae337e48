"""Compare the offline models: embedding throughput (chunks/s, windows/s, queries/s) and full indexing time.

    .venv/bin/python bench/bench_models.py [--models minilm,e5-small,e5-small-enpt] [--chunks 64]
        [--queries 30] [--workspaces /work/locomo-dev] [--out bench/results/models.json]

- Throughput: chat-like chunks (~1500 characters of `Speaker: text` turns, the spec's chunk size) are cut
  into the windows the index embeds (documents/windows.py, the default plan of each model) and embedded; the
  "whole chunk" row embeds the chunks as they are (what mdrecall did before windows; MiniLM then read
  only the first 256 word pieces).
- Indexing: with --workspaces, every `<dir>/*/` workspace is fully indexed (`MemoryIndex.sync(force=True)`,
  a fresh state dir, no cache) with each model, like `mdrecall index --force`.
Wall time and this process's CPU time are both reported: on a shared machine the CPU time is the steadier
figure (the engines use every core, so on an idle machine wall < CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import LocalConfig, parse_config, resolve_settings  # noqa: E402
from mdrecall.documents.windows import chunk_windows  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402
from mdrecall.indexing.sync import window_plan  # noqa: E402

_TEXT = (
    "we went to the lake on saturday and my sister brought her new dog that she adopted from the shelter "
    "work has been busy with the release but the team shipped the invoice feature before the deadline and "
    "I started painting again after a long break because it helps me relax after stressful days"
)
_WORDS = tuple(_TEXT.split())


def chat_chunk(rng: random.Random, chars: int = 1500) -> str:
    """~`chars` characters of chat turns, one per line (like a LoCoMo daily log)."""
    lines: list[str] = []
    size = 0
    while size < chars:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 30)))
        line = f"{rng.choice(['Caroline', 'Melanie'])}: {words}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


class Clock:
    """Wall and process CPU seconds of a block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def throughput(model: str, n_chunks: int, n_queries: int) -> dict[str, Any]:
    rng = random.Random(7)
    chunks = [chat_chunk(rng) for _ in range(n_chunks)]
    queries = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 12))) + "?" for _ in range(n_queries)]
    provider = create_local_provider(LocalConfig(model=model))
    with Clock() as load:
        provider.embed_query("warm up")
    plan = window_plan(provider)
    assert plan is not None
    windows = [w for c in chunks for w in chunk_windows(c, plan)]
    with Clock() as whole:
        provider.embed_batch(chunks)
    with Clock() as win:
        provider.embed_batch(windows)
    times = []
    for q in queries:
        with Clock() as one:
            provider.embed_query(q)
        times.append(one.wall)
    times.sort()
    return {
        "model": provider.model,
        "load_s": round(load.wall, 2),
        "chunks": n_chunks,
        "windows": len(windows),
        "window_plan": {"lines": plan.lines, "stride": plan.stride, "max_tokens": plan.max_tokens},
        "whole_chunks_per_s": round(n_chunks / whole.wall, 2),
        "whole_chunks_cpu_s": round(whole.cpu, 2),
        "windowed_chunks_per_s": round(n_chunks / win.wall, 2),
        "windows_per_s": round(len(windows) / win.wall, 2),
        "windowed_cpu_s": round(win.cpu, 2),
        "query_ms_median": round(1000 * times[len(times) // 2], 2),
        "query_ms_p95": round(1000 * times[int(len(times) * 0.95) - 1], 2),
        "queries_per_s": round(len(times) / sum(times), 1),
    }


def index_time(model: str, workspaces: Path) -> dict[str, Any]:
    """Full index of every workspace under `workspaces` with `model`, fresh state (no embedding cache)."""
    total_wall = total_cpu = 0.0
    chunks = texts = 0
    for ws in sorted(p for p in workspaces.iterdir() if (p / "memory").is_dir()):
        with tempfile.TemporaryDirectory() as state:
            cfg = parse_config({"local": {"model": model}})
            settings = resolve_settings(workspace=ws, state_dir=Path(state), config=cfg)
            provider = create_local_provider(LocalConfig(model=model))
            index = MemoryIndex(settings, ProviderResult(provider, requested="local"))
            try:
                with Clock() as clock:
                    report = index.sync(force=True)
            finally:
                index.close()
        total_wall += clock.wall
        total_cpu += clock.cpu
        chunks += report.chunks_indexed
        texts += report.texts_embedded
    return {
        "model": model,
        "index_wall_s": round(total_wall, 1),
        "index_cpu_s": round(total_cpu, 1),
        "chunks": chunks,
        "texts_embedded": texts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,e5-small,e5-small-enpt")
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--workspaces", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "models.json")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "throughput": [],
        "indexing": [],
    }
    for model in args.models.split(","):
        row = throughput(model, args.chunks, args.queries)
        print(json.dumps(row), flush=True)
        result["throughput"].append(row)
    if args.workspaces is not None:
        for model in args.models.split(","):
            row = index_time(model, args.workspaces)
            print(json.dumps(row), flush=True)
            result["indexing"].append(row)
    result["machine"]["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
