"""Hybrid retrieval: FTS5 keyword hits and vector hits, merged, decayed, filtered, diversified and trimmed.

The flow of `run_search`: keyword side (spec AND query; the expanded OR query when keyword-only) and vector
side -> weighted or RRF merge -> temporal decay -> minScore (never silently empty) -> MMR or plain limit ->
citations -> injection budget. The rules themselves are pure functions in `ranking.py`; the FTS query
builders live in `fts_query.py` (re-exported here). `run_search` is the only function that touches the store
or the provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np

from .config import QueryConfig
from .embeddings.base import EmbeddingProvider
from .fts_query import (  # noqa: F401  (re-exported: callers and tests import the builders from here)
    _quote,
    build_fts_query,
    build_keyword_query,
    expand_query_terms,
    keyword_coverage,
    split_on_stopwords,
    strip_korean_particle,
    word_terms,
)
from .fts_text import query_words
from .ranking import (
    RRF_K,
    CitationsMode,
    age_days,
    citation_suffix,
    citations_enabled,
    clamp_to_budget,
    decay_multiplier,
    file_date,
    format_citation,
    is_evergreen_path,
    mmr_order,
    rrf_fuse,
    rrf_rescale,
    to_epoch,
    word_set,
)
from .store import SearchRow, Store

MAX_CANDIDATES = 200
SearchMode = Literal["hybrid", "keyword", "vector"]


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


def snippet_window(text: str, max_chars: int, terms: Sequence[str] = ()) -> str:
    """At most max_chars of a chunk, showing where the query's words are.

    A chunk is up to ~1600 chars and a snippet 700: when the first matched word lies past the first
    window, the window starts at the beginning of that word's line (or a little before the word on a very
    long line), so an identifier found by keyword search is visible in the snippet.
    """
    if len(text) <= max_chars:
        return text
    lowered = text.lower()
    positions = [p for p in (lowered.find(t.lower()) for t in terms if t) if p >= 0]
    if not positions or min(positions) + 40 <= max_chars:
        return text[:max_chars]
    first = min(positions)
    start = text.rfind("\n", 0, first) + 1
    if first - start > max_chars // 2:
        start = max(0, first - max_chars // 4)
    start = min(start, len(text) - max_chars)
    return text[start : start + max_chars]


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
    """Union by chunk id; score = vectorWeight * vectorScore + textWeight * textScore; best first.

    textScore is the bm25 score, times the keyword coverage when the expanded OR query produced the row.
    """
    hits: dict[str, Hit] = {}
    for row in vector:
        hits[row.id] = Hit(row=row, vector_score=row.score)
    for row in keyword:
        text_score = bm25_rank_to_score(row.score) * row.extra.get("coverage", 1.0)
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


def merge_rrf(
    vector: Sequence[SearchRow],
    keyword: Sequence[SearchRow],
    vector_weight: float,
    text_weight: float,
    k: int = RRF_K,
) -> list[Hit]:
    """Reciprocal rank fusion of both lists (k = 60), rescaled onto the weighted merge's scale.

    The order is RRF's; the scores are `ranking.rrf_rescale`'s: the best fused chunk scores what the best
    chunk scores in the weighted merge, the others in proportion to their fused score, so one minScore works
    for both modes.
    """
    weighted = merge_hybrid(vector, keyword, vector_weight, text_weight)
    if not weighted:
        return []
    rankings = [[row.id for row in side] for side in (vector, keyword) if side]
    rescaled = rrf_rescale(rrf_fuse(rankings, k), weighted[0].score)
    for hit in weighted:
        hit.score = rescaled.get(hit.row.id, 0.0)
    return sort_hits(weighted)


def apply_temporal_decay(
    hits: list[Hit], half_life_days: float, now_s: float, session_mtimes: dict[str, int] | None = None
) -> list[Hit]:
    """Scale each score by its chunk's decay multiplier and re-sort (evergreen notes keep their score)."""
    mtimes = session_mtimes or {}
    for hit in hits:
        row = hit.row
        age = age_days(row.path, row.source, mtimes.get(row.path), now_s)
        hit.score *= decay_multiplier(age, half_life_days)
    return sort_hits(hits)


