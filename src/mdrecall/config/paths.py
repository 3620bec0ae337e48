"""Paths without the config schema (standard library only): where mdrecall keeps its state, and how path
values of the config are read (one rule for the indexer, the watcher and the trust check).

The warm path of the agent hooks (mdrecall.agents.serve) needs these before anything heavy is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_FILENAME = "mdrecall.toml"
DEFAULT_AGENT_ID = "main"
STATE_DIR_ENV = "MDRECALL_STATE_DIR"


def resolve_state_dir(explicit: str | os.PathLike[str] | None) -> Path:
    """`--state-dir`, else $MDRECALL_STATE_DIR, else ~/.mdrecall."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.home() / ".mdrecall").resolve()


def resolve_extra_path(workspace: Path, extra: str) -> Path:
    """An extra path as configured (absolute, ~, or workspace-relative), normalised without resolving links."""
    raw = Path(os.path.expanduser(extra))
    joined = raw if raw.is_absolute() else workspace / raw
    return Path(os.path.normpath(joined))
