"""What `explain` costs a search: the example workspace's queries with explain off and on, same index.

Builds the example workspace's index with the default provider (the bundled model) in a temp state dir,
then runs every query of tests/fixtures/example_queries.json `--rounds` times with `explain=False` and with
`explain=True`, interleaved, and reports the median CPU time per search of each (process CPU: a busy
machine's waiting does not count). Off is the path every agent search takes; on is `mdrecall ui` and
`mdrecall search --explain`.

    python bench/bench_explain.py [--rounds 20] [--out bench/results/explain.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from mdrecall.backends import open_backend
from mdrecall.config.settings import resolve_settings

ROOT = Path(__file__).resolve().parent.parent
WORKSPACE = ROOT / "examples" / "workspace"
QUERIES = ROOT / "tests" / "fixtures" / "example_queries.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    queries = [q["query"] for q in json.loads(QUERIES.read_text(encoding="utf-8"))]
    with tempfile.TemporaryDirectory() as state:
        settings = resolve_settings(workspace=WORKSPACE, state_dir=state)
        with open_backend(settings) as backend:
            backend.sync(force=True)
            for query in queries:  # warm: model loaded, caches filled
                backend.search(query)
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds):
                for query in queries:
                    for explain in (False, True):
                        started = time.process_time()
                        backend.search(query, explain=explain)
                        times[explain].append(time.process_time() - started)
    off, on = statistics.median(times[False]) * 1000, statistics.median(times[True]) * 1000
    result = {
        "queries": len(queries),
        "rounds": args.rounds,
        "cpu_ms_p50_explain_off": round(off, 3),
        "cpu_ms_p50_explain_on": round(on, 3),
        "ratio_on_off": round(on / off, 3) if off else None,
    }
    print(f"{len(queries)} queries x {args.rounds}: CPU per search p50 {off:.2f} ms off, {on:.2f} ms on")
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
