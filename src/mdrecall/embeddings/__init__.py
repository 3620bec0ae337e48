"""Embedding providers behind one small interface (see `base.EmbeddingProvider`)."""

from .base import EmbeddingProvider, fingerprint, sanitize_and_normalize
from .factory import ProviderResult, create_provider

__all__ = ["EmbeddingProvider", "ProviderResult", "create_provider", "fingerprint", "sanitize_and_normalize"]
