"""Where a workspace's fact store lives (standard library only: the hooks' cold path needs the name without
importing the store)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mdrecall.config.settings import Settings


def store_dir(settings: Settings) -> Path:
    """`<state>/facts/<agent>-<hash of workspace path>`: one LanceDB database per agent and workspace."""
    digest = hashlib.sha256(str(settings.workspace).encode()).hexdigest()[:12]
    return settings.state_dir / "facts" / f"{settings.agent_id}-{digest}"
