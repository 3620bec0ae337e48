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

from mdrecall.cli.common import fail, options, print_json, settings_from
from mdrecall.errors import MdrecallError

facts_app = typer.Typer(no_args_is_help=True, help="Short memories (preferences, decisions, people) on LanceDB.")
install_app = typer.Typer(no_args_is_help=True, help="Wire mdrecall into an agent (hooks + MCP server).")


def register(app: typer.Typer) -> None:
    """Add `facts`, `hook` and `install` to the main `mdrecall` app."""
    app.add_typer(facts_app, name="facts")
    app.add_typer(install_app, name="install")
    app.command("hook")(hook)
    app.command("serve")(serve)


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


def _print_result(result: Any, as_json: bool) -> None:
    """A store / edit / forget result: its JSON, or its one-line message."""
    if as_json:
        print_json(result.to_dict())
    else:
        sys.stdout.write(result.message + "\n")


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
        _print_result(store.store(text, importance=importance, category=category, source="cli"), as_json)

    _with_store(ctx, body)


@facts_app.command("recall")
def facts_recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for."),
    limit: int = typer.Option(5, "--limit", "-n", min=1, max=50),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
) -> None:
    """Find stored memories by meaning and keyword."""
    if not query.strip():  # as `mdrecall search` and the memory_recall tool
        fail('the query is empty: say what to look for, e.g. mdrecall facts recall "editor preference"')

    def body(store: Any) -> None:
        hits = store.recall(query, limit=limit, asking=True)
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
        _print_result(store.edit(fact_id, text, category=category, importance=importance), as_json)

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
        _print_result(result, as_json)
        if as_json:
            return
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
    """Run an agent hook: reads the hook's JSON payload on stdin, prints what the agent expects.

    Without --workspace: the agent's folder when it holds memory files, else the default memory home
    (<state dir>/workspace). A running warm server (`mdrecall serve`, or the MCP server) answers when it can."""
    from mdrecall.agents.hook_process import run_hook_process

    opts = options(ctx)
    code = run_hook_process(
        event,
        sys.stdin.read(),
        workspace=opts.workspace,
        agent=opts.agent,
        state_dir=opts.state_dir,
        config=opts.config,
        openclaw=opts.openclaw,
        db=opts.db,
    )
    if code:
        raise typer.Exit(code=code)


def _install_base(ctx: typer.Context) -> tuple[list[str], str]:
    """The command every hook and the server run, with workspace, agent and state dir spelled out; and
    where the workspace came from (for the report)."""
    from mdrecall.agents.home import default_memory_home
    from mdrecall.agents.install import cli_base
    from mdrecall.config.paths import DEFAULT_AGENT_ID, resolve_state_dir
    from mdrecall.files import make_private_dirs

    opts = options(ctx)
    if opts.openclaw or opts.db is not None:
        fail("install records --workspace, --agent and --state-dir; it does not take --openclaw or --db")
    state = resolve_state_dir(opts.state_dir)
    if opts.workspace is not None:
        workspace = Path(opts.workspace).expanduser().resolve()
        if not workspace.is_dir():
            fail(f"workspace not found: {workspace}")
        why = "--workspace"
    else:
        workspace = default_memory_home(state)
        make_private_dirs(workspace)
        why = "default memory home; pass --workspace DIR for another"
    config = Path(opts.config).expanduser().resolve() if opts.config is not None else None
    return cli_base(sys.executable, workspace, (opts.agent or DEFAULT_AGENT_ID).strip(), state, config), why


def _report_install(written: dict[str, Any], base: list[str], why: str) -> None:
    from mdrecall.agents.hooks import lancedb_missing
    from mdrecall.facts.store import INSTALL_HINT

    workspace = base[base.index("--workspace") + 1]
    sys.stdout.write(f"MCP server 'mdrecall' written to {written['mcp']}\n")
    sys.stdout.write(f"hooks ({', '.join(written['events'])}) written to {written['hooks']}\n")
    sys.stdout.write(f"workspace: {workspace} ({why})\n")
    sys.stdout.write(f"state dir: {base[base.index('--state-dir') + 1]}\n")
    for backup in written["backups"]:
        sys.stdout.write(f"backup: {backup}\n")
    if lancedb_missing():
        sys.stdout.write(
            f"note: hooks will not recall or capture memories until LanceDB is installed: {INSTALL_HINT}\n"
        )


@install_app.command("claude-code")
def install_claude_code(
    ctx: typer.Context,
    project: Path = typer.Option(
        None, "--project", help="Register the server in <DIR>/.mcp.json (project scope) instead of ~/.claude.json."
    ),
    settings_file: Path = typer.Option(None, "--settings", help="Hooks file (default: ~/.claude/settings.json)."),
    mcp_file: Path = typer.Option(None, "--mcp-file", help="Write the MCP server to this file instead."),
) -> None:
    """Register the MCP server (~/.claude.json, or .mcp.json with --project) and the hooks
    (~/.claude/settings.json) with Claude Code; files are merged and backed up."""
    from mdrecall.agents.install import install_claude_code as install

    base, why = _install_base(ctx)
    if project is not None and not project.expanduser().is_dir():
        fail(f"project folder not found: {project}")
    try:
        written = install(
            base,
            Path.home(),
            project=project.expanduser().resolve() if project is not None else None,
            settings_file=settings_file.expanduser() if settings_file else None,
            mcp_file=mcp_file.expanduser() if mcp_file else None,
        )
    except MdrecallError as err:
        fail(str(err))
        return
    _report_install(written, base, why)


@install_app.command("codex")
def install_codex(ctx: typer.Context) -> None:
    """Register the MCP server ([mcp_servers.mdrecall] in ~/.codex/config.toml) and the hooks
    (~/.codex/hooks.json) with Codex ($CODEX_HOME when set); files are merged and backed up."""
    from mdrecall.agents.install import install_codex as install

    base, why = _install_base(ctx)
    try:
        written = install(base, Path.home())
    except MdrecallError as err:
        fail(str(err))
        return
    _report_install(written, base, why)
    sys.stdout.write("note: Codex asks you to review new hooks before they run (/hooks in the Codex TUI)\n")


def serve(ctx: typer.Context) -> None:
    """Keep memory warm for hooks and `mdrecall search`: serve them over a private socket until Ctrl-C.

    The MCP server does the same while an agent runs it; this is for when none does."""
    import time

    from mdrecall.agents.serve import MAX_SOCKET_PATH, WarmServer, serves_cli_identity, usable_socket_path

    try:
        server = WarmServer(settings_from(ctx))
        if not serves_cli_identity(server.settings):
            fail("serve answers hooks and searches named by --workspace/--agent/--state-dir/--config: drop --db")
        if not usable_socket_path(server.path):
            fail(f"the socket path {server.path} is longer than {MAX_SOCKET_PATH} bytes: use a shorter --state-dir")
        if not server.start():
            fail(f"another process already serves this workspace at {server.path}")
    except MdrecallError as err:
        fail(str(err))
        return
    sys.stderr.write(f"mdrecall: serving {server.settings.workspace} at {server.path} (Ctrl-C to stop)\n")
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        sys.stderr.write("mdrecall: stopping\n")
    finally:
        server.stop()


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

    from mdrecall.agents.install import install_openclaw as install
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
