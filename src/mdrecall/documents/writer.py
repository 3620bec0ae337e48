"""Append entries to memory files without losing or interleaving writes, even across processes.

Several agents (or an agent and a flush turn) may append to the same daily log at once. Each append opens
the file with O_APPEND, takes an exclusive `fcntl.flock`, writes the whole entry with one `write`, fsyncs
and unlocks: entries never interleave and none is lost. Symlinks are refused (O_NOFOLLOW, and the memory
folder must not be a symlink), as the indexer refuses them too. Every entry goes through mdrecall's one
redaction first: a secret in a note becomes `[REDACTED:<kind>]` before it reaches the file.
"""

from __future__ import annotations

import os
from datetime import date, datetime
from pathlib import Path

from mdrecall.errors import MdrecallError
from mdrecall.files import make_private_dirs, open_private, write_all
from mdrecall.locks import locked_fd
from mdrecall.text.redact import redact

LONG_TERM_FILE = "MEMORY.md"
MEMORY_DIR = "memory"


def _entry_bytes(text: str) -> bytes:
    body = redact(text).strip("\n")  # a secret never reaches a file mdrecall writes
    if not body.strip():
        raise MdrecallError("nothing to append: the entry is empty")
    return (body + "\n").encode("utf-8")


def append_entry(path: str | os.PathLike[str], text: str, header: str | None = None) -> Path:
    """Append `text` as one entry to `path` (created with `header` first if new or empty)."""
    target = Path(path)
    entry = _entry_bytes(text)
    make_private_dirs(target.parent)
    try:
        fd = open_private(target, os.O_RDWR | os.O_APPEND)  # a new file is the user's only (0600)
    except OSError as err:
        raise MdrecallError(f"cannot append to {target}: {err.strerror}") from None
    try:
        with locked_fd(fd):
            write_all(fd, _prefix(fd, header) + entry)
            os.fsync(fd)
    finally:
        os.close(fd)
    return target


def _prefix(fd: int, header: str | None) -> bytes:
    """What goes before the entry, decided under the lock: the header for a new file, else a blank line
    (plus the newline a hand-edited file may lack) so entries stay separate paragraphs."""
    size = os.fstat(fd).st_size
    if size == 0:
        return (header.rstrip("\n") + "\n\n").encode("utf-8") if header else b""
    last = os.pread(fd, 1, size - 1)
    return b"\n" if last == b"\n" else b"\n\n"


def _memory_dir(workspace: str | os.PathLike[str]) -> Path:
    root = Path(workspace)
    if not root.is_dir():
        raise MdrecallError(f"workspace not found: {root}")
    folder = root / MEMORY_DIR
    if folder.is_symlink():
        raise MdrecallError(f"refusing to write through a symlinked memory folder: {folder}")
    return folder


def daily_path(workspace: str | os.PathLike[str], when: date | datetime | None = None) -> Path:
    """`<workspace>/memory/YYYY-MM-DD.md` for `when` (default: today, local time)."""
    day = when or datetime.now().astimezone()
    if isinstance(day, datetime):
        day = day.date()
    return Path(workspace) / MEMORY_DIR / f"{day.isoformat()}.md"


def append_daily(workspace: str | os.PathLike[str], text: str, when: date | datetime | None = None) -> Path:
    """Append a note to the day's log `memory/YYYY-MM-DD.md` (created with a `# YYYY-MM-DD` heading)."""
    _memory_dir(workspace)
    path = daily_path(workspace, when)
    return append_entry(path, text, header=f"# {path.stem}")


def append_long_term(workspace: str | os.PathLike[str], text: str) -> Path:
    """Append a durable fact, decision or preference to `MEMORY.md`."""
    root = Path(workspace)
    if not root.is_dir():
        raise MdrecallError(f"workspace not found: {root}")
    return append_entry(root / LONG_TERM_FILE, text, header="# Long-term memory")
