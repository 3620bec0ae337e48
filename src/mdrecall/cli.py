"""The `mdrecall` command: index, search, get, status.

User mistakes (missing workspace, bad config, refused path, ...) end with one line on stderr and exit
code 1, never a traceback.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .backends import MemoryBackend, open_backend
from .config import Settings
from .errors import IndexWriteError, MdrecallError, describe_os_error
from .sync import SyncReport

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Persistent, searchable memory for AI agents: markdown in, hybrid search out.",
)
out = Console()
err = Console(stderr=True)


@dataclass
class GlobalOptions:
    workspace: Path | None
    agent: str | None
    state_dir: Path | None
    config: Path | None
    db: Path | None
    openclaw: bool = False


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


@app.callback()
def main_options(
    ctx: typer.Context,
    workspace: Path = typer.Option(None, "--workspace", "-w", help="Workspace folder (default: current dir)."),
    agent: str = typer.Option(None, "--agent", "-a", help="Agent id (default: main)."),
    state_dir: Path = typer.Option(
        None, "--state-dir", help="State dir (default: $MDRECALL_STATE_DIR or ~/.mdrecall)."
    ),
    config: Path = typer.Option(None, "--config", "-c", help="Config file (default: <workspace>/mdrecall.toml)."),
    db: Path = typer.Option(None, "--db", help="Index file (overrides <state dir>/memory/<agent>.sqlite)."),
    openclaw: bool = typer.Option(
        False, "--openclaw", help="Use an OpenClaw install: its JSON5 config, workspace and ~/.openclaw layout."
    ),
) -> None:
    ctx.obj = GlobalOptions(workspace, agent, state_dir, config, db, openclaw)


def _settings(ctx: typer.Context) -> Settings:
    """Settings from the global options: mdrecall's own layout, or OpenClaw's with --openclaw."""
    from .openclaw import settings_for

    opts: GlobalOptions = ctx.obj
    settings, warnings = settings_for(opts.openclaw, opts.agent, opts.workspace, opts.config, opts.state_dir, opts.db)
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {warning}", highlight=False)
    return settings


def _open(ctx: typer.Context) -> MemoryBackend:
    return open_backend(_settings(ctx))


def _sync_with_progress(index: MemoryBackend, force: bool, reason: str, quiet: bool) -> SyncReport:
    """Run a sync with a progress bar on stderr (hidden when quiet or not a terminal)."""
    columns = (
        TextColumn("[bold]indexing[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=err, transient=True, disable=quiet) as progress:
        task = progress.add_task("", total=None)

        def update(done: int, total: int, label: str) -> None:
            progress.update(task, completed=done, total=max(total, 1), description=label[-60:])

        return index.sync(force=force, reason=reason, progress=update)


def _fresh(index: MemoryBackend, quiet: bool) -> SyncReport | None:
    """Sync a stale index before answering; a fault (read-only, disk full) leaves the last index to answer."""
    if index.read_only or not index.is_dirty():
        if index.read_only:
            where = getattr(index, "db_path", "the index")
            err.print(f"[yellow]note:[/] {where} is read-only: answering from the index as it is", highlight=False)
        return None
    try:
        return _sync_with_progress(index, force=False, reason="stale", quiet=quiet)
    except IndexWriteError as exc:
        err.print(f"[yellow]note:[/] {exc}", highlight=False)
        return None


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def _run(ctx: typer.Context, body) -> None:  # type: ignore[no-untyped-def]
    """Open the index, run body(index), turn user errors into one line and exit code 1."""
    try:
        with _open(ctx) as index:
            body(index)
    except MdrecallError as exc:
        _fail(str(exc))
    except OSError as exc:  # a fault no layer below named: still one line, never a traceback
        _fail(describe_os_error(exc, "cannot continue"))
    except apsw.Error as exc:
        _fail(f"index error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(code=130) from None


@app.command()
def index(
    ctx: typer.Context,
    force: bool = typer.Option(False, "--force", help="Rebuild everything (in a temp DB, swapped in at the end)."),
    as_json: bool = typer.Option(False, "--json", help="Print the sync report as JSON."),
) -> None:
    """Index the workspace's memory files (incremental unless --force or the settings changed)."""

    def body(idx: MemoryBackend) -> None:
        report = _sync_with_progress(idx, force=force, reason="cli", quiet=as_json)
        if as_json:
            _print_json(report.as_dict())
            return
        kind = "full reindex" if report.full_reindex else "incremental sync"
        why = f" ({report.full_reason})" if report.full_reason and report.full_reason != "forced" else ""
        provider = getattr(idx, "provider", None)
        model = f"{provider.id}/{provider.model}" if provider else "none (keyword-only)"
        out.print(
            f"{kind}{why}: {report.files_indexed} files / {report.chunks_indexed} chunks indexed, "
            f"{report.files_unchanged} unchanged, {report.files_deleted} removed "
            f"in {report.seconds:.2f}s (embedding {report.embed_seconds:.2f}s; model {model}; "
            f"{report.texts_embedded} embedded, {report.cache_hits} from cache)",
            highlight=False,
        )
        for path, problem in report.skipped:
            err.print(f"[yellow]warning:[/] {path}: {problem}", highlight=False)
        if report.provider_error:
            err.print(
                f"[yellow]warning:[/] embedding provider unavailable ({report.provider_error}): keyword index built, "
                f"{report.vectors_pending} chunks wait for vectors (filled by the next index once it answers)",
                highlight=False,
            )

    _run(ctx, body)


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for (words, a phrase, an identifier)."),
    max_results: int = typer.Option(None, "--max-results", "-n", min=1, help="At most N results (default 6)."),
    min_score: float = typer.Option(None, "--min-score", min=0.0, max=1.0, help="Drop results below this score."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array of results."),
) -> None:
    """Search memory by meaning and by keyword."""

    def body(idx: MemoryBackend) -> None:
        _fresh(idx, quiet=as_json)
        response = idx.search(query, max_results=max_results, min_score=min_score)
        if as_json:
            _print_json([r.to_dict() for r in response.results])
            if response.notice:
                err.print(f"note: {response.notice}", highlight=False)
            if response.backend_fallback:
                reason = response.backend_fallback["reason"]
                err.print(f"note: answered by the builtin index: {reason}", highlight=False)
            return
        if not response.results:
            out.print(f"no results for {query!r} ({response.notice or 'nothing matched'})", highlight=False)
            return
        if response.notice:
            out.print(f"[yellow]note:[/] {response.notice}", highlight=False)
        if response.backend_fallback:
            out.print(f"[yellow]note:[/] answered by the builtin index: {response.backend_fallback['reason']}")
        for rank, result in enumerate(response.results, 1):
            out.print(
                f"[bold]{rank}. {result.path}:{result.start_line}-{result.end_line}[/]  "
                f"score {result.score:.3f}  [dim]{result.source}[/]",
                highlight=False,
            )
            snippet = result.snippet.strip()
            shown = snippet[:300].replace("\n", "\n   ") + ("…" if len(snippet) > 300 else "")
            out.print("   " + shown, highlight=False)
        out.print(f"[dim]{len(response.results)} results · {response.mode} · {response.provider}[/]", highlight=False)

    _run(ctx, body)


