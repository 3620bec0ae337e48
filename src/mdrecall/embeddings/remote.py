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
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from ..errors import EmbeddingError
from .base import fingerprint, sanitize_and_normalize

if TYPE_CHECKING:
    from .batch_api import BatchOptions

logger = logging.getLogger("mdrecall.embeddings")

BATCH_MAX_TOKENS = 8000
APPROX_CHARS_PER_TOKEN = 1
INDEX_CONCURRENCY = 4
RETRY_MAX_ATTEMPTS = 3
RETRY_BASE_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 8.0
QUERY_TIMEOUT_S = 60.0
BATCH_TIMEOUT_S = 120.0

REMOTE_PROVIDER_IDS = ("openai", "gemini", "voyage")
AUTH_HEADER_NAMES = frozenset({"authorization", "x-goog-api-key", "api-key", "x-api-key"})
ENV_KEY_NAMES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "voyage": ("VOYAGE_API_KEY",),
}
_RETRYABLE_MARKERS = (
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "resource has been exhausted",
    "resource_exhausted",
    "cloudflare",
)
_ERROR_BODY_CHARS = 300
REDACTED = "[redacted]"


# ---------------------------------------------------------------------------------------------------------
# Tunables (injectable so tests run in milliseconds)
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; `sleep` is injectable so tests never wait for real."""

    attempts: int = RETRY_MAX_ATTEMPTS
    base_delay: float = RETRY_BASE_DELAY_S
    max_delay: float = RETRY_MAX_DELAY_S
    jitter: float = 0.2
    sleep: Callable[[float], None] = time.sleep

    def delay(self, retry_number: int) -> float:
        """Seconds to wait before retry `retry_number` (1-based): base·2^(n-1), +0..jitter, capped."""
        raw = self.base_delay * (2 ** max(0, retry_number - 1))
        return min(self.max_delay, raw * (1.0 + random.random() * self.jitter))


@dataclass(frozen=True)
class RemoteOptions:
    """Per-instance knobs of a remote provider; defaults are the spec's constants."""

    query_timeout: float = QUERY_TIMEOUT_S
    batch_timeout: float = BATCH_TIMEOUT_S
    max_batch_tokens: int = BATCH_MAX_TOKENS
    concurrency: int = INDEX_CONCURRENCY
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    transport: httpx.BaseTransport | None = None


# ---------------------------------------------------------------------------------------------------------
# Secrets: resolution and redaction
# ---------------------------------------------------------------------------------------------------------

_BEARER_RE = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{6,}")
_KEY_PARAM_RE = re.compile(r"(?i)([?&](?:key|api_key|apikey)=)[^&\s\"']+")


class Redactor:
    """Removes known secrets (and anything that looks like a bearer token) from text meant for humans."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        # Longest first so a secret that contains another is removed whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        text = _BEARER_RE.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
        return _KEY_PARAM_RE.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


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

    Precedence: `remote.apiKey` > `[provider].apiKey` > env var; `remote.baseUrl` > `[provider].baseUrl`;
    headers are the section's merged with `remote.headers` (remote wins on a conflict);
    model: the explicit `model` > `[provider].model` > the provider default (left to the class).
    """
    section = getattr(config, provider_id)
    remote = config.remote if use_remote else None
    api_key = (_clean(remote.api_key) if remote else None) or _clean(section.api_key) or env_api_key(provider_id)
    base_url = (_clean(remote.base_url) if remote else None) or _clean(section.base_url)
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