def select_mmr(hits: list[Hit], lam: float, limit: int) -> list[Hit]:
    """Up to `limit` hits in MMR order (Jaccard over lower-cased word sets of the chunk text)."""
    order = mmr_order([h.score for h in hits], [word_set(h.row.text) for h in hits], lam, limit)
    return [hits[i] for i in order]


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
    backend: str = "builtin"  # the engine that served these results (see mdrecall.backends)
    backend_fallback: dict[str, str] | None = None  # {"from": "qmd", "reason": ...} when the primary failed


def _to_result(hit: Hit, snippet_max: int, mode: str, terms: Sequence[str] = ()) -> SearchResult:
    row = hit.row
    return SearchResult(
        path=row.path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=hit.score,
        snippet=snippet_window(row.text, snippet_max, terms),
        source=row.source,
        vector_score=hit.vector_score if mode != "keyword" else None,
        text_score=hit.text_score if mode != "vector" else None,
    )


def finish_results(results: list[SearchResult], with_citations: bool, budget: int) -> list[SearchResult]:
    """Append `Source: path#Lx-Ly` when citations are on, then clamp the snippets to the injection budget."""
    suffixes: list[str] = []
    for result in results:
        if with_citations:
            result.citation = format_citation(result.path, result.start_line, result.end_line)
            result.snippet = result.snippet.strip()
            suffixes.append(citation_suffix(result.citation))
        else:
            suffixes.append("")
    snippets = clamp_to_budget([r.snippet for r in results], suffixes, budget)
    for result, snippet in zip(results, snippets, strict=False):
        result.snippet = snippet
    return results[: len(snippets)]


def _decays_by_mtime(path: str) -> bool:
    return not is_evergreen_path(path) and file_date(path) is None


def _session_mtimes(store: Store, hits: Sequence[Hit]) -> dict[str, int]:
    """mtime (ms), from the files table, of the hits that decay by mtime: session transcripts and undated
    files outside memory/ (extra paths)."""
    paths = sorted({h.row.path for h in hits if h.row.source == "sessions" or _decays_by_mtime(h.row.path)})
    if not paths:
        return {}
    if hasattr(store, "session_mtimes"):  # a server-database store (backends/postgres) answers in its own SQL
        return store.session_mtimes(paths)
    marks = ",".join("?" * len(paths))
    rows = store.conn.execute(f"SELECT path, mtime FROM files WHERE path IN ({marks})", paths)
    return {str(r[0]): int(r[1]) for r in rows}


def _keyword_rows(
    store: Store, query: str, model: str, sources: Sequence[str], limit: int, expanded: bool
) -> list[SearchRow]:
    """Keyword hits. With the expanded OR query, each row's `extra["coverage"]` holds the share of keywords
    it contains and rows are re-ordered by bm25 score x coverage: one common word shared with a question
    must not outrank a chunk holding all of its keywords, nor carry a high text score into the merge."""
    if not expanded:
        fts_query = build_fts_query(query)
        return store.keyword_search(fts_query, model, sources, limit) if fts_query else []
    terms = expand_query_terms(query)
    if not terms:
        return []
    rows = store.keyword_search(" OR ".join(_quote(t) for t in terms), model, sources, limit)
    for row in rows:
        row.extra["coverage"] = keyword_coverage(terms, row.text)
    return sorted(rows, key=lambda r: -bm25_rank_to_score(r.score) * r.extra["coverage"])


def _all_keywords_ids(store: Store, query: str, model: str, sources: Sequence[str], limit: int) -> set[str]:
    """Chunks holding every keyword of the query (stop words aside): the only keyword matches strong enough
    to be shown below minScore. A chunk sharing one word with an off-topic question is not."""
    terms = expand_query_terms(query)
    if not terms:
        return set()
    rows = store.keyword_search(" AND ".join(_quote(t) for t in terms), model, sources, limit)
    return {row.id for row in rows}


def _vector_rows(
    store: Store, provider: EmbeddingProvider, query: str, sources: Sequence[str], limit: int
) -> list[SearchRow]:
    vector = np.asarray(provider.embed_query(query), dtype=np.float32)
    if vector.size == 0 or not np.any(vector):
        return []  # a zero vector carries no meaning: let keyword search answer
    return store.vector_search(vector, provider.model, sources, limit)


