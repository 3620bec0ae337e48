"""The one small interface every embedding provider implements, and the vector hygiene they share.

A provider turns text into L2-normalised float32 vectors. The index never cares where they come from:
it asks for `embed_query` at search time and `embed_batch` at index time, and keys its embedding cache by
(`id`, `model`, `provider_key`, text hash).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the index needs from an embedding backend.

    - `id`: provider family ("local", "openai", "gemini", "voyage", ...), stored in the index meta.
    - `model`: model name as stored in chunk rows and meta; changing it forces a full reindex.
    - `dims`: vector width, or None until the first embedding is produced (remote providers).
    - `provider_key`: fingerprint of everything that changes the vectors besides id/model (base URL,
      non-auth header names, local weights path). Never contains secrets.
    - `embed_query(text)`: one query vector, shape (dims,).
    - `embed_batch(texts)`: any number of document vectors, shape (len(texts), dims). The provider is
      responsible for splitting the work into requests (token-bounded batches, concurrency, retries).
    """

    id: str
    model: str

    @property
    def dims(self) -> int | None: ...

    @property
    def provider_key(self) -> str: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_batch(self, texts: list[str]) -> np.ndarray: ...


def sanitize_and_normalize(vectors: np.ndarray | list) -> np.ndarray:
    """Replace non-finite values by 0 and L2-normalise each row (rows with ~0 norm are left as they are).

    Works on one vector (1-D) or a matrix (2-D); always returns float32.
    """
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    arr = np.where(np.isfinite(arr), arr, 0.0).astype(np.float32)
    if arr.ndim == 1:
        norm = float(np.linalg.norm(arr))
        return arr if norm < 1e-10 else (arr / norm).astype(np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    safe = np.where(norms < 1e-10, 1.0, norms)
    return (arr / safe).astype(np.float32)


def fingerprint(payload: dict) -> str:
    """SHA-256 of a canonical JSON rendering: stable across runs and dict orderings."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
