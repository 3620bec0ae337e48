"""Whole-process latency of the agent hooks and of `mdrecall search`, warm and cold.

What a user waits for before every prompt is a new process: `python -m mdrecall.cli ... hook
UserPromptSubmit` (the command `mdrecall install` writes). This bench runs it as a child process, paired
run by run with `python -c pass` (the floor: interpreter start-up on this machine at this moment), and
reports p50/p90 wall time of each and p50 of the difference.

    warm:  a `mdrecall serve` process holds the index, model and fact store; the hook and `mdrecall search`
           are answered over its socket. Workspace: --notes generated notes (default 2,000) plus --facts
           stored facts (default 1,000).
    cold:  no server. `cold-no-facts`: a workspace without facts.md (no LanceDB, no model may be loaded);
           `cold-with-facts`: the 1,000-fact workspace, where the hook must import LanceDB and load the
           model in the process (reported so the cost is known; not a target).

    python bench/bench_hooks.py [--notes 2000] [--facts 1000] [--runs 20] [--provider local|none] [--out FILE]

Targets: warm hook p50 <= 150 ms, cold hook without facts p50 <= 300 ms, warm `mdrecall search` <= 150 ms.
Timings on a shared, loaded machine are not figures: re-run on a quiet one before quoting them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_index import generate_workspace  # noqa: E402

PY = sys.executable
MDRECALL = str(Path(PY).with_name("mdrecall"))
PROMPTS = [
    "Can you refactor the webhook handler in src/payments.py?",
    "Which indentation style do I use for Python?",
    "What did we decide about the deploy target?",
    "Write a unit test for the invoice parser.",
    "Who owns the nightly ETL job?",
]
SUBJECTS = ["Priya", "Marco", "the data team", "our team", "I", "We", "Sam", "the ops team"]
VERBS = ["prefer", "decided to use", "always deploy with", "moved to", "stopped using", "rely on", "own", "like"]
OBJECTS = [
    "tabs for indentation",
    "Fly.io in Frankfurt",
    "Postgres 16",
    "short answers",
    "pytest fixtures",
    "the nightly ETL",
    "dark mode",
    "Rust for the parser",
    "weekly releases",
    "squash merges",
]


def write_facts(workspace: Path, count: int, seed: int = 11) -> None:
    """`count` distinct fact lines in memory/facts.md, in the format mdrecall writes."""
    from mdrecall.facts.store import FILE_HEADER

    rng = random.Random(seed)
    lines = [FILE_HEADER, ""]
    for i in range(count):
        ref = f"item {i}, ref {rng.getrandbits(24):06x}"
        text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} ({ref})."
        lines.append(f"- [f{i:011x}] (fact, 2026-11-0{1 + i % 9}, importance 0.70) {text}")
        lines.append("")
    (workspace / "memory" / "facts.md").write_text("\n".join(lines), encoding="utf-8")


def run_child(cmd: list[str], stdin: str = "") -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stderr}")
    return elapsed


def paired(name: str, make_cmd: Any, runs: int) -> dict[str, Any]:
    """Alternate the floor and the command `runs` times; p50/p90 in ms of each and of the difference."""
    floor, measured, deltas = [], [], []
    for i in range(runs):
        cmd, stdin = make_cmd(i)
        f = run_child([PY, "-c", "pass"])
        m = run_child(cmd, stdin)
        floor.append(f)
        measured.append(m)
        deltas.append(m - f)

    def ms(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    row = {
        "name": name,
        "runs": runs,
        "p50_ms": round(1000 * statistics.median(measured), 1),
        "p90_ms": ms(measured, 0.9),
        "floor_p50_ms": round(1000 * statistics.median(floor), 1),
        "over_floor_p50_ms": round(1000 * statistics.median(deltas), 1),
    }
    print(
        f"{name:<28} p50 {row['p50_ms']:7.1f} ms  p90 {row['p90_ms']:7.1f} ms  "
        f"floor {row['floor_p50_ms']:6.1f} ms  over floor {row['over_floor_p50_ms']:7.1f} ms",
        flush=True,
    )
    return row


def hook_cmd(workspace: Path, state: Path, cwd: Path) -> Any:
    base = [PY, "-m", "mdrecall.cli", "--workspace", str(workspace), "--state-dir", str(state), "hook"]

    def make(i: int) -> tuple[list[str], str]:
        payload = {
            "session_id": "bench",
            "transcript_path": "",
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": PROMPTS[i % len(PROMPTS)],
        }
        return [*base, "UserPromptSubmit"], json.dumps(payload)

    return make


def search_cmd(workspace: Path, state: Path) -> Any:
    def make(i: int) -> tuple[list[str], str]:
        query = ["deploy decision", "postgres migration", "release notes", "webhook retries"][i % 4]
        return [MDRECALL, "--workspace", str(workspace), "--state-dir", str(state), "search", query], ""

    return make


def wait_warm(workspace: Path, state: Path, timeout: float = 900.0) -> dict[str, Any]:
    from mdrecall.agents import serve
    from mdrecall.config.paths import DEFAULT_AGENT_ID

    identity = serve.identity_for(workspace, DEFAULT_AGENT_ID, state, serve.default_config_file(workspace, None))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = serve.ping(identity)
        if answer and answer.get("warm"):
            return answer
        time.sleep(0.5)
    raise SystemExit("the warm server did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=5, help="runs of the cold hook with facts (slow)")
    parser.add_argument("--provider", default="local", help="embedding provider of the workspace (default local)")
    parser.add_argument("--out", type=Path, help="write the JSON here")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="mdrecall-bench-hooks-"))
    ws, bare, repo, state = root / "ws", root / "bare", root / "repo", root / "st"
    ws.mkdir()
    repo.mkdir()
    (bare / "memory").mkdir(parents=True)
    (bare / "memory" / "notes.md").write_text("# Notes\n\nNothing stored as a fact here.\n")
    config = f'provider = "{args.provider}"\n'
    for folder in (ws, bare):
        (folder / "mdrecall.toml").write_text(config)
    print(f"workspace: {args.notes} notes, {args.facts} facts, provider {args.provider} ({root})", flush=True)
    generate_workspace(ws, args.notes)
    write_facts(ws, args.facts)
    started = time.perf_counter()
    subprocess.run([MDRECALL, "--workspace", str(ws), "--state-dir", str(state), "index", "--quiet"], check=True)
    subprocess.run([MDRECALL, "--workspace", str(ws), "--state-dir", str(state), "facts", "rebuild"], check=True)
    print(f"indexed notes and facts in {time.perf_counter() - started:.0f} s", flush=True)

    rows = []
    server = subprocess.Popen(
        [MDRECALL, "--workspace", str(ws), "--state-dir", str(state), "serve"],
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_warm(ws, state)
        rows.append(paired(f"hook warm ({args.facts} facts)", hook_cmd(ws, state, repo), args.runs))
        rows.append(paired(f"search warm ({args.notes} notes)", search_cmd(ws, state), args.runs))
    finally:
        server.terminate()
        server.wait(timeout=30)
    rows.append(paired("hook cold, no fact stored", hook_cmd(bare, state, repo), args.runs))
    rows.append(paired(f"search cold ({args.notes} notes)", search_cmd(ws, state), max(3, args.runs // 4)))
    rows.append(paired(f"hook cold, {args.facts} facts", hook_cmd(ws, state, repo), args.cold_runs))
    result = {
        "bench": "hooks",
        "notes": args.notes,
        "facts": args.facts,
        "provider": args.provider,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "targets_ms": {"hook warm": 150, "hook cold, no fact stored": 300, "search warm": 150},
        "rows": rows,
        "note": "whole-process wall times; re-run on a quiet machine before quoting",
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
