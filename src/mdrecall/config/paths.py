"""Where mdrecall keeps its state, without loading the config schema (standard library only).

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
