"""Turn the config's `provider`/`fallback` into a ready provider, or None for keyword-only (fts-only) mode.

`auto` prefers the local model when its weights are on disk, then remote providers whose API key can be
resolved. When nothing is available the index still works, keyword-only, and status says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import MemoryConfig
from ..errors import EmbeddingError
from .base import EmbeddingProvider


@dataclass
class ProviderResult:
    """The chosen provider (None = fts-only) and how it was chosen, for status output."""

    provider: EmbeddingProvider | None
    requested: str
    fallback_from: str | None = None
    fallback_reason: str | None = None
    unavailable_reason: str | None = None


def _create_local(config: MemoryConfig) -> EmbeddingProvider:
    from .local import create_local_provider

    return create_local_provider(config.local, model=config.model)


def _local_available(config: MemoryConfig) -> bool:
    from .local import local_model_available

    return local_model_available(config.local)


def _create_named(name: str, config: MemoryConfig) -> EmbeddingProvider:
    if name == "local":
        return _create_local(config)
    raise EmbeddingError(f"embedding provider '{name}' is not available in this build")


def create_provider(config: MemoryConfig) -> ProviderResult:
    """Resolve the configured provider; on failure try the fallback; never raise for 'nothing available'."""
    requested = config.provider
    if requested == "none":
        return ProviderResult(None, requested, unavailable_reason="provider = none (keyword-only search)")
    if requested == "auto":
        if _local_available(config):
            try:
                return ProviderResult(_create_local(config), requested)
            except EmbeddingError as err:
                return ProviderResult(None, requested, unavailable_reason=f"local model failed to load: {err}")
        return ProviderResult(
            None,
            requested,
            unavailable_reason="no local model installed and no API key found (keyword-only search)",
        )
    try:
        return ProviderResult(_create_named(requested, config), requested)
    except EmbeddingError as err:
        if config.fallback != "none" and config.fallback != requested:
            try:
                provider = _create_named(config.fallback, config)
                return ProviderResult(provider, requested, fallback_from=requested, fallback_reason=str(err))
            except EmbeddingError as err2:
                return ProviderResult(None, requested, unavailable_reason=f"{err}; fallback failed: {err2}")
        return ProviderResult(None, requested, unavailable_reason=str(err))
