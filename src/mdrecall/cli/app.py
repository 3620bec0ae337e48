"""The `mdrecall` command: index, search, get, status.

User mistakes (missing workspace, bad config, refused path, ...) end with one line on stderr and exit
code 1, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import typer
from rich.table import Table
from rich.text import Text

from mdrecall import __version__
from mdrecall.agents.serve import whole_lines
from mdrecall.agents.tools import no_memory_files_message
from mdrecall.backends import MemoryBackend, open_backend
from mdrecall.cli.common import (
    GlobalOptions,
    err,
    error_line,
    expect_json,
    fail,
    json_error,
    out,
    print_json,
    say,
    settings_from,
    wants_json,
    warn,
)
from mdrecall.cli.facts import register as register_fact_commands
from mdrecall.cli.migrate import register as register_migrate_command
from mdrecall.cli.trust import register as register_trust_command
from mdrecall.config.settings import Settings
from mdrecall.errors import IndexWriteError, MdrecallError, describe_os_error
from mdrecall.indexing.sync import SyncReport
from mdrecall.retrieval.rerank import describe as describe_rerank
from mdrecall.text.bounds import is_valid_text, no_results_line

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    # Plain click help: flags read `--json` (no `<bool>` placeholder), and help text is printed literally.
    rich_markup_mode=None,
    help="Persistent, searchable memory for AI agents: markdown in, hybrid search out.",
)
# Messages are printed as rich Text (never parsed as markup, so "[mcp]" or "[openai]" survive) and with


def _version_callback(value: bool) -> None:
    if value:
        try:
            from importlib.metadata import version

            shown = version("mdrecall")
        except Exception:  # not installed as a distribution (source checkout on sys.path)
            shown = __version__
        sys.stdout.write(f"mdrecall {shown}\n")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    workspace: Path = typer.Option(None, "--workspace", "-w", help="Workspace folder (default: current dir)."),
    agent: str = typer.Option(None, "--agent", "-a", help="Agent id (default: main)."),
    state_dir: Path = typer.Option(
        None, "--state-dir", help="State dir (default: $MDRECALL_STATE_DIR or ~/.mdrecall)."
    ),
    config: Path = typer.Option(None, "--config", "-c", help="Config file (default: <workspace>/mdrecall.toml)."),
    db: Path = typer.Option(
        None, "--db", help="Index file (default: <state dir>/memory/<agent>-<workspace key>.sqlite)."
    ),
    openclaw: bool = typer.Option(
        False,
        "--openclaw",
        help="Serve an OpenClaw agent: read its JSON5 config, workspace and transcripts (its files are never "
        "written; the index lives in mdrecall's state dir).",
    ),
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    ctx.obj = GlobalOptions(workspace, agent, state_dir, config, db, openclaw)


def _open(ctx: typer.Context) -> MemoryBackend:
    return open_backend(settings_from(ctx))


# Without a terminal (a log, CI, an agent's tool call) progress is a plain line at most this often: a bar
# would print nothing until the end, and a full index with a local model can take many minutes.
LOG_PROGRESS_EVERY_SECONDS = 15.0


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _progress_line(done: int, total: int, elapsed: float) -> str:
    """`indexing: 1200/16669 chunks (7%), 45 chunks/s, eta 5m44s` for logs."""
    line = f"indexing: {done}/{total} chunks ({100 * done // max(total, 1)}%)"
    if done and elapsed > 0:
        rate = done / elapsed
        line += f", {rate:.0f} chunks/s, eta {_duration((total - done) / rate)}"
    return line


def _sync_with_log_lines(index: MemoryBackend, force: bool, reason: str) -> SyncReport:
    """A sync that prints a progress line to stderr every LOG_PROGRESS_EVERY_SECONDS (none for a short one)."""
    started = time.perf_counter()
    last = [started]

    def on_chunks(done: int, total: int) -> None:
        now = time.perf_counter()
        if 0 < done < total and now - last[0] >= LOG_PROGRESS_EVERY_SECONDS:
            last[0] = now
            err.print(_progress_line(done, total, now - started), markup=False, highlight=False)

    return index.sync(force=force, reason=reason, chunk_progress=on_chunks)


def _sync_with_progress(index: MemoryBackend, force: bool, reason: str, quiet: bool) -> SyncReport:
    """Run a sync with a progress bar on stderr (none when quiet; plain lines now and then without a terminal).

    The bar counts chunks (embedded or taken from the cache) with their rate and an ETA: with a local
    model the embedding is where the time goes. Files written are shown beside it.
    """
    if not quiet and not err.is_terminal:
        return _sync_with_log_lines(index, force, reason)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("[bold]indexing[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("chunks"),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
    )
    started = time.perf_counter()
    with Progress(*columns, console=err, transient=True, disable=quiet) as progress:
        task = progress.add_task("", total=None, rate="")
        files = {"done": 0, "total": 0}

        def on_file(done: int, total: int, label: str) -> None:
            files.update(done=done, total=total)
            progress.update(task, description=f"{done}/{total} files  {label[-40:]}")

        def on_chunks(done: int, total: int) -> None:
            elapsed = time.perf_counter() - started
            rate = f"{done / elapsed:.0f} chunks/s" if elapsed > 0 and done else ""
            progress.update(task, completed=done, total=max(total, 1), rate=rate)

        if quiet:  # no bar: no totals needed, so the sync reads each file once and holds one batch (sync.py)
            return index.sync(force=force, reason=reason)
        return index.sync(force=force, reason=reason, progress=on_file, chunk_progress=on_chunks)


def _fresh(index: MemoryBackend, quiet: bool) -> SyncReport | None:
    """Sync a stale index before answering; a fault (read-only, disk full) leaves the last index to answer."""
    if index.read_only or not index.is_dirty():
        if index.read_only:
            say(err, ("note: ", "yellow"), f"{index.db_path} is read-only: answering from the index as it is")
        return None
    try:
        report = _sync_with_progress(index, force=False, reason="stale", quiet=quiet)
    except IndexWriteError as exc:
        say(err, ("note: ", "yellow"), str(exc))
        return None
    _warn_skipped(report)  # said once here: the file is recorded, so later syncs count it as unchanged
    return report


def _warn_skipped(report: SyncReport) -> None:
    for path, problem in report.skipped:
        warn(f"{path}: {problem}")


def _require_memory_files(index: MemoryBackend) -> None:
    """Fail with one line when the workspace holds no memory at all (most likely the wrong folder)."""
    message = no_memory_files_message(index)
    if message:
        fail(message)


def _run(ctx: typer.Context, body) -> None:  # type: ignore[no-untyped-def]
    """Open the index, run body(index), turn user errors into one line and exit code 1."""
    try:
        with _open(ctx) as index:
            body(index)
    except MdrecallError as exc:
        fail(str(exc))
    except OSError as exc:  # a fault no layer below named: still one line, never a traceback
        fail(describe_os_error(exc, "cannot continue"))
    except apsw.Error as exc:
        fail(f"index error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    except KeyboardInterrupt:
        say(err, "interrupted")
        json_error("interrupted")
        raise typer.Exit(code=130) from None


@app.command()
def index(
    ctx: typer.Context,
    force: bool = typer.Option(False, "--force", help="Rebuild everything (in a temp DB, swapped in at the end)."),
    as_json: bool = typer.Option(False, "--json", help="Print the sync report as JSON."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print every file as it is indexed (stderr)."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress (one pass over the files: the least memory on huge workspaces)."
    ),
) -> None:
    """Index the workspace's memory files (incremental unless --force or the settings changed)."""

    def body(idx: MemoryBackend) -> None:
        _require_memory_files(idx)
        if verbose:
            report = idx.sync(force=force, reason="cli", progress=_verbose_progress())
        else:
            report = _sync_with_progress(idx, force=force, reason="cli", quiet=as_json or quiet)
        if as_json:
            print_json(report.as_dict())
            return
        kind = "full reindex" if report.full_reindex else "incremental sync"
        why = f" ({report.full_reason})" if report.full_reason and report.full_reason != "forced" else ""
        provider = idx.provider
        model = f"{provider.id}/{provider.model}" if provider else "none (keyword-only)"
        say(
            out,
            f"{kind}{why}: {report.files_indexed} files / {report.chunks_indexed} chunks indexed, "
            f"{report.files_unchanged} unchanged, {report.files_deleted} removed "
            f"in {report.seconds:.2f}s (embedding {report.embed_seconds:.2f}s; model {model}; "
            f"{report.texts_embedded} embedded, {report.cache_hits} from cache)",
        )
        _warn_skipped(report)
        if report.provider_error:
            warn(
                f"embedding provider unavailable ({report.provider_error}): keyword index built, "
                f"{report.vectors_pending} chunks wait for vectors (filled by the next index once it answers)"
            )

    _run(ctx, body)


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for (words, a phrase, an identifier)."),
    max_results: int = typer.Option(None, "--max-results", "-n", min=1, help="At most N results (default 6)."),
    min_score: float = typer.Option(
        None, "--min-score", min=0.0, max=1.0, help="Only results scoring at least this (a hard floor)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array of results."),
    explain: bool = typer.Option(False, "--explain", help="Say why each result ranked (score after each stage)."),
) -> None:
    """Search memory by meaning and by keyword."""

    if not query.strip():
        fail('the query is empty: say what to look for, e.g. mdrecall search "deploy decision"')

    def body(idx: MemoryBackend) -> None:
        _require_memory_files(idx)
        _fresh(idx, quiet=as_json)
        response = idx.search(query, max_results=max_results, min_score=min_score, explain=explain)
        results = response.results
        fallback = None if response.fallback_logged else (response.backend_fallback or {}).get("reason")
        if as_json:
            print_json([r.to_dict() for r in results])
            if response.notice:
                say(err, "note: ", response.notice)
            if fallback:
                say(err, "note: answered by the builtin index: ", fallback)
            return
        if not results:
            say(out, no_results_line(query, response.notice))
            return
        if response.notice:
            say(out, ("note: ", "yellow"), response.notice)
        if fallback:
            say(out, ("note: ", "yellow"), "answered by the builtin index: ", fallback)
        for rank, result in enumerate(results, 1):
            say(
                out,
                (f"{rank}. {result.path}:{result.start_line}-{result.end_line}", "bold"),
                f"  score {result.score:.3f}  ",
                (result.source, "dim"),
            )
            say(out, "   " + whole_lines(idx, result).strip().replace("\n", "\n   "))
            if explain:
                say(out, ("   why: " + explain_line(result.explain), "dim"))
        say(out, (f"{len(results)} results · {response.mode} · {response.provider}", "dim"))

    _run(ctx, body)


