"""Asynchronous batch embedding APIs (OpenAI, Voyage, Gemini) and the policy that keeps them safe to use.

Batch jobs are cheap for big backfills but slow and fragile (a job can sit queued for hours), so the
`BatchController` treats them as an optimisation: a job that times out gets one retry, any other failure
sends that call down the synchronous path, and after `failure_limit` consecutive failures (2) batch mode is
switched off for the provider instance. An endpoint that has no batch API at all (404, e.g. Ollama) switches
it off at once.

Wire formats:
- OpenAI: JSONL of `{custom_id, method, url: "/v1/embeddings", body: {model, input}}` uploaded to `/files`
  (`purpose=batch`), `POST /batches` (`endpoint=/v1/embeddings`, `completion_window=24h`), poll
  `/batches/{id}`, download `/files/{output_file_id}/content`, map lines back by `custom_id`.
- Voyage: the same files/batches shape; lines carry `body: {input: [text]}` and the job carries
  `request_params: {model, input_type: "document"}`.
- Gemini: multipart upload to `/upload/{version}/files`, `POST models/{model}:asyncBatchEmbedContent`
  (`batch.inputConfig.file_name`), poll `batches/{id}` (`BATCH_STATE_*`), download
  `/download/{version}/files/{id}:download?alt=media`, lines `{key, response: {embedding: {values}}}`.
  Written from the public API reference without a live account to test against: kept isolated here.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from mdrecall.embeddings.http import EmbeddingHttp, Redactor, RemoteHttpError, run_concurrently
from mdrecall.errors import EmbeddingError

logger = logging.getLogger("mdrecall.embeddings")

BATCH_FAILURE_LIMIT = 2
BATCH_MAX_REQUESTS = 50_000
OPENAI_COMPLETION_WINDOW = "24h"
VOYAGE_COMPLETION_WINDOW = "12h"


class BatchTimeoutError(EmbeddingError):
    """The job did not finish within `remote.batch.timeoutMinutes` (retried once before it counts)."""


class BatchUnavailableError(EmbeddingError):
    """The endpoint has no batch API (404): batch mode is switched off immediately."""


@dataclass(frozen=True)
class BatchOptions:
    """`remote.batch.*` plus the constants of the spec; `sleep`/`clock` are injectable for fast tests."""

    enabled: bool = False
    wait: bool = True
    concurrency: int = 2
    poll_interval_ms: int = 2000
    timeout_ms: int = 60 * 60_000
    failure_limit: int = BATCH_FAILURE_LIMIT
    max_requests: int = BATCH_MAX_REQUESTS
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def from_config(cls, batch: Any, **overrides: Any) -> BatchOptions:
        """Build from a `BatchConfig` (the `remote.batch` section)."""
        values: dict[str, Any] = {
            "enabled": batch.enabled,
            "wait": batch.wait,
            "concurrency": batch.concurrency,
            "poll_interval_ms": batch.poll_interval_ms,
            "timeout_ms": int(batch.timeout_minutes * 60_000),
        }
        values.update(overrides)
        return cls(**values)


class BatchRunner(Protocol):
    """Runs one provider's batch API: texts in, raw vectors (lists of floats) out, in input order."""

    def run(self, texts: list[str]) -> list[Any]: ...


