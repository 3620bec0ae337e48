"""Turn the config's `provider`/`fallback` into a ready provider, or None for keyword-only (fts-only) mode.

`auto` follows the spec's order: the local model when `local.modelPath` is set, then OpenAI, Gemini and
Voyage, for the first whose API key can be resolved; then the bundled offline model as the last resort
before keyword-only. `ProviderResult.reason` says which was picked and why (shown by status).

Fallback happens at two moments:
- creation: the primary cannot be built (no key, no model) → the fallback is built instead and
  `ProviderResult.fallback_from/fallback_reason` say so;
- first use: the primary was built but its first call fails (after retries) → `FallbackProvider` switches
  to the fallback and raises `ProviderSwitchedError`, so the caller re-reads id/model/provider_key before
  storing anything. Once the primary has produced a vector it is never swapped silently: vectors of two
  models must never share one index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mdrecall.config.settings import MemoryConfig
from mdrecall.embeddings.base import EmbeddingProvider, as_provider, check_core_members
from mdrecall.errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np

    from mdrecall.embeddings.http import RemoteOptions

AUTO_REMOTE_ORDER = ("openai", "gemini", "voyage")
_REMOTE_NAMES = frozenset(AUTO_REMOTE_ORDER)


@dataclass
class ProviderResult:
    """The chosen provider (None = fts-only) and how it was chosen, for status output.

    `probe_error` is set when `create_provider(..., probe=True)` found the provider failing and had no
    fallback to switch to. `provider` may be anyone's object with the core members (`CoreProvider`): it is
    seen through `as_provider` from here on, so the rest of mdrecall reads every optional member directly.
    """

    provider: EmbeddingProvider | None  # a bare CoreProvider is accepted too: __post_init__ adapts it
    requested: str
    fallback_from: str | None = None
    fallback_reason: str | None = None
    unavailable_reason: str | None = None
    probe_error: str | None = None
    reason: str | None = None  # why this provider was picked (auto), for status

    def __post_init__(self) -> None:
        if self.provider is not None and not isinstance(self.provider, EmbeddingProvider):
            check_core_members(self.provider)  # a caller's own object: say what it lacks, here
        self.provider = as_provider(self.provider)


# ---------------------------------------------------------------------------------------------------------
# Building one provider
# ---------------------------------------------------------------------------------------------------------


def _create_local(config: MemoryConfig, *, primary: bool = True) -> EmbeddingProvider:
    from mdrecall.embeddings.local import create_local_provider

    # `model` names the primary's model; a local fallback behind a remote primary uses its own default.
    return create_local_provider(config.local, model=config.model if primary else None)


def _local_available(config: MemoryConfig) -> bool:
    from mdrecall.embeddings.local import local_model_available

    return local_model_available(config.local)


def _missing_key_message(name: str) -> str:
    from mdrecall.embeddings.remote import ENV_KEY_NAMES

    env = " or ".join(ENV_KEY_NAMES[name])
    return f"no API key for {name}: set {env}, or apiKey in [{name}] or [remote]"


def create_remote_provider(
    name: str,
    config: MemoryConfig,
    *,
    use_remote: bool = True,
    model: str | None = None,
    options: RemoteOptions | None = None,
) -> EmbeddingProvider:
    """Build an OpenAI/Gemini/Voyage provider from the config.

    `use_remote`: whether `remote.*` (baseUrl, apiKey, headers) applies to this provider. A key is required
    unless a custom base URL is set (local OpenAI-compatible servers such as Ollama need none).
    `options`: a `RemoteOptions` (timeouts, retry policy, concurrency), injectable for tests.
    """
    from mdrecall.embeddings.batch_api import BatchOptions
    from mdrecall.embeddings.remote import resolve_remote_settings

    settings = resolve_remote_settings(name, config, use_remote=use_remote, model=model)
    if not settings.api_key and not settings.base_url:
        raise EmbeddingError(_missing_key_message(name))
    return _remote_class(name)(
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key,
        headers=settings.headers,
        options=options,
        batch=BatchOptions.from_config(config.remote.batch),
    )


def _remote_class(name: str) -> type:
    if name == "openai":
        from mdrecall.embeddings.openai import OpenAIEmbeddingProvider

        return OpenAIEmbeddingProvider
    if name == "gemini":
        from mdrecall.embeddings.gemini import GeminiEmbeddingProvider

        return GeminiEmbeddingProvider
    from mdrecall.embeddings.voyage import VoyageEmbeddingProvider

    return VoyageEmbeddingProvider


def _create_named(
    name: str,
    config: MemoryConfig,
    *,
    primary: bool = True,
    remote_applies: bool = True,
    options: RemoteOptions | None = None,
) -> EmbeddingProvider:
    if name == "local":
        return _create_local(config, primary=primary)
    if name in _REMOTE_NAMES:
        return create_remote_provider(
            name, config, use_remote=remote_applies, model=config.model if primary else None, options=options
        )
    raise EmbeddingError(f"embedding provider '{name}' is not available in this build")


def _has_remote_key(name: str, config: MemoryConfig) -> bool:
    from mdrecall.embeddings.remote import resolve_remote_settings

    return resolve_remote_settings(name, config, use_remote=True, model=None).api_key is not None


# ---------------------------------------------------------------------------------------------------------
# Runtime fallback
# ---------------------------------------------------------------------------------------------------------


class ProviderSwitchedError(EmbeddingError):
    """The primary failed on its first use and the fallback is now active.

    Nothing was embedded by the fallback in this call. Re-read `id`, `model` and `provider_key` (they now
    describe the fallback), treat the index as built by another model (full reindex), and retry.
    """

    def __init__(self, message: str, from_provider: str, to_provider: str) -> None:
        super().__init__(message)
        self.from_provider = from_provider
        self.to_provider = to_provider


class FallbackProvider(EmbeddingProvider):
    """A primary provider with a lazily created fallback, switched at most once, never mid-index.

    The switch happens only while the primary is uncommitted: before it has produced any vector (or
    passed `resolve()`). Later failures propagate as plain EmbeddingErrors, so a transient outage in the
    middle of a sync cannot leave vectors of two models in one index. `id`, `model`, `dims` and
    `provider_key` always describe the active provider.
    """

    def __init__(
        self,
        primary: EmbeddingProvider,
        primary_name: str,
        fallback_name: str,
        fallback_factory: Callable[[], EmbeddingProvider],
    ) -> None:
        self._primary = primary
        self._active = primary
        self._fallback: EmbeddingProvider | None = None
        self.primary_name = primary_name
        self.fallback_name = fallback_name
        self._factory = fallback_factory
        self._committed = False
        self.fallback_from: str | None = None
        self.fallback_reason: str | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"FallbackProvider(active={self._active!r}, fallback={self.fallback_name!r})"

    # -- identity: always the active provider ----------------------------------------------------------

    @property
    def id(self) -> str:  # type: ignore[override]
        return self._active.id

    @property
    def model(self) -> str:  # type: ignore[override]
        return self._active.model

    @property
    def dims(self) -> int | None:
        return self._active.dims

    @property
    def provider_key(self) -> str:
        return self._active.provider_key

    @property
    def active(self) -> EmbeddingProvider:
        return self._active

    # -- the active model's calibration (read by MemoryIndex.effective_min_score and centering.py) ----------

    @property
    def recommended_min_score(self) -> float | None:  # type: ignore[override]
        return self._active.recommended_min_score

    @property
    def max_seq_length(self) -> int | None:  # type: ignore[override]
        """The answering model's input length: the windows are cut for it (512 tokens for e5, not 256)."""
        return self._active.max_seq_length

    @property
    def recommended_centering(self) -> float:  # type: ignore[override]
        return float(self._active.recommended_centering or 0.0)

    @property
    def similarity_floor(self) -> float:  # type: ignore[override]
        """The active model's unrelated-text cosine (the fact store's duplicate check rescales from it)."""
        return float(self._active.similarity_floor or 0.0)

    @property
    def switched(self) -> bool:
        return self._active is not self._primary

    # -- embedding -------------------------------------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray:
        return self._call(lambda provider: provider.embed_query(text))

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._call(lambda provider: provider.embed_batch(texts))

    def _call(self, fn: Callable[[EmbeddingProvider], np.ndarray]) -> np.ndarray:
        provider = self._active
        try:
            result = fn(provider)
        except EmbeddingError as err:
            if provider is not self._primary or self._committed:
                raise
            self._switch(str(err))
            raise ProviderSwitchedError(
                f"{self.primary_name} embeddings failed ({err}); switched to fallback "
                f"'{self.fallback_name}': reindex with the new provider and retry",
                self.primary_name,
                self.fallback_name,
            ) from None
        self._committed = True
        return result

    def resolve(self) -> bool:
        """Probe the primary now, before identity is read; switch quietly if it fails. True = switched.

        For callers that prefer to settle the provider up front (e.g. when creating it for indexing);
        costs one small request for remote primaries.
        """
        with self._lock:
            if self._committed or self.switched:
                return self.switched
            outcome = _probe(self._primary, retries=True)
            if outcome["ok"]:
                self._committed = True
                return False
            self._switch(outcome["error"] or "probe failed")
            return True

    def switch_to_fallback(self, reason: str) -> EmbeddingProvider:
        """Explicit switch for a caller that decided to rebuild its index with the fallback."""
        with self._lock:
            if not self.switched:
                self._switch(reason)
            return self._active

    def _switch(self, reason: str) -> None:
        with self._lock:
            if self.switched:
                return
            try:
                fallback = self._factory()
            except EmbeddingError as err:
                raise EmbeddingError(
                    f"{self.primary_name} embeddings failed ({reason}); fallback '{self.fallback_name}' "
                    f"unavailable: {err}"
                ) from None
            self._fallback = fallback
            self._active = fallback
            self._committed = False
            self.fallback_from = self.primary_name
            self.fallback_reason = reason

    # -- status ----------------------------------------------------------------------------------------

    def probe(self, *, retries: bool = False) -> dict[str, Any]:
        return _probe(self._active, retries=retries)

    def batch_status(self) -> dict[str, Any] | None:
        return self._active.batch_status()

    @property
    def request_count(self) -> int:
        """HTTP requests made by the primary and the fallback together."""
        return sum(p.request_count for p in (self._primary, self._fallback) if p is not None)

    def close(self) -> None:
        for provider in (self._primary, self._fallback):
            if provider is not None:
                provider.close()


