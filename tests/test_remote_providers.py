"""Remote providers against the fake server: wire formats, retries, timeouts, validation, batching, secrets."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fake_embedding_server import FakeEmbeddingServer, Reply, fake_vector, unit
from mdrecall.embeddings.gemini import GeminiEmbeddingProvider
from mdrecall.embeddings.openai import OpenAIEmbeddingProvider
from mdrecall.embeddings.remote import (
    RemoteOptions,
    RetryPolicy,
    build_token_batches,
    compute_provider_key,
    is_retryable,
)
from mdrecall.embeddings.voyage import VoyageEmbeddingProvider
from mdrecall.errors import EmbeddingError

pytest_plugins = ["fake_embedding_server"]  # the `fake_server` fixture

SECRET = "sk-test-SECRET-4f9a7c21"


class SleepRecorder:
    """Stands in for time.sleep: remembers the delays, never waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def fast(**overrides: object) -> RemoteOptions:
    retry = overrides.pop("retry", RetryPolicy(sleep=SleepRecorder()))
    return RemoteOptions(retry=retry, **overrides)  # type: ignore[arg-type]


def openai(server: FakeEmbeddingServer, **kwargs: object) -> OpenAIEmbeddingProvider:
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("options", fast())
    return OpenAIEmbeddingProvider(base_url=server.openai_base, **kwargs)  # type: ignore[arg-type]


# -- wire formats ------------------------------------------------------------------------------------------


def test_openai_batch_sorts_by_index_normalises_and_sends_bearer(fake_server: FakeEmbeddingServer) -> None:
    fake_server.reverse_data = True
    provider = openai(fake_server)
    vectors = provider.embed_batch(["alpha", "beta", "gamma"])

    assert vectors.shape == (3, 8) and vectors.dtype == np.float32
    for text, vector in zip(["alpha", "beta", "gamma"], vectors, strict=True):
        np.testing.assert_allclose(vector, unit(fake_vector(text)), rtol=1e-5)
    (request,) = fake_server.requests_for("embeddings")
    assert request.json == {"model": "text-embedding-3-small", "input": ["alpha", "beta", "gamma"]}
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert provider.dims == 8 and provider.request_count == 1


def test_openai_query_and_configured_model(fake_server: FakeEmbeddingServer) -> None:
    fake_server.model_dims["text-embedding-3-large"] = 12
    provider = openai(fake_server, model="text-embedding-3-large")
    vector = provider.embed_query("hello")
    assert vector.shape == (12,)
    np.testing.assert_allclose(vector, unit(fake_vector("hello", 12)), rtol=1e-5)
    assert fake_server.requests_for("embeddings")[0].json["model"] == "text-embedding-3-large"


def test_openai_compatible_endpoint_without_key_sends_custom_headers(fake_server: FakeEmbeddingServer) -> None:
    provider = OpenAIEmbeddingProvider(
        base_url=fake_server.openai_base + "/", model="nomic-embed-text", headers={"X-Org": "acme"}, options=fast()
    )
    provider.embed_batch(["x"])
    (request,) = fake_server.requests_for("embeddings")
    assert "authorization" not in request.headers
    assert request.headers["x-org"] == "acme"
    assert request.path == "/v1/embeddings"


