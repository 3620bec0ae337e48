"""Which workspace an agent hook works in, and the default memory home.

Hooks run in whatever folder the agent was started in, often a code repository. They must never create
memory files next to someone's code, so without `--workspace` a hook uses the folder it runs in only when
that folder already is a memory workspace (it holds `MEMORY.md`, `memory.md`, `memory/` or `mdrecall.toml`);
otherwise it uses the default memory home, `<state dir>/workspace` (`~/.mdrecall/workspace` unless
`--state-dir` or $MDRECALL_STATE_DIR say otherwise), created on first use with mode 0700.

Standard library only: the warm path resolves the workspace before anything heavy is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

from mdrecall.files import make_private_dirs

HOME_DIRNAME = "workspace"
MARKERS = ("MEMORY.md", "memory.md", "memory", "mdrecall.toml")


def default_memory_home(state_dir: Path) -> Path:
    """`<state dir>/workspace`: where hooks keep memory when no workspace was configured."""
    return state_dir / HOME_DIRNAME


def is_memory_workspace(folder: str | os.PathLike[str]) -> bool:
    """The folder already holds memory (MEMORY.md, memory.md, memory/) or an mdrecall.toml."""
    base = Path(folder)
    return any((base / name).exists() for name in MARKERS)


def choose_workspace(explicit: str | os.PathLike[str] | None, cwd: str | None, state_dir: Path) -> tuple[Path, str]:
    """The workspace a hook uses and why: `--workspace`, else the agent's folder when it is a memory
    workspace, else the default memory home (created 0700 when missing)."""
    if explicit is not None:
        return Path(explicit).expanduser(), "--workspace"
    if cwd and os.path.isdir(cwd) and is_memory_workspace(cwd):
        return Path(cwd), "the agent's folder holds memory files"
    home = default_memory_home(state_dir)
    make_private_dirs(home)
    reason = "default memory home"
    if cwd:
        reason += f" ({cwd} has no MEMORY.md, memory/ or mdrecall.toml)"
    return home, reason
