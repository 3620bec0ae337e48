"""What the HTTP embedding providers (OpenAI, Gemini, Voyage, OpenAI-compatible) share.

One place owns the hard parts so each provider file stays a thin wire-format adapter:

- key and endpoint resolution from the config (`remote.*` wins over the provider's section, then env vars);
- an `httpx.Client` wrapper that counts requests, retries with exponential backoff and jitter on
  transient failures, and redacts secrets from every error message;
- token-bounded batching (8000 tokens, 1 char ≈ 1 token) run on a small thread pool;
- response validation (count, dimensions, malformed JSON) and vector hygiene (`sanitize_and_normalize`);
- the provider key fingerprint, which never sees auth headers or API keys.

The codebase is synchronous, so concurrency is a thread pool over blocking `httpx.Client` calls.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdrecall.embeddings.base import EmbeddingProvider, fingerprint, sanitize_and_normalize
from mdrecall.embeddings.batch_api import BatchController, BatchOptions
from mdrecall.embeddings.http import (  # noqa: F401  (re-exported: providers and tests import them from here)
    BATCH_MAX_TOKENS,
    BATCH_TIMEOUT_S,
    INDEX_CONCURRENCY,
    QUERY_TIMEOUT_S,
    REDACTED,
    RETRY_BASE_DELAY_S,
    RETRY_MAX_ATTEMPTS,
    RETRY_MAX_DELAY_S,
    EmbeddingHttp,
    Redactor,
    RemoteHttpError,
    RemoteOptions,
    RetryPolicy,
    is_retryable,
    parse_json,
    run_concurrently,
    same_api_host,
    snippet,
)
from mdrecall.errors import EmbeddingError

logger = logging.getLogger("mdrecall.embeddings")

APPROX_CHARS_PER_TOKEN = 1

REMOTE_PROVIDER_IDS = ("openai", "gemini", "voyage")
AUTH_HEADER_NAMES = frozenset({"authorization", "x-goog-api-key", "api-key", "x-api-key"})
# The APIs the providers' environment variables are made for: those keys are sent to these hosts only
# (another baseUrl gets a key from `apiKey`, or from the variable named by `apiKeyEnv`).
HOME_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
    "voyage": "https://api.voyageai.com/v1",
}
ENV_KEY_NAMES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "voyage": ("VOYAGE_API_KEY",),
}


# ---------------------------------------------------------------------------------------------------------
# Tunables (injectable so tests run in milliseconds)
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Secrets: resolution and redaction
# ---------------------------------------------------------------------------------------------------------


def is_auth_header(name: str) -> bool:
    """Headers that carry credentials: never fingerprinted, never shown."""
    return name.strip().lower() in AUTH_HEADER_NAMES


def _clean(value: str | None) -> str | None:
    return value.strip() if value and value.strip() else None


def env_api_key(provider_id: str) -> str | None:
    """The first non-empty environment variable for this provider (Gemini also accepts GOOGLE_API_KEY)."""
    for name in ENV_KEY_NAMES.get(provider_id, ()):
        value = _clean(os.environ.get(name))
        if value:
            return value
    return None


@dataclass(frozen=True)
class RemoteSettings:
    """Where and how to call one remote provider, resolved from the config. Holds the key: never log it."""

    provider_id: str
    base_url: str | None
    api_key: str | None
    headers: dict[str, str]
    model: str | None

    def __repr__(self) -> str:  # keep the key out of reprs, tracebacks and debug logs
        return (
            f"RemoteSettings(provider_id={self.provider_id!r}, base_url={self.base_url!r}, "
            f"api_key={'set' if self.api_key else None}, headers={sorted(self.headers)!r}, model={self.model!r})"
        )


def resolve_remote_settings(provider_id: str, config: Any, *, use_remote: bool, model: str | None) -> RemoteSettings:
    """Merge `remote.*` (when it applies to this provider), the provider's section and the environment.

    Precedence: `remote.apiKey` > `[provider].apiKey` > the variable named by `remote.apiKeyEnv` /
    `[provider].apiKeyEnv` > the provider's own variable, which is used only when the base URL is the
    provider's own API (HOME_URLS); `remote.baseUrl` > `[provider].baseUrl`;
    headers are the section's merged with `remote.headers` (remote wins on a conflict);
    model: the explicit `model` > `[provider].model` > the provider default (left to the class).
    """
    section = getattr(config, provider_id)
    remote = config.remote if use_remote else None
    base_url = (_clean(remote.base_url) if remote else None) or _clean(section.base_url)
    named_env = (remote.api_key_env if remote else None) or section.api_key_env
    api_key = (_clean(remote.api_key) if remote else None) or _clean(section.api_key)
    if api_key is None and named_env:
        api_key = _clean(os.environ.get(named_env))
    elif api_key is None and same_api_host(base_url, HOME_URLS[provider_id]):
        api_key = env_api_key(provider_id)
    headers = {**section.headers, **(remote.headers if remote else {})}
    return RemoteSettings(provider_id, base_url, api_key, headers, _clean(model) or _clean(section.model))


def compute_provider_key(provider_id: str, base_url: str, model: str, headers: dict[str, str]) -> str:
    """Fingerprint of what changes the vectors besides id/model: endpoint and non-auth header names."""
    names = sorted({name.strip().lower() for name in headers if not is_auth_header(name)})
    return fingerprint({"provider": provider_id, "baseUrl": base_url, "model": model, "headerNames": names})


def normalize_base_url(url: str) -> str:
    """Trim whitespace and trailing slashes so `.../v1/` and `.../v1` are the same endpoint."""
    return url.strip().rstrip("/")


# ---------------------------------------------------------------------------------------------------------
# Retry classification and the HTTP client
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Batching and concurrency
# ---------------------------------------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """The spec's estimate: 1 char ≈ 1 token (pessimistic on purpose, so requests stay under limits)."""
    return max(1, len(text) // APPROX_CHARS_PER_TOKEN)


def build_token_batches(texts: Sequence[str], max_tokens: int, max_items: int | None = None) -> list[list[int]]:
    """Group consecutive text indices so each group stays within `max_tokens` (and `max_items`).

    A single text longer than the limit goes alone in its own group rather than being dropped or split.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    current_tokens = 0
    for index, text in enumerate(texts):
        tokens = estimate_tokens(text)
        too_many = max_items is not None and len(current) >= max_items
        if current and (current_tokens + tokens > max_tokens or too_many):
            groups.append(current)
            current, current_tokens = [], 0
        current.append(index)
        current_tokens += tokens
    if current:
        groups.append(current)
    return groups


# ---------------------------------------------------------------------------------------------------------
# The provider base class
# ---------------------------------------------------------------------------------------------------------


class RemoteEmbeddingProvider(EmbeddingProvider):
    """Base for HTTP providers: subclasses only translate texts to requests and responses to vectors.

    Subclasses set `id`, `default_base_url`, `default_model`, `max_batch_items`, and implement
    `_auth_headers`, `_request_vectors(texts, query=..., timeout=...)` and optionally `_make_batch_runner`.
    """

    id: str = "remote"
    default_base_url: str = ""
    default_model: str = ""
    max_batch_items: int | None = None

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        options: RemoteOptions | None = None,
        batch: BatchOptions | None = None,
        dims: int | None = None,
    ) -> None:

        self.model = (model or self.default_model).strip()
        self.base_url = normalize_base_url(base_url or self.default_base_url)
        self.options = options or RemoteOptions()
        self._user_headers = dict(headers or {})
        secrets = [api_key, *(v for k, v in self._user_headers.items() if is_auth_header(k))]
        self._redact = Redactor(secrets)
        user_names = {name.lower() for name in self._user_headers}
        defaults = {k: v for k, v in self._auth_headers(api_key).items() if k.lower() not in user_names}
        request_headers = {**defaults, **self._user_headers}  # remote.headers win, case-insensitively
        self.http = EmbeddingHttp(self.id, request_headers, self._redact, self.options)
        self._provider_key = compute_provider_key(self.id, self.base_url, self.model, self._user_headers)
        self._dims = dims
        self._dims_lock = threading.Lock()
        self.batch_options: BatchOptions = batch or BatchOptions()
        self.batch = BatchController(self.id, self.batch_options, self._make_batch_runner(), self._redact)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    # -- identity ----------------------------------------------------------------------------------------

    @property
    def dims(self) -> int | None:
        return self._dims

    @property
    def provider_key(self) -> str:
        return self._provider_key

    @property
    def request_count(self) -> int:
        return self.http.request_count

    def reset_request_count(self) -> None:
        self.http.reset_request_count()

    def close(self) -> None:
        self.http.close()

    # -- embedding ---------------------------------------------------------------------------------------

    def embed_query(self, text: str) -> np.ndarray:
        raw = self._request_vectors([text], query=True, timeout=self.options.query_timeout)
        return self.accept_vectors(raw, expected=1, label=f"{self.id} query embedding")[0]

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Any number of documents: the batch API when enabled and healthy, else token-bounded requests."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        if self.batch.active:
            raw = self.batch.run(texts)
            if raw is not None:
                return self.accept_vectors(raw, expected=len(texts), label=f"{self.id} batch job")
        return self._embed_sync(texts)

    def _embed_sync(self, texts: list[str]) -> np.ndarray:
        groups = build_token_batches(texts, self.options.max_batch_tokens, self.max_batch_items)
        tasks = [self._group_task(texts, group) for group in groups]
        results = run_concurrently(tasks, self.options.concurrency)
        out = np.empty((len(texts), results[0].shape[1]), dtype=np.float32)
        for group, vectors in zip(groups, results, strict=True):
            out[group] = vectors
        return out

    def _group_task(self, texts: list[str], group: list[int]) -> Callable[[], np.ndarray]:
        def task() -> np.ndarray:
            batch = [texts[i] for i in group]
            raw = self._request_vectors(batch, query=False, timeout=self.options.batch_timeout)
            return self.accept_vectors(raw, expected=len(batch), label=f"{self.id} embeddings")

        return task

    def probe(self, *, retries: bool = False) -> dict[str, Any]:
        """Embed a tiny text to check key, endpoint and model; for `status --deep`. Never raises."""
        attempts = None if retries else 1
        try:
            raw = self._request_vectors(["ping"], query=True, timeout=self.options.query_timeout, attempts=attempts)
            vector = self.accept_vectors(raw, expected=1, label=f"{self.id} probe")[0]
        except EmbeddingError as err:
            return {"ok": False, "error": str(err), "dims": self._dims}
        return {"ok": True, "error": None, "dims": int(vector.shape[0])}

    def batch_status(self) -> dict[str, Any]:
        return self.batch.status()

    # -- validation --------------------------------------------------------------------------------------

    def accept_vectors(self, raw: Any, *, expected: int, label: str) -> np.ndarray:
        """Check count and width of a response's vectors, fix the provider's dims, sanitise and normalise."""
        if not isinstance(raw, list) or len(raw) != expected:
            got = len(raw) if isinstance(raw, list) else type(raw).__name__
            raise self.http.error(f"{label}: expected {expected} embeddings in the response, got {got}")
        widths = set()
        for vector in raw:
            if not isinstance(vector, list) or not vector:
                raise self.http.error(f"{label}: response contains an empty or invalid embedding")
            widths.add(len(vector))
        if len(widths) > 1:
            raise self.http.error(f"{label}: embeddings of different dimensions in one response: {sorted(widths)}")
        self._check_dims(widths.pop(), label)
        try:
            matrix = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError):
            raise self.http.error(f"{label}: response contains non-numeric embedding values") from None
        return sanitize_and_normalize(matrix)

    def _check_dims(self, width: int, label: str) -> None:
        with self._dims_lock:
            if self._dims is None:
                self._dims = width
            elif self._dims != width:
                raise self.http.error(
                    f"{label}: dimension mismatch: expected {self._dims} dimensions, got {width} (model {self.model!r})"
                )

    # -- subclass hooks ----------------------------------------------------------------------------------

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _request_vectors(
        self, texts: list[str], *, query: bool, timeout: float, attempts: int | None = None
    ) -> list[Any]:
        raise NotImplementedError

    def _make_batch_runner(self) -> Any:
        return None


def parse_openai_style_data(payload: Any, label: str, make_error: Callable[[str], EmbeddingError]) -> list[Any]:
    """`{"data": [{"embedding": [...], "index": i}, ...]}` → vectors in input order (sorted by `index`)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise make_error(f"{label}: response has no 'data' list: {snippet(str(payload))}")
    if any(not isinstance(item, dict) for item in data):
        raise make_error(f"{label}: response 'data' items must be objects")
    if all(isinstance(item.get("index"), int) for item in data):
        data = sorted(data, key=lambda item: item["index"])
    return [item.get("embedding") for item in data]
