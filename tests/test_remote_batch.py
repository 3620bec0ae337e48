"""Batch embedding APIs (OpenAI, Voyage, Gemini) against the fake server, and their failure policy."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from fake_embedding_server import FakeEmbeddingServer, Reply, fake_vector, parse_multipart, unit
from mdrecall.config.settings import MemoryConfig
from mdrecall.embeddings.batch_api import BatchOptions, gemini_service_url
from mdrecall.embeddings.factory import create_provider
from mdrecall.embeddings.gemini import GeminiEmbeddingProvider
from mdrecall.embeddings.openai import OpenAIEmbeddingProvider
from mdrecall.embeddings.remote import RemoteEmbeddingProvider, RemoteOptions, RetryPolicy
from mdrecall.embeddings.voyage import VoyageEmbeddingProvider

pytest_plugins = ["fake_embedding_server"]

SECRET = "sk-batch-SECRET-77e1"
TEXTS = [f"memory note number {i}" for i in range(10)]


class FakeClock:
    """A clock that only moves when someone sleeps: polling loops run instantly."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def batch_options(clock: FakeClock | None = None, **overrides: Any) -> BatchOptions:
    clock = clock or FakeClock()
    values: dict[str, Any] = {"enabled": True, "poll_interval_ms": 10, "sleep": clock.sleep, "clock": clock}
    values.update(overrides)
    return BatchOptions(**values)


FAST = RemoteOptions(retry=RetryPolicy(sleep=lambda _s: None))


def make(cls: type[RemoteEmbeddingProvider], base: str, **batch: Any) -> RemoteEmbeddingProvider:
    return cls(base_url=base, api_key=SECRET, options=FAST, batch=batch_options(**batch))


def assert_vectors(vectors: np.ndarray, texts: list[str]) -> None:
    assert vectors.shape == (len(texts), 8)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(fake_vector(text)), rtol=1e-5)


def test_openai_batch_job_round_trip(fake_server: FakeEmbeddingServer) -> None:
    fake_server.batch_polls_until_done = 3
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base)

    assert_vectors(provider.embed_batch(TEXTS), TEXTS)

    (upload,) = fake_server.requests_for("files.upload")
    fields = {
        re.search(r'name="([^"]+)"', headers["content-disposition"]).group(1): payload  # type: ignore[union-attr]
        for headers, payload in parse_multipart(upload.headers["content-type"], upload.body)
    }
    assert fields["purpose"] == b"batch"
    lines = [json.loads(line) for line in fields["file"].decode().splitlines()]
    assert lines[0] == {
        "custom_id": "0",
        "method": "POST",
        "url": "/v1/embeddings",
        "body": {"model": "text-embedding-3-small", "input": TEXTS[0]},
    }
    (create,) = fake_server.requests_for("batches.create")
    assert create.json["endpoint"] == "/v1/embeddings" and create.json["completion_window"] == "24h"
    assert len(fake_server.requests_for("batches.get")) == 3
    assert fake_server.count("files.content") == 1 and fake_server.count("embeddings") == 0
    assert provider.request_count == 6
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in fake_server.requests)
    status = provider.batch_status()
    assert status["enabled"] is True and status["failures"] == 0 and status["lastProvider"] == "openai"


def test_voyage_batch_job_shape(fake_server: FakeEmbeddingServer) -> None:
    provider = make(VoyageEmbeddingProvider, fake_server.voyage_base)
    assert_vectors(provider.embed_batch(TEXTS[:3]), TEXTS[:3])
    (create,) = fake_server.requests_for("batches.create")
    assert create.json["request_params"] == {"model": "voyage-4-large", "input_type": "document"}
    (upload,) = fake_server.requests_for("files.upload")
    assert b'{"custom_id": "0", "body": {"input": ["memory note number 0"]}}' in upload.body


def test_gemini_async_batch_round_trip(fake_server: FakeEmbeddingServer) -> None:
    fake_server.batch_polls_until_done = 2
    provider = make(GeminiEmbeddingProvider, fake_server.gemini_base)

    assert_vectors(provider.embed_batch(TEXTS), TEXTS)

    routes = [r.route for r in fake_server.requests]
    assert routes == [
        "gemini.upload",
        "gemini.asyncBatch",
        "gemini.batches.get",
        "gemini.batches.get",
        "gemini.download",
    ]
    upload, create, *_, download = fake_server.requests
    assert upload.path == "/upload/v1beta/files" and upload.query["uploadType"] == ["multipart"]
    assert upload.headers["content-type"].startswith("multipart/related; boundary=")
    line = json.loads(parse_multipart(upload.headers["content-type"], upload.body)[1][1].splitlines()[0])
    assert line == {
        "key": "r0",
        "request": {
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": TEXTS[0]}]},
            "taskType": "RETRIEVAL_DOCUMENT",
        },
    }
    assert create.path == "/v1beta/models/gemini-embedding-001:asyncBatchEmbedContent"
    assert create.json["batch"]["inputConfig"]["file_name"].startswith("files/")
    assert download.query["alt"] == ["media"]
    assert all(r.headers["x-goog-api-key"] == SECRET for r in fake_server.requests)


