"""The optional rerank stage (`query.rerank`): a remote rerank API reorders the best fused results.

Three wire formats, all `POST {baseUrl}/rerank` with a Bearer key:

- Cohere v2: `{model, query, documents, top_n}` -> `{results: [{index, relevance_score}]}`
- Voyage:    `{model, query, documents, top_k}` -> `{data: [{index, relevance_score}]}`
- Jina:      `{model, query, documents, top_n}` -> `{results: [{index, relevance_score}]}`

(self-hosted servers such as TEI, Infinity or LocalAI speak the Cohere/Jina shape.)

Where it runs (`search.run_search`): after fusion, date boost, identifiers-first, decay and minScore, before
MMR and the result limit. minScore is calibrated on fused scores per model, and rerank scores are on each
provider's own scale, so the reranker reorders the results that passed minScore (the best
`query.rerank.candidates` of them) and never changes how many pass: the zero-result rate and the
never-empty rule stay those of the fused pipeline.

Faults (429 and 5xx after retries, timeouts, refused connections, bad JSON, a wrong number of results or bad
indices) never fail a search: the fused order is kept and the response carries a one-line notice, as when
the embedding provider is down. Off by default: no reranker has been measured to help on the evals.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mdrecall.config.settings import RerankConfig
from mdrecall.documents.context import date_phrase, with_context
from mdrecall.text.dates import file_date
from mdrecall.text.fts_query import holds_identifier

if TYPE_CHECKING:
    import httpx

    from mdrecall.embeddings.http import EmbeddingHttp
    from mdrecall.retrieval.results import Hit

logger = logging.getLogger("mdrecall.retrieval.rerank")

RETRY_BASE_DELAY_S = 0.2  # a search is waiting: back off briefly (the embedding providers use 0.5 s)
RETRY_MAX_DELAY_S = 2.0


@dataclass(frozen=True)
class WireFormat:
    """What differs between the rerank APIs: endpoint, default model, key variable and two field names."""

    id: str
    base_url: str
    model: str
    env_key: str
    count_field: str  # how many results to return: "top_n" (Cohere, Jina) or "top_k" (Voyage)
    results_field: str  # where they come back: "results" (Cohere, Jina) or "data" (Voyage)


WIRE_FORMATS: dict[str, WireFormat] = {
    "cohere": WireFormat("cohere", "https://api.cohere.com/v2", "rerank-v3.5", "COHERE_API_KEY", "top_n", "results"),
    "voyage": WireFormat("voyage", "https://api.voyageai.com/v1", "rerank-2.5", "VOYAGE_API_KEY", "top_k", "data"),
    "jina": WireFormat(
        "jina", "https://api.jina.ai/v1", "jina-reranker-v2-base-multilingual", "JINA_API_KEY", "top_n", "results"
    ),
}


class RerankError(Exception):
    """A rerank response that cannot be used (its message is already redacted)."""


def request_body(fmt: WireFormat, model: str, query: str, documents: Sequence[str]) -> dict[str, Any]:
    """The JSON body of one rerank request: every document scored and returned (top_n/top_k = all)."""
    return {"model": model, "query": query, "documents": list(documents), fmt.count_field: len(documents)}


def parse_scores(fmt: WireFormat, payload: Any, count: int) -> list[float]:
    """Relevance scores in input order, or RerankError: exactly `count` results, each index once, finite scores."""
    items = payload.get(fmt.results_field) if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise RerankError(f"response has no {fmt.results_field!r} list")
    if len(items) != count:
        raise RerankError(f"expected {count} results, got {len(items)}")
    scores: list[float | None] = [None] * count
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RerankError(f"result index {index!r} is not one of the {count} documents sent")
        if scores[index] is not None:
            raise RerankError(f"result index {index} appears twice")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankError(f"result {index} has no numeric relevance_score")
        scores[index] = float(score)
    return [float(s) for s in scores if s is not None]


def resolve_api_key(cfg: RerankConfig) -> str | None:
    """`query.rerank.apiKey`, else the variable named by `apiKeyEnv`, else the provider's usual variable when
    the base URL is the provider's own API."""
    if cfg.api_key and cfg.api_key.strip():
        return cfg.api_key.strip()
    from mdrecall.embeddings.http import same_api_host

    fmt = WIRE_FORMATS[cfg.provider]
    if not cfg.api_key_env and not same_api_host(cfg.base_url, fmt.base_url):
        return None  # the provider's own variable goes to its own API only; name it in apiKeyEnv to send it
    value = os.environ.get(cfg.api_key_env or fmt.env_key, "").strip()
    return value or None


