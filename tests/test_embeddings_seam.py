"""The provider seam: every provider in mdrecall is an `EmbeddingProvider` carrying every optional member (its
own value or the base's default), and anyone's object with only the six core members still works through the
public API, seen through the one adapter `as_provider`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdrecall import open_backend, parse_config, resolve_settings
from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings.base import OPTIONAL_MEMBERS, EmbeddingProvider, ForeignProvider, as_provider
from mdrecall.embeddings.factory import FallbackProvider, ProviderResult
from mdrecall.embeddings.local import create_local_provider
from mdrecall.embeddings.openai import OpenAIEmbeddingProvider

from .conftest import HashingProvider, write

DEFAULTS = {
    "recommended_min_score": None,
    "recommended_centering": 0.0,
    "similarity_floor": 0.0,
    "max_seq_length": None,
    "fallback_from": None,
    "fallback_reason": None,
    "request_count": 0,
}


class OwnProvider(HashingProvider):
    """A third party's provider: the core members, two optional ones of its own, and an `active` that
    means something else to it (a count of running calls, as a test double elsewhere has)."""

    id = "mine"
    recommended_min_score = 0.2
    active = 0

    def __init__(self) -> None:
        super().__init__(model="mine-64")
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def _settings(tmp_path: Path):
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nThe kestrel project ships in March.\n")
    write(ws, "memory/2026-01-02.md", "Groceries: apples, bread, and coffee beans.\n")
    return resolve_settings(workspace=ws, state_dir=tmp_path / "state", config=parse_config({}))


def test_a_core_only_object_gets_every_default_and_is_read_live() -> None:
    inner = HashingProvider()
    provider = as_provider(inner)
    assert isinstance(provider, ForeignProvider) and isinstance(provider, EmbeddingProvider)
    assert {name: getattr(provider, name) for name in DEFAULTS} == DEFAULTS
    assert provider.active is provider
    assert provider.batch_status() is None and provider.probe() is None and provider.close() is None
    assert (provider.id, provider.model, provider.dims) == ("test-hash", "hash-64", 64)
    inner.model = "hash-64-v2"  # a caller may change its model: the wrapper never holds a stale copy
    assert provider.model == "hash-64-v2" and provider.provider_key == inner.provider_key
    assert np.array_equal(provider.embed_query("kestrel"), inner.embed_query("kestrel"))


def test_mdrecall_providers_and_none_pass_the_door_unchanged() -> None:
    e5 = create_local_provider(LocalConfig(model="e5-small"))
    assert as_provider(e5) is e5 and as_provider(None) is None
    result = ProviderResult(e5, requested="local")
    assert result.provider is e5
    wrapped = ProviderResult(HashingProvider(), requested="test").provider
    assert isinstance(wrapped, ForeignProvider)
    assert as_provider(wrapped) is wrapped  # adapted once, never twice


def test_a_third_party_provider_works_through_the_public_api(tmp_path: Path) -> None:
    own = OwnProvider()
    with open_backend(_settings(tmp_path), ProviderResult(own, requested="mine")) as backend:
        backend.sync()
        provider = backend.provider
        assert provider is not None and provider.active is provider  # its own `active` is not ours
        assert backend.effective_min_score() == (0.2, "model default")  # its own calibration is honoured
        top = backend.search("when does the kestrel project ship").results[0]
        assert top.path == "MEMORY.md"
        status = backend.status(deep=True)
        assert status["provider"] == "mine" and status["model"] == "mine-64"
        assert "fallback" not in status and "batch" not in status
        assert status["probe"]["embeddings"]["ok"] is True and status["probe"]["embeddings"]["dims"] == 64
        assert own.batch_calls >= 1 and own.closed == 0
    assert own.closed == 1  # closing the backend closes the provider it was given


def _instances() -> list[EmbeddingProvider]:
    e5 = create_local_provider(LocalConfig(model="e5-small"))
    remote = OpenAIEmbeddingProvider(base_url="http://127.0.0.1:9/v1", api_key="k")  # nothing is requested

    def unused() -> EmbeddingProvider:
        raise AssertionError("the fallback is not built")

    return [
        e5,
        create_local_provider(LocalConfig(model="minilm")),
        create_local_provider(LocalConfig(model="wordllama")),
        create_local_provider(LocalConfig(model="e5+minilm")),
        remote,
        FallbackProvider(e5, "local", "openai", unused),
        as_provider(HashingProvider()),  # type: ignore[list-item]
    ]


@pytest.mark.parametrize("index", range(7))
def test_every_declared_member_reads_on_every_kind_of_provider(index: int) -> None:
    provider = _instances()[index]
    try:
        for name in OPTIONAL_MEMBERS:
            value = getattr(provider, name)
            if name in ("batch_status", "probe", "close"):
                assert callable(value), name
        assert isinstance(provider.request_count, int) and provider.active.model
        assert provider.recommended_centering >= 0 and 0 <= provider.similarity_floor < 1
        assert provider.max_seq_length is None or provider.max_seq_length >= 128
    finally:
        provider.close()


def test_the_local_models_carry_their_calibration() -> None:
    e5 = create_local_provider(LocalConfig(model="e5-small"))
    minilm = create_local_provider(LocalConfig(model="minilm"))
    assert e5.recommended_centering > 0 and e5.similarity_floor == 0.6 and e5.max_seq_length == 512
    assert minilm.recommended_centering == 0.0 and minilm.similarity_floor == 0.0 and minilm.max_seq_length == 256
    assert FallbackProvider(e5, "local", "openai", lambda: minilm).similarity_floor == 0.6
    # a model with a fallback configured cuts its windows as it does alone
    from mdrecall.indexing.sync import window_plan

    wrapped = FallbackProvider(e5, "local", "openai", lambda: minilm)
    assert wrapped.max_seq_length == 512 and window_plan(wrapped) == window_plan(e5)


class Broken(HashingProvider):
    """A third party's model with one mistake, chosen per test."""

    def __init__(self, mistake: str) -> None:
        super().__init__(model=f"broken-{mistake}")
        self.mistake = mistake

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        vectors = super().embed_batch(texts)
        if self.mistake == "nan":
            vectors[:, 0] = np.nan
        elif self.mistake == "rows":
            vectors = vectors[:-1]
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return super().embed_query(text)[:3] if self.mistake == "query-dims" else super().embed_query(text)


