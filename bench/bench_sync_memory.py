"""Peak memory of a full keyword-only index by file count: does it grow with the number of files?

For each size (default 1k, 10k, 100k generated notes, bench_index's generator), a fresh process indexes the
workspace keyword-only and reports wall and CPU seconds and its peak RSS (`ru_maxrss`), twice: as
`mdrecall index --quiet` and library/watcher/MCP syncs run it (no progress callbacks: one pass, one group held)
and as the CLI's progress bar runs it (callbacks: a counting pass first for exact totals). Each child process
starts from nothing, so the peak is the sync's own (plus the interpreter and imports: the 1k figure).

    python bench/bench_sync_memory.py                      # 1k, 10k, 100k (100k: ~10 min on 2 busy cores)
    python bench/bench_sync_memory.py --sizes 1000 10000 --work-dir /tmp/ws   # keep the generated notes
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def child(root: Path, bar: bool) -> None:
    """Index root/ws into root/state (fresh) and print wall, CPU and peak RSS as JSON."""
    from mdrecall.backends.builtin import MemoryIndex
    from mdrecall.config.settings import parse_config, resolve_settings
    from mdrecall.embeddings.factory import create_provider

    shutil.rmtree(root / "state", ignore_errors=True)
    config = parse_config({"provider": "none"})
    settings = resolve_settings(workspace=root / "ws", state_dir=root / "state", config=config)
    index = MemoryIndex(settings, create_provider(config))
    callbacks: dict[str, Any] = {}
    if bar:
        callbacks = {"progress": lambda done, total, label: None, "chunk_progress": lambda done, total: None}
    wall, cpu = time.perf_counter(), time.process_time()
    report = index.sync(force=True, **callbacks)
    out = {
        "files": report.files_indexed,
        "chunks": report.chunks_indexed,
        "seconds": round(time.perf_counter() - wall, 2),
        "cpu_seconds": round(time.process_time() - cpu, 2),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }
    index.close()
    print(json.dumps(out))


def measure(root: Path, bar: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(root)] + (["--bar"] if bar else [])
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000, 100_000])
    parser.add_argument("--work-dir", type=Path, help="where the notes are generated (kept); default: a temp dir")
    parser.add_argument("--out", type=Path, default=Path("bench/results/sync_memory.json"))
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--bar", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.bar)
        return
    from bench_index import generate_workspace

    base = args.work_dir or Path(tempfile.mkdtemp(prefix="mdrecall-bench-mem-"))
    results: dict[str, Any] = {"load_before": round(os.getloadavg()[0], 1), "sizes": {}}
    try:
        for size in args.sizes:
            root = base / f"ws{size}"
            if not (root / "ws").exists():
                generate_workspace(root / "ws", size)
            entry = {"one_pass": measure(root, bar=False), "with_progress_bar": measure(root, bar=True)}
            results["sizes"][str(size)] = entry
            print(json.dumps({str(size): entry}), flush=True)
    finally:
        if args.work_dir is None:
            shutil.rmtree(base, ignore_errors=True)
    results["load_after"] = round(os.getloadavg()[0], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