def _scores_line(query: dict[str, Any]) -> str:
    """What a score means in this index, for `status`."""
    if query.get("scoring") == "calibrated":
        floor = query.get("abstainBelow") or 0.0
        return f"calibrated (chance a result holds the answer; nothing shown when the best is below {floor:g})"
    return "fused (relative to each query's candidates)"


def explain_line(explain: dict[str, Any] | None) -> str:
    """One line of `SearchResult.explain`: both sides' raw scores, then the score after each stage."""
    if not explain:
        return "this engine does not say why it ranked this result"
    parts = []
    vector, keyword = explain.get("vector") or {}, explain.get("keyword") or {}
    if vector.get("cosine") is not None:
        parts.append(f"vector {vector['cosine']:.3f}")
    if keyword.get("bm25") is not None:
        parts.append(f"keyword {keyword['bm25']:.3f} (coverage {keyword['coverage']:.2f})")
    steps = [f"{step['label']} {step['score']:.3f}" for step in explain.get("steps", [])]
    return " · ".join(parts) + " -> " + " -> ".join(steps)


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
            print_json(result)
        else:
            sys.stdout.write(result["text"] + ("" if result["text"].endswith("\n") else "\n"))
            if result.get("notice"):  # cut at the size bound: say where to continue
                warn(result["notice"].replace("memory_get again with from=", "mdrecall get again with --from "))

    _run(ctx, body)


