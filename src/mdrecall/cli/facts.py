"""CLI commands of the fact store and the agent hooks, registered on the main app by `register(app)`:

    mdrecall facts store TEXT [--category C] [--importance X]
    mdrecall facts recall QUERY [-n N]
    mdrecall facts edit ID [TEXT] [--category C] [--importance X]
    mdrecall facts forget (ID | --query Q)
    mdrecall facts list [--category C] | stats | rebuild
    mdrecall hook EVENT            (payload JSON on stdin; for Claude Code / Codex hooks)
    mdrecall install claude-code [--settings FILE] [--mcp-file FILE]
    mdrecall install openclaw [--openclaw-config FILE] [--openclaw-state DIR] [--keep-memory-plugin]

Errors end with one line on stderr and exit code 1, like the rest of the CLI.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from mdrecall.cli.common import fail, print_json, settings_from
from mdrecall.errors import MdrecallError

facts_app = typer.Typer(no_args_is_help=True, help="Short memories (preferences, decisions, people) on LanceDB.")
install_app = typer.Typer(no_args_is_help=True, help="Wire mdrecall into an agent (hooks + MCP server).")


def register(app: typer.Typer) -> None:
    """Add `facts`, `hook` and `install` to the main `mdrecall` app."""
    app.add_typer(facts_app, name="facts")
    app.add_typer(install_app, name="install")
    app.command("hook")(hook)


def _with_store(ctx: typer.Context, body: Callable[[Any], None]) -> None:
    from mdrecall.facts.store import FactStore, require_lancedb

    try:
        require_lancedb()
        with FactStore(settings_from(ctx)) as store:
            body(store)
            for warning in store.warnings:  # lines of facts.md that cannot be read: kept, and said once
                sys.stderr.write(f"warning: {warning}\n")
    except MdrecallError as err:
        fail(str(err))


def _show_fact(fact: dict[str, Any], score: float | None = None) -> None:
    extra = f"  score {score:.3f}" if score is not None else ""
    sys.stdout.write(f"{fact['id']}  [{fact['category']}]  {fact['date']}{extra}\n    {fact['text']}\n")


@facts_app.command("store")
def facts_store(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The memory, one sentence."),
    category: str = typer.Option(None, "--category", "-c", help="preference|fact|decision|entity|other"),
    importance: float = typer.Option(None, "--importance", min=0.0, max=1.0, help="0..1 (default 0.7)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Store a memory (not stored twice: a near-identical one is reported instead)."""

    def body(store: Any) -> None:
        result = store.store(text, importance=importance, category=category, source="cli")
        if as_json:
            print_json(result.to_dict())
        else:
            sys.stdout.write(result.message + "\n")

    _with_store(ctx, body)


@facts_app.command("recall")
def facts_recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for."),
    limit: int = typer.Option(5, "--limit", "-n", min=1, max=50),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
) -> None:
    """Find stored memories by meaning and keyword."""

    def body(store: Any) -> None:
        hits = store.recall(query, limit=limit)
        if as_json:
            print_json([h.to_dict() for h in hits])
            return
        if not hits:
            sys.stdout.write(f"no memories match {query!r}\n")
        for hit in hits:
            _show_fact(hit.fact.to_dict(), hit.score)

    _with_store(ctx, body)


