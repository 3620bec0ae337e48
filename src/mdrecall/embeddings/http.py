"""The HTTP plumbing of the remote embedding providers: a counted, retrying, redacting client and a pool.

Both `remote.py` (the providers) and `batch_api.py` (the providers' batch APIs) build on this module, so
neither imports the other at module load (the old remote <-> batch_api import cycle).
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from mdrecall.errors import EmbeddingError

logger = logging.getLogger("mdrecall.embeddings")

RETRY_MAX_ATTEMPTS = 3
RETRY_BASE_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 8.0
QUERY_TIMEOUT_S = 60.0
BATCH_TIMEOUT_S = 120.0
BATCH_MAX_TOKENS = 8000
INDEX_CONCURRENCY = 4


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; `sleep` is injectable so tests never wait for real."""

    attempts: int = RETRY_MAX_ATTEMPTS
    base_delay: float = RETRY_BASE_DELAY_S
    max_delay: float = RETRY_MAX_DELAY_S
    jitter: float = 0.2
    sleep: Callable[[float], None] = time.sleep
    # a server's Retry-After is honoured up to this many seconds: a longer ask waits this long and retries
    retry_after_cap: float = 60.0

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
# Retry-After values beyond this are read as this (the retry policy may cap lower: a search-time rerank).
RETRY_AFTER_MAX_S = 3600.0
REDACTED = "[redacted]"


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


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds to wait, capped; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        import time

        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_S)


def same_api_host(base_url: str | None, home_url: str) -> bool:
    """Whether `base_url` (None: the default) is the API a provider's environment key was made for: the same
    host as `home_url`, over https. A provider's own variable (OPENAI_API_KEY, ...) goes nowhere else."""
    if base_url is None or not base_url.strip():
        return True
    try:
        there, home = urlsplit(base_url.strip()), urlsplit(home_url)
        return there.scheme == "https" and there.hostname == home.hostname and there.port in (None, 443)
    except ValueError:
        return False


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
            message, status, retryable, asked = outcome
            if not retryable:
                raise self.error(message, status)
            if attempt == total:
                suffix = f" (after {total} attempts)" if total > 1 else ""
                raise self.error(message + suffix, status)
            delay = max(self.retry.delay(attempt), min(asked or 0.0, self.retry.retry_after_cap))
            logger.debug("%s: retry %d/%d in %.2fs: %s", label, attempt, total - 1, delay, self.redact(message))
            self.retry.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(
        self, method: str, url: str, *, label: str, timeout: float, **kwargs: Any
    ) -> httpx.Response | tuple[str, int | None, bool, float | None]:
        """One try: the response when it succeeded, else (message, status, retryable, server's Retry-After)."""
        with self._lock:
            self._count += 1
        try:
            response = self._client.request(method, url, timeout=timeout, **kwargs)
        except httpx.TimeoutException:
            return f"{label} timed out after {timeout:g}s", None, True, None
        except httpx.TransportError as exc:
            return f"{label} connection failed: {type(exc).__name__}: {exc}", None, True, None
        if response.is_success:
            return response
        body = response.text
        message = f"{label} failed: HTTP {response.status_code}: {snippet(body)}"
        asked = retry_after_seconds(response.headers.get("retry-after"))
        return message, response.status_code, is_retryable(response.status_code, body), asked

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
