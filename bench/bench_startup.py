"""Whole-process `mdrecall search` on a warm keyword-only index: what an agent's shell call costs.

Builds a keyword-only index of a generated workspace, then runs `mdrecall search` as a fresh process N times
and reports the median wall time and the median CPU time of the child (CPU time is what the process itself
costs; wall time also counts waiting for a busy machine's cores). `python -c pass` is the floor beside it.

    python bench/bench_startup.py [--files 200] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_index import generate_workspace  # noqa: E402


def timed_process(cmd: list[str], runs: int) -> dict[str, float]:
    """Median wall and CPU (user + sys) seconds of `cmd` run `runs` times as a child process."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return {
        "wall_p50_s": round(statistics.median(walls), 3),
        "wall_min_s": round(min(walls), 3),
        "cpu_p50_s": round(statistics.median(cpus), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=Path("bench/results/startup.json"))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mdrecall-startup-"))
    try:
        workspace = root / "ws"
        identifiers = generate_workspace(workspace, args.files)
        (workspace / "mdrecall.toml").write_text('provider = "none"\n')
        # An installed wheel has its bytecode compiled; an editable checkout (PYTHONDONTWRITEBYTECODE set)
        # would otherwise compile mdrecall's modules in every process.
        import mdrecall

        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(mdrecall.__file__).parent)], check=False)
        exe = shutil.which("mdrecall", path=str(Path(sys.executable).parent)) or "mdrecall"
        base = [exe, "--workspace", str(workspace), "--state-dir", str(root / "state")]
        subprocess.run(base + ["index"], check=True, stdout=subprocess.DEVNULL, env=dict(os.environ))
        results: dict[str, Any] = {
            "files": args.files,
            "python_floor": timed_process([sys.executable, "-c", "pass"], args.runs),
            "mdrecall_search": timed_process(base + ["search", identifiers[0]], args.runs),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
