"""Provider selection: auto order, keys from config and env, create-time and runtime fallback."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fake_embedding_server import FakeEmbeddingServer, Reply, fake_vector, unit
from mdrecall.config.settings import MemoryConfig
from mdrecall.embeddings import factory
from mdrecall.embeddings.base import EmbeddingProvider, as_provider
from mdrecall.embeddings.factory import FallbackProvider, ProviderSwitchedError, create_provider
from mdrecall.embeddings.http import RemoteOptions, RetryPolicy
from mdrecall.errors import EmbeddingError

pytest_plugins = ["fake_embedding_server"]

FAST = RemoteOptions(retry=RetryPolicy(sleep=lambda _s: None))
ENV_KEYS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VOYAGE_API_KEY")


class DummyLocal(EmbeddingProvider):
    """Stands in for the local model (its weights are not part of these tests)."""

    id = "local"
    model = "dummy-local"
    provider_key = "dummy-local-key"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    @property
    def dims(self) -> int:
        return 3

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if self.fail:
            raise EmbeddingError("local model crashed")
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)


@pytest.fixture(autouse=True)
def no_keys_no_local(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(factory, "_local_available", lambda config: False)


def config(**data: Any) -> MemoryConfig:
    return MemoryConfig.model_validate(data)


# -- auto ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"VOYAGE_API_KEY": "v"}, "voyage"),
        ({"GEMINI_API_KEY": "g", "VOYAGE_API_KEY": "v"}, "gemini"),
        ({"GOOGLE_API_KEY": "g", "VOYAGE_API_KEY": "v"}, "gemini"),
        ({"OPENAI_API_KEY": "o", "GEMINI_API_KEY": "g", "VOYAGE_API_KEY": "v"}, "openai"),
        ({"OPENAI_API_KEY": "  ", "VOYAGE_API_KEY": "v"}, "voyage"),  # blank keys do not count
    ],
)
def test_auto_order_by_env_keys(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = create_provider(config())
    assert result.provider is not None and result.provider.id == expected
    assert result.requested == "auto" and result.unavailable_reason is None


def test_auto_prefers_the_local_model_only_when_model_path_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spec's order: local (modelPath set), openai, gemini, voyage; the bundled model comes last."""
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    monkeypatch.setattr(factory, "_local_available", lambda config: True)
    monkeypatch.setattr(factory, "_create_local", lambda config, primary=True: DummyLocal())
    result = create_provider(config(local={"modelPath": "/models/x"}))
    assert result.provider is not None and result.provider.id == "local"
    assert "modelPath" in (result.reason or "")
    result = create_provider(config())
    assert result.provider is not None and result.provider.id == "openai"
    assert "openai" in (result.reason or "")
    monkeypatch.delenv("OPENAI_API_KEY")
    result = create_provider(config())
    assert result.provider is not None and result.provider.id == "local"
    assert "bundled offline model" in (result.reason or "")


def test_auto_skips_a_local_model_that_fails_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    monkeypatch.setattr(factory, "_local_available", lambda config: True)

    def broken(config: MemoryConfig, primary: bool = True) -> DummyLocal:
        raise EmbeddingError("weights corrupt")

    monkeypatch.setattr(factory, "_create_local", broken)
    result = create_provider(config(local={"modelPath": "/models/x"}))
    assert result.provider is not None and result.provider.id == "gemini"


def test_auto_with_nothing_available_is_fts_only_with_a_clear_reason() -> None:
    result = create_provider(config())
    assert result.provider is None
    reason = result.unavailable_reason or ""
    assert "keyword-only" in reason and "no local model" in reason
    assert "OPENAI_API_KEY" in reason and "GEMINI_API_KEY" in reason and "VOYAGE_API_KEY" in reason


def test_auto_uses_config_keys_too() -> None:
    result = create_provider(config(voyage={"apiKey": "from-config"}))
    assert result.provider is not None and result.provider.id == "voyage"
    result = create_provider(config(remote={"apiKey": "remote-key"}))
    assert result.provider is not None and result.provider.id == "openai"


def test_provider_none() -> None:
    result = create_provider(config(provider="none"))
    assert result.provider is None and "keyword-only" in (result.unavailable_reason or "")


# -- explicit providers and create-time fallback ----------------------------------------------------------


def test_missing_key_uses_the_fallback_and_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-secret")
    result = create_provider(config(provider="openai", fallback="gemini"))
    assert result.provider is not None and result.provider.id == "gemini"
    assert result.fallback_from == "openai"
    assert "OPENAI_API_KEY" in (result.fallback_reason or "")


