"""Pick the backend named by the config (`backend = "builtin" | "qmd"`, more registered in BACKENDS)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mdrecall.errors import ConfigError

if TYPE_CHECKING:
    from mdrecall.backends.base import MemoryBackend
    from mdrecall.config.settings import Settings
    from mdrecall.embeddings.factory import ProviderResult

# name -> "module:callable(settings, provider_result) -> MemoryBackend"; imported lazily so an optional
# backend's dependencies (qmd needs nothing, a server database needs its driver) load only when chosen.
BACKENDS: dict[str, str] = {
    "builtin": "mdrecall.backends.builtin:open_builtin",
    "qmd": "mdrecall.backends.fallback:open_qmd",
    "postgres": "mdrecall.backends.postgres:open_postgres",
}


def backend_name(settings: Settings) -> str:
    name = str(settings.config.backend or "builtin")
    if name == "builtin" and settings.config.store.driver == "postgres":
        return "postgres"  # `store.driver = "postgres"` (or `store.backend`) names the team backend too
    return name


def _opener(name: str) -> Callable[..., Any]:
    target = BACKENDS.get(name)
    if target is None:
        raise ConfigError(f"unknown memory backend {name!r}; use one of: {', '.join(sorted(BACKENDS))}")
    module_name, attr = target.split(":")
    return getattr(importlib.import_module(module_name), attr)


def open_backend(settings: Settings, provider_result: ProviderResult | None = None) -> MemoryBackend:
    """The backend for these settings; callers use only the `MemoryBackend` protocol on it."""
    return _opener(backend_name(settings))(settings, provider_result)
