"""How path values of the config are read: one rule for the indexer, the watcher and the trust check."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_extra_path(workspace: Path, extra: str) -> Path:
    """An extra path as configured (absolute, ~, or workspace-relative), normalised without resolving links."""
    raw = Path(os.path.expanduser(extra))
    joined = raw if raw.is_absolute() else workspace / raw
    return Path(os.path.normpath(joined))