def _server_down(status: dict[str, Any]) -> str | None:
    """The one line saying the index server is unreachable (status then exits 1), or None."""
    server = status.get("postgres") or {}
    return server.get("error") if server.get("available") is False else None


def _offline_searches(fallback: str) -> str:
    if fallback == "none":
        return "fail until the server is back (store.postgres.fallback = none)"
    return f"answered by the local fallback index ({fallback}) until the server is back"


def _status_rows(status: dict[str, Any], verbose: bool) -> list[tuple[str, str]]:
    down = _server_down(status)
    if down:  # nothing about the index can be read: what is known, and why
        return [
            ("backend", status["backend"]),
            ("server", f"DOWN ({status['postgres']['server']})"),
            ("error", down),
            ("searches", _offline_searches(status["postgres"]["fallback"])),
            ("provider", status["provider"]),
            ("workspace", status["workspaceDir"]),
        ]
    vector = status["vector"]
    provider = f"{status['provider']} (requested {status['requestedProvider']})"
    rows = [
        ("backend", status["backend"]),
        ("provider", provider),
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
        ("scores", _scores_line(status["query"])),
    ]
    rerank_info = status.get("query", {}).get("rerank") or {}
    if rerank_info.get("enabled"):
        rows.append(("rerank", describe_rerank(rerank_info)))
    if status.get("providerReason"):
        rows.insert(2, ("picked because", status["providerReason"]))
    if status.get("workspaceSource"):
        rows.append(("why this workspace", status["workspaceSource"]))
    if status.get("hooksWorkspace"):
        rows.append(("hooks workspace", status["hooksWorkspace"]))
    warm = status.get("warmServer")
    if warm:
        rows.append(("warm server", _warm_row(warm)))
    if status.get("factsExtra"):
        rows.append(("facts", status["factsExtra"]))
    if status.get("lastSync"):
        last = status["lastSync"]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["at"] / 1000))
        rows.append(("last sync", f"{when} ({last['reason']})"))
    if status.get("recovered"):
        rows.append(("recovered", status["recovered"]))
    for skipped in status.get("skippedFiles") or []:
        rows.append(("skipped", f"{skipped['path']}: {skipped['reason']} (not searched until it changes)"))
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
    if verbose:
        rows += _verbose_rows(status)
    for name, probe in (status.get("probe") or {}).items():
        if probe.get("skipped"):
            rows.append((f"probe {name}", f"skipped ({probe.get('error')})"))
        else:
            rows.append((f"probe {name}", "ok" if probe.get("ok") else f"FAILED: {probe.get('error')}"))
    return rows


