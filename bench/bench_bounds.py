"""What a hostile input costs once it is bounded (docs/safety.md, "Bounds" and "Forgetting").

With the default local embedding model (the real one, no network):
- search: a normal query, then a 2,000-word, a 20,000-word and a 45,000-character CJK query (each is cut to
  MAX_QUERY_WORDS words / MAX_QUERY_CHARS characters before embedding and the keyword query);
- the UserPromptSubmit hook (fact recall) with a 40 KB prompt, against its 30 s timeout;
- memory_get of a 200 MB file (sparse: no disk used): time and peak Python memory;
- forgetting: the incremental sync after a fact is forgotten, which also merges the FTS segments so that no
  byte of the forgotten text stays (the 'optimize' this adds), on an index of `--files` files.

Prints a table and writes `bench/results/bounds.json`. Figures taken on a busy machine are noisy.

    .venv/bin/python bench/bench_bounds.py [--repeat 5] [--files 300]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.agents.hooks import HookRunner  # noqa: E402
from mdrecall.agents.tools import MemoryTools  # noqa: E402
from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import resolve_settings  # noqa: E402
from mdrecall.facts.store import FactStore  # noqa: E402
from mdrecall.text.bounds import MAX_QUERY_CHARS, MAX_QUERY_WORDS  # noqa: E402

WORDS = ["deploy", "fix", "database", "vector", "index", "alice", "project", "ship", "feature", "rollback"]


def _median_ms(run: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def _workspace(root: Path, files: int) -> Path:
    rng = random.Random(7)
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy fix landed in a828e60.\n", encoding="utf-8")
    for n in range(files):
        lines = [" ".join(rng.choice(WORDS) + str(rng.randint(0, 999)) for _ in range(12)) for _ in range(6)]
        (ws / "memory" / f"note-{n:05d}.md").write_text(f"# Note {n}\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(1)
    long_2k = " ".join(rng.choice(WORDS) + str(rng.randint(0, 50)) for _ in range(2000))
    long_20k = " ".join(rng.choice(WORDS) + str(rng.randint(0, 500)) for _ in range(20000))
    cjk = "我们决定使用数据库作为向量索引" * 3000
    out: dict[str, Any] = {"maxQueryWords": MAX_QUERY_WORDS, "maxQueryChars": MAX_QUERY_CHARS}

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = _workspace(root, args.files)
        settings = resolve_settings(workspace=ws, state_dir=root / "state")
        with MemoryIndex(settings) as index:
            started = time.perf_counter()
            index.sync()
            out["indexSeconds"] = round(time.perf_counter() - started, 1)
            out["provider"] = f"{index.provider.id}/{index.provider.model}" if index.provider else "none"
            index.search("warm up")
            search: dict[str, float] = {}
            for name, query in (("normal", "which commit fixed the deploy"), ("words2000", long_2k),
                                ("words20000", long_20k), ("cjk45000chars", cjk)):  # fmt: skip
                search[name] = _median_ms(lambda q=query: index.search(q), args.repeat)
            out["searchMs"] = search

            huge = ws / "memory" / "huge.md"
            with open(huge, "wb") as handle:
                handle.write(b"# Huge\n")  # then one line of 200 MB
                handle.truncate(200_000_000)
            tools = MemoryTools(index)
            tracemalloc.start()
            started = time.perf_counter()
            got = tools.get({"path": "memory/huge.md"})
            elapsed = (time.perf_counter() - started) * 1000
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            returned = len(got["text"].encode())
            out["memoryGet200MB"] = {
                "ms": round(elapsed, 1),
                "peakMB": round(peak / 1e6, 1),
                "returnedBytes": returned,
                "truncated": got.get("truncated"),
            }
            huge.unlink()

            runner = HookRunner(settings, index.provider_result)
            for n in range(20):
                runner.store.store(f"Fact {n}: the {rng.choice(WORDS)} of project {n} is owned by team {n % 4}.")
            prompt = ("what did we decide about the deploy fix " + long_20k)[:40_000]
            payload = {"prompt": prompt, "session_id": "bench", "cwd": str(ws)}
            out["userPromptSubmit40KBms"] = _median_ms(lambda: runner.run("UserPromptSubmit", payload), args.repeat)
            short = {"prompt": "what did we decide about the deploy fix", "session_id": "bench", "cwd": str(ws)}
            out["userPromptSubmitShortMs"] = _median_ms(lambda: runner.run("UserPromptSubmit", short), args.repeat)
            runner.close()

            store = FactStore(settings, index.provider_result)
            victim = store.store("The locker code word is zorblaxquintet.")
            index.sync()
            started = time.perf_counter()
            store.forget(victim.fact.id)
            out["forgetMs"] = round((time.perf_counter() - started) * 1000, 1)
            started = time.perf_counter()
            index.sync()
            out["syncAfterForgetMs"] = round((time.perf_counter() - started) * 1000, 1)
            store.close()
            leftover = [p.name for p in (root / "state").rglob("*") if p.is_file() and b"zorblax" in p.read_bytes()]
            out["filesHoldingForgottenText"] = leftover

    print(f"query bound: {MAX_QUERY_WORDS} words / {MAX_QUERY_CHARS} characters; provider {out['provider']}")
    for name, ms in out["searchMs"].items():
        print(f"search {name:>14}: {ms:8.1f} ms")
    print(f"UserPromptSubmit 40 KB prompt: {out['userPromptSubmit40KBms']:.1f} ms "
          f"(short prompt {out['userPromptSubmitShortMs']:.1f} ms; hook timeout 30000 ms)")  # fmt: skip
    get = out["memoryGet200MB"]
    print(f"memory_get 200 MB file: {get['ms']:.1f} ms, peak {get['peakMB']} MB, returned {get['returnedBytes']} bytes")
    print(f"forget: {out['forgetMs']} ms; sync after forget ({args.files} files): {out['syncAfterForgetMs']} ms; "
          f"files still holding the text: {out['filesHoldingForgottenText'] or 'none'}")  # fmt: skip
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "bounds.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