def test_missing_key_without_fallback() -> None:
    result = create_provider(config(provider="voyage"))
    assert result.provider is None and "VOYAGE_API_KEY" in (result.unavailable_reason or "")


def test_missing_key_and_failing_fallback() -> None:
    result = create_provider(config(provider="openai", fallback="voyage"))
    reason = result.unavailable_reason or ""
    assert result.provider is None
    assert "OPENAI_API_KEY" in reason and "fallback failed" in reason and "VOYAGE_API_KEY" in reason


def test_defaults_per_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_KEYS:
        monkeypatch.setenv(name, "k")
    expected = {
        "openai": ("text-embedding-3-small", "https://api.openai.com/v1"),
        "gemini": ("gemini-embedding-001", "https://generativelanguage.googleapis.com/v1beta"),
        "voyage": ("voyage-4-large", "https://api.voyageai.com/v1"),
    }
    for name, (model, base) in expected.items():
        provider: Any = create_provider(config(provider=name)).provider
        assert (provider.model, provider.base_url) == (model, base)
    provider = create_provider(config(provider="openai", model="text-embedding-3-large")).provider
    assert provider.model == "text-embedding-3-large"
    provider = create_provider(config(provider="gemini", gemini={"model": "text-embedding-004"})).provider
    assert provider.model == "text-embedding-004"