def test_a_third_party_model_s_mistakes_are_named_not_stored(tmp_path: Path) -> None:
    """NaN vectors were stored (as garbage codes, with a numpy RuntimeWarning), a query vector of the wrong width
    was silently dropped, and an object missing a member failed with an AttributeError from inside. Now: the
    adapter names each mistake; the sync keeps the keyword index and reports the provider error."""
    from mdrecall.errors import ConfigError

    settings = _settings(tmp_path)
    for mistake in ("nan", "rows"):
        with open_backend(settings, ProviderResult(Broken(mistake), requested="mine")) as backend:
            report = backend.sync(force=True)
            assert report.provider_error and "broken-" + mistake in report.provider_error, mistake
            assert report.vectors_pending == report.chunks_indexed > 0
            assert backend.search("kestrel").results[0].path == "MEMORY.md"  # the keyword side answers
    with open_backend(settings, ProviderResult(Broken("query-dims"), requested="mine")) as backend:
        backend.sync(force=True)
        response = backend.search("when does the kestrel project ship")
        assert response.results[0].path == "MEMORY.md"
        assert response.notice and "3 numbers" in response.notice

    class NoDims:
        id, model, provider_key = "x", "y", "z"

        def embed_query(self, text: str) -> np.ndarray: ...

    with pytest.raises(ConfigError, match="dims, embed_batch"):
        ProviderResult(NoDims(), requested="mine")  # type: ignore[arg-type]


def test_a_built_in_model_over_an_index_of_another_width_answers_by_keyword_and_says_so(tmp_path: Path) -> None:
    """An index whose vectors have another width than the built-in model's (built by another model under the
    same name) failed the hybrid search with a numpy ValueError and answered a vector search with nothing.
    Now the search answers from the keyword index with a notice naming both widths, as for a provider outage."""
    settings = _settings(tmp_path)
    e5 = create_local_provider(LocalConfig(model="e5-small"))
    with open_backend(settings, ProviderResult(HashingProvider(model=e5.model, dims=64), requested="mine")) as built:
        built.sync(force=True)
    with open_backend(settings, ProviderResult(e5, requested="local")) as backend:
        for mode in ("hybrid", "vector"):
            response = backend.search("kestrel project", mode=mode)
            assert [r.path for r in response.results] == ["MEMORY.md"], mode
            assert response.notice and "vectors of 64 numbers, multilingual-e5-small gives 384" in response.notice
            assert "keyword results only" in response.notice
        backend.sync()  # the next sync rebuilds the index for the model's width: the vector side is back
        response = backend.search("when does the bird project ship", mode="vector")
        assert response.notice is None or "keyword results only" not in response.notice
        assert response.results and response.results[0].path == "MEMORY.md"