class BatchController:
    """Decides whether to use the batch API and keeps score of its failures (thread-safe)."""

    def __init__(
        self,
        provider_id: str,
        options: BatchOptions,
        runner: BatchRunner | None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.provider_id = provider_id
        self.options = options
        self._runner = runner
        self._redact = redact or Redactor([])
        self._failures = 0
        self._last_error: str | None = None
        self._last_provider: str | None = None
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Configured, supported by this provider, and not switched off by failures."""
        return self.options.enabled and self._runner is not None and self._failures < self.options.failure_limit

    @property
    def failures(self) -> int:
        return self._failures

    @property
    def last_error(self) -> str | None:
        return self._last_error

    def run(self, texts: list[str]) -> list[Any] | None:
        """Raw vectors from a batch job, or None when the caller should use the synchronous path."""
        assert self._runner is not None
        for attempt in (1, 2):
            try:
                raw = self._runner.run(texts)
            except BatchTimeoutError as err:
                if attempt == 1:
                    logger.warning("%s batch timed out; retrying once: %s", self.provider_id, self._redact(str(err)))
                    continue
                self._record_failure(err)
            except BatchUnavailableError as err:
                self._record_failure(err, disable=True)
            except EmbeddingError as err:
                self._record_failure(err)
            except Exception as err:  # an unexpected payload shape is a batch failure, not a crash
                self._record_failure(EmbeddingError(f"{type(err).__name__}: {err}"))
            else:
                with self._lock:
                    self._failures = 0
                    self._last_provider = self.provider_id
                return raw
            return None
        return None  # pragma: no cover - the loop always returns

    def _record_failure(self, err: EmbeddingError, *, disable: bool = False) -> None:
        message = self._redact(str(err))
        with self._lock:
            self._failures = self.options.failure_limit if disable else self._failures + 1
            self._last_error = message
            self._last_provider = self.provider_id
            failures = self._failures
        limit = self.options.failure_limit
        state = "batch mode disabled" if failures >= limit else "using synchronous requests for this call"
        logger.warning("%s batch failed (%d/%d), %s: %s", self.provider_id, failures, limit, state, message)

    def status(self) -> dict[str, Any]:
        """For `mdrecall status`: the spec's batch fields, camelCase like the config."""
        return {
            "enabled": self.active,
            "failures": self._failures,
            "limit": self.options.failure_limit,
            "wait": self.options.wait,
            "concurrency": self.options.concurrency,
            "pollIntervalMs": self.options.poll_interval_ms,
            "timeoutMs": self.options.timeout_ms,
            "lastError": self._last_error,
            "lastProvider": self._last_provider,
        }


# ---------------------------------------------------------------------------------------------------------
# Shared job plumbing
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobState:
    """A poll result reduced to what the loop needs."""

    phase: str  # "done" | "failed" | "pending"
    detail: str
    payload: Any


def wait_for_job(first: JobState, fetch: Callable[[], JobState], options: BatchOptions, label: str) -> JobState:
    """Poll until the job is done; raise on failure, on timeout, or when waiting is disabled."""
    deadline = options.clock() + options.timeout_ms / 1000.0
    state = first
    while True:
        if state.phase == "done":
            return state
        if state.phase == "failed":
            raise EmbeddingError(f"{label} {state.detail}")
        if not options.wait:
            raise EmbeddingError(f"{label} is still {state.detail} and remote.batch.wait is false")
        if options.clock() >= deadline:
            raise BatchTimeoutError(f"{label} timed out after {options.timeout_ms} ms (still {state.detail})")
        options.sleep(options.poll_interval_ms / 1000.0)
        state = fetch()


def split_jobs(texts: list[str], max_requests: int) -> list[tuple[int, list[str]]]:
    """(offset, texts) slices of at most `max_requests` texts: the APIs cap requests per job."""
    size = max(1, max_requests)
    return [(start, texts[start : start + size]) for start in range(0, len(texts), size)]


def parse_jsonl(text: str, label: str) -> list[dict[str, Any]]:
    """Non-empty lines of a JSONL download; a broken line fails the job (the content is not echoed)."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise EmbeddingError(f"{label}: malformed JSONL record on line {number}") from None
        if isinstance(record, dict):
            records.append(record)
    return records


def collect_by_id(
    records: list[dict[str, Any]],
    ids: list[str],
    extract: Callable[[dict[str, Any]], tuple[str | None, Any, str | None]],
    label: str,
) -> list[Any]:
    """Map output records back to request ids; report provider errors and missing answers."""
    by_id: dict[str, Any] = {}
    errors: list[str] = []
    for record in records:
        custom_id, vector, error = extract(record)
        if custom_id is None:
            continue
        if error:
            errors.append(f"{custom_id}: {error}")
        else:
            by_id[custom_id] = vector
    if errors:
        more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
        raise EmbeddingError(f"{label}: {len(errors)} requests failed: " + "; ".join(errors[:3]) + more)
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise EmbeddingError(f"{label}: missing {len(missing)} of {len(ids)} embedding responses")
    return [by_id[i] for i in ids]


def _run_jobs(texts: list[str], options: BatchOptions, job: Callable[[list[str]], list[Any]]) -> list[Any]:
    tasks = [lambda part=part: job(part) for _, part in split_jobs(texts, options.max_requests)]
    vectors: list[Any] = []
    for result in run_concurrently(tasks, options.concurrency):
        vectors.extend(result)
    return vectors


def _unavailable_on_404(err: RemoteHttpError, what: str) -> EmbeddingError:
    if err.status == 404:
        return BatchUnavailableError(f"{what} not available on this endpoint (HTTP 404): {err}")
    return err


# ---------------------------------------------------------------------------------------------------------
# OpenAI (and Voyage, which follows the same files + batches shape)
# ---------------------------------------------------------------------------------------------------------


class OpenAIBatchRunner:
    """OpenAI's Batch API; `flavor="voyage"` adapts line and job bodies to Voyage's variant."""

    def __init__(
        self,
        http: EmbeddingHttp,
        base_url: str,
        model: str,
        options: BatchOptions,
        *,
        request_timeout: float,
        flavor: str = "openai",
    ) -> None:
        self.http = http
        self.base_url = base_url
        self.model = model
        self.options = options
        self.timeout = request_timeout
        self.flavor = flavor
        self.label = f"{flavor} batch"

    def run(self, texts: list[str]) -> list[Any]:
        return _run_jobs(texts, self.options, self._run_job)

    def _run_job(self, texts: list[str]) -> list[Any]:
        ids = [str(i) for i in range(len(texts))]
        jsonl = "\n".join(
            json.dumps(self._line(cid, text), ensure_ascii=False) for cid, text in zip(ids, texts, strict=True)
        )
        file_id = self._upload(jsonl)
        first = self._create(file_id)
        batch_id = str(first.payload.get("id"))
        label = f"{self.label} {batch_id}"
        done = wait_for_job(first, lambda: self._fetch(batch_id), self.options, label)
        output_id = done.payload.get("output_file_id")
        if not output_id:
            raise EmbeddingError(f"{label} completed without an output file{self._error_file_hint(done.payload)}")
        records = parse_jsonl(self._download(str(output_id)), label)
        return collect_by_id(records, ids, _openai_record, label)

    def _line(self, custom_id: str, text: str) -> dict[str, Any]:
        if self.flavor == "voyage":
            return {"custom_id": custom_id, "body": {"input": [text]}}
        return {
            "custom_id": custom_id,
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": self.model, "input": text},
        }

    def _upload(self, jsonl: str) -> str:
        try:
            payload = self.http.request_json(
                "POST",
                f"{self.base_url}/files",
                label=f"{self.label} file upload",
                timeout=self.timeout,
                data={"purpose": "batch"},
                files={"file": ("memory-embeddings.jsonl", jsonl.encode("utf-8"), "application/jsonl")},
            )
        except RemoteHttpError as err:
            raise _unavailable_on_404(err, "batch file upload") from None
        file_id = payload.get("id") if isinstance(payload, dict) else None
        if not file_id:
            raise EmbeddingError(f"{self.label} file upload returned no file id")
        return str(file_id)

    def _create(self, file_id: str) -> JobState:
        body: dict[str, Any] = {"input_file_id": file_id, "endpoint": "/v1/embeddings"}
        if self.flavor == "voyage":
            body["completion_window"] = VOYAGE_COMPLETION_WINDOW
            body["request_params"] = {"model": self.model, "input_type": "document"}
        else:
            body["completion_window"] = OPENAI_COMPLETION_WINDOW
            body["metadata"] = {"source": "mdrecall-memory"}
        try:
            payload = self.http.request_json(
                "POST", f"{self.base_url}/batches", label=f"{self.label} create", timeout=self.timeout, json=body
            )
        except RemoteHttpError as err:
            raise _unavailable_on_404(err, "batch API") from None
        if not isinstance(payload, dict) or not payload.get("id"):
            raise EmbeddingError(f"{self.label} create returned no batch id")
        return _openai_state(payload)

    def _fetch(self, batch_id: str) -> JobState:
        payload = self.http.request_json(
            "GET", f"{self.base_url}/batches/{batch_id}", label=f"{self.label} status", timeout=self.timeout
        )
        if not isinstance(payload, dict):
            raise EmbeddingError(f"{self.label} status returned an unexpected payload")
        return _openai_state(payload)

    def _download(self, file_id: str) -> str:
        response = self.http.request(
            "GET", f"{self.base_url}/files/{file_id}/content", label=f"{self.label} download", timeout=self.timeout
        )
        return response.text

    def _error_file_hint(self, payload: dict[str, Any]) -> str:
        error_file = payload.get("error_file_id")
        if not error_file:
            return ""
        try:
            records = parse_jsonl(self._download(str(error_file)), self.label)
        except EmbeddingError:
            return " (error file unreadable)"
        messages = [m for m in (_openai_record(r)[2] for r in records[:3]) if m]
        return f"; errors: {'; '.join(messages)}" if messages else ""


_OPENAI_FAILED = {"failed", "expired", "cancelled", "canceled", "cancelling"}


def _openai_state(payload: dict[str, Any]) -> JobState:
    status = str(payload.get("status") or "unknown").lower()
    if status == "completed":
        return JobState("done", status, payload)
    if status in _OPENAI_FAILED:
        errors = payload.get("errors") or {}
        data = errors.get("data") if isinstance(errors, dict) else None
        first = data[0].get("message") if isinstance(data, list) and data and isinstance(data[0], dict) else None
        return JobState("failed", f"{status}: {first}" if first else status, payload)
    return JobState("pending", status, payload)


def _openai_record(record: dict[str, Any]) -> tuple[str | None, Any, str | None]:
    """(custom_id, vector, error) from one output/error line of an OpenAI or Voyage batch."""
    custom_id = record.get("custom_id")
    custom_id = str(custom_id) if custom_id is not None else None
    error = record.get("error")
    if error:
        return custom_id, None, _message(error)
    response = record.get("response") or {}
    status = response.get("status_code", 200) if isinstance(response, dict) else 200
    body = response.get("body") if isinstance(response, dict) else None
    if isinstance(status, int) and status >= 400:
        detail = body.get("error") if isinstance(body, dict) else body
        return custom_id, None, f"HTTP {status}: {_message(detail)}"
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return custom_id, None, "no embedding in response"
    return custom_id, data[0].get("embedding"), None


def _message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "error")
    return str(error) if error else "error"


# ---------------------------------------------------------------------------------------------------------
# Gemini
# ---------------------------------------------------------------------------------------------------------

_VERSION_SEGMENT = re.compile(r"^v\d+(?:alpha|beta)?\d*$")


def gemini_service_url(base_url: str, service: str) -> str:
    """The upload/download twin of an API base: `…/v1beta` → `…/upload/v1beta` (Google's URL scheme)."""
    parts = urlsplit(base_url)
    segments = [s for s in parts.path.split("/") if s]
    index = next((i for i, s in enumerate(segments) if _VERSION_SEGMENT.match(s)), None)
    if index is None:
        segments.append(service)
    else:
        segments.insert(index, service)
    return urlunsplit((parts.scheme, parts.netloc, "/" + "/".join(segments), "", ""))


def gemini_model_path(model: str) -> str:
    """`gemini-embedding-001` → `models/gemini-embedding-001` (already-qualified names pass through)."""
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


class GeminiBatchRunner:
    """Gemini's async batch embedding (`asyncBatchEmbedContent`) over an uploaded JSONL file."""

    def __init__(
        self, http: EmbeddingHttp, base_url: str, model: str, options: BatchOptions, *, request_timeout: float
    ) -> None:
        self.http = http
        self.base_url = base_url
        self.model_path = gemini_model_path(model)
        self.options = options
        self.timeout = request_timeout
        self.label = "gemini batch"

    def run(self, texts: list[str]) -> list[Any]:
        return _run_jobs(texts, self.options, self._run_job)

    def _run_job(self, texts: list[str]) -> list[Any]:
        ids = [f"r{i}" for i in range(len(texts))]
        lines = [
            {
                "key": key,
                "request": {
                    "model": self.model_path,
                    "content": {"parts": [{"text": text}]},
                    "taskType": "RETRIEVAL_DOCUMENT",
                },
            }
            for key, text in zip(ids, texts, strict=True)
        ]
        file_name = self._upload("\n".join(json.dumps(line, ensure_ascii=False) for line in lines))
        first = self._create(file_name)
        name = str(first.payload.get("name"))
        label = f"{self.label} {name}"
        done = wait_for_job(first, lambda: self._fetch(name), self.options, label)
        output = _gemini_output_file(done.payload)
        if not output:
            raise EmbeddingError(f"{label} completed without a responses file")
        records = parse_jsonl(self._download(output), label)
        return collect_by_id(records, ids, _gemini_record, label)

    def _upload(self, jsonl: str) -> str:
        boundary = f"mdrecall-{uuid.uuid4().hex}"
        metadata = json.dumps({"file": {"displayName": "mdrecall-memory-embeddings", "mimeType": "application/jsonl"}})
        body = (
            f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
            f"--{boundary}\r\nContent-Type: application/jsonl; charset=UTF-8\r\n\r\n{jsonl}\r\n"
            f"--{boundary}--\r\n"
        ).encode()
        try:
            payload = self.http.request_json(
                "POST",
                gemini_service_url(self.base_url, "upload") + "/files",
                label=f"{self.label} file upload",
                timeout=self.timeout,
                params={"uploadType": "multipart"},
                content=body,
                headers={
                    "Content-Type": f"multipart/related; boundary={boundary}",
                    "X-Goog-Upload-Protocol": "multipart",
                },
            )
        except RemoteHttpError as err:
            raise _unavailable_on_404(err, "Gemini file upload") from None
        file_info = payload.get("file") if isinstance(payload, dict) else None
        name = (file_info or {}).get("name") if isinstance(file_info, dict) else None
        name = name or (payload.get("name") if isinstance(payload, dict) else None)
        if not name:
            raise EmbeddingError(f"{self.label} file upload returned no file name")
        return str(name)

    def _create(self, file_name: str) -> JobState:
        body = {"batch": {"displayName": "mdrecall-memory-embeddings", "inputConfig": {"file_name": file_name}}}
        try:
            payload = self.http.request_json(
                "POST",
                f"{self.base_url}/{self.model_path}:asyncBatchEmbedContent",
                label=f"{self.label} create",
                timeout=self.timeout,
                json=body,
            )
        except RemoteHttpError as err:
            raise _unavailable_on_404(err, "asyncBatchEmbedContent") from None
        if not isinstance(payload, dict) or not payload.get("name"):
            raise EmbeddingError(f"{self.label} create returned no batch name")
        return _gemini_state(payload)

    def _fetch(self, name: str) -> JobState:
        path = name if name.startswith("batches/") else f"batches/{name}"
        payload = self.http.request_json(
            "GET", f"{self.base_url}/{path}", label=f"{self.label} status", timeout=self.timeout
        )
        if not isinstance(payload, dict):
            raise EmbeddingError(f"{self.label} status returned an unexpected payload")
        return _gemini_state(payload)

    def _download(self, file_name: str) -> str:
        path = file_name if file_name.startswith("files/") else f"files/{file_name}"
        response = self.http.request(
            "GET",
            f"{gemini_service_url(self.base_url, 'download')}/{path}:download",
            label=f"{self.label} download",
            timeout=self.timeout,
            params={"alt": "media"},
        )
        return response.text


_GEMINI_DONE = {"SUCCEEDED", "COMPLETED", "DONE"}
_GEMINI_FAILED = {"FAILED", "CANCELLED", "CANCELED", "EXPIRED"}


def _gemini_state(payload: dict[str, Any]) -> JobState:
    metadata = payload.get("metadata") if isinstance(payload.get("metadata"), dict) else {}
    raw = str(payload.get("state") or metadata.get("state") or "")
    state = raw.upper().removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_")
    error = payload.get("error")
    if error or state in _GEMINI_FAILED:
        return JobState("failed", f"{state.lower() or 'failed'}: {_message(error)}", payload)
    if state in _GEMINI_DONE or (payload.get("done") is True and _gemini_output_file(payload)):
        return JobState("done", state.lower() or "done", payload)
    return JobState("pending", state.lower() or "pending", payload)


def _gemini_output_file(payload: dict[str, Any]) -> str | None:
    """The responses file, wherever this API version puts it (operation response, output or metadata)."""
    candidates = []
    for container in (payload.get("response"), payload, payload.get("metadata")):
        if isinstance(container, dict):
            candidates.append(container.get("responsesFile"))
            output = container.get("output")
            if isinstance(output, dict):
                candidates.append(output.get("responsesFile"))
    return next((str(c) for c in candidates if c), None)


def _gemini_record(record: dict[str, Any]) -> tuple[str | None, Any, str | None]:
    """(key, vector, error) from one line of a Gemini batch responses file."""
    key = record.get("key")
    key = str(key) if key is not None else None
    if record.get("error"):
        return key, None, _message(record["error"])
    response = record.get("response") if isinstance(record.get("response"), dict) else {}
    if response.get("error"):
        return key, None, _message(response["error"])
    embedding = response.get("embedding") or record.get("embedding")
    values = embedding.get("values") if isinstance(embedding, dict) else None
    if not values:
        return key, None, "no embedding in response"
    return key, values, None


__all__ = [
    "BatchController",
    "BatchOptions",
    "BatchTimeoutError",
    "BatchUnavailableError",
    "GeminiBatchRunner",
    "OpenAIBatchRunner",
]