def _probe(provider: EmbeddingProvider, *, retries: bool) -> dict[str, Any]:
    """The provider's own `probe()` when it has a cheap one (remote), else a tiny `embed_query` (local)."""
    outcome = provider.probe(retries=retries)
    if outcome is not None:
        return outcome
    try:
        vector = provider.embed_query("ping")
    except EmbeddingError as err:
        return {"ok": False, "error": str(err), "dims": provider.dims}
    return {"ok": True, "error": None, "dims": int(vector.shape[0])}


# ---------------------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------------------

_NOTHING_AVAILABLE = (
    "no embedding provider available: no local model installed and no API key found "
    "(set OPENAI_API_KEY, GEMINI_API_KEY/GOOGLE_API_KEY or VOYAGE_API_KEY, or configure local.modelPath); "
    "using keyword-only search"
)


def _auto_select(
    config: MemoryConfig, options: RemoteOptions | None
) -> tuple[EmbeddingProvider | None, str | None, list[str], str | None]:
    """First usable of local (modelPath set) → openai → gemini → voyage (key found) → bundled offline model.

    Returns (provider, name, problems met on the way, why this one).
    """
    problems: list[str] = []
    if config.local.model_path:
        try:
            return _create_local(config), "local", problems, "local.modelPath is set"
        except EmbeddingError as err:
            problems.append(f"local model at {config.local.model_path} failed to load: {err}")
    for name in AUTO_REMOTE_ORDER:
        if not _has_remote_key(name, config):
            continue
        try:
            return _create_named(name, config, options=options), name, problems, f"an API key for {name} was found"
        except EmbeddingError as err:
            problems.append(f"{name}: {err}")
    if not config.local.model_path and _local_available(config):
        try:
            why = "no local.modelPath and no API key found: the bundled offline model"
            return _create_local(config), "local", problems, why
        except EmbeddingError as err:
            problems.append(f"bundled offline model failed to load: {err}")
    return None, None, problems, None


