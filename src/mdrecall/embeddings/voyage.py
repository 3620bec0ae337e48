"""Voyage AI embeddings: the OpenAI wire format plus `input_type` ("query" at search, "document" at index).

Voyage trains asymmetric retrieval models, so telling it which side a text is on matters for quality.
"""

from __future__ import annotations

from typing import Any

from mdrecall.embeddings.batch_api import OpenAIBatchRunner
from mdrecall.embeddings.openai import OpenAIEmbeddingProvider
from mdrecall.embeddings.remote import HOME_URLS

VOYAGE_DEFAULT_BASE_URL = HOME_URLS["voyage"]
VOYAGE_DEFAULT_MODEL = "voyage-4-large"


class VoyageEmbeddingProvider(OpenAIEmbeddingProvider):
    """`voyage-4-large` by default; Bearer auth; same batch API shape as OpenAI's."""

    id = "voyage"
    default_base_url = VOYAGE_DEFAULT_BASE_URL
    default_model = VOYAGE_DEFAULT_MODEL
    max_batch_items = 1000  # Voyage's cap on inputs per request

    def _payload(self, texts: list[str], *, query: bool) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "input_type": "query" if query else "document"}

    def _make_batch_runner(self) -> OpenAIBatchRunner:
        return OpenAIBatchRunner(
            self.http,
            self.base_url,
            self.model,
            self.batch_options,
            request_timeout=self.options.batch_timeout,
            flavor="voyage",
        )
