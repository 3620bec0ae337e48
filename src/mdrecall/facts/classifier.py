"""The capture classifier: logistic regression on the sentence vectors the embedding model already computes.

Rules see words; they miss what people mean when it is phrased without the cue words ("Keep commit messages
in the imperative mood", "We are dropping support for Python 3.9", "Marco from the data team owns the
nightly ETL"). A linear model on the statement's embedding catches those. It is trained by
`bench/quality/train_capture.py` on the labelled dev sets in `bench/quality/` and shipped as a small file
next to this module (`capture_<model>.npz`: weights, bias, decision threshold, and one-vs-rest heads for
the category of what it catches), one per embedding model it was trained for. Beside the vector it reads a
few text features (`rules.text_features`): deixis that marks a one-off request about the work at hand ("in
this branch", "now", "today"), standing-rule markers ("always", "every"), a task verb first ("Run the
migrations ..."), someone's own world ("we", "my"), what an assistant produces ("answers", "commit messages"),
a passing guess ("I think ..."), general knowledge ("Rust was first released in 2015"), a one-off scope ("just
for this answer", "in this PR"), a status line ("the build is running"), "Prefer X over Y", how to address the
user ("tutoie-moi"), someone's role ("... is the frontend lead"), a dated plan ("shut down at the end of the
year"), someone's own setup ("I work on Fedora with Emacs", "Our Postgres is stuck on 12") and public products
or people named without anyone's own world ("Linus Torvalds leads ..."). A statement
is captured
when the rules take it or the classifier's probability reaches the threshold (the classifier alone never
on a temporary state, a verdict on the work at hand, a counted request, a one-off scope, a question about
what is remembered, someone's one-off act in the past, general knowledge about a health condition, an event
moved to tomorrow or public knowledge: `rules.passing`); the rules' rejects
(questions, secrets, markup, injected memories, hypotheticals) apply to both. Models without a shipped
file (MiniLM, WordLlama, remote providers) keep the rules alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mdrecall.facts.rules import Scorer, text_features

if TYPE_CHECKING:
    from mdrecall.embeddings.base import EmbeddingProvider

HERE = Path(__file__).resolve().parent
# Embedding model name (as providers report it) -> the shipped weight file.
WEIGHT_FILES = {"multilingual-e5-small": "capture_e5.npz"}


@dataclass(frozen=True)
class CaptureClassifier:
    model: str
    weights: np.ndarray
    bias: float
    threshold: float
    # one-vs-rest category heads (rows), trained on the dev sets' positives; empty when absent
    categories: tuple[str, ...] = ()
    category_weights: np.ndarray | None = None
    category_bias: np.ndarray | None = None
    # names of the text features appended to the vector (rules.text_features); their weights end `weights`
    features: tuple[str, ...] = ()

    @property
    def dims(self) -> int:
        """The vector size this classifier was trained on."""
        return self.weights.shape[0] - len(self.features)

    def probabilities(self, vectors: np.ndarray, texts: list[str] | None = None) -> np.ndarray:
        """P(worth keeping) for sentence vectors (one row each) and, when it uses text features, their texts."""
        x = _rows(vectors)
        if self.features:
            if texts is None or len(texts) != len(x):
                raise ValueError("this capture classifier needs the statements' texts beside their vectors")
            x = np.hstack([x, np.array([text_features(t, self.features) for t in texts], dtype=np.float64)])
        return 1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias)))

    def category_of(self, vectors: np.ndarray) -> list[str | None]:
        """The most likely category of each statement (None without category heads)."""
        x = _rows(vectors)
        if self.category_weights is None or not self.categories:
            return [None] * len(x)
        best = np.argmax(x @ self.category_weights.T + self.category_bias, axis=1)
        return [self.categories[i] for i in best]

    @classmethod
    def load(cls, path: Path) -> CaptureClassifier:
        with np.load(path, allow_pickle=False) as data:
            heads = "category_weights" in data.files
            features = str(data["features"]) if "features" in data.files else ""
            return cls(
                model=str(data["model"]),
                weights=np.asarray(data["weights"], dtype=np.float64),
                bias=float(data["bias"]),
                threshold=float(data["threshold"]),
                categories=tuple(str(data["categories"]).split(",")) if heads else (),
                category_weights=np.asarray(data["category_weights"], dtype=np.float64) if heads else None,
                category_bias=np.asarray(data["category_bias"], dtype=np.float64) if heads else None,
                features=tuple(features.split(",")) if features else (),
            )


def _rows(vectors: np.ndarray) -> np.ndarray:
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


@lru_cache(maxsize=4)
def classifier_for(model: str | None) -> CaptureClassifier | None:
    """The shipped classifier for an embedding model, or None (rules alone)."""
    name = WEIGHT_FILES.get(model or "")
    if name is None or not (HERE / name).is_file():
        return None
    return CaptureClassifier.load(HERE / name)


def scorer_for(provider: EmbeddingProvider | None) -> Scorer | None:
    """texts -> probabilities with the provider's own vectors, when a classifier exists for its model."""
    if provider is None:
        return None
    classifier = classifier_for(provider.active.model)  # a fallback wrapper: the model answering now
    if classifier is None or provider.dims not in (None, classifier.dims):
        return None

    return ClassifierScorer(provider, classifier)


@dataclass(frozen=True)
class ClassifierScorer:
    """The capture classifier on one provider's vectors, as `rules.extract_rules` asks for it (a `Scorer`)."""

    provider: EmbeddingProvider
    classifier: CaptureClassifier

    @property
    def threshold(self) -> float:
        return self.classifier.threshold

    def __call__(self, texts: list[str]) -> list[tuple[float, str | None]]:
        if not texts:
            return []
        vectors = np.asarray(self.provider.embed_batch(list(texts)), dtype=np.float32)
        probabilities = self.classifier.probabilities(vectors, list(texts)).tolist()
        return list(zip(probabilities, self.classifier.category_of(vectors), strict=True))
