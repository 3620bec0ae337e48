"""Google Gemini embeddings (`gemini-embedding-001` by default).

Queries go to `models/{model}:embedContent` with `taskType: RETRIEVAL_QUERY`; documents to
`models/{model}:batchEmbedContents` (at most 100 per call) with `RETRIEVAL_DOCUMENT`. The key travels
in the `x-goog-api-key` header, never in the URL, so it cannot leak through logged URLs.
"""

from __future__ import annotations

from typing import Any

from mdrecall.embeddings.batch_api import GeminiBatchRunner, gemini_model_path
from mdrecall.embeddings.remote import HOME_URLS, RemoteEmbeddingProvider, snippet

GEMINI_DEFAULT_BASE_URL = HOME_URLS["gemini"]
GEMINI_DEFAULT_MODEL = "gemini-embedding-001"


class GeminiEmbeddingProvider(RemoteEmbeddingProvider):
    """Gemini's native embedding API."""

    id = "gemini"
    default_base_url = GEMINI_DEFAULT_BASE_URL
    default_model = GEMINI_DEFAULT_MODEL
    max_batch_items = 100  # batchEmbedContents accepts at most 100 requests

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def _request_vectors(
        self, texts: list[str], *, query: bool, timeout: float, attempts: int | None = None
    ) -> list[Any]:
        if query and len(texts) == 1:
            return [self._embed_one(texts[0], timeout=timeout, attempts=attempts)]
        return self._embed_many(
            texts, task="RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT", timeout=timeout, attempts=attempts
        )

    def _embed_one(self, text: str, *, timeout: float, attempts: int | None) -> Any:
        label = f"{self.id} embedContent"
        body = {"content": {"parts": [{"text": text}]}, "taskType": "RETRIEVAL_QUERY"}
        payload = self.http.request_json(
            "POST", f"{self._model_url()}:embedContent", label=label, timeout=timeout, attempts=attempts, json=body
        )
        embedding = payload.get("embedding") if isinstance(payload, dict) else None
        if not isinstance(embedding, dict) or "values" not in embedding:
            raise self.http.error(f"{label}: response has no 'embedding.values': {snippet(str(payload))}")
        return embedding["values"]

    def _embed_many(self, texts: list[str], *, task: str, timeout: float, attempts: int | None) -> list[Any]:
        label = f"{self.id} batchEmbedContents"
        model_path = gemini_model_path(self.model)
        body = {
            "requests": [
                {"model": model_path, "content": {"parts": [{"text": text}]}, "taskType": task} for text in texts
            ]
        }
        payload = self.http.request_json(
            "POST",
            f"{self._model_url()}:batchEmbedContents",
            label=label,
            timeout=timeout,
            attempts=attempts,
            json=body,
        )
        embeddings = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(embeddings, list):
            raise self.http.error(f"{label}: response has no 'embeddings' list: {snippet(str(payload))}")
        return [item.get("values") if isinstance(item, dict) else None for item in embeddings]

    def _model_url(self) -> str:
        return f"{self.base_url}/{gemini_model_path(self.model)}"

    def _make_batch_runner(self) -> GeminiBatchRunner:
        return GeminiBatchRunner(
            self.http, self.base_url, self.model, self.batch_options, request_timeout=self.options.batch_timeout
        )
