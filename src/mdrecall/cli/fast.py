"""The `mdrecall` entry point: `hook` and `search` first try the warm server, everything else is the full CLI.

A hook runs before every prompt, so its process must not import what it does not use: this module reads
the few global options itself (standard library only), asks the warm server over its socket
(mdrecall.agents.serve), and only when none answers imports the hook runner or the full command-line app.
Any option or form it does not know goes to the full app unchanged, so behaviour and messages stay the same.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

_GLOBAL_VALUE = {
    "--workspace": "workspace",
    "-w": "workspace",
    "--agent": "agent",
    "-a": "agent",
    "--state-dir": "state_dir",
    "--config": "config",
    "-c": "config",
}


def _split_globals(argv: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """The global options this fast path understands and the rest; None for anything else (--db, --help...)."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            return opts, list(argv[i:])
        name, eq, value = arg.partition("=")
        if name not in _GLOBAL_VALUE:
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        opts[_GLOBAL_VALUE[name]] = value
        i += 1
    return None


def _search_args(rest: list[str]) -> dict[str, object] | None:
    """`QUERY [-n N] [--max-results N] [--min-score X] [--json]`, or None for any other form."""
    query: str | None = None
    out: dict[str, object] = {"maxResults": None, "minScore": None, "json": False}
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, eq, value = arg.partition("=")
        if arg == "--json":
            out["json"] = True
        elif name in ("-n", "--max-results", "--min-score") and (eq or i + 1 < len(rest)):
            if not eq:
                value = rest[i + 1]
                i += 1
            try:
                if name == "--min-score":
                    score = float(value)
                    if not 0.0 <= score <= 1.0:
                        return None
                    out["minScore"] = score
                else:
                    count = int(value)
                    if count < 1:
                        return None
                    out["maxResults"] = count
            except ValueError:
                return None
        elif arg.startswith("-") or query is not None:
            return None
        else:
            query = arg
        i += 1
    if query is None or not query.strip():
        return None
    out["query"] = query
    return out


def _state_dir(opts: dict[str, str]) -> Path:
    from mdrecall.config.paths import resolve_state_dir

    return resolve_state_dir(opts.get("state_dir"))


def _hook(opts: dict[str, str], event: str) -> int:
    from mdrecall.agents.hook_process import run_hook_process

    return run_hook_process(
        event,
        sys.stdin.read(),
        workspace=opts.get("workspace"),
        agent=opts.get("agent"),
        state_dir=opts.get("state_dir"),
        config=opts.get("config"),
    )


def _warm_search(opts: dict[str, str], args: dict[str, object]) -> int | None:
    from mdrecall.agents import serve
    from mdrecall.config.paths import DEFAULT_AGENT_ID

    workspace = Path(opts.get("workspace") or os.getcwd()).expanduser()
    if not workspace.is_dir():
        return None
    identity = serve.identity_for(
        workspace,
        (opts.get("agent") or DEFAULT_AGENT_ID).strip(),
        _state_dir(opts),
        serve.default_config_file(workspace, opts.get("config")),
    )
    request = {"op": "search", "query": args["query"], "maxResults": args["maxResults"], "minScore": args["minScore"]}
    answer = serve.call(identity, request)
    if answer is None:
        return None
    if not answer.get("ok"):
        message = " ".join(str(answer.get("error") or "failed").split())
        sys.stderr.write(f"error: {message}\n")
        if args["json"]:  # as the full CLI's `fail`: a script reading stdout still gets JSON
            sys.stdout.write(json.dumps({"error": message}, ensure_ascii=False, indent=2) + "\n")
        return 1
    print_search(answer, str(args["query"]), bool(args["json"]))
    return 0


def print_search(answer: dict[str, object], query: str, as_json: bool) -> None:
    """The warm server's search answer, printed as `mdrecall search` prints it when piped."""
    results = answer.get("results") or []
    notice, fallback = answer.get("notice"), answer.get("backendFallback")
    assert isinstance(results, list)
    if as_json:
        sys.stdout.write(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
        if notice:
            sys.stderr.write(f"note: {notice}\n")
        if isinstance(fallback, dict):
            sys.stderr.write(f"note: answered by the builtin index: {fallback.get('reason')}\n")
        return
    if not results:
        from mdrecall.text.bounds import no_results_line

        sys.stdout.write(no_results_line(query, notice if isinstance(notice, str) else None) + "\n")
        return
    out = []
    if notice:
        out.append(f"note: {notice}")
    if isinstance(fallback, dict):
        out.append(f"note: answered by the builtin index: {fallback.get('reason')}")
    lines = answer.get("lines") or []
    for rank, result in enumerate(results, 1):
        text = lines[rank - 1] if isinstance(lines, list) and rank <= len(lines) else result.get("snippet", "")
        out.append(
            f"{rank}. {result['path']}:{result['startLine']}-{result['endLine']}  score {result['score']:.3f}  "
            f"{result['source']}"
        )
        out.append("   " + str(text).strip().replace("\n", "\n   "))
    out.append(f"{len(results)} results · {answer.get('mode')} · {answer.get('provider')}")
    sys.stdout.write("\n".join(out) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    split = _split_globals(args)
    if split is not None and split[1]:
        opts, rest = split
        command = rest[0]
        if command == "hook" and len(rest) == 2 and not rest[1].startswith("-"):
            sys.exit(_hook(opts, rest[1]))
        if command == "search":
            parsed = _search_args(rest[1:])
            if parsed is not None:
                code = _warm_search(opts, parsed)
                if code is not None:
                    sys.exit(code)
    from mdrecall.cli.app import main as full_main

    full_main()