# The hybrid keyword side: "and" is the spec's query (every word required, stop words included), "or" the
# keyword-only expansion with coverage-weighted scores. Measured (bench/quality/README.md): "or" wins on the
# Python-docs collection (nDCG@10 weighted 0.901 -> 0.929, RRF 0.901 -> 0.927), ties on the dated-memory set,
# and loses one of the 13 adversarial paraphrases of the example workspace (a note sharing 2 of 3 words
# outranks the answer that the small local model scores at cosine 0.24). The spec's "and" stays the default;
# `run_search(..., hybrid_keyword_query="or")` opts in.
HYBRID_KEYWORD_QUERY: Literal["and", "or"] = "and"


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
    *,
    citations: CitationsMode = "off",
    session_key: str | None = None,
    now: datetime | float | None = None,
    hybrid_keyword_query: Literal["and", "or"] | None = None,
) -> SearchResponse:
    """Search the index: merge (weighted or RRF) -> temporal decay -> minScore -> MMR/limit -> citations ->
    injection budget.

    Keyword-only (no provider, `mode="keyword"`, or vectorWeight 0) uses the expanded OR query. Never
    silently empty: when minScore removes every hit but some chunks matched the keywords, those keyword
    matches are returned and the response says so. `citations` defaults to "off" so that library/CLI
    callers get plain snippets; the memory_search tool passes the configured mode and its session key.
    """
    limit = max_results if max_results is not None else query_cfg.max_results
    threshold = min_score if min_score is not None else query_cfg.min_score
    hybrid_cfg = query_cfg.hybrid
    provider_name = provider.id if provider is not None else "none"
    cleaned = (query or "").strip()
    if provider is None or not hybrid_cfg.enabled and mode == "hybrid":
        mode = "keyword" if provider is None else "vector"
    if mode == "hybrid" and hybrid_cfg.vector_weight == 0:
        mode = "keyword"
    label = "fts-only" if provider is None else mode
    if not cleaned:
        return SearchResponse([], provider_name, model, label, notice="empty query")

    candidates = candidate_count(limit, hybrid_cfg.candidate_multiplier)
    expanded = mode == "keyword" or (hybrid_keyword_query or HYBRID_KEYWORD_QUERY) == "or"
    keyword = _keyword_rows(store, cleaned, model, sources, candidates, expanded) if mode != "vector" else []
    vector = _vector_rows(store, provider, cleaned, sources, candidates) if provider and mode != "keyword" else []

    if mode == "keyword":
        hits = merge_hybrid([], keyword, 0.0, 1.0)
    elif mode == "vector":
        hits = merge_hybrid(vector, [], 1.0, 0.0)
    else:
        vector_weight, text_weight = hybrid_cfg.normalized_weights()
        if not store.fts.available:
            vector_weight, text_weight = 1.0, 0.0
        merge = merge_rrf if hybrid_cfg.mode == "rrf" else merge_hybrid
        hits = merge(vector, keyword, vector_weight, text_weight)

    decay_cfg = query_cfg.temporal_decay
    if decay_cfg.enabled and hits:
        hits = apply_temporal_decay(hits, decay_cfg.half_life_days, to_epoch(now), _session_mtimes(store, hits))

    passing = [h for h in hits if h.score >= threshold]
    notice = None
    relaxed = False
    if not passing and any(h.text_score > 0 for h in hits):
        strict = _all_keywords_ids(store, cleaned, model, sources, candidates)
        passing = [h for h in hits if h.text_score > 0 and h.row.id in strict]
        relaxed = bool(passing)
    kept = select_mmr(passing, query_cfg.mmr.lambda_, limit) if query_cfg.mmr.enabled else passing[:limit]
    if relaxed:
        notice = (
            f"no result reached minScore {threshold:g}; showing {len(kept)} keyword match"
            f"{'es' if len(kept) != 1 else ''} below it"
        )
    terms = query_words(query)
    results = [_to_result(h, query_cfg.snippet_max_chars, mode, terms) for h in kept]
    results = finish_results(results, citations_enabled(citations, session_key), query_cfg.max_injected_chars)
    return SearchResponse(results, provider_name, model, label, notice=notice, relaxed=relaxed)
