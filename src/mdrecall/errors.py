"""Exceptions that carry a message meant for a user (the CLI prints them without a traceback)."""

from __future__ import annotations

import os


class MdrecallError(Exception):
    """Base class: a problem the user can act on."""


class ConfigError(MdrecallError):
    """The configuration file or an option is invalid."""


class WorkspaceError(MdrecallError):
    """The workspace directory is missing or unusable."""


class PathRefusedError(MdrecallError):
    """A path given to read_file/memory_get is outside the memory files."""


class EmbeddingError(MdrecallError):
    """An embedding provider failed (model missing, request failed, bad response)."""


class IndexBusyError(MdrecallError):
    """Another process holds the index lock for longer than we were willing to wait."""


class ForeignFileError(MdrecallError):
    """The index path holds something mdrecall did not create (or a symlink): it is never touched."""


class IndexWriteError(MdrecallError):
    """The index could not be written (disk full, read-only, permissions); what was indexed is kept."""


def describe_os_error(err: BaseException, what: str) -> str:
    """One line for a filesystem or SQLite fault, naming what was being done."""
    import errno

    code = getattr(err, "errno", None)
    text = getattr(err, "strerror", None) or str(err).split("\n")[0]
    filename = getattr(err, "filename", None)
    where = f" ({os.fsencode(filename).decode('utf-8', 'backslashreplace')})" if filename else ""
    hints = {
        errno.ENOSPC: "the disk is full",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENAMETOOLONG: "a file name is longer than the system allows",
        errno.EFBIG: "the file is larger than allowed (file size limit)",
    }
    if code in hints:
        text = hints[code]
    elif type(err).__name__ == "IOError" and "disk I/O error" in text:  # apsw: SQLite could not write
        text = "disk I/O error (is the disk full, or a file size limit reached?)"
    return f"{what}: {text}{where}"
