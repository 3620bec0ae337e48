"""Two offline models read every window side by side (`local.model = "e5+minilm"`).

multilingual-e5-small leads on conversational memory and reads CJK; all-MiniLM-L6-v2 reads English API docs
far better (bench/quality/README.md). Each text's vector is both models' unit vectors, scaled by the square
roots of their weights and concatenated: still unit length, and the cosine of two such vectors is the weighted
sum of the two models' cosines. So the store, the matrix product and the window blend need nothing new.

The first model's query centering (centering.py) is applied to its part inside `embed_query`; the pair itself
reports no centering, so the search does not centre the second model's part too.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from mdrecall.embeddings.base import EmbeddingProvider, fingerprint
from mdrecall.embeddings.centering import center_query


class PairedProvider(EmbeddingProvider):
    """A local provider whose vectors are two models' vectors side by side, weighted."""

    id = "local"
    runtime = "paired"

    def __init__(
        self,
        first: EmbeddingProvider,
        second: EmbeddingProvider,
        first_weight: float,
        recommended_min_score: float | None = None,
    ) -> None:
        if not 0 < first_weight < 1:
            raise ValueError("first_weight must lie strictly between 0 and 1")
        self.first, self.second = first, second
        self.first_weight = first_weight
        self.model = f"{first.model}+{second.model}"
        self.max_seq_length = min(p.max_seq_length or 256 for p in (first, second))
        self.recommended_min_score = recommended_min_score
        self.recommended_centering = 0.0  # the first model's part is centred in embed_query
        self._scales = (math.sqrt(first_weight), math.sqrt(1 - first_weight))

    @property
    def dims(self) -> int | None:
        if self.first.dims is None or self.second.dims is None:
            return None
        return self.first.dims + self.second.dims

    @cached_property
    def provider_key(self) -> str:
        return fingerprint(
            {"pair": [self.first.provider_key, self.second.provider_key], "first_weight": self.first_weight}
        )

    def _side_by_side(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        return np.concatenate([_unit_rows(first) * self._scales[0], _unit_rows(second) * self._scales[1]], axis=-1)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        first = np.asarray(self.first.embed_batch(texts), dtype=np.float32)
        second = np.asarray(self.second.embed_batch(texts), dtype=np.float32)
        return self._side_by_side(first, second).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        first = np.asarray(self.first.embed_query(text), dtype=np.float32)
        weight = float(self.first.recommended_centering or 0.0)
        if weight > 0 and float(np.linalg.norm(first)) > 0:
            first = center_query(self.first, first / np.linalg.norm(first), weight)
        second = np.asarray(self.second.embed_query(text), dtype=np.float32)
        return self._side_by_side(first[None, :], second[None, :])[0].astype(np.float32)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row at length 1 (a zero row stays zero: that side carries no meaning for the text)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