class RerankClient:
    """One rerank endpoint over the embedding providers' retrying, redacting HTTP client."""

    def __init__(
        self,
        provider: str,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 5.0,
        max_retries: int = 1,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        from mdrecall.embeddings.http import (  # httpx only when a reranker is used
            EmbeddingHttp,
            Redactor,
            RemoteOptions,
            RetryPolicy,
        )

        self.format = WIRE_FORMATS[provider]
        self.model = (model or self.format.model).strip()
        self.url = (base_url or self.format.base_url).strip().rstrip("/") + "/rerank"
        self.timeout = timeout
        retry = RetryPolicy(
            attempts=max_retries + 1,
            base_delay=RETRY_BASE_DELAY_S,
            max_delay=RETRY_MAX_DELAY_S,
            sleep=sleep,
            retry_after_cap=RETRY_MAX_DELAY_S,  # a search waits for its reranker only this long
        )
        options = RemoteOptions(query_timeout=timeout, concurrency=1, retry=retry, transport=transport)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http: EmbeddingHttp = EmbeddingHttp(f"rerank:{provider}", headers, Redactor([api_key]), options)

    def __repr__(self) -> str:
        return f"RerankClient(provider={self.format.id!r}, model={self.model!r}, url={self.url!r})"

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in input order; EmbeddingError or RerankError on any fault."""
        label = f"{self.format.id} rerank"
        body = request_body(self.format, self.model, query, documents)
        payload = self.http.request_json("POST", self.url, label=label, timeout=self.timeout, json=body)
        try:
            return parse_scores(self.format, payload, len(documents))
        except RerankError as err:
            raise RerankError(self.http.redact(f"{label}: {err}")) from None

    def close(self) -> None:
        self.http.close()


_CLIENTS: dict[tuple[Any, ...], RerankClient] = {}
_CLIENTS_LOCK = threading.Lock()
_MAX_CLIENTS = 8


def client_for(cfg: RerankConfig) -> RerankClient:
    """A client per distinct setting, kept so searches reuse its connections (TLS set-up is the slow part)."""
    api_key = resolve_api_key(cfg)
    key = (cfg.provider, cfg.model, cfg.base_url, api_key, cfg.timeout_seconds, cfg.max_retries)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            if len(_CLIENTS) >= _MAX_CLIENTS:
                for old in _CLIENTS.values():
                    old.close()
                _CLIENTS.clear()
            client = RerankClient(
                cfg.provider,
                model=cfg.model,
                base_url=cfg.base_url,
                api_key=api_key,
                timeout=cfg.timeout_seconds,
                max_retries=cfg.max_retries,
            )
            _CLIENTS[key] = client
        return client


def close_clients() -> None:
    """Close the kept clients (tests; a long-lived process may call it on shutdown)."""
    with _CLIENTS_LOCK:
        for client in _CLIENTS.values():
            client.close()
        _CLIENTS.clear()


def _minmax(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def blend_order(fused: Sequence[float], rerank: Sequence[float], weight: float) -> list[int]:
    """Indices in the new order: (1 - weight) * fused + weight * rerank, each min-max scaled; ties keep the
    fused order. weight 1 is the reranker's order alone, weight 0 the fused order."""
    f, r = _minmax(fused), _minmax(rerank)
    combined = [(1.0 - weight) * a + weight * b for a, b in zip(f, r, strict=True)]
    return sorted(range(len(combined)), key=lambda i: (-combined[i], i))


def rerank_document(path: str, text: str) -> str:
    """What the reranker reads for a chunk: the log's date (from its file name) above the text, as indexed."""
    day = file_date(path)
    return with_context(date_phrase(day), text) if day is not None else text


def rerank_hits(
    cfg: RerankConfig, query: str, hits: list[Hit], identifiers: Sequence[str] = (), keep_scores: bool = False
) -> tuple[list[Hit], str | None]:
    """Hits reordered by the reranker (the best `cfg.candidates`; the rest follow unchanged), and a notice.

    Never raises: on any fault the hits come back as they were, with a one-line notice. Scores stay on the
    fused scale (the i-th reranked hit gets the i-th best fused score), so scores fall down the list and
    MMR and the displays keep their meaning; hits holding more of the query's identifiers stay first.
    `keep_scores`: each hit keeps its own score (calibrated scores belong to their result, not its rank).
    """
    if not cfg.enabled or len(hits) < 2:
        return hits, None
    head, tail = hits[: cfg.candidates], hits[cfg.candidates :]
    try:
        client = client_for(cfg)
        scores = client.scores(query, [rerank_document(h.row.path, h.row.text) for h in head])
    except Exception as err:  # noqa: BLE001 - a reranker fault must never fail a search
        message = " ".join(str(err).split()) or type(err).__name__
        logger.debug("rerank failed: %s", message)
        return hits, f"reranker unavailable: {message}; fused order kept"
    order = blend_order([h.score for h in head], scores, cfg.weight)
    ranked = [head[i] for i in order]
    if identifiers:
        held = {id(h): sum(holds_identifier(h.row.text, i) for i in identifiers) for h in ranked}
        ranked.sort(key=lambda h: -held[id(h)])  # stable: the reranked order within each count
    if not keep_scores:
        for hit, score in zip(ranked, sorted((h.score for h in head), reverse=True), strict=True):
            hit.score = score
    return ranked + tail, None


def rerank_status(cfg: RerankConfig) -> dict[str, Any]:
    """What `status` shows of the stage (never the key, only whether one was found)."""
    if not cfg.enabled:
        return {"enabled": False}
    fmt = WIRE_FORMATS[cfg.provider]
    return {
        "enabled": True,
        "provider": cfg.provider,
        "model": cfg.model or fmt.model,
        "url": (cfg.base_url or fmt.base_url).strip().rstrip("/") + "/rerank",
        "candidates": cfg.candidates,
        "weight": cfg.weight,
        "apiKey": "set" if resolve_api_key(cfg) else "unset",
    }


def describe(status: dict[str, Any]) -> str:
    """One line for `mdrecall status`."""
    if not status.get("enabled"):
        return "off"
    return (
        f"{status['provider']} {status['model']} at {status['url']} ({status['candidates']} candidates, "
        f"weight {status['weight']:g}, key {status['apiKey']})"
    )


def rerank_probe(cfg: RerankConfig) -> dict[str, Any]:
    """Rerank two tiny documents: proves endpoint, key and model for `status --deep`. Never raises."""
    started = time.perf_counter()
    try:
        client_for(cfg).scores("mdrecall status probe", ["status probe", "something else"])
    except Exception as err:  # noqa: BLE001 - a probe reports any failure instead of raising
        return {"ok": False, "error": " ".join(str(err).split()) or type(err).__name__}
    return {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}


def join_notices(*notices: str | None) -> str | None:
    """Notices of several stages as one line."""
    joined = "; ".join(n for n in notices if n)
    return joined or None