def test_gemini_wire_format(fake_server: FakeEmbeddingServer) -> None:
    provider = GeminiEmbeddingProvider(base_url=fake_server.gemini_base, api_key=SECRET, options=fast())
    query = provider.embed_query("what is up")
    docs = provider.embed_batch(["doc one", "doc two"])

    np.testing.assert_allclose(query, unit(fake_vector("what is up")), rtol=1e-5)
    np.testing.assert_allclose(docs[1], unit(fake_vector("doc two")), rtol=1e-5)
    (q,) = fake_server.requests_for("gemini.embed")
    assert q.path == "/v1beta/models/gemini-embedding-001:embedContent"
    assert q.json["taskType"] == "RETRIEVAL_QUERY"
    assert q.headers["x-goog-api-key"] == SECRET and "authorization" not in q.headers
    (b,) = fake_server.requests_for("gemini.batchEmbed")
    assert [r["taskType"] for r in b.json["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert b.json["requests"][0]["model"] == "models/gemini-embedding-001"
    assert "key=" not in q.path and not q.query  # the key never travels in the URL


def test_gemini_caps_requests_at_100_items(fake_server: FakeEmbeddingServer) -> None:
    provider = GeminiEmbeddingProvider(base_url=fake_server.gemini_base, api_key="k", options=fast())
    provider.embed_batch([f"t{i}" for i in range(250)])
    sizes = [len(r.json["requests"]) for r in fake_server.requests_for("gemini.batchEmbed")]
    assert sorted(sizes) == [50, 100, 100]


def test_voyage_input_types(fake_server: FakeEmbeddingServer) -> None:
    provider = VoyageEmbeddingProvider(base_url=fake_server.voyage_base, api_key=SECRET, options=fast())
    provider.embed_query("q")
    provider.embed_batch(["d1", "d2"])
    query, docs = fake_server.requests_for("embeddings")
    assert query.json == {"model": "voyage-4-large", "input": ["q"], "input_type": "query"}
    assert docs.json["input_type"] == "document"
    assert docs.headers["authorization"] == f"Bearer {SECRET}"


def test_empty_batch_makes_no_request(fake_server: FakeEmbeddingServer) -> None:
    provider = openai(fake_server)
    assert provider.embed_batch([]).shape[0] == 0
    assert fake_server.count() == 0


# -- retries and timeouts ----------------------------------------------------------------------------------


def test_retries_then_success_with_exponential_backoff(fake_server: FakeEmbeddingServer) -> None:
    sleeps = SleepRecorder()
    fake_server.script("embeddings", Reply(status=429, json={"error": {"message": "Rate limit reached"}}), Reply(500))
    provider = openai(fake_server, options=fast(retry=RetryPolicy(sleep=sleeps)))

    vectors = provider.embed_batch(["a"])

    np.testing.assert_allclose(vectors[0], unit(fake_vector("a")), rtol=1e-5)
    assert fake_server.count("embeddings") == 3 and provider.request_count == 3
    assert len(sleeps.delays) == 2
    assert 0.5 <= sleeps.delays[0] <= 0.6 and 1.0 <= sleeps.delays[1] <= 1.2


def test_backoff_is_capped() -> None:
    policy = RetryPolicy()
    assert all(policy.delay(n) <= 8.0 for n in range(1, 12))
    assert policy.delay(10) == 8.0


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, "", True),
        (503, "", True),
        (400, "Resource has been exhausted (e.g. check quota).", True),
        (403, "Attention Required! | Cloudflare", True),
        (400, "rate_limit_exceeded", True),
        (400, "invalid input", False),
        (401, "bad key", False),
    ],
)
def test_retryable_classification(status: int, body: str, expected: bool) -> None:
    assert is_retryable(status, body) is expected


def test_non_retryable_error_fails_at_once(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(status=400, json={"error": {"message": "input too long"}}))
    with pytest.raises(EmbeddingError, match="HTTP 400.*input too long"):
        openai(fake_server).embed_batch(["a"])
    assert fake_server.count("embeddings") == 1


