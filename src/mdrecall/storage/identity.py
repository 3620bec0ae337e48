"""Is this file mdrecall's own index? Checked before any write, swap, backup or cleanup touches it.

mdrecall never writes, replaces or deletes a file it did not create. Its index files carry
`PRAGMA application_id = APPLICATION_ID` (in the SQLite header, so it survives a truncation of the body)
and a meta row; indexes written before the id existed are recognised by their meta row. Anything else at
the index path — another program's SQLite file, a text file, a directory, a symlink (dangling or not) —
is refused with one line naming it, and left byte-identical.

Temp databases of a full reindex are recognised by their exact name (`{db}.tmp-<32 hex>`, plus SQLite's
`-wal`/`-shm`/`-journal` companions) and their content (empty, or SQLite with our id or no id yet).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from mdrecall.errors import ForeignFileError

APPLICATION_ID = 0x6D645263  # "mdRc"
# the meta row that holds the index identity (model, provider, chunking) of a SQLite index
META_KEY = "memory_index_meta_v1"
SQLITE_MAGIC = b"SQLite format 3\0"
WAL_MAGICS = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")
OWN_TABLES = frozenset({"meta", "files", "chunks"})
_TEMP_NAME = re.compile(r"\.tmp-[0-9a-f]{32}(?:-wal|-shm|-journal)?")


def _refuse(path: Path, why: str) -> ForeignFileError:
    return ForeignFileError(
        f"refusing to use {_shown(path)} as the index: {why}; it was left untouched (choose another --db or move it)"
    )


def _shown(path: Path | str) -> str:
    """A path as text that is safe to print (undecodable bytes escaped)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _read_header(path: Path, size: int = 100) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def header_application_id(header: bytes) -> int | None:
    """The application_id of an SQLite header, or None when the bytes are not an SQLite header."""
    if not header.startswith(SQLITE_MAGIC) or len(header) < 72:
        return None
    return int.from_bytes(header[68:72], "big")


def _legacy_tables(path: Path) -> set[str] | None:
    """Table names of an SQLite file without application id (read-only), or None if it cannot be read."""
    import apsw

    try:
        conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error:
        return None
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if names >= OWN_TABLES and not conn.execute("SELECT 1 FROM meta WHERE key = ?", (META_KEY,)).fetchone():
            names.add("(no mdrecall meta row)")
        return names
    except apsw.Error:
        return None
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()


def check_index_path(path: Path) -> None:
    """Raise ForeignFileError unless `path` is absent, empty, or an mdrecall index (any version).

    Never follows a symlink: a link at the index path (or at one of its companion files) is refused,
    so a write can never land outside the directory the user named.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise ForeignFileError(f"cannot use index path {_shown(path)}: {err.strerror or err}") from None
    for suffix in COMPANION_SUFFIXES + (".lock",):
        if os.path.islink(f"{path}{suffix}"):
            raise _refuse(path, f"{_shown(str(path) + suffix)} is a symlink")
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        state = "a dangling symlink" if not os.path.exists(path) else "a symlink"
        raise _refuse(path, f"it is {state} (to {_shown(target)}), which is never followed")
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "it is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "it is not a regular file")
    if st.st_size == 0:
        return
    try:
        header = _read_header(path)
    except OSError as err:
        raise ForeignFileError(f"cannot read index file {_shown(path)}: {err.strerror or err}") from None
    app_id = header_application_id(header)
    if app_id is None:
        raise _refuse(path, "it is not an SQLite database")
    if app_id == APPLICATION_ID:
        return
    if app_id != 0:
        raise _refuse(path, f"it belongs to another program (SQLite application_id {app_id:#x})")
    tables = _legacy_tables(path)
    if tables is None:
        raise _refuse(path, "it is an SQLite database that cannot be read to prove it is mdrecall's")
    if tables and not (tables >= OWN_TABLES and "(no mdrecall meta row)" not in tables):
        shown = ", ".join(sorted(tables)[:5])
        raise _refuse(path, f"it is another program's SQLite database (tables: {shown})")


def is_own_index(path: Path) -> bool:
    """True when check_index_path accepts the file (used before deleting it)."""
    try:
        check_index_path(path)
    except ForeignFileError:
        return False
    return True


def is_own_temp_file(db_path: Path, candidate: Path) -> bool:
    """Is `candidate` a temp file of a full reindex of `db_path` (name and content both say so)?"""
    name = candidate.name
    if not name.startswith(db_path.name) or not _TEMP_NAME.fullmatch(name[len(db_path.name) :]):
        return False
    try:
        st = os.lstat(candidate)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if st.st_size == 0 or name.endswith("-shm"):
        return True
    try:
        header = _read_header(candidate)
    except OSError:
        return False
    if name.endswith("-wal"):
        return header[:4] in WAL_MAGICS
    if name.endswith("-journal"):
        return True  # a rollback journal of our own temp DB (its name is ours; its content is opaque)
    return header_application_id(header) in (0, APPLICATION_ID)


def stale_temp_files(db_path: Path) -> list[Path]:
    """Temp files a killed full reindex of `db_path` left behind (only mdrecall's own)."""
    try:
        names = os.listdir(db_path.parent)
    except OSError:
        return []
    prefix = db_path.name + ".tmp-"
    return [
        db_path.parent / n
        for n in sorted(names)
        if n.startswith(prefix) and is_own_temp_file(db_path, db_path.parent / n)
    ]


def remove_own_db_files(path: Path) -> None:
    """Delete an index file and its companions, only if it is mdrecall's (else ForeignFileError)."""
    path = Path(path)
    check_index_path(path)
    for suffix in ("", *COMPANION_SUFFIXES):
        target = f"{path}{suffix}"
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISREG(os.lstat(target).st_mode):
                os.remove(target)
