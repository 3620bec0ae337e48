"""Query centering: remove part of the model's "empty text" direction from the query vector.

Small contrastive models such as multilingual-e5-small are anisotropic: every passage vector leans the same
way (the mean of an index's vectors has norm ~0.94, so unrelated texts sit at cosine 0.75-0.9). The part of
a query vector along that shared direction adds nearly the same amount to every candidate, except that
"typical", content-poor chunks (routine log lines, filler) get a little more of it and float up. Taking a
share of it out of the query lets the distinctive part of the question decide.

The shared direction is read off the model itself, not off a corpus: the embedding of an empty passage
(cosine 0.89-0.92 to the mean vector of every eval index), computed once per provider and kept. Measured in
bench/quality (README "Query centering"): with e5 at 0.45, the synthetic dated set goes from nDCG@10 .643
(R@5 .71) to .678 (.83), LoCoMo dev and the Python docs stay level; MiniLM loses with it, so its share is 0.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import TYPE_CHECKING, Any

from mdrecall.errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np

    from mdrecall.embeddings.base import EmbeddingProvider

_NULL_VECTORS: weakref.WeakKeyDictionary[Any, np.ndarray | None] = weakref.WeakKeyDictionary()


def centering_weight(provider: EmbeddingProvider | None, configured: float | None) -> float:
    """`query.centering` when set, else the model's calibrated share (0 for models not measured)."""
    if configured is not None:
        return configured
    return float(provider.recommended_centering or 0.0) if provider is not None else 0.0


def null_direction(provider: EmbeddingProvider) -> np.ndarray | None:
    """The unit vector of an empty passage for this provider, once per provider; None when the model gives
    none (a zero vector, or an API that refuses empty input)."""
    import numpy as np

    provider = provider.active  # a fallback wrapper: the model answering now
    try:
        return _NULL_VECTORS[provider]
    except (KeyError, TypeError):
        pass
    try:
        raw = np.asarray(provider.embed_batch([""]), dtype=np.float32).reshape(-1)
    except (EmbeddingError, ValueError):
        raw = np.zeros(0, dtype=np.float32)
    norm = float(np.linalg.norm(raw)) if raw.size else 0.0
    vector = raw / norm if norm > 1e-9 and np.isfinite(norm) else None
    with contextlib.suppress(TypeError):  # a provider that cannot be weakly referenced is asked again next time
        _NULL_VECTORS[provider] = vector
    return vector


def center_query(provider: EmbeddingProvider, vector: np.ndarray, weight: float) -> np.ndarray:
    """The unit query vector with `weight` x the null direction taken out (unchanged at weight 0)."""
    if weight <= 0:
        return vector
    null = null_direction(provider)
    if null is None or null.shape != vector.shape:
        return vector
    shifted = vector - weight * null
    norm = float((shifted @ shifted) ** 0.5)
    return shifted / norm if norm > 1e-9 else vector