def test_retries_exhausted(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", *[Reply(status=503, text="upstream down")] * 3)
    with pytest.raises(EmbeddingError, match=r"HTTP 503.*after 3 attempts"):
        openai(fake_server).embed_batch(["a"])
    assert fake_server.count("embeddings") == 3


def test_slow_response_times_out_then_retries(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(delay=0.6))
    provider = openai(fake_server, options=fast(batch_timeout=0.15))
    vectors = provider.embed_batch(["slow"])
    np.testing.assert_allclose(vectors[0], unit(fake_vector("slow")), rtol=1e-5)
    assert provider.request_count == 2


def test_timeouts_exhausted(fake_server: FakeEmbeddingServer) -> None:
    fake_server.delay = 0.2
    retry = RetryPolicy(attempts=2, sleep=SleepRecorder())
    provider = openai(fake_server, options=fast(query_timeout=0.05, retry=retry))
    with pytest.raises(EmbeddingError, match=r"timed out after 0.05s \(after 2 attempts\)"):
        provider.embed_query("q")


def test_connection_refused_is_an_embedding_error() -> None:
    provider = OpenAIEmbeddingProvider(base_url="http://127.0.0.1:9/v1", api_key="k", options=fast())
    with pytest.raises(EmbeddingError, match="connection failed"):
        provider.embed_query("q")
    assert provider.request_count == 3


# -- response validation -----------------------------------------------------------------------------------


def test_malformed_json_is_a_clear_error(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(text="<html>oops</html>"))
    with pytest.raises(EmbeddingError, match="malformed JSON"):
        openai(fake_server).embed_batch(["a"])


def test_dimension_mismatch_across_responses(fake_server: FakeEmbeddingServer) -> None:
    provider = openai(fake_server)
    provider.embed_batch(["a"])
    fake_server.script("embeddings", Reply(dims=4))
    with pytest.raises(EmbeddingError, match="expected 8 dimensions, got 4"):
        provider.embed_batch(["b"])


def test_count_mismatch(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(drop=1))
    with pytest.raises(EmbeddingError, match="expected 3 embeddings in the response, got 2"):
        openai(fake_server).embed_batch(["a", "b", "c"])


def test_non_finite_values_are_zeroed_and_vectors_normalised(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(text='{"data": [{"index": 0, "embedding": [NaN, 3.0, 4.0]}]}'))
    vector = openai(fake_server).embed_query("x")
    np.testing.assert_allclose(vector, [0.0, 0.6, 0.8], rtol=1e-6)


def test_missing_data_list(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(json={"object": "list"}))
    with pytest.raises(EmbeddingError, match="no 'data' list"):
        openai(fake_server).embed_query("x")


# -- batching and concurrency ------------------------------------------------------------------------------


def test_token_bounded_batches_for_1000_chunks(fake_server: FakeEmbeddingServer) -> None:
    rng = random.Random(7)
    texts = [f"chunk {i} " + "x" * rng.randint(1500, 1700) for i in range(1000)]
    expected_requests, size = 0, 0
    for text in texts:  # independent re-statement of the greedy rule
        if size and size + len(text) > 8000:
            expected_requests, size = expected_requests + 1, 0
        size += len(text)
    expected_requests += 1

    provider = openai(fake_server)
    vectors = provider.embed_batch(texts)

    requests = fake_server.requests_for("embeddings")
    assert len(requests) == expected_requests == provider.request_count
    assert all(sum(len(t) for t in r.json["input"]) <= 8000 for r in requests)
    assert sorted(t for r in requests for t in r.json["input"]) == sorted(texts)
    np.testing.assert_allclose(vectors[617], unit(fake_vector(texts[617])), rtol=1e-5)


def test_exactly_1600_char_chunks_make_200_requests(fake_server: FakeEmbeddingServer) -> None:
    texts = [f"{i:05d}" + "y" * 1595 for i in range(1000)]
    provider = openai(fake_server)
    provider.embed_batch(texts)
    assert provider.request_count == 200


def test_over_long_text_is_its_own_batch() -> None:
    assert build_token_batches(["a" * 100, "b" * 9000, "c" * 100], 8000) == [[0], [1], [2]]
    assert build_token_batches(["a" * 4000, "b" * 4000, "c" * 1], 8000) == [[0, 1], [2]]
    assert build_token_batches(["a"] * 5, 8000, max_items=2) == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_is_honoured(fake_server: FakeEmbeddingServer, concurrency: int) -> None:
    fake_server.delay = 0.05
    provider = openai(fake_server, options=fast(concurrency=concurrency))
    texts = [str(i) * 4000 for i in range(10)]  # 4000 chars each: two per request, five requests
    vectors = provider.embed_batch(texts)
    assert fake_server.count("embeddings") == 5
    if concurrency == 1:
        assert fake_server.max_in_flight == 1
    else:
        assert 2 <= fake_server.max_in_flight <= 4
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, unit(fake_vector(text)), rtol=1e-5)


def test_first_error_stops_concurrent_batches(fake_server: FakeEmbeddingServer) -> None:
    fake_server.script("embeddings", Reply(status=400, json={"error": {"message": "bad"}}))
    with pytest.raises(EmbeddingError, match="HTTP 400"):
        openai(fake_server).embed_batch(["z" * 8000] * 6)