@facts_app.command("edit")
def facts_edit(
    ctx: typer.Context,
    fact_id: str = typer.Argument(..., metavar="ID", help="The memory's id."),
    text: str = typer.Argument(None, help="The new text (default: unchanged)."),
    category: str = typer.Option(None, "--category", "-c", help="preference|fact|decision|entity|other"),
    importance: float = typer.Option(None, "--importance", min=0.0, max=1.0, help="0..1."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Change a memory's text, category or importance (its line in memory/facts.md keeps its id and date)."""
    if text is None and category is None and importance is None:
        fail("give the new text, --category or --importance")

    def body(store: Any) -> None:
        result = store.edit(fact_id, text, category=category, importance=importance)
        if as_json:
            print_json(result.to_dict())
        else:
            sys.stdout.write(result.message + "\n")

    _with_store(ctx, body)


@facts_app.command("forget")
def facts_forget(
    ctx: typer.Context,
    fact_id: str = typer.Argument(None, metavar="[ID]", help="The memory's id."),
    query: str = typer.Option(None, "--query", "-q", help="Delete the one memory matching this."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Delete a memory (and its line in memory/facts.md); a query matching several deletes nothing."""
    if not fact_id and not query:
        fail("give a memory id or --query TEXT")

    def body(store: Any) -> None:
        result = store.forget(fact_id, query)
        if as_json:
            print_json(result.to_dict())
            return
        sys.stdout.write(result.message + "\n")
        for hit in result.candidates:
            _show_fact(hit.fact.to_dict(), hit.score)

    _with_store(ctx, body)


@facts_app.command("list")
def facts_list(
    ctx: typer.Context,
    category: str = typer.Option(None, "--category", "-c", help="Only this category."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List stored memories, oldest first."""

    def body(store: Any) -> None:
        facts = store.list(category)
        if as_json:
            print_json([f.to_dict() for f in facts])
            return
        for fact in facts:
            _show_fact(fact.to_dict())
        sys.stdout.write(f"{len(facts)} memories\n")

    _with_store(ctx, body)


@facts_app.command("stats")
def facts_stats(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """How many memories, by category; where they live; which model embeds them."""

    def body(store: Any) -> None:
        stats = store.stats()
        if as_json:
            print_json(stats)
            return
        cats = ", ".join(f"{k} {v}" for k, v in stats["byCategory"].items())
        sys.stdout.write(
            f"{stats['facts']} memories ({cats})\nfile: {stats['file']}\nstore: {stats['store']}\n"
            f"search: {stats['search']} ({stats['provider']}/{stats['model'] or '-'})\n"
        )

    _with_store(ctx, body)


@facts_app.command("rebuild")
def facts_rebuild(ctx: typer.Context) -> None:
    """Recreate the LanceDB store from memory/facts.md (it also happens by itself when the file changed)."""

    def body(store: Any) -> None:
        count = store.rebuild()
        sys.stdout.write(f"rebuilt the fact store from {store.file.rel_path}: {count} memories\n")

    _with_store(ctx, body)


def hook(
    ctx: typer.Context,
    event: str = typer.Argument(..., help="SessionStart | UserPromptSubmit | PreCompact | Stop | SessionEnd"),
) -> None:
    """Run an agent hook: reads the hook's JSON payload on stdin, prints what the agent expects."""
    from mdrecall.agents.hooks import HookRunner, canonical_event, read_payload

    try:
        name = canonical_event(event)
        payload = read_payload(sys.stdin.read())
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        runner = HookRunner(settings_from(ctx, cwd))
        try:
            result = runner.run(name, payload)
        finally:
            runner.close()
    except MdrecallError as err:
        fail(str(err))
        return
    for line in result.stderr or []:
        sys.stderr.write(line + "\n")
    if result.stdout:
        sys.stdout.write(result.stdout + ("" if result.stdout.endswith("\n") else "\n"))


@install_app.command("claude-code")
def install_claude_code(
    ctx: typer.Context,
    settings_file: Path = typer.Option(
        None, "--settings", help="Settings file to merge into (default: ~/.claude/settings.json)."
    ),
    mcp_file: Path = typer.Option(
        None, "--mcp-file", help="Write the MCP server here (e.g. .mcp.json) instead of the settings file."
    ),
) -> None:
    """Add mdrecall's hooks and MCP server to Claude Code's settings (merged; a backup is kept)."""
    from mdrecall.agents.hooks import install_claude_code as install

    opts = ctx.obj
    base = [sys.executable, "-m", "mdrecall.cli"]
    for flag, value in (("--agent", opts.agent), ("--state-dir", opts.state_dir), ("--config", opts.config)):
        if value is not None:
            base += [flag, str(Path(value).expanduser().resolve()) if flag != "--agent" else str(value)]
    target = (settings_file or Path("~/.claude/settings.json")).expanduser()
    try:
        written = install(target, base, mcp_file.expanduser() if mcp_file else None)
    except MdrecallError as err:
        fail(str(err))
        return
    sys.stdout.write(f"mdrecall hooks ({', '.join(written['events'])}) written to {written['settings']}\n")
    sys.stdout.write(f"MCP server 'mdrecall' written to {written.get('mcp', written['settings'])}\n")
    for backup in written["backups"]:
        sys.stdout.write(f"backup: {backup}\n")


@install_app.command("openclaw")
def install_openclaw(
    ctx: typer.Context,
    openclaw_config: Path = typer.Option(
        None,
        "--openclaw-config",
        help="OpenClaw's config file (default: $OPENCLAW_CONFIG_PATH, else <OpenClaw state dir>/openclaw.json).",
    ),
    openclaw_state: Path = typer.Option(
        None, "--openclaw-state", help="OpenClaw's state dir (default: $OPENCLAW_STATE_DIR, else ~/.openclaw)."
    ),
    keep_memory_plugin: bool = typer.Option(
        False,
        "--keep-memory-plugin",
        help="Keep OpenClaw's memory plugin (its pre-compaction flush keeps writing memory/*.md) and deny only "
        "its memory_search / memory_get, instead of plugins.slots.memory = none.",
    ),
) -> None:
    """Make mdrecall OpenClaw's memory: an MCP server in its config, its own memory tools off (backup kept)."""
    import os

    from mdrecall.agents.hooks import install_openclaw as install
    from mdrecall.config.openclaw import openclaw_config_path, openclaw_state_dir
    from mdrecall.config.settings import STATE_DIR_ENV

    state = openclaw_state_dir(openclaw_state)
    target = openclaw_config_path(openclaw_config, state).expanduser().resolve()
    # OpenClaw starts MCP servers with only HOME, PATH, SHELL and TERM: every location goes on the command line
    base = [sys.executable, "-m", "mdrecall.cli", "--openclaw", "--state-dir", str(state), "--config", str(target)]
    if ctx.obj.agent:
        base += ["--agent", str(ctx.obj.agent)]
    own_state = os.environ.get(STATE_DIR_ENV)
    env = {STATE_DIR_ENV: str(Path(own_state).expanduser().resolve())} if own_state else None
    try:
        written = install(target, base, env, keep_memory_plugin)
    except MdrecallError as err:
        fail(str(err))
        return
    off = "tools.deny memory_search, memory_get" if keep_memory_plugin else 'plugins.slots.memory = "none"'
    sys.stdout.write(f"MCP server 'mdrecall' and {off} written to {written['config']}\n")
    for note in written["notes"]:
        sys.stdout.write(f"note: {note}\n")
    for backup in written["backups"]:
        sys.stdout.write(f"backup: {backup}\n")
    sys.stdout.write("OpenClaw's agents now get mdrecall__memory_search, mdrecall__memory_get (and the fact tools)\n")
