"""The builtin backend: `MemoryIndex` (SQLite + FTS5 + sqlite-vec) stays in `mdrecall.manager`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..manager import MemoryIndex

if TYPE_CHECKING:
    from ..config import Settings
    from ..embeddings.factory import ProviderResult

BuiltinBackend = MemoryIndex


def open_builtin(settings: Settings, provider_result: ProviderResult | None = None) -> MemoryIndex:
    return MemoryIndex(settings, provider_result)
