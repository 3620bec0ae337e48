"""OpenAI embeddings, and any OpenAI-compatible endpoint (Ollama, vLLM, OpenRouter, proxies).

`POST {baseUrl}/embeddings` with `{model, input: [...]}` → `data[].embedding`, put back in input order by
`index`. A custom `baseUrl` may have no API key (a local Ollama needs none); then no Authorization header
is sent.
"""

from __future__ import annotations

from typing import Any

from mdrecall.embeddings.batch_api import OpenAIBatchRunner
from mdrecall.embeddings.remote import HOME_URLS, RemoteEmbeddingProvider, parse_openai_style_data

OPENAI_DEFAULT_BASE_URL = HOME_URLS["openai"]
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"


class OpenAIEmbeddingProvider(RemoteEmbeddingProvider):
    """`text-embedding-3-small` by default (`text-embedding-3-large` and others by config)."""

    id = "openai"
    default_base_url = OPENAI_DEFAULT_BASE_URL
    default_model = OPENAI_DEFAULT_MODEL
    max_batch_items = 2048  # OpenAI's cap on inputs per request

    def _payload(self, texts: list[str], *, query: bool) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _request_vectors(
        self, texts: list[str], *, query: bool, timeout: float, attempts: int | None = None
    ) -> list[Any]:
        label = f"{self.id} embeddings"
        payload = self.http.request_json(
            "POST",
            f"{self.base_url}/embeddings",
            label=label,
            timeout=timeout,
            attempts=attempts,
            json=self._payload(texts, query=query),
        )
        return parse_openai_style_data(payload, label, self.http.error)

    def _make_batch_runner(self) -> OpenAIBatchRunner:
        return OpenAIBatchRunner(
            self.http, self.base_url, self.model, self.batch_options, request_timeout=self.options.batch_timeout
        )
