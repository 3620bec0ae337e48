"""User-only files and folders: what mdrecall creates is 0700 (folders) / 0600 (files) whatever the umask.

Folders and files that already exist keep their mode (a user's own folder is never changed); a file mdrecall
rewrites keeps the mode it had.

A base module like `errors`: imports nothing of mdrecall, so every package (config included) may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def make_private_dirs(path: str | os.PathLike[str]) -> Path:
    """`mkdir -p` where every folder created is 0700 (set explicitly: the umask can only take bits away)."""
    target = Path(path)
    missing: list[Path] = []
    probe = target
    while not os.path.lexists(probe):
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # made by another process meanwhile: its mode is its own
        os.chmod(folder, PRIVATE_DIR_MODE)
    if not target.is_dir():
        raise NotADirectoryError(f"not a directory: {target}")
    return target


def open_private(path: str | os.PathLike[str], flags: int = os.O_RDWR) -> int:
    """Open (creating it 0600 when missing) a file mdrecall owns; never follows a symlink at `path`."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, PRIVATE_FILE_MODE)
    except FileExistsError:
        return os.open(path, flags | _NOFOLLOW | _CLOEXEC)
    os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def create_private(path: str | os.PathLike[str], data: bytes, mode: int = PRIVATE_FILE_MODE) -> None:
    """Write a new file (O_EXCL: never an existing one) with `mode`, fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` through a temp file in its folder (fsync, rename): readers see the old or the
    new content. The new file keeps the mode of the one it replaces; a new file gets `mode` (default 0600)."""
    target = Path(path)
    try:
        keep = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        keep = PRIVATE_FILE_MODE if mode is None else mode
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, keep)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def make_private(path: str | os.PathLike[str]) -> None:
    """Take group/other bits off a regular file mdrecall owns (not a symlink, ours); silent when it is gone."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)


def make_tree_private(root: str | os.PathLike[str]) -> None:
    """Folders 0700 and files without group/other bits below a folder mdrecall owns (e.g. a LanceDB store,
    whose files the library creates with the umask's mode)."""
    for folder, dirs, files in os.walk(root):
        with contextlib.suppress(OSError):
            if stat.S_IMODE(os.lstat(folder).st_mode) != PRIVATE_DIR_MODE:
                os.chmod(folder, PRIVATE_DIR_MODE)
        for name in files:
            make_private(os.path.join(folder, name))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
