"""`mdrecall migrate --to postgres`: move this agent's builtin SQLite index to the Postgres server.

Registered on the main app by `register(app)` (cli.py). Copies files, chunks, vectors and the embedding
cache (nothing is re-embedded; see `backends/postgres/from_sqlite.py`), with a progress bar on stderr and
a `--json` summary on stdout. The SQLite file is only read. Errors end with one line on stderr and exit
code 1; the DSN is never printed (the server shows as user@host:port/db).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any

import typer

from mdrecall.cli.common import fail, settings_from
from mdrecall.errors import MdrecallError

TARGETS = ("postgres",)


def register(app: typer.Typer) -> None:
    """Add `migrate` to the main `mdrecall` app."""
    app.command("migrate")(migrate)


def _progress_bar(quiet: bool) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, soft_wrap=True, highlight=False)
    columns = (
        TextColumn("[bold]migrating[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("chunks + cache entries"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    return Progress(*columns, console=console, transient=True, disable=quiet)


def migrate(
    ctx: typer.Context,
    to: str = typer.Option(..., "--to", help="Target backend: postgres (its DSN from $MDRECALL_POSTGRES_DSN)."),
    force: bool = typer.Option(False, "--force", help="Copy again even if this index was migrated already."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Copy this agent's SQLite index (files, chunks, vectors, embedding cache) to another backend.

    Nothing is re-embedded; the SQLite index is left as it is. Then set `store.driver = "postgres"`.
    """
    if to not in TARGETS:
        fail(f"cannot migrate to {to!r}: supported targets are {', '.join(TARGETS)}")
    try:
        settings = settings_from(ctx)
        report = _run(settings, force, quiet or as_json)
    except MdrecallError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted (nothing switched in on the server; run again)\n")
        raise typer.Exit(code=130) from None
    if as_json:
        sys.stdout.write(json.dumps(report.as_json(), indent=2) + "\n")
        return
    sys.stdout.write(_summary(report) + "\n")


def _run(settings: Any, force: bool, quiet: bool) -> Any:
    from mdrecall.backends.postgres import PostgresIndex, psycopg, scrub
    from mdrecall.embeddings.factory import ProviderResult
    from mdrecall.storage.postgres.from_sqlite import migrate_from_sqlite

    store = settings.config.store.model_copy(update={"driver": "postgres"})
    pg_settings = dataclasses.replace(settings, config=settings.config.model_copy(update={"store": store}))
    index = PostgresIndex(pg_settings, ProviderResult(None, requested="none"))  # no model: nothing is embedded
    try:
        with _progress_bar(quiet) as bar:
            task = bar.add_task("", total=None)
            started = time.perf_counter()

            def on_progress(done: int, total: int, label: str) -> None:
                elapsed = time.perf_counter() - started
                rate = f"{done / elapsed:,.0f}/s  " if elapsed > 0 and done else ""
                bar.update(task, completed=done, total=max(total, 1), description=f"{rate}{label[-40:]}")

            try:
                return migrate_from_sqlite(index, settings.db_path, on_progress, force=force)
            except psycopg.Error as err:  # anything the server or the DSN refused: one line, DSN scrubbed
                index._reset_pool()
                if index.server == "(unparsable DSN)":  # psycopg's message may quote a piece of it: say less
                    raise MdrecallError(
                        f"the postgres DSN (from ${index.pg.dsn_env} or store.postgres.dsn) is not a valid "
                        "connection string; it is not shown here"
                    ) from None
                raise MdrecallError(
                    f"postgres server {index.server}: {scrub(str(err), index.dsn)} (the SQLite index is untouched)"
                ) from None
    finally:
        index.close()


def _summary(report: Any) -> str:
    if report.already_migrated:
        return (
            f"already migrated: {report.source} is live on {report.server} (generation {report.generation}); "
            "nothing copied (--force copies again)"
        )
    line = (
        f"migrated {report.files} files, {report.chunks} chunks, {report.vectors} vectors and "
        f"{report.cache_entries} cached embeddings from {report.source} to {report.server} "
        f"(agent {report.agent}, generation {report.generation}) in {report.seconds:.1f}s; nothing re-embedded"
    )
    if report.left_for_next_sync:
        line += f"; {len(report.left_for_next_sync)} file(s) changed since the last index, left for the next sync"
    return line + '. Now set store.driver = "postgres".'