def test_gemini_service_urls() -> None:
    base = "https://generativelanguage.googleapis.com/v1beta"
    assert gemini_service_url(base, "upload") == "https://generativelanguage.googleapis.com/upload/v1beta"
    assert (
        gemini_service_url("https://gw.example/gemini/v1beta", "download")
        == "https://gw.example/gemini/download/v1beta"
    )
    assert gemini_service_url("https://gw.example/custom", "upload") == "https://gw.example/custom/upload"


def test_two_batch_failures_switch_to_sync_mode(fake_server: FakeEmbeddingServer) -> None:
    fake_server.batch_outcome = "failed"
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base)

    for round_number in range(3):
        texts = [f"round {round_number} text {i}" for i in range(4)]
        assert_vectors(provider.embed_batch(texts), texts)  # every call still gets its vectors

    assert fake_server.count("batches.create") == 2  # the third call did not try the batch API
    assert fake_server.count("embeddings") == 3
    status = provider.batch_status()
    assert status["enabled"] is False and status["failures"] == 2 and status["limit"] == 2
    assert "failed" in status["lastError"] and status["lastProvider"] == "openai"


def test_batch_success_resets_the_failure_count(fake_server: FakeEmbeddingServer) -> None:
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base)
    fake_server.batch_outcome = "expired"
    provider.embed_batch(["a"])
    assert provider.batch_status()["failures"] == 1
    fake_server.batch_outcome = "completed"
    provider.embed_batch(["b"])
    assert provider.batch_status()["failures"] == 0 and provider.batch_status()["enabled"] is True


def test_batch_timeout_gets_one_retry_then_counts_as_failure(fake_server: FakeEmbeddingServer) -> None:
    fake_server.batch_outcome = "stuck"
    clock = FakeClock()
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base, clock=clock, timeout_ms=50)

    assert_vectors(provider.embed_batch(TEXTS[:2]), TEXTS[:2])

    assert fake_server.count("batches.create") == 2  # the timed-out job was retried once
    status = provider.batch_status()
    assert status["failures"] == 1 and "timed out after 50 ms" in status["lastError"]
    assert status["timeoutMs"] == 50 and status["pollIntervalMs"] == 10
    assert clock.sleeps and all(s == 0.01 for s in clock.sleeps)


def test_missing_batch_api_disables_batch_mode_at_once(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("files.upload", Reply(status=404, json={"error": {"message": "404 page not found"}}))
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base)
    assert_vectors(provider.embed_batch(TEXTS[:2]), TEXTS[:2])
    status = provider.batch_status()
    assert status["enabled"] is False and status["failures"] == 2 and "not available" in status["lastError"]


def test_gemini_batch_unavailable_falls_back_to_batch_embed_contents(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("gemini.asyncBatch", Reply(status=404, json={"error": {"code": 404, "status": "NOT_FOUND"}}))
    provider = make(GeminiEmbeddingProvider, fake_server.gemini_base)
    assert_vectors(provider.embed_batch(TEXTS[:3]), TEXTS[:3])
    assert fake_server.count("gemini.batchEmbed") == 1
    assert provider.batch_status()["enabled"] is False


def test_wait_disabled_counts_as_failure(fake_server: FakeEmbeddingServer) -> None:
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base, wait=False)
    assert_vectors(provider.embed_batch(["x"]), ["x"])
    assert "wait is false" in provider.batch_status()["lastError"]


def test_jobs_are_split_and_run_concurrently(fake_server: FakeEmbeddingServer) -> None:
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base, max_requests=4, concurrency=2)
    assert_vectors(provider.embed_batch(TEXTS), TEXTS)
    assert fake_server.count("batches.create") == 3


def test_batch_errors_never_show_the_key(fake_server: FakeEmbeddingServer) -> None:
    fake_server.required_key = "right-key"
    provider = make(OpenAIEmbeddingProvider, fake_server.openai_base)
    with pytest.raises(Exception) as info:  # the sync path is refused too
        provider.embed_batch(["x"])
    status = provider.batch_status()
    assert SECRET not in str(info.value) and SECRET not in str(status)
    assert "Incorrect API key" in status["lastError"]


def test_batch_config_reaches_the_provider(fake_server: FakeEmbeddingServer) -> None:
    config = MemoryConfig.model_validate(
        {
            "provider": "openai",
            "remote": {
                "baseUrl": fake_server.openai_base,
                "apiKey": SECRET,
                "batch": {"enabled": True, "concurrency": 3, "pollIntervalMs": 5, "timeoutMinutes": 1},
            },
        }
    )
    provider = create_provider(config, options=FAST).provider
    assert provider is not None
    status = provider.batch_status()  # type: ignore[attr-defined]
    assert status == {
        "enabled": True,
        "failures": 0,
        "limit": 2,
        "wait": True,
        "concurrency": 3,
        "pollIntervalMs": 5,
        "timeoutMs": 60_000,
        "lastError": None,
        "lastProvider": None,
    }
    assert_vectors(provider.embed_batch(["via config"]), ["via config"])
    assert fake_server.count("batches.create") == 1