@app.command()
def get(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="Workspace-relative path, e.g. memory/2026-01-31.md"),
    from_line: int = typer.Option(None, "--from", min=1, help="First line to return (1-based)."),
    lines: int = typer.Option(None, "--lines", min=1, help="How many lines to return."),
    as_json: bool = typer.Option(False, "--json", help="Print {path, text} as JSON."),
) -> None:
    """Print a memory file (or some of its lines)."""

    def body(idx: MemoryBackend) -> None:
        result = idx.read_file(path, from_line=from_line, lines=lines)
        _fresh(idx, quiet=True)
        if as_json:
            _print_json(result)
        else:
            sys.stdout.write(result["text"] + ("" if result["text"].endswith("\n") else "\n"))

    _run(ctx, body)


def _status_table(status: dict[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    vector = status["vector"]
    rows = [
        ("backend", status["backend"]),
        ("provider", f"{status['provider']} (requested {status['requestedProvider']})"),
        ("model", status["model"] or "-"),
        ("search", status["searchMode"]),
        ("files", str(status["files"])),
        ("chunks", str(status["chunks"])),
        ("dirty", "yes" if status["dirty"] else "no"),
        ("workspace", status["workspaceDir"]),
        ("index", status["dbPath"]),
        (
            "sources",
            ", ".join(f"{c['source']} {c['files']} files/{c['chunks']} chunks" for c in status["sourceCounts"]),
        ),
        ("fts", "available" if status["fts"]["available"] else f"unavailable ({status['fts'].get('error')})"),
        ("vector", f"{vector['mode']}, dims {vector.get('dims') or '-'}"),
        ("cache", f"{'on' if status['cache']['enabled'] else 'off'}, {status['cache']['entries']} entries"),
        ("min score", f"{status['query']['minScore']:g} ({status['query']['minScoreSource']})"),
    ]
    if status.get("lastSync"):
        last = status["lastSync"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["at"] / 1000))
        rows.append(("last sync", f"{when} ({last['reason']})"))
    if status.get("recovered"):
        rows.append(("recovered", status["recovered"]))
    if status.get("vectorsPending"):
        rows.append(("vectors pending", f"{status['vectorsPending']} chunks (keyword-searchable meanwhile)"))
    if status.get("providerError"):
        rows.append(("provider error", status["providerError"]))
    if status.get("providerUnavailable"):
        rows.append(("note", status["providerUnavailable"]))
    if status.get("fallback"):
        rows.append(("fallback", f"from {status['fallback']['from']}: {status['fallback']['reason']}"))
    if vector.get("loadError"):
        rows.append(("vector error", vector["loadError"]))
    rows += _qmd_rows(status)
    for name, probe in (status.get("probe") or {}).items():
        rows.append((f"probe {name}", "ok" if probe.get("ok") else f"FAILED: {probe.get('error')}"))
    for key, value in rows:
        table.add_row(key, value)
    return table


def _qmd_rows(status: dict[str, Any]) -> list[tuple[str, str]]:
    """The qmd sidecar's part of `status` (backend = "qmd"): version, collections, last update/embed."""
    qmd = status.get("qmd")
    if not qmd:
        return []

    def when(entry: dict[str, Any] | None) -> str:
        if not entry:
            return "never"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry["at"] / 1000))
        return f"{stamp} ok ({entry['ms']} ms)" if entry.get("ok") else f"{stamp} FAILED: {entry.get('error')}"

    docs = "?" if qmd.get("documents") is None else str(qmd["documents"])
    collections = ", ".join(
        f"{c['name']} ({'?' if c.get('documents') is None else c['documents']})" for c in qmd["collections"]
    )
    rows = [
        ("served by", status.get("servedBy", "-")),
        ("qmd", f"{qmd.get('version') or 'not available'} · {qmd.get('searchMode', '-')} · {docs} documents"),
        ("qmd collections", collections or "-"),
        ("qmd update", when(qmd.get("lastUpdate"))),
        ("qmd embed", when(qmd.get("lastEmbed"))),
    ]
    if qmd.get("error"):
        rows.append(("qmd error", qmd["error"]))
    if status.get("backendFallback"):
        rows.append(("qmd fallback", f"builtin index answers: {status['backendFallback']['reason']}"))
    return rows