def _wrap_fallback(
    provider: EmbeddingProvider, name: str, config: MemoryConfig, options: RemoteOptions | None
) -> EmbeddingProvider:
    fallback = config.fallback
    if fallback == "none" or fallback == name:
        return provider
    remote_applies = name == "local"  # `remote.*` belongs to the first remote provider of the chain

    def factory() -> EmbeddingProvider:
        return _create_named(fallback, config, primary=False, remote_applies=remote_applies, options=options)

    return FallbackProvider(provider, name, fallback, factory)


def _finish(result: ProviderResult, probe: bool) -> ProviderResult:
    """Optionally settle the provider with a probe, recording a switch or a failure in the result."""
    provider = result.provider
    if not probe or provider is None:
        return result
    if isinstance(provider, FallbackProvider):
        if provider.resolve():
            result.fallback_from = provider.fallback_from
            result.fallback_reason = provider.fallback_reason
        return result
    outcome = _probe(provider, retries=True)
    if not outcome["ok"]:
        result.probe_error = outcome["error"]
    return result


def create_provider(
    config: MemoryConfig, *, probe: bool = False, options: RemoteOptions | None = None
) -> ProviderResult:
    """Resolve the configured provider; on failure try the fallback; never raise for 'nothing available'.

    `probe=True` embeds a tiny text right away (for indexing and `status --deep`), so a failing primary
    is replaced by the fallback before anything reads its identity. `options` is a `RemoteOptions`
    (timeouts, retries, concurrency) for remote providers; tests use it to run fast.
    """
    requested = config.provider
    if requested == "none":
        return ProviderResult(
            None, requested, unavailable_reason="provider = none (keyword-only search)", reason="provider = none"
        )
    if requested == "auto":
        return _finish(_create_auto(config, options), probe)
    try:
        primary = _create_named(requested, config, options=options)
    except EmbeddingError as err:
        return _finish(_create_fallback(config, requested, str(err), options), probe)
    chosen = ProviderResult(
        _wrap_fallback(primary, requested, config, options), requested, reason=f"provider = {requested}"
    )
    return _finish(chosen, probe)


