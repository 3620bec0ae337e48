"""Hybrid retrieval: FTS5 keyword hits and vector hits, merged by weighted score, filtered and trimmed.

Ranking is pure functions over rows; `run_search` is the only function here that touches the store or the
provider.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .config import QueryConfig
from .embeddings.base import EmbeddingProvider
from .store import SearchRow, Store

MAX_CANDIDATES = 200
SearchMode = Literal["hybrid", "keyword", "vector"]
_TOKEN = re.compile(r"\w+", re.UNICODE)


def build_fts_query(raw: str) -> str | None:
    """FTS5 MATCH expression: NFC-normalised letter/number tokens, each quoted, AND-joined; None if blank.

    Quoting every token means no user input is ever parsed as FTS5 syntax (NEAR, OR, column filters, *).
    """
    tokens = _TOKEN.findall(unicodedata.normalize("NFC", raw or ""))
    if not tokens:
        return None
    return " AND ".join(f'"{token}"' for token in tokens)


def bm25_rank_to_score(rank: float) -> float:
    """Map an FTS5 bm25 rank (lower is better) into (0, 1], higher is better.

    The spec's formula is `1 / (1 + max(0, rank))`, kept for ranks >= 0. SQLite's bm25() returns negative
    numbers for matches, which that formula maps to 1.0 for every hit and so throws the ranking away; for
    those we use `relevance / (1 + relevance)` with relevance = -rank, which keeps the order.
    """
    if not np.isfinite(rank):
        return 1.0 / (1.0 + 999.0)
    if rank < 0:
        relevance = -rank
        return relevance / (1.0 + relevance)
    return 1.0 / (1.0 + rank)


def candidate_count(max_results: int, multiplier: int) -> int:
    return min(MAX_CANDIDATES, max(1, max_results * multiplier))


def truncate_snippet(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars]


@dataclass
class Hit:
    """A chunk with the scores of both sides and the merged score."""

    row: SearchRow
    vector_score: float = 0.0
    text_score: float = 0.0
    score: float = 0.0


def merge_hybrid(
    vector: Sequence[SearchRow], keyword: Sequence[SearchRow], vector_weight: float, text_weight: float
) -> list[Hit]:
    """Union by chunk id; score = vectorWeight * vectorScore + textWeight * textScore; best first."""
    hits: dict[str, Hit] = {}
    for row in vector:
        hits[row.id] = Hit(row=row, vector_score=row.score)
    for row in keyword:
        text_score = bm25_rank_to_score(row.score)
        if row.id in hits:
            hits[row.id].text_score = text_score
        else:
            hits[row.id] = Hit(row=row, text_score=text_score)
    for hit in hits.values():
        hit.score = vector_weight * hit.vector_score + text_weight * hit.text_score
    return sort_hits(list(hits.values()))


def sort_hits(hits: list[Hit]) -> list[Hit]:
    """Best score first; ties broken by path and line so results are deterministic."""
    return sorted(hits, key=lambda h: (-h.score, h.row.path, h.row.start_line))


@dataclass
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    vector_score: float | None = None
    text_score: float | None = None
    citation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's MemorySearchResult shape (camelCase)."""
        out: dict[str, Any] = {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "source": self.source,
        }
        if self.citation is not None:
            out["citation"] = self.citation
        return out


@dataclass
class SearchResponse:
    results: list[SearchResult]
    provider: str
    model: str | None
    mode: str  # "hybrid" | "keyword" | "vector" | "fts-only"
    notice: str | None = None
    relaxed: bool = False


def _to_result(hit: Hit, snippet_max: int, mode: str) -> SearchResult:
    row = hit.row
    return SearchResult(
        path=row.path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=hit.score,
        snippet=truncate_snippet(row.text, snippet_max),
        source=row.source,
        vector_score=hit.vector_score if mode != "keyword" else None,
        text_score=hit.text_score if mode != "vector" else None,
    )


def _keyword_rows(store: Store, query: str, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
    fts_query = build_fts_query(query)
    if fts_query is None:
        return []
    return store.keyword_search(fts_query, model, sources, limit)


def _vector_rows(
    store: Store, provider: EmbeddingProvider, query: str, sources: Sequence[str], limit: int
) -> list[SearchRow]:
    vector = np.asarray(provider.embed_query(query), dtype=np.float32)
    if vector.size == 0 or not np.any(vector):
        return []  # a zero vector carries no meaning: let keyword search answer
    return store.vector_search(vector, provider.model, sources, limit)


def run_search(
    store: Store,
    provider: EmbeddingProvider | None,
    model: str,
    query_cfg: QueryConfig,
    query: str,
    sources: Sequence[str],
    max_results: int | None = None,
    min_score: float | None = None,
    mode: SearchMode = "hybrid",
) -> SearchResponse:
    """Search the index. Never silently empty: when minScore removes every hit but some chunks matched
    the keywords, those keyword matches are returned and the response says so."""
    limit = max_results if max_results is not None else query_cfg.max_results
    threshold = min_score if min_score is not None else query_cfg.min_score
    provider_name = provider.id if provider is not None else "none"
    cleaned = (query or "").strip()
    if provider is None or not query_cfg.hybrid.enabled and mode == "hybrid":
        mode = "keyword" if provider is None else "vector"
    label = "fts-only" if provider is None else mode
    if not cleaned:
        return SearchResponse([], provider_name, model, label, notice="empty query")

    candidates = candidate_count(limit, query_cfg.hybrid.candidate_multiplier)
    keyword = _keyword_rows(store, cleaned, model, sources, candidates) if mode != "vector" else []
    vector = _vector_rows(store, provider, cleaned, sources, candidates) if provider and mode != "keyword" else []

    if mode == "keyword":
        hits = merge_hybrid([], keyword, 0.0, 1.0)
    elif mode == "vector":
        hits = merge_hybrid(vector, [], 1.0, 0.0)
    else:
        vector_weight, text_weight = query_cfg.hybrid.normalized_weights()
        if not store.fts.available:
            vector_weight, text_weight = 1.0, 0.0
        hits = merge_hybrid(vector, keyword, vector_weight, text_weight)

    kept = [h for h in hits if h.score >= threshold][:limit]
    notice = None
    relaxed = False
    if not kept:
        keyword_hits = [h for h in hits if h.text_score > 0]
        if keyword_hits:
            kept = keyword_hits[:limit]
            relaxed = True
            notice = (
                f"no result reached minScore {threshold:g}; showing {len(kept)} keyword match"
                f"{'es' if len(kept) != 1 else ''} below it"
            )
    snippet_max = query_cfg.snippet_max_chars
    results = [_to_result(h, snippet_max, mode) for h in kept]
    return SearchResponse(results, provider_name, model, label, notice=notice, relaxed=relaxed)