def _warm_row(warm: dict[str, Any]) -> str:
    if warm.get("running"):
        return f"running (pid {warm.get('pid')}, {warm.get('served', 0)} requests) at {warm['socket']}"
    return f"not running ({warm.get('reason')})"


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


def _verbose_rows(status: dict[str, Any]) -> list[tuple[str, str]]:
    """What `status --verbose` adds: where everything comes from and the settings in force."""
    query = status["query"]
    rows = [
        ("agent", status.get("agentId", "-")),
        ("config", status.get("configPath") or "(defaults)"),
        ("not trusted", ", ".join(status.get("untrustedKeys") or []) or "-"),
        ("extra paths", ", ".join(status.get("extraPaths") or []) or "-"),
        ("sessions dir", status.get("sessionsDir") or "-"),
        ("max results", str(query["maxResults"])),
        ("hybrid", "on" if query.get("hybrid") else "off"),
    ]
    if status.get("dirtyFiles"):
        rows.append(("changed files", ", ".join(status["dirtyFiles"][:20])))
    if status.get("batch"):
        rows.append(("batch", json.dumps(status["batch"])))
    return rows


def _status_table(status: dict[str, Any], verbose: bool = False) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in _status_rows(status, verbose):
        table.add_row(Text(key), Text(str(value)))
    return table


def _failed_probes(status: dict[str, Any]) -> list[str]:
    probes = status.get("probe") or {}
    return [
        f"{name}: {probe.get('error') or 'failed'}"
        for name, probe in probes.items()
        if not probe.get("ok") and not probe.get("skipped")
    ]


