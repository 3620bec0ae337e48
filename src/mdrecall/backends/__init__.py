"""Memory backends behind one protocol: builtin SQLite, the qmd sidecar (with builtin fallback), and more."""

from mdrecall.backends.base import MemoryBackend
from mdrecall.backends.factory import BACKENDS, backend_name, open_backend

__all__ = ["BACKENDS", "MemoryBackend", "backend_name", "open_backend"]