# -- provider key and secrets ------------------------------------------------------------------------------


def test_provider_key_tracks_endpoint_and_model_not_the_key(fake_server: FakeEmbeddingServer) -> None:
    base = openai(fake_server).provider_key
    assert openai(fake_server, api_key="another-key").provider_key == base
    assert openai(fake_server, model="text-embedding-3-large").provider_key != base
    other_url = OpenAIEmbeddingProvider(base_url="http://127.0.0.1:1/v1", api_key=SECRET)
    assert other_url.provider_key != base
    assert openai(fake_server, headers={"Authorization": "Bearer zzz", "api-key": "q"}).provider_key == base
    assert openai(fake_server, headers={"X-Project": "p1"}).provider_key != base
    assert (
        openai(fake_server, headers={"X-Project": "p2"}).provider_key
        == openai(fake_server, headers={"x-project": "p1"}).provider_key
    )
    assert SECRET not in base


def test_provider_key_fingerprint_excludes_auth_header_names() -> None:
    plain = compute_provider_key("gemini", "https://x", "m", {})
    assert compute_provider_key("gemini", "https://x", "m", {"X-Goog-Api-Key": "k", "X-API-Key": "k"}) == plain
    assert compute_provider_key("voyage", "https://x", "m", {}) != plain


def test_api_key_never_in_errors_or_status(fake_server: FakeEmbeddingServer) -> None:
    fake_server.required_key = "the-right-key"
    provider = openai(fake_server, headers={"X-Extra-Auth": "x"})
    with pytest.raises(EmbeddingError) as info:
        provider.embed_query("q")
    message = str(info.value)
    assert "HTTP 401" in message and "Incorrect API key provided" in message
    assert SECRET not in message and "[redacted]" in message
    assert SECRET not in repr(provider) and SECRET not in provider.provider_key
    assert SECRET not in str(provider.batch_status()) and SECRET not in str(provider.probe())


def test_gemini_key_redacted_from_errors(fake_server: FakeEmbeddingServer) -> None:
    fake_server.required_key = "right"
    provider = GeminiEmbeddingProvider(base_url=fake_server.gemini_base, api_key=SECRET, options=fast())
    with pytest.raises(EmbeddingError) as info:
        provider.embed_batch(["doc"])
    assert SECRET not in str(info.value)


def test_probe_reports_ok_dims_and_errors(fake_server: FakeEmbeddingServer) -> None:
    provider = openai(fake_server)
    assert provider.probe() == {"ok": True, "error": None, "dims": 8}
    fake_server.script("embeddings", Reply(status=500, text="boom"))
    outcome = provider.probe()
    assert outcome["ok"] is False and "HTTP 500" in outcome["error"]
    assert fake_server.count("embeddings") == 2  # no retries in a status probe


def test_a_429_with_retry_after_waits_as_long_as_the_server_asks(fake_server: FakeEmbeddingServer) -> None:
    sleeps = SleepRecorder()
    limited = {"error": {"message": "Rate limit reached"}}
    fake_server.script(
        "embeddings",
        Reply(status=429, json=limited, headers={"Retry-After": "3"}),
        Reply(status=429, json=limited, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),  # in the past
        Reply(status=503, json=limited, headers={"Retry-After": "86400"}),  # a day: capped
    )
    provider = openai(fake_server, options=fast(retry=RetryPolicy(attempts=4, sleep=sleeps)))
    provider.embed_batch(["a"])
    assert fake_server.count("embeddings") == 4
    assert sleeps.delays[0] == 3.0  # longer than the backoff's 0.5 s: the server's word wins
    assert 1.0 <= sleeps.delays[1] <= 1.2  # a date already past: the backoff stands
    assert sleeps.delays[2] == 60.0  # never more than the policy's retry_after_cap


def test_retry_after_parsing() -> None:
    from mdrecall.embeddings.http import retry_after_seconds

    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds(" 2.5 ") == 2.5 and retry_after_seconds("-4") == 0.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("86400") == 3600.0
