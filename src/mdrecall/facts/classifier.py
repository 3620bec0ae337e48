"""The capture classifier: logistic regression on the sentence vectors the embedding model already computes.

Rules see words; they miss what people mean when it is phrased without the cue words ("Keep commit messages
in the imperative mood", "We are dropping support for Python 3.9", "Marco from the data team owns the
nightly ETL"). A linear model on the statement's embedding catches those. It is trained by
`bench/quality/train_capture.py` on the labelled dev sets in `bench/quality/` and shipped as a small file
next to this module (`capture_<model>.npz`: weights, bias, decision threshold), one per embedding model it
was trained for. A statement is captured when the rules take it or the classifier's probability reaches
the threshold; the rules' rejects (questions, secrets, markup, injected memories, hypotheticals) apply to
both. Models without a shipped file (MiniLM, WordLlama, remote providers) keep the rules alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
# Embedding model name (as providers report it) -> the shipped weight file.
WEIGHT_FILES = {"multilingual-e5-small": "capture_e5.npz"}

Scorer = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class CaptureClassifier:
    model: str
    weights: np.ndarray
    bias: float
    threshold: float

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """P(worth keeping) for unit-normalised sentence vectors (one row each)."""
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim == 1:
            x = x[None, :]
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms > 0, norms, 1.0)
        return 1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias)))

    @classmethod
    def load(cls, path: Path) -> CaptureClassifier:
        with np.load(path, allow_pickle=False) as data:
            return cls(
                model=str(data["model"]),
                weights=np.asarray(data["weights"], dtype=np.float64),
                bias=float(data["bias"]),
                threshold=float(data["threshold"]),
            )


@lru_cache(maxsize=4)
def classifier_for(model: str | None) -> CaptureClassifier | None:
    """The shipped classifier for an embedding model, or None (rules alone)."""
    name = WEIGHT_FILES.get(model or "")
    if name is None or not (HERE / name).is_file():
        return None
    return CaptureClassifier.load(HERE / name)


def scorer_for(provider: Any) -> Scorer | None:
    """texts -> probabilities with the provider's own vectors, when a classifier exists for its model."""
    if provider is None:
        return None
    active = getattr(provider, "active", provider)  # a fallback wrapper: the model answering now
    classifier = classifier_for(getattr(active, "model", None))
    if classifier is None or getattr(provider, "dims", None) not in (None, classifier.weights.shape[0]):
        return None

    def score(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        return classifier.probabilities(np.asarray(provider.embed_batch(list(texts)), dtype=np.float32))

    score.threshold = classifier.threshold  # type: ignore[attr-defined]
    return score
