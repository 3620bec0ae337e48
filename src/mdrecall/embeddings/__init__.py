"""Embedding providers behind one small interface (see `base.EmbeddingProvider`)."""

from mdrecall.embeddings.base import EmbeddingProvider, fingerprint, sanitize_and_normalize
from mdrecall.embeddings.factory import ProviderResult, create_provider

__all__ = ["EmbeddingProvider", "ProviderResult", "create_provider", "fingerprint", "sanitize_and_normalize"]
