"""The one lock-file helper: an exclusive advisory `flock` on a file mdrecall owns, held for a `with` block.

Every cross-process lock (one sync per index, one qmd update per home, the fact store, the hooks' state) is
this helper over its own lock file. On platforms without `fcntl` the block runs unlocked (threads inside one
process are serialised by the callers' own locks).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from mdrecall.files import make_private_dirs, open_private

try:  # POSIX advisory locks
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

POLL_SECONDS = 0.05


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str], timeout: float | None = None) -> Iterator[bool]:
    """Hold an exclusive lock on `path` (created user-only, never through a symlink) for the block.

    `timeout=None` waits as long as it takes; `timeout=0` tries once; otherwise it polls until the deadline.
    Yields True when the lock is held, False when it could not be had in time (the block then runs unlocked
    and the caller decides what that means: skip the work, or raise).
    """
    make_private_dirs(Path(path).parent)
    fd = open_private(path)
    try:
        if fcntl is None:  # pragma: no cover
            yield True
            return
        held = _acquire(fd, timeout)
        try:
            yield held
        finally:
            if held:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def directory_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on an existing folder (no file is created in it) for the block: what every
    process that changes a file of that folder takes, whoever it serves (the facts.md of a workspace)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        with locked_fd(fd):
            yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked_fd(fd: int) -> Iterator[None]:
    """Hold an exclusive lock on an open file (an append to a file others append to) for the block."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _acquire(fd: int, timeout: float | None) -> bool:
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