@app.command()
def status(
    ctx: typer.Context,
    deep: bool = typer.Option(False, "--deep", help="Probe the embedding provider and the vector search."),
    reindex: bool = typer.Option(False, "--index", help="Sync first when the index is stale (as OpenClaw's)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also show config, paths and changed files."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Show what is indexed, with which provider and model (and why), and whether it is up to date.

    A missing index is built first; a stale one is only reported (`--index` syncs it). With `--deep`, a
    failed probe makes the exit code 1.
    """

    def body(idx: MemoryBackend) -> None:
        if reindex or not idx.has_index():
            _fresh(idx, quiet=as_json)
        info = idx.status(deep=deep)
        info["agentId"] = idx.settings.agent_id
        info.update(_agent_loop_status(ctx.obj, idx.settings))
        info["configPath"] = str(idx.settings.config_path) if idx.settings.config_path else None
        info["untrustedKeys"] = list(idx.settings.untrusted_keys)  # ignored until `mdrecall trust`
        sessions_on = "sessions" in idx.config.sources
        info["sessionsDir"] = str(idx.settings.sessions_dir) if sessions_on else None
        if verbose and info.get("dirty"):
            info["dirtyFiles"] = idx.dirty_files()
        empty = no_memory_files_message(idx)
        if empty:
            info["warning"] = empty
        if as_json:
            print_json(info)
        elif out.is_terminal:
            out.print(_status_table(info, verbose))
        else:  # piped: one unwrapped "key  value" line per row, whatever the width
            rows = _status_rows(info, verbose)
            width = max(len(key) for key, _ in rows)
            for key, value in rows:
                say(out, f"{key.ljust(width)}  {value}")
        if _server_down(info):
            raise typer.Exit(code=1)  # shown above; scripts see it in the exit code too
        failed = _failed_probes(info)
        if failed:
            fail("status --deep: probe failed: " + "; ".join(failed))
        if empty and not as_json:
            warn(empty)

    _run(ctx, body)


def _agent_loop_status(opts: GlobalOptions, settings: Settings) -> dict[str, Any]:
    """Where the workspace came from, where hooks without --workspace would write, the warm server, and
    whether the fact store can run (the `facts` extra)."""
    import os

    from mdrecall.agents.home import default_memory_home, is_memory_workspace
    from mdrecall.agents.hooks import lancedb_missing
    from mdrecall.agents.serve import warm_status
    from mdrecall.facts.store import INSTALL_HINT

    info: dict[str, Any] = {}
    if opts.workspace is not None:
        info["workspaceSource"] = "--workspace"
    elif opts.openclaw:
        info["workspaceSource"] = "OpenClaw config"
    else:
        info["workspaceSource"] = "current folder"
        if not is_memory_workspace(os.getcwd()):
            home = default_memory_home(settings.state_dir)
            info["hooksWorkspace"] = (
                f"{home} (default memory home: this folder has no MEMORY.md, memory/ or mdrecall.toml, so hooks "
                "run here without --workspace keep memory there)"
            )
    info["warmServer"] = warm_status(settings)
    if settings.config.facts.enabled and lancedb_missing():
        info["factsExtra"] = f"off: {INSTALL_HINT}"
    return info


def _verbose_progress() -> Any:
    """A sync progress callback that prints each file once (stderr), for `index --verbose`."""
    last: dict[str, str] = {"label": ""}

    def update(done: int, total: int, label: str) -> None:
        if label and label != last["label"]:
            last["label"] = label
            say(err, f"[{done}/{total}] {label}")

    return update


@app.command()
def watch(
    ctx: typer.Context,
    debounce_ms: int = typer.Option(None, "--debounce-ms", min=0, help="Override sync.watchDebounceMs (1500)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON sync report per line."),
) -> None:
    """Keep the index current: watch the memory files and sync on every change until Ctrl-C."""

    def line(report: SyncReport) -> None:
        if as_json:
            sys.stdout.write(json.dumps(report.as_dict(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        stamp = time.strftime("%H:%M:%S")
        kind = "full reindex" if report.full_reindex else "sync"
        say(
            out,
            f"{stamp} {kind} ({report.reason}): {report.files_indexed} indexed, {report.files_deleted} removed, "
            f"{report.files_unchanged} unchanged in {report.seconds:.2f}s",
        )

    def body(idx: MemoryBackend) -> None:
        _require_memory_files(idx)
        if debounce_ms is not None:
            idx.config.sync.watch_debounce_ms = debounce_ms
        line(_sync_with_progress(idx, force=False, reason="watch-start", quiet=as_json))
        idx.on_synced = line
        idx.start_background(watch=True)
        chatter = err if as_json else out  # with --json, stdout carries only the JSON lines
        say(chatter, f"watching {idx.settings.workspace} (Ctrl-C to stop)")
        try:
            while True:
                time.sleep(0.5)
        except KeyboardInterrupt:
            say(chatter, "stopping")
        finally:
            idx.stop_background()

    _run(ctx, body)


@app.command()
def mcp(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio (the default)."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP address (loopback by default)."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="HTTP port."),
    token_file: Path = typer.Option(
        None,
        "--token-file",
        help="File holding the HTTP bearer token (else $MDRECALL_MCP_TOKEN, else a random one printed on stderr). "
        "There is no --token: a token on the command line is visible to every user in ps.",
    ),
) -> None:
    """Serve memory_search / memory_get / memory_status over the Model Context Protocol (stdio by default)."""
    from mdrecall.mcp_server import read_token, run_http, run_stdio, sdk_missing

    missing = sdk_missing()  # a broken install: the SDK is a core dependency
    if missing:
        fail(missing)
    try:
        settings = settings_from(ctx)
        if http:
            run_http(settings, host=host, port=port, token=read_token(token_file))
        else:
            run_stdio(settings)
    except MdrecallError as exc:
        fail(str(exc))


@app.command()
def ui(
    ctx: typer.Context,
    port: int = typer.Option(
        None, "--port", min=0, max=65535, help="Port on 127.0.0.1 (default 8767, or a free one if taken; 0: any)."
    ),
    open_browser: bool = typer.Option(False, "--open", help="Also open the page in the default browser."),
) -> None:
    """Inspect memory in a local web page: search with explanations, files, facts, hook activity, index health.

    Serves 127.0.0.1 only and prints the address with its access token (docs/ui.md)."""
    from mdrecall.ui.server import serve

    try:
        serve(settings_from(ctx), port=port, open_browser=open_browser, announce=lambda line: say(err, line))
    except MdrecallError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        raise typer.Exit(code=130) from None


register_fact_commands(app)  # facts, hook, install: see cli/facts.py
register_migrate_command(app)  # migrate --to postgres: see cli/migrate.py
register_trust_command(app)  # trust: see cli/trust.py


def main() -> None:
    """Console-script entry point: usage mistakes too end with one line on stderr and exit code 1 (and, with
    --json, `{"error": ...}` on stdout)."""
    expect_json(wants_json(sys.argv[1:]))
    invalid = invalid_argument(sys.argv[1:])
    if invalid:
        error_line(invalid)
        sys.exit(1)
    try:
        code = app(standalone_mode=False)
    except Exception as exc:
        sys.exit(_usage_exit(exc))
    sys.exit(code if isinstance(code, int) else 0)


# Options whose value is a file or folder name: on POSIX a name may hold bytes that are not UTF-8.
PATH_OPTIONS = frozenset({"--workspace", "-w", "--state-dir", "--config", "-c", "--db", "--settings", "--mcp-file"})


def invalid_argument(argv: list[str]) -> str | None:
    """One line naming the first argument that is not valid UTF-8 text (Python holds undecodable bytes as
    surrogates, which nothing downstream can encode), or None. Values of path options may hold any bytes."""
    previous = ""
    for number, arg in enumerate(argv, 1):
        option = arg.split("=", 1)[0] if arg.startswith("--") and "=" in arg else None
        if previous not in PATH_OPTIONS and option not in PATH_OPTIONS and not is_valid_text(arg):
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            return f"argument {number} ({shown}) is not valid UTF-8 text; mdrecall reads arguments as UTF-8"
        previous = arg
    return None


def _usage_exit(exc: Exception) -> int:
    """Exit code for an exception the command-line parser raised (typer vendors click: matched by shape)."""
    name = type(exc).__name__
    if name == "NoArgsIsHelpError":  # `mdrecall` alone: the help, as a successful answer
        sys.stdout.write(exc.format_message() + "\n")  # type: ignore[attr-defined]
        return 0
    if name == "Abort":
        say(err, "interrupted")
        json_error("interrupted")
        return 130
    if isinstance(exc, UnicodeError):  # text that is not UTF-8 (stdin, a file name): one line, not a traceback
        reason = getattr(exc, "reason", type(exc).__name__)
        error_line(f"input is not valid UTF-8 text ({reason})")
        return 1
    if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path.partition(" ")[2] if ctx is not None else ""
        hint = f" (see: mdrecall {command + ' ' if command else ''}--help)"
        error_line(" ".join(exc.format_message().split()) + hint)
        return 1
    raise exc


if __name__ == "__main__":
    main()