def test_remote_wins_over_the_provider_section_and_headers_merge(fake_server: FakeEmbeddingServer) -> None:
    cfg = config(
        provider="openai",
        openai={"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "section-key", "headers": {"X-A": "s", "X-B": "s"}},
        remote={"baseUrl": fake_server.openai_base, "apiKey": "remote-key", "headers": {"X-B": "r"}},
    )
    provider = create_provider(cfg, options=FAST).provider
    assert provider is not None
    provider.embed_query("hello")
    (request,) = fake_server.requests
    assert request.headers["authorization"] == "Bearer remote-key"
    assert request.headers["x-a"] == "s" and request.headers["x-b"] == "r"


def test_section_key_then_env(monkeypatch: pytest.MonkeyPatch, fake_server: FakeEmbeddingServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    # a base URL other than api.openai.com gets the environment's key only when the config names it
    cfg = config(provider="openai", openai={"baseUrl": fake_server.openai_base, "apiKeyEnv": "OPENAI_API_KEY"})
    create_provider(cfg, options=FAST).provider.embed_query("a")  # type: ignore[union-attr]
    cfg = config(provider="openai", openai={"baseUrl": fake_server.openai_base, "apiKey": "section-key"})
    create_provider(cfg, options=FAST).provider.embed_query("b")  # type: ignore[union-attr]
    assert [r.headers["authorization"] for r in fake_server.requests] == ["Bearer env-key", "Bearer section-key"]


def test_openai_compatible_server_needs_no_key(fake_server: FakeEmbeddingServer) -> None:
    cfg = config(provider="openai", model="nomic-embed-text", remote={"baseUrl": fake_server.openai_base})
    result = create_provider(cfg, options=FAST)
    assert result.provider is not None and result.unavailable_reason is None
    np.testing.assert_allclose(result.provider.embed_query("q"), unit(fake_vector("q")), rtol=1e-5)
    assert "authorization" not in fake_server.requests[0].headers


# -- runtime fallback --------------------------------------------------------------------------------------


def failing_openai_with_gemini_fallback(server: FakeEmbeddingServer) -> MemoryConfig:
    return config(
        provider="openai",
        fallback="gemini",
        remote={"baseUrl": server.openai_base, "apiKey": "openai-secret"},
        gemini={"baseUrl": server.gemini_base, "apiKey": "gemini-secret"},
    )


def test_retries_exhausted_then_fallback_takes_over(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", *[Reply(status=500, text="upstream broke")] * 3)
    result = create_provider(failing_openai_with_gemini_fallback(fake_server), options=FAST)
    provider = result.provider
    assert isinstance(provider, FallbackProvider) and provider.id == "openai"
    openai_key = provider.provider_key

    with pytest.raises(ProviderSwitchedError) as info:
        provider.embed_batch(["first"])
    assert info.value.from_provider == "openai" and info.value.to_provider == "gemini"
    assert "openai-secret" not in str(info.value)

    # The identity now describes the fallback, so the index notices it was built by another model.
    assert (provider.id, provider.model) == ("gemini", "gemini-embedding-001")
    assert provider.provider_key != openai_key
    assert provider.fallback_from == "openai" and "HTTP 500" in (provider.fallback_reason or "")
    vectors = provider.embed_batch(["first", "second"])
    np.testing.assert_allclose(vectors[1], unit(fake_vector("second")), rtol=1e-5)
    assert fake_server.count("embeddings") == 3 and fake_server.count("gemini.batchEmbed") == 1
    assert provider.request_count == 4


def test_no_silent_switch_once_the_primary_produced_vectors(fake_server: FakeEmbeddingServer) -> None:
    provider = create_provider(failing_openai_with_gemini_fallback(fake_server), options=FAST).provider
    assert provider is not None
    provider.embed_batch(["ok"])
    fake_server.script("embeddings", *[Reply(status=503)] * 3)
    with pytest.raises(EmbeddingError) as info:
        provider.embed_batch(["later"])
    assert not isinstance(info.value, ProviderSwitchedError)
    assert provider.id == "openai" and fake_server.count("gemini.batchEmbed") == 0


def test_probe_at_creation_switches_before_anything_is_embedded(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", *[Reply(status=429, text="rate limit")] * 3)
    result = create_provider(failing_openai_with_gemini_fallback(fake_server), probe=True, options=FAST)
    assert result.provider is not None and result.provider.id == "gemini"
    assert result.fallback_from == "openai" and "429" in (result.fallback_reason or "")
    np.testing.assert_allclose(result.provider.embed_query("q"), unit(fake_vector("q")), rtol=1e-5)


def test_probe_at_creation_keeps_a_healthy_primary(fake_server: FakeEmbeddingServer) -> None:
    result = create_provider(failing_openai_with_gemini_fallback(fake_server), probe=True, options=FAST)
    assert result.provider is not None and result.provider.id == "openai" and result.fallback_from is None
    fake_server.script("embeddings", *[Reply(status=500)] * 3)
    with pytest.raises(EmbeddingError):
        result.provider.embed_query("q")
    assert result.provider.id == "openai"  # committed by the probe: no switch afterwards


def test_probe_without_fallback_reports_the_error(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", *[Reply(status=401, text="bad key")])
    cfg = config(provider="openai", remote={"baseUrl": fake_server.openai_base, "apiKey": "k"})
    result = create_provider(cfg, probe=True, options=FAST)
    assert result.provider is not None and "HTTP 401" in (result.probe_error or "")


def test_runtime_fallback_that_cannot_be_created(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", *[Reply(status=500)] * 3)
    cfg = config(provider="openai", fallback="voyage", remote={"baseUrl": fake_server.openai_base, "apiKey": "k"})
    provider = create_provider(cfg, options=FAST).provider
    with pytest.raises(EmbeddingError, match="fallback 'voyage' unavailable.*VOYAGE_API_KEY"):
        provider.embed_query("q")  # type: ignore[union-attr]
    assert provider.id == "openai"  # type: ignore[union-attr]


def test_local_primary_failing_falls_back_to_remote_config(
    monkeypatch: pytest.MonkeyPatch, fake_server: FakeEmbeddingServer
) -> None:
    monkeypatch.setattr(factory, "_create_local", lambda config, primary=True: DummyLocal(fail=True))
    cfg = config(provider="local", fallback="openai", remote={"baseUrl": fake_server.openai_base, "apiKey": "r"})
    provider = create_provider(cfg, options=FAST).provider
    with pytest.raises(ProviderSwitchedError):
        provider.embed_query("q")  # type: ignore[union-attr]
    assert provider.id == "openai"  # type: ignore[union-attr]
    provider.embed_query("q")  # type: ignore[union-attr]
    assert fake_server.requests[-1].headers["authorization"] == "Bearer r"


def test_fallback_equal_to_primary_is_not_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    result = create_provider(config(provider="openai", fallback="openai"))
    assert not isinstance(result.provider, FallbackProvider)


def test_a_fallback_wrapper_forwards_the_active_models_similarity_floor() -> None:
    from mdrecall.embeddings.factory import FallbackProvider

    class Primary:
        id, model, dims, provider_key, similarity_floor = "local", "e5", 384, "k", 0.6

    wrapped = FallbackProvider(as_provider(Primary()), "local", "openai", lambda: as_provider(Primary()))  # type: ignore[arg-type]
    assert wrapped.similarity_floor == 0.6
