"""mdrecall: persistent, searchable memory for AI agents.

Markdown files are the source of truth; a per-agent index (SQLite FTS5 + vectors, or PostgreSQL) is derived
from them. The public API, as the README's Python example uses it::

    from mdrecall import open_backend, resolve_settings

    settings = resolve_settings(workspace="~/notes")
    with open_backend(settings) as memory:
        memory.sync()
        for result in memory.search("which database did we pick").results:
            print(result.path, result.start_line, result.score)

Names are imported on first use, so `import mdrecall` stays cheap for the hooks that run before every prompt.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "open_backend": "mdrecall.backends.factory",
    "MemoryBackend": "mdrecall.backends.base",
    "resolve_settings": "mdrecall.config.settings",
    "parse_config": "mdrecall.config.settings",
    "Settings": "mdrecall.config.settings",
    "MemoryConfig": "mdrecall.config.settings",
    "SearchResult": "mdrecall.retrieval.results",
    "SearchResponse": "mdrecall.retrieval.results",
    "SyncReport": "mdrecall.indexing.sync",
    "MemoryTools": "mdrecall.agents.tools",
    "MdrecallError": "mdrecall.errors",
    "ConfigError": "mdrecall.errors",
}

__all__ = [
    "ConfigError",
    "MdrecallError",
    "MemoryBackend",
    "MemoryConfig",
    "MemoryTools",
    "SearchResponse",
    "SearchResult",
    "Settings",
    "SyncReport",
    "__version__",
    "open_backend",
    "parse_config",
    "resolve_settings",
]

if TYPE_CHECKING:
    from mdrecall.agents.tools import MemoryTools
    from mdrecall.backends.base import MemoryBackend
    from mdrecall.backends.factory import open_backend
    from mdrecall.config.settings import MemoryConfig, Settings, parse_config, resolve_settings
    from mdrecall.errors import ConfigError, MdrecallError
    from mdrecall.indexing.sync import SyncReport
    from mdrecall.retrieval.results import SearchResponse, SearchResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mdrecall' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