class RemoteHttpError(EmbeddingError):
    """A request that failed for good; `status` is the HTTP status when there was a response."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def is_retryable(status: int | None, message: str) -> bool:
    """429, 5xx, and the rate-limit / exhausted-quota / Cloudflare messages some gateways send with a 4xx."""
    if status is not None and (status == 429 or 500 <= status <= 599):
        return True
    lowered = message.lower()
    return any(marker in lowered for marker in _RETRYABLE_MARKERS)


def snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_BODY_CHARS else text[:_ERROR_BODY_CHARS] + "…"


class EmbeddingHttp:
    """A counted, retrying, redacting `httpx.Client` for one provider instance (thread-safe)."""

    def __init__(
        self,
        provider_id: str,
        headers: dict[str, str],
        redact: Redactor,
        options: RemoteOptions,
    ) -> None:
        self.provider_id = provider_id
        self.redact = redact
        self.retry = options.retry
        pool = max(4, options.concurrency * 2)
        self._client = httpx.Client(
            headers=headers,
            transport=options.transport,
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
        )
        self._count = 0
        self._lock = threading.Lock()

    @property
    def request_count(self) -> int:
        """HTTP requests actually sent by this instance, retries and batch-API calls included."""
        return self._count

    def reset_request_count(self) -> None:
        with self._lock:
            self._count = 0

    def close(self) -> None:
        self._client.close()

    def error(self, message: str, status: int | None = None) -> RemoteHttpError:
        """An EmbeddingError with secrets removed: every message leaving this module goes through here."""
        return RemoteHttpError(self.redact(message), status)

    def request(
        self, method: str, url: str, *, label: str, timeout: float, attempts: int | None = None, **kwargs: Any
    ) -> httpx.Response:
        """Send with retries on transient failures; return a 2xx response or raise a redacted EmbeddingError."""
        total = max(1, attempts if attempts is not None else self.retry.attempts)
        for attempt in range(1, total + 1):
            outcome = self._attempt(method, url, label=label, timeout=timeout, **kwargs)
            if isinstance(outcome, httpx.Response):
                return outcome
            message, status, retryable = outcome
            if not retryable:
                raise self.error(message, status)
            if attempt == total:
                suffix = f" (after {total} attempts)" if total > 1 else ""
                raise self.error(message + suffix, status)
            delay = self.retry.delay(attempt)
            logger.debug("%s: retry %d/%d in %.2fs: %s", label, attempt, total - 1, delay, self.redact(message))
            self.retry.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(
        self, method: str, url: str, *, label: str, timeout: float, **kwargs: Any
    ) -> httpx.Response | tuple[str, int | None, bool]:
        """One try: the response when it succeeded, else (message, status, retryable)."""
        with self._lock:
            self._count += 1
        try:
            response = self._client.request(method, url, timeout=timeout, **kwargs)
        except httpx.TimeoutException:
            return f"{label} timed out after {timeout:g}s", None, True
        except httpx.TransportError as exc:
            return f"{label} connection failed: {type(exc).__name__}: {exc}", None, True
        if response.is_success:
            return response
        body = response.text
        message = f"{label} failed: HTTP {response.status_code}: {snippet(body)}"
        return message, response.status_code, is_retryable(response.status_code, body)

    def request_json(self, method: str, url: str, *, label: str, timeout: float, **kwargs: Any) -> Any:
        """`request` then parse the body as JSON, with a clear error when it is not JSON."""
        response = self.request(method, url, label=label, timeout=timeout, **kwargs)
        return parse_json(response.text, label, self.error)


def parse_json(text: str, label: str, make_error: Callable[[str], EmbeddingError]) -> Any:
    """JSON or a readable EmbeddingError (APIs behind proxies sometimes answer with an HTML page)."""
    import json

    try:
        return json.loads(text)
    except ValueError as exc:
        raise make_error(f"{label} returned malformed JSON ({exc.msg} at char {exc.pos}): {snippet(text)}") from None


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


def run_concurrently(tasks: Sequence[Callable[[], Any]], concurrency: int) -> list[Any]:
    """Run tasks on at most `concurrency` threads; results in task order; the first error stops the rest."""
    if not tasks:
        return []
    if concurrency <= 1 or len(tasks) == 1:
        return [task() for task in tasks]
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(tasks)), thread_name_prefix="mdrecall-embed")
    try:
        futures: list[Future[Any]] = [pool.submit(task) for task in tasks]
        wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            error = future.exception() if future.done() else None
            if error is not None:
                raise error
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------------------
# The provider base class
# ---------------------------------------------------------------------------------------------------------


class RemoteEmbeddingProvider:
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
        from .batch_api import BatchController, BatchOptions  # runtime import: batch_api imports this module

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