def _create_auto(config: MemoryConfig, options: RemoteOptions | None) -> ProviderResult:
    provider, name, problems, why = _auto_select(config, options)
    if provider is not None and name is not None:
        if problems:
            why = f"{why} (skipped: {'; '.join(problems)})"
        return ProviderResult(_wrap_fallback(provider, name, config, options), "auto", reason=why)
    reason = _NOTHING_AVAILABLE + (f" ({'; '.join(problems)})" if problems else "")
    if config.fallback == "none":
        return ProviderResult(None, "auto", unavailable_reason=reason)
    result = _create_fallback(config, "auto", reason, options)
    if result.provider is None:
        result.unavailable_reason = reason
    return result


def _create_fallback(
    config: MemoryConfig, requested: str, reason: str, options: RemoteOptions | None
) -> ProviderResult:
    """The primary could not be built: build the fallback instead (or report both failures)."""
    fallback = config.fallback
    if fallback == "none" or fallback == requested:
        return ProviderResult(None, requested, unavailable_reason=reason)
    remote_applies = requested in ("local", "auto")
    try:
        provider = _create_named(fallback, config, primary=False, remote_applies=remote_applies, options=options)
    except EmbeddingError as err2:
        return ProviderResult(None, requested, unavailable_reason=f"{reason}; fallback failed: {err2}")
    return ProviderResult(provider, requested, fallback_from=requested, fallback_reason=reason)
