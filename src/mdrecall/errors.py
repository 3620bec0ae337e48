"""Exceptions that carry a message meant for a user (the CLI prints them without a traceback)."""

from __future__ import annotations


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
