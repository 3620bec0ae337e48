"""What every `mdrecall` command shares: the global options, settings from them, one way to fail and print JSON."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from mdrecall.config.settings import Settings

# soft wrapping (a long line stays one line when piped: scripts and grep see what was printed).
out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)


def say(console: Console, *parts: str | tuple[str, str]) -> None:
    """Print plain strings and (text, style) pairs literally: user text is never read as rich markup."""
    console.print(Text.assemble(*parts))


def warn(message: str) -> None:
    say(err, ("warning: ", "yellow"), message)


def fail(message: str) -> None:
    """One line on stderr and exit code 1: every failure ends this way (with --json, also `{"error": ...}`)."""
    error_line(" ".join(message.strip().splitlines()) or "failed")
    raise typer.Exit(code=1)


def error_line(message: str) -> None:
    """A failure's one line on stderr, and with --json its `{"error": ...}` on stdout (the caller exits)."""
    say(err, ("error: ", "bold red"), message)
    json_error(message)


# Whether this invocation asked for --json (set by the entry point from argv), and whether it printed its JSON.
_json_output = {"wanted": False, "printed": False}


def wants_json(argv: list[str]) -> bool:
    """Whether a command line asks for --json (before any `--`, after which everything is an argument)."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in args


def expect_json(wanted: bool) -> None:
    _json_output.update(wanted=wanted, printed=False)


def json_error(message: str) -> None:
    """With --json and nothing printed yet, the failure as `{"error": message}` on stdout: a script reading
    stdout gets valid JSON whatever happened (the one line on stderr and exit code 1 stay the same)."""
    if _json_output["wanted"] and not _json_output["printed"]:
        print_json({"error": message})


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    _json_output["printed"] = True


@dataclass
class GlobalOptions:
    workspace: Path | None = None
    agent: str | None = None
    state_dir: Path | None = None
    config: Path | None = None
    db: Path | None = None
    openclaw: bool = False


def options(ctx: typer.Context) -> GlobalOptions:
    """The global options of this invocation (defaults when a command runs without the main callback)."""
    return ctx.obj if isinstance(ctx.obj, GlobalOptions) else GlobalOptions()


def settings_from(ctx: typer.Context, workspace: str | Path | None = None) -> Settings:
    """Settings from the global options: mdrecall's own layout, or OpenClaw's with --openclaw.

    `workspace` (a hook payload's cwd) is used only when `--workspace` was not given.
    """
    from mdrecall.config.openclaw import settings_for

    opts = options(ctx)
    chosen = opts.workspace if opts.workspace is not None else workspace
    settings, warnings = settings_for(opts.openclaw, opts.agent, chosen, opts.config, opts.state_dir, opts.db)
    for warning in warnings:
        warn(warning)
    return settings
