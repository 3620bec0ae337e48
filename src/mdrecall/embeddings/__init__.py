"""Embedding providers behind one interface: `base.EmbeddingProvider` (the core plus every optional member with
its default), `base.CoreProvider` (the six members anyone's own provider object needs) and `base.as_provider`,
the one adapter between them."""

from mdrecall.embeddings.base import (
    CoreProvider,
    EmbeddingProvider,
    as_provider,
    fingerprint,
    sanitize_and_normalize,
)
from mdrecall.embeddings.factory import ProviderResult, create_provider

__all__ = [
    "CoreProvider",
    "EmbeddingProvider",
    "ProviderResult",
    "as_provider",
    "create_provider",
    "fingerprint",
    "sanitize_and_normalize",
]
