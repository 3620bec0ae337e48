"""`mdrecall trust`: let a folder's own `mdrecall.toml` use the keys that need trust (see docs/safety.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from mdrecall.cli.common import GlobalOptions, fail, print_json
from mdrecall.config.settings import CONFIG_FILENAME, read_config_file, resolve_state_dir
from mdrecall.config.trust import (
    config_digest,
    config_file_key,
    list_trust,
    record_trust,
    restrict_untrusted,
    revoke_trust,
    trust_file,
)
from mdrecall.errors import MdrecallError


def register(app: typer.Typer) -> None:
    app.command("trust")(trust)


def _target(ctx: typer.Context, path: Path | None) -> Path:
    """PATH (a folder or its config file), else the workspace (--workspace or the current folder), as given."""
    opts = ctx.obj if isinstance(ctx.obj, GlobalOptions) else GlobalOptions()
    chosen = path if path is not None else opts.workspace
    return Path(chosen if chosen is not None else os.getcwd()).expanduser()


def _config_file(target: Path) -> Path:
    return config_file_key(target / CONFIG_FILENAME if target.is_dir() else target)


def trust(
    ctx: typer.Context,
    path: Path = typer.Argument(None, help="A folder or its mdrecall.toml (default: the workspace)."),
    revoke: bool = typer.Option(False, "--revoke", help="Stop trusting it."),
    list_: bool = typer.Option(False, "--list", help="List the trusted files and whether they changed since."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Trust a folder's mdrecall.toml: its keys that run programs, send keys or text elsewhere or reach outside
    the folder take effect (until the file changes). Records the file's sha256 in the state dir."""
    state = resolve_state_dir(ctx.obj.state_dir if isinstance(ctx.obj, GlobalOptions) else None)
    try:
        if list_:
            _show_list(list_trust(state), as_json)
            return
        target = _target(ctx, path)
        config_file = _config_file(target)
        if revoke:  # a folder deleted since it was trusted can still be revoked
            if not revoke_trust(state, config_file):
                fail(f"{config_file} is not trusted")
            _out({"path": str(config_file), "revoked": True}, as_json, f"no longer trusted: {config_file}")
            return
        if not target.exists():
            fail(f"{target} does not exist")
        if not config_file.is_file():
            fail(f"no {config_file.name} to trust: {config_file}")
        config, raw = read_config_file(config_file)
        _, keys = restrict_untrusted(config, config_file.parent, state)
        entry = {**record_trust(state, config_file, config_digest(raw)), "keys": keys}
    except MdrecallError as err:
        fail(str(err))
        return
    except OSError as err:  # the state dir cannot be written (read-only, full, not a folder)
        fail(f"cannot record trust in {trust_file(state)}: {err.strerror or err}")
        return
    what = f"now allowed: {', '.join(keys)}" if keys else "it sets no key that needs trust"
    _out(entry, as_json, f"trusted {config_file} as it is now (sha256 {entry['sha256'][:12]}); {what}")


def _out(value: Any, as_json: bool, text: str) -> None:
    if as_json:
        print_json(value)
    else:
        sys.stdout.write(text + "\n")


def _show_list(entries: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print_json(entries)
        return
    if not entries:
        sys.stdout.write("no trusted folders\n")
        return
    for entry in entries:
        sys.stdout.write(f"{entry['status']:<8} {entry['path']}  (trusted {entry['trustedAt']})\n")
