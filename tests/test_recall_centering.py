"""Recall: query centering takes part of the model's "empty text" direction out of the query vector, so a
content-poor chunk that leans the way every vector leans no longer outranks the chunk that answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings.base import EmbeddingProvider, as_provider, fingerprint, sanitize_and_normalize
from mdrecall.embeddings.centering import center_query, centering_weight, null_direction
from mdrecall.embeddings.local import RECOMMENDED_CENTERING, create_local_provider
from mdrecall.errors import EmbeddingError
from mdrecall.retrieval.search import run_search

from .conftest import HashingProvider, write

NULL = np.array([1.0, 0.0, 0.0], dtype=np.float32)


class LeaningProvider(EmbeddingProvider):
    """3-d vectors that all lean along x, as a small contrastive model's do: the empty passage is x itself,
    a filler line sits close to it, the answer has its own direction. Counts the empty-text calls."""

    id = "test-leaning"
    model = "leaning-3"
    dims = 3

    def __init__(self, centering: float = 0.45, fail_on_empty: bool = False) -> None:
        self.recommended_centering = centering
        self.fail_on_empty = fail_on_empty
        self.empty_calls = 0

    @property
    def provider_key(self) -> str:
        return fingerprint({"provider": self.id})

    def _vector(self, text: str) -> np.ndarray:
        if not text.strip():
            return NULL.copy()
        if "filler" in text:
            return sanitize_and_normalize(np.array([0.97, 0.24, 0.0]))
        if "answer" in text:
            return sanitize_and_normalize(np.array([0.6, 0.0, 0.8]))
        return sanitize_and_normalize(np.array([0.85, 0.35, 0.39]))  # the question

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if any(not t.strip() for t in texts):
            self.empty_calls += 1
            if self.fail_on_empty:
                raise EmbeddingError("input must not be empty")
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, 3), dtype=np.float32)


def _top_path(index, provider, centering: float | None) -> str:
    cfg = index.config.query.model_copy(update={"centering": centering})
    query = "what did we decide"
    response = run_search(index.store, provider, provider.model, cfg, query, ["memory"], 2, 0.0, "vector")
    return response.results[0].path


def test_centering_lets_the_answer_outrank_the_filler(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/filler.md", "routine filler, nothing happened\n")
    write(ws, "memory/answer.md", "the answer: we moved CI to the new runners\n")
    provider = LeaningProvider()
    index = make_index(ws, provider)
    index.sync()
    assert _top_path(index, provider, 0.0) == "memory/filler.md"  # the spec's plain query vector
    assert _top_path(index, provider, None) == "memory/answer.md"  # the model's share (0.45) by default
    assert _top_path(index, provider, 0.3) == "memory/answer.md"  # an explicit query.centering wins
    _top_path(index, provider, None)
    assert provider.empty_calls == 1  # the empty-text direction is computed once per provider


def test_center_query_removes_a_share_of_the_null_direction() -> None:
    provider = LeaningProvider()
    query = sanitize_and_normalize(np.array([0.85, 0.35, 0.39]))
    assert center_query(provider, query, 0.0) is query
    centered = center_query(provider, query, 0.45)
    assert abs(float(np.linalg.norm(centered)) - 1.0) < 1e-6
    assert float(centered @ NULL) < float(query @ NULL) - 0.1
    # the other directions keep their proportions
    assert abs(centered[1] / centered[2] - query[1] / query[2]) < 1e-5


def test_a_provider_without_an_empty_text_vector_leaves_the_query_alone() -> None:
    refusing = LeaningProvider(fail_on_empty=True)  # remote APIs reject empty input
    query = sanitize_and_normalize(np.array([0.85, 0.35, 0.39]))
    assert null_direction(refusing) is None
    assert np.array_equal(center_query(refusing, query, 0.45), query)
    assert centering_weight(refusing, None) == 0.45 and centering_weight(refusing, 0.0) == 0.0
    assert centering_weight(as_provider(HashingProvider()), None) == 0.0  # a model nobody measured: not centred


@pytest.fixture(scope="module")
def e5():
    return create_local_provider(LocalConfig(model="e5-small"))


def test_e5_is_centred_by_default_and_its_empty_passage_is_where_its_vectors_lean(e5) -> None:
    assert e5.recommended_centering == RECOMMENDED_CENTERING[e5.model] > 0
    texts = [
        "Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
        "The orders service database was migrated from MySQL to PostgreSQL 16.",
        "functools.lru_cache wraps a function with a memoizing callable.",
        "Melanie: We went camping at the beach with the kids last weekend!",
        "Guests connect to the office wifi with the password on the whiteboard.",
        "CI moved from Jenkins to GitHub Actions; the Jenkinsfile was deleted.",
    ]
    mean = np.asarray(e5.embed_batch(texts)).mean(axis=0)
    null = null_direction(e5)
    assert null is not None
    assert float(null @ mean) / float(np.linalg.norm(mean)) > 0.8  # the shared lean of unrelated texts
    query = np.asarray(e5.embed_query("which CI system runs the pipeline"))
    centered = center_query(e5, query, e5.recommended_centering)
    vectors = np.asarray(e5.embed_batch(texts))
    # the spread between the right passage and the rest widens once the shared lean is out
    plain, moved = vectors @ query, vectors @ centered
    assert int(np.argmax(moved)) == 5 and (moved[5] - np.median(moved)) > (plain[5] - np.median(plain))


def test_a_fallback_wrapper_passes_on_its_active_models_calibration(e5) -> None:
    from mdrecall.embeddings.factory import FallbackProvider

    def unavailable() -> LeaningProvider:
        raise AssertionError("the fallback is not needed")

    wrapped = FallbackProvider(e5, "local", "openai", unavailable)
    assert wrapped.recommended_centering == e5.recommended_centering > 0
    assert wrapped.recommended_min_score == e5.recommended_min_score
    null = null_direction(wrapped)
    assert null is not None and np.array_equal(null, null_direction(e5))  # one cache entry, the active model's