@app.command()
def status(
    ctx: typer.Context,
    deep: bool = typer.Option(False, "--deep", help="Probe the embedding provider and the vector search."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Show what is indexed, with which provider and model, and whether it is up to date."""

    def body(idx: MemoryBackend) -> None:
        _fresh(idx, quiet=as_json)
        info = idx.status(deep=deep)
        if as_json:
            _print_json(info)
        else:
            out.print(_status_table(info))

    _run(ctx, body)


@app.command()
def watch(
    ctx: typer.Context,
    debounce_ms: int = typer.Option(None, "--debounce-ms", min=0, help="Override sync.watchDebounceMs (1500)."),
) -> None:
    """Keep the index current: watch the memory files and sync on every change until Ctrl-C."""

    def line(report: SyncReport) -> None:
        stamp = time.strftime("%H:%M:%S")
        kind = "full reindex" if report.full_reindex else "sync"
        out.print(
            f"{stamp} {kind} ({report.reason}): {report.files_indexed} indexed, {report.files_deleted} removed, "
            f"{report.files_unchanged} unchanged in {report.seconds:.2f}s",
            highlight=False,
        )

    def body(idx: MemoryBackend) -> None:
        if debounce_ms is not None:
            idx.config.sync.watch_debounce_ms = debounce_ms
        line(_sync_with_progress(idx, force=False, reason="watch-start", quiet=False))
        idx.on_synced = line
        idx.start_background(watch=True)
        out.print(f"watching {idx.settings.workspace} (Ctrl-C to stop)", highlight=False)
        try:
            while True:
                time.sleep(0.5)
        except KeyboardInterrupt:
            out.print("stopping", highlight=False)
        finally:
            idx.stop_background()

    _run(ctx, body)


@app.command()
def mcp(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP address (loopback by default)."),
    port: int = typer.Option(8765, "--port", help="HTTP port."),
    token: str = typer.Option(None, "--token", envvar="MDRECALL_MCP_TOKEN", help="Bearer token for HTTP."),
) -> None:
    """Serve memory_search / memory_get / memory_status over the Model Context Protocol (stdio by default)."""
    try:
        from .mcp_server import run_http, run_stdio
    except ImportError as exc:
        _fail(f"the MCP server needs the 'mcp' package: pip install 'mdrecall[mcp]' ({exc})")
    try:
        settings = _settings(ctx)
        if http:
            run_http(settings, host=host, port=port, token=token)
        else:
            run_stdio(settings)
    except MdrecallError as exc:
        _fail(str(exc))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
