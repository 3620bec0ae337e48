"""Index and search benchmark on a generated workspace.

Generates N synthetic markdown notes (default 2000 files), then reports:
- full index time with the embedding model, and the part spent embedding (so "without model time" too),
- full index time keyword-only (no model at all),
- no-op sync time (nothing changed), and an incremental sync after touching 1% of the files,
- search latency p50/p95 for keyword, vector and hybrid queries.
Figures are printed and written as JSON (default bench/results/index.json).

    python bench/bench_index.py                 # 2000 files, local model
    python bench/bench_index.py --files 200     # quicker
    python bench/bench_index.py --provider none # keyword-only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult, create_provider

TOPICS = {
    "deploy": "release pipeline rollout canary staging production build artifact version tag",
    "incident": "outage alert pager latency error spike rollback postmortem root cause timeline",
    "people": "colleague manager teammate birthday vacation onboarding mentor interview hiring",
    "finance": "invoice billing budget forecast expense subscription renewal vendor contract",
    "travel": "flight hotel train itinerary visa luggage airport conference venue booking",
    "food": "recipe dinner restaurant allergy vegetarian coffee espresso lunch bakery",
    "hardware": "laptop monitor keyboard server rack disk memory upgrade warranty battery",
    "database": "postgres migration index query schema replica backup vacuum connection pool",
    "planning": "roadmap milestone quarter objective priority estimate backlog sprint review",
    "security": "password rotation certificate audit access token permission firewall scan",
}
NAMES = ["Dana", "Priya", "Marco", "Lena", "Tomas", "Aiko", "Sam", "Noor"]


def _sentence(rng: random.Random, topic: str) -> str:
    words = TOPICS[topic].split()
    name = rng.choice(NAMES)
    picked = " ".join(rng.sample(words, 4))
    return f"{name} noted the {picked} work for the {topic} track, follow up item {rng.randint(100, 99999)}."


def generate_workspace(root: Path, files: int, seed: int = 7) -> list[str]:
    """Write `files` notes (dated daily logs and topic files); return planted identifiers for keyword queries."""
    rng = random.Random(seed)
    (root / "memory" / "topics").mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Long-term memory\n\n" + "\n".join(f"- {_sentence(rng, t)}" for t in TOPICS))
    identifiers: list[str] = []
    for i in range(files):
        topic = rng.choice(list(TOPICS))
        ident = f"{rng.getrandbits(28):07x}"
        identifiers.append(ident)
        lines = [f"# Note {i}: {topic}", ""]
        for _ in range(rng.randint(4, 30)):
            lines.append(f"- {_sentence(rng, topic)}")
        lines.append(f"- commit {ident} touched the {topic} code")
        if i % 3 == 0:
            name = f"memory/topics/{topic}-{i}.md"
        else:
            day = 1 + i % 28
            name = f"memory/2026-{1 + (i // 28) % 12:02d}-{day:02d}-{i}.md"
        (root / name).write_text("\n".join(lines) + "\n")
    return identifiers


def _walk_and_stat(root: Path) -> tuple[float, float]:
    """The floor of a no-op sync: os.walk + stat of every file of the tree (wall and CPU seconds)."""
    started, cpu = time.perf_counter(), time.process_time()
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            os.stat(os.path.join(dirpath, name))
    return time.perf_counter() - started, time.process_time() - cpu


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


def _time_queries(index: MemoryIndex, queries: list[str], mode: str) -> dict[str, float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        index.search(query, mode=mode)  # type: ignore[arg-type]
        samples.append(time.perf_counter() - started)
    return _percentiles(samples)


def run(files: int, provider_name: str, queries: int, out: Path, keep: bool) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mdrecall-bench-"))
    try:
        workspace = root / "ws"
        identifiers = generate_workspace(workspace, files)
        results: dict[str, Any] = {"files": files, "provider": provider_name}

        config = parse_config({"provider": provider_name})
        chosen = create_provider(config)
        settings = resolve_settings(workspace=workspace, state_dir=root / "state", config=config)
        index = MemoryIndex(settings, chosen)
        provider = chosen.provider
        results["model"] = provider.model if provider else None

        started, cpu = time.perf_counter(), time.process_time()
        report = index.sync(force=True)
        total = time.perf_counter() - started
        results["full_index"] = {
            "seconds": round(total, 3),
            "cpu_seconds": round(time.process_time() - cpu, 3),
            "embed_seconds": round(report.embed_seconds, 3),
            "seconds_without_model": round(total - report.embed_seconds, 3),
            "chunks": report.chunks_indexed,
            "chunks_per_second": round(report.chunks_indexed / total, 1) if total else None,
        }

        floor_wall, floor_cpu = _walk_and_stat(workspace)
        started, cpu = time.perf_counter(), time.process_time()
        noop = index.sync()
        results["noop_sync_seconds"] = round(time.perf_counter() - started, 4)
        results["noop_sync_cpu_seconds"] = round(time.process_time() - cpu, 4)
        results["noop_floor_walk_stat"] = {"seconds": round(floor_wall, 4), "cpu_seconds": round(floor_cpu, 4)}
        assert noop.files_indexed == 0

        changed = sorted(workspace.glob("memory/**/*.md"))[: max(1, files // 100)]
        for path in changed:
            path.write_text(path.read_text() + "- appended a follow-up line\n")
        started = time.perf_counter()
        inc = index.sync()
        results["incremental_sync"] = {"files": inc.files_indexed, "seconds": round(time.perf_counter() - started, 3)}

        keyword_queries = random.Random(1).sample(identifiers, min(queries, len(identifiers)))
        sentence_rng = random.Random(2)
        topic_names = list(TOPICS)
        semantic_queries = [
            f"what did we decide about {sentence_rng.choice(topic_names)} and "
            f"{' '.join(sentence_rng.sample(TOPICS[sentence_rng.choice(topic_names)].split(), 2))}"
            for _ in range(queries)
        ]
        results["search"] = {"keyword": _time_queries(index, keyword_queries, "keyword")}
        if provider is not None:
            index.search("warm up")  # first query loads the model
            results["search"]["vector"] = _time_queries(index, semantic_queries, "vector")
            results["search"]["hybrid"] = _time_queries(index, semantic_queries, "hybrid")

        kw_settings = resolve_settings(
            workspace=workspace, state_dir=root / "state-kw", config=parse_config({"provider": "none"})
        )
        kw_index = MemoryIndex(kw_settings, ProviderResult(None, "none"))
        started = time.perf_counter()
        kw_index.sync(force=True)
        results["full_index_keyword_only_seconds"] = round(time.perf_counter() - started, 3)
        kw_index.close()
        index.close()
        results["db_bytes"] = settings.db_path.stat().st_size
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000, help="number of notes to generate (default 2000)")
    parser.add_argument("--provider", default="auto", help="auto | local | none (default auto)")
    parser.add_argument("--queries", type=int, default=50, help="queries per search mode (default 50)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/index.json"))
    parser.add_argument("--keep", action="store_true", help="keep the generated workspace and index")
    args = parser.parse_args()
    results = run(args.files, args.provider, args.queries, args.out, args.keep)
    print(json.dumps(results, indent=2))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
