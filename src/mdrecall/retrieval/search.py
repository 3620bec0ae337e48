"""Hybrid retrieval: FTS5 keyword hits and vector hits, merged, decayed, filtered, diversified and trimmed.

The flow of `run_search`: keyword side (spec AND query; the expanded OR query when keyword-only) and vector
side -> weighted or RRF merge -> temporal decay -> minScore (never silently empty) -> MMR or plain limit ->
citations -> injection budget. The rules themselves are pure functions in `ranking.py`; the FTS query
builders live in `fts_query.py` (re-exported here). `run_search` is the only function that touches the store
or the provider.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Literal

from mdrecall.config.settings import QueryConfig
from mdrecall.documents.context import date_phrase, with_context
from mdrecall.embeddings.base import EmbeddingProvider
from mdrecall.embeddings.centering import center_query, centering_weight
from mdrecall.retrieval.calibration import Calibration, calibration_for, cross_features, features, named_terms
from mdrecall.retrieval.crossing import Crossing
from mdrecall.retrieval.explain import SearchTrace, decay_detail, fusion_label, window_detail
from mdrecall.retrieval.ranking import (
    RRF_K,
    CitationsMode,
    age_days,
    bounded_decay,
    citation_suffix,
    citations_enabled,
    clamp_to_budget,
    decay_multiplier,
    file_date,
    format_citation,
    is_evergreen_path,
    minmax_scale,
    mmr_order,
    rrf_fuse,
    rrf_rescale,
    to_epoch,
    word_set,
)
from mdrecall.retrieval.rerank import join_notices, rerank_hits
from mdrecall.retrieval.results import Hit, SearchResponse, SearchResult
from mdrecall.retrieval.tail import drop_tail, tail_share
from mdrecall.storage.base import IndexStore, SearchRow
from mdrecall.text.bounds import bound_query, cut_notice
from mdrecall.text.dates import (
    anchor_day,
    date_ranges,
    describe_ranges,
    in_ranges,
    names_only_a_time,
    relative_spans,
    without_relative_times,
)
from mdrecall.text.fts_query import (  # noqa: F401  (re-exported: callers and tests import the builders from here)
    build_fts_query,
    build_keyword_query,
    expand_query_terms,
    fold_term,
    has_keywords,
    holds_identifier,
    identifier_phrase,
    keyword_coverage,
    keyword_match,
    query_identifiers,
    quote_term,
    split_on_stopwords,
    strip_korean_particle,
    word_terms,
)
from mdrecall.text.tokens import query_words

if TYPE_CHECKING:
    import numpy as np

MAX_CANDIDATES = 200
SearchMode = Literal["hybrid", "keyword", "vector"]


def bm25_rank_to_score(rank: float) -> float:
    """Map an FTS5 bm25 rank (lower is better) into (0, 1], higher is better.

    The spec's formula is `1 / (1 + max(0, rank))`, kept for ranks >= 0. SQLite's bm25() returns negative
    numbers for matches, which that formula maps to 1.0 for every hit and so throws the ranking away; for
    those we use `relevance / (1 + relevance)` with relevance = -rank, which keeps the order.
    """
    if not math.isfinite(rank):
        return 1.0 / (1.0 + 999.0)
    if rank < 0:
        relevance = -rank
        return relevance / (1.0 + relevance)
    return 1.0 / (1.0 + rank)


def candidate_count(max_results: int, multiplier: int) -> int:
    return min(MAX_CANDIDATES, max(1, max_results * multiplier))


def snippet_window(text: str, max_chars: int, terms: Sequence[str] = (), focus: str | None = None) -> str:
    """At most max_chars of a chunk, showing the lines that answer.

    A chunk is up to ~1600 chars and a snippet 700. `focus` (the chunk's best window: the few lines that
    scored best on both sides) is shown whole, with whole lines before it and the text after it; the snippet
    starts at the chunk's start when the focus lies within its first max_chars. Measured on LoCoMo dev
    (bench/quality/locomo_eval.py read@1): the first result's snippet holds an evidence line for .26 of the
    questions when it is the chunk's start, .64 with the focus (keyword mode .24 -> .59).
    Without a focus (or in a focus longer than the snippet), when the first matched word lies past the first
    window, the window starts at the beginning of that word's line (or a little before the word on a very
    long line), so an identifier found by keyword search is visible in the snippet.
    """
    if len(text) <= max_chars:
        return text
    offset = 0
    found = _focus_start(text, focus) if focus else None
    if found is not None:
        start, end = found
        if end <= max_chars:
            return text[:max_chars]
        if end - start < max_chars:
            # the whole focus, after two thirds of the room left (whole lines), then as much after it as fits
            # (all of the room when the chunk ends first): LoCoMo dev read@1 .641 (all the room before it:
            # .635, a third: .620)
            lead = min(start - (max_chars - (end - start)) * 2 // 3, len(text) - max_chars)
            newline = text.find("\n", lead - 1) if lead > 0 else -1
            start = 0 if lead <= 0 else (newline + 1 if 0 <= newline < start else start)
            while start and text[start] == "\n":  # no blank line to open the snippet
                start += 1
            return text[start : start + max_chars]
        offset = start  # a focus longer than a snippet (very long lines): its first matched word places it
    lowered = text.lower()
    positions = [p for p in (lowered.find(t.lower(), offset) for t in terms if t) if p >= 0]
    if not positions or min(positions) + 40 <= max_chars:
        return text[offset : offset + max_chars]
    first = min(positions)
    start = text.rfind("\n", 0, first) + 1
    if first - start > max_chars // 2:
        start = max(0, first - max_chars // 4)
    start = min(start, len(text) - max_chars)
    return text[start : start + max_chars]


def _focus_start(text: str, focus: str) -> tuple[int, int] | None:
    """Where the focus's lines sit in the chunk text: (start of its first line, end of its last), or None."""
    lines = [line for line in focus.splitlines() if line.strip()]
    if not lines:
        return None
    start = text.find(lines[0])
    if start < 0:
        return None
    last = text.find(lines[-1], start)
    end = last + len(lines[-1]) if last >= 0 else start + len(lines[0])
    return start, end


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


def merge_minmax(
    vector: Sequence[SearchRow], keyword: Sequence[SearchRow], vector_weight: float, text_weight: float
) -> list[Hit]:
    """Normalised weighted sum: each side's scores min-max scaled over its own candidates, then weighted.

    A candidate missing from one side gets 0 there: it ranked below that side's weakest candidate (or did not
    match at all). The keyword side's scaled bm25 is multiplied by the chunk's keyword coverage, so the best
    of weak matches (one common word of a question) does not count as a full match. Cosines of a small model
    bunch up in 0.1-0.5 and bm25 has no fixed range; scaling both per query lets the weights mean what they
    say. The order is the scaled sum's; the scores are put back on the
    raw weighted merge's scale (`ranking.rrf_rescale`, anchored on the best raw score) so minScore keeps
    meaning "how relevant is the best result". Measured against raw weighting and RRF in bench/quality/.
    """
    raw = merge_hybrid(vector, keyword, vector_weight, text_weight)
    if not raw:
        return []
    by_id = {hit.row.id: hit for hit in raw}
    v_scaled = minmax_scale({row.id: row.score for row in vector})
    coverage = {row.id: row.extra.get("coverage", 1.0) for row in keyword}
    bm25 = minmax_scale({row.id: bm25_rank_to_score(row.score) for row in keyword})
    t_scaled = {key: value * coverage[key] for key, value in bm25.items()}
    fused = {key: vector_weight * v_scaled.get(key, 0.0) + text_weight * t_scaled.get(key, 0.0) for key in by_id}
    for key, value in rrf_rescale(fused, raw[0].score).items():
        by_id[key].score = value
    return sort_hits(raw)


FUSIONS = {"minmax": merge_minmax, "weighted": merge_hybrid, "rrf": merge_rrf}


def apply_temporal_decay(
    hits: list[Hit],
    half_life_days: float,
    now_s: float,
    session_mtimes: dict[str, int] | None = None,
    floor: float = 0.0,
) -> list[Hit]:
    """Scale each score by its chunk's bounded decay multiplier and re-sort (evergreen notes keep their score).

    The multiplier is `ranking.bounded_decay` (`query.temporalDecay.floor`, 0.5 by default: decay at most
    halves a score), so among equally good notes the newer wins, but a strong match in an old log is not
    pushed below weak recent ones. floor 0 is the spec's plain exponential decay.
    """
    mtimes = session_mtimes or {}
    for hit in hits:
        row = hit.row
        age = age_days(row.path, row.source, mtimes.get(row.path), now_s)
        hit.score *= bounded_decay(decay_multiplier(age, half_life_days), floor)
    return sort_hits(hits)


def select_mmr(hits: list[Hit], lam: float, limit: int) -> list[Hit]:
    """Up to `limit` hits in MMR order (Jaccard over lower-cased word sets of the chunk text)."""
    order = mmr_order([h.score for h in hits], [word_set(h.row.text) for h in hits], lam, limit)
    return [hits[i] for i in order]


def chunk_lines(row: SearchRow) -> list[str] | None:
    """The chunk's text as its file lines (startLine..endLine), or None when the text is not one piece per
    line (a line longer than a chunk is cut into segments)."""
    lines = row.text.split("\n")
    return lines if len(lines) == row.end_line - row.start_line + 1 else None


def merged_row(first: SearchRow, other: SearchRow) -> SearchRow | None:
    """One row spanning two overlapping chunks of one file (the lines once each), or None when they do not
    overlap or their lines cannot be lined up. Keeps `first`'s id and scores."""
    if first.path != other.path or first.source != other.source:
        return None
    if other.end_line < first.start_line or other.start_line > first.end_line:
        return None
    a, b = (first, other) if first.start_line <= other.start_line else (other, first)
    lines_a, lines_b = chunk_lines(a), chunk_lines(b)
    if lines_a is None or lines_b is None:
        return None
    tail = lines_b[a.end_line - b.start_line + 1 :] if b.end_line > a.end_line else []
    text = "\n".join(lines_a + tail)
    end = max(a.end_line, b.end_line)
    return SearchRow(first.id, first.path, first.source, a.start_line, end, text, first.score, dict(first.extra))


def merge_overlapping(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """Up to `limit` results, best first, where a chunk overlapping a better-ranked result of the same file
    joins that result (which then spans both line ranges) instead of taking a slot of its own.

    Chunks overlap by design (`chunking.overlap`), so a passage that matches often comes back as two
    neighbouring chunks, the second repeating lines of the first and pushing a distinct result out of the
    list. Measured on LoCoMo dev (bench/quality/README.md, window blend off): hit@1 .703 -> .740, hit@5 .916
    -> .941, evidence recall@10 .894 -> .917, with results 30 % longer in lines on average (13.9 vs 10.7).
    `query.mergeOverlapping = false` gives the spec's one chunk per result.
    """
    return _merge_overlapping(hits, limit)[0]


def _merge_overlapping(hits: Sequence[Hit], limit: int) -> tuple[list[Hit], int]:
    """`merge_overlapping`'s results and how many of the leading hits they were made of (which hits fold
    into which depends on their lines only, never on their scores)."""
    kept: list[Hit] = []
    for i, hit in enumerate(hits):
        if not _fold_into(kept, hit):
            if len(kept) >= limit:
                return kept, i
            kept.append(hit)
    return kept, len(hits)


def _fold_into(kept: list[Hit], hit: Hit) -> bool:
    """Join `hit` to the first kept result it overlaps (True), then fold in any later kept result that the
    widened one now overlaps, so no two results share a line."""
    for i, held in enumerate(kept):
        row = merged_row(held.row, hit.row)
        if row is None:
            continue
        # the joined result holds both chunks: its score is the better of theirs (calibrated scores need not
        # fall with the rank; fused ones do, and keep the first's)
        # and it shows the better one's best lines
        score = max(held.score, hit.score)
        focus = held.focus if held.score >= hit.score else hit.focus
        kept[i] = Hit(row, held.vector_score, held.text_score, score, held.fused, focus)
        for later in kept[i + 1 :]:
            joined = merged_row(kept[i].row, later.row)
            if joined is not None:
                focus = focus if score >= later.score else later.focus
                score = max(score, later.score)
                kept[i] = Hit(joined, held.vector_score, held.text_score, score, held.fused, focus)
                kept.remove(later)
        return True
    return False


def _to_result(
    hit: Hit, snippet_max: int, mode: str, terms: Sequence[str] = (), keywords: Sequence[str] = ()
) -> SearchResult:
    """One result; its snippet shows the chunk's best window (or, when no vector scored the windows, the window
    that holds the keywords best)."""
    from mdrecall.retrieval.window_blend import keyword_focus

    row = hit.row
    focus = hit.focus
    if focus is None and len(row.text) > snippet_max:
        focus = keyword_focus(row.text, keywords)
    return SearchResult(
        path=row.path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=hit.score,
        snippet=snippet_window(row.text, snippet_max, terms, focus),
        source=row.source,
        vector_score=hit.vector_score if mode != "keyword" else None,
        text_score=hit.text_score if mode != "vector" else None,
        fused_score=hit.fused,
    )


def finish_results(results: list[SearchResult], with_citations: bool, budget: int | None = None) -> list[SearchResult]:
    """Append `Source: path#Lx-Ly` when citations are on, then (budget given) clamp the snippets to it."""
    suffixes: list[str] = []
    for result in results:
        if with_citations:
            result.citation = format_citation(result.path, result.start_line, result.end_line)
            result.snippet = result.snippet.strip()
            suffixes.append(citation_suffix(result.citation))
        else:
            suffixes.append("")
    if budget is None:
        for result, suffix in zip(results, suffixes, strict=True):
            result.snippet += suffix
        return results
    snippets = clamp_to_budget([r.snippet for r in results], suffixes, budget)
    for result, snippet in zip(results, snippets, strict=False):
        result.snippet = snippet
    return results[: len(snippets)]


def apply_injection_budget(results: list[SearchResult], budget: int) -> list[SearchResult]:
    """Clamp results (snippet + citation line) to `budget` characters in total, best first.

    The spec applies `query.maxInjectedChars` to the QMD backend's results only; the builtin backend returns
    `maxResults` results. Call this after `run_search` on results whose snippets already carry citations.
    """
    snippets = clamp_to_budget([r.snippet for r in results], [""] * len(results), budget)
    for result, snippet in zip(results, snippets, strict=False):
        result.snippet = snippet
    return results[: len(snippets)]


def _decays_by_mtime(path: str) -> bool:
    return not is_evergreen_path(path) and file_date(path) is None


def _session_mtimes(store: IndexStore, hits: Sequence[Hit]) -> dict[str, int]:
    """mtime (ms), from the files table, of the hits that decay by mtime: session transcripts and undated
    files outside memory/ (extra paths)."""
    paths = sorted({h.row.path for h in hits if h.row.source == "sessions" or _decays_by_mtime(h.row.path)})
    if not paths:
        return {}
    return store.session_mtimes(paths)


def _keyword_rows(
    store: IndexStore, query: str, model: str, sources: Sequence[str], limit: int, expanded: bool, forms: bool = False
) -> list[SearchRow]:
    """Keyword hits. With the expanded OR query, each row's `extra["coverage"]` holds the share of keywords
    it contains and rows are re-ordered by bm25 score x coverage: one common word shared with a question
    must not outrank a chunk holding all of its keywords, nor carry a high text score into the merge.
    `forms` (query.wordForms) lets the OR query and the coverage meet other forms of a word (word_forms.py)."""
    if not expanded:
        fts_query = build_fts_query(query)
        return store.keyword_search(fts_query, model, sources, limit) if fts_query else []
    terms = expand_query_terms(query)
    if not terms:
        return []
    matches = dict.fromkeys(keyword_match(t, forms) for t in terms)  # "deploys deployed": one "deploy"* unit
    rows = store.keyword_search(" OR ".join(matches), model, sources, limit)
    for row in rows:
        row.extra["coverage"] = keyword_coverage(terms, with_context(path_context(row.path), row.text), forms)
    return sorted(rows, key=lambda r: -bm25_rank_to_score(r.score) * r.extra["coverage"])


def path_context(path: str) -> str:
    """The part of a chunk's indexed context that its path alone gives (the log's date), for coverage."""
    day = file_date(path)
    return date_phrase(day) if day is not None else ""


def _identifier_rows(
    store: IndexStore, identifiers: Sequence[str], model: str, sources: Sequence[str], limit: int
) -> list[SearchRow]:
    """Chunks holding an identifier of the query verbatim (found by its FTS phrase, checked on the text)."""
    rows: dict[str, SearchRow] = {}
    for ident in identifiers:
        phrase = identifier_phrase(ident)
        if phrase is None:
            continue
        for row in store.keyword_search(phrase, model, sources, limit):
            if holds_identifier(row.text, ident) and row.id not in rows:
                row.extra["coverage"] = 1.0
                row.extra["identifier"] = True  # its coverage is not the share of keywords it holds
                rows[row.id] = row
    return list(rows.values())


IDENTIFIER_BOOST = 0.25


def boost_identifiers(hits: list[Hit], identifiers: Sequence[str], boost: float = IDENTIFIER_BOOST) -> list[Hit]:
    """Hits holding the query's exact identifiers verbatim move up: for each one held, score +
    boost * (1 - score).

    A boost, not a hard "holders first" rule: in notes an identifier (a hash, a ticket, a config key) names
    the note it is in, and the boost lifts that note above the rest; but a dotted name such as
    `functools.lru_cache` is also quoted in passing by pages about something else, while the page that
    documents it writes `lru_cache`. Ranking every holder first cost 0.04 nDCG@10 on the Python-docs
    collection (bench/quality/README.md); the boost keeps both cases right.
    """
    if not identifiers:
        return hits
    for hit in hits:
        for ident in identifiers:
            if holds_identifier(hit.row.text, ident):
                hit.score += boost * (1.0 - hit.score)
    return sort_hits(hits)


DATE_BOOST = 0.25
RELATIVE_DATE_BOOST = 0.75
DATED_CANDIDATES = 100
MAX_LOG_DAYS = 62  # the newest days a question only about a time looks up by date ("in 2024": its last 62 logs)
SHORT_RANGE_DAYS = 31  # "yesterday" .. "last month": the time is what the question is about


def _short(ranges: list[tuple[date, date]]) -> bool:
    return all((end - start).days < SHORT_RANGE_DAYS for start, end in ranges)


def boost_dates(
    hits: list[Hit],
    query: str,
    today: date,
    ranges: list[tuple[date, date]] | None = None,
    relative: bool = False,
) -> list[Hit]:
    """Daily logs of a time the query names ("in May 2023", "yesterday", "last week") move up: score +
    DATE_BOOST * (1 - score). A boost, not a filter: the answer may sit in a note written later. `ranges`:
    the query's day ranges when the caller has them (read against `today` otherwise). A time said relative to
    today ("what did we decide yesterday") is what the question is about, so it counts more
    (RELATIVE_DATE_BOOST)."""
    ranges = date_ranges(query, today) if ranges is None else ranges
    if not ranges:
        return hits
    boost = RELATIVE_DATE_BOOST if relative else DATE_BOOST
    for hit in hits:
        if in_ranges(file_date(hit.row.path), ranges):
            hit.score += boost * (1.0 - hit.score)
    return sort_hits(hits)


_PREFIXABLE = re.compile(r"[a-z0-9]{3,}")


def _word_or_its_forms(term: str) -> str:
    """A plain word of 3+ letters as an FTS5 prefix ("run" also finds "runs", "running"); anything else as
    it is. The index does not stem, and a question rarely uses the note's exact form of a verb."""
    return quote_term(term) + "*" if _PREFIXABLE.fullmatch(term) else quote_term(term)


def _all_keywords_ids(store: IndexStore, query: str, model: str, sources: Sequence[str], limit: int) -> set[str]:
    """Chunks holding every keyword of the query (stop words aside; each word in any of its forms): the only
    keyword matches strong enough to be shown below minScore. A chunk sharing one word with an off-topic
    question is not."""
    terms = expand_query_terms(query)
    if not terms:
        return set()
    rows = store.keyword_search(" AND ".join(_word_or_its_forms(t) for t in terms), model, sources, limit)
    return {row.id for row in rows}


def _query_vector(provider: EmbeddingProvider, query: str) -> np.ndarray | None:
    """The query's unit vector, or None when it carries no meaning (a zero vector: keyword search answers)."""
    import numpy as np  # only vector search needs it: keyword-only start-up stays light

    vector = np.asarray(provider.embed_query(query), dtype=np.float32)
    norm = float(np.linalg.norm(vector)) if vector.size else 0.0
    return vector / norm if norm > 0 else None


def _vector_rows(
    store: IndexStore, vector: np.ndarray | None, model: str, sources: Sequence[str], limit: int
) -> list[SearchRow]:
    return [] if vector is None else store.vector_search(vector, model, sources, limit)


def _start_vector_rows(
    store: IndexStore, vector: np.ndarray | None, model: str, sources: Sequence[str], limit: int, mode: str
) -> Callable[[], list[SearchRow]]:
    """The vector side, finished by the returned function: begun beside the keyword side in hybrid mode
    (`IndexStore.start_vector_search`), done at once otherwise (vector-only: its scan may use both cores)."""
    if vector is None or mode != "hybrid":
        rows = _vector_rows(store, vector, model, sources, limit)
        return lambda: rows
    return store.start_vector_search(vector, model, sources, limit)


def _settled(rows: list[SearchRow], n: int) -> list[SearchRow] | None:
    """The first `n` of rows ranked by the store (ties by rowid) when they are the first `n` as the search sorts
    them (ties by path): the row after them scores lower. None when a tie crosses the cut."""
    return rows[:n] if len(rows) <= n or rows[n].score < rows[n - 1].score else None


def _vector_prefix(
    store: IndexStore, vector: np.ndarray, model: str, sources: Sequence[str], limit: int, cut: int, first: int
) -> tuple[list[SearchRow], Callable[[], list[SearchRow]] | None]:
    """The vector rows of a vector-only search with calibrated scores and nothing that re-orders its candidates
    (no date boost, no decay): it calibrates the best `cut` (`top_count`) and drops the rest, and its results
    are made of the first few. So only the rows of the best `first` are read (~5 us a row; one more tells
    whether a tie crosses the cut: the store orders ties by rowid, the search by path), with a function that
    gives the best `cut` when the search needs them (the store remembers its ranking), or every `limit` when a
    tie crosses that cut too (as good as never). Returns (rows, None) when the rows are all the search can use."""
    rows = store.vector_search(vector, model, sources, limit, read=first + 1)
    if len(rows) > first + 1:  # a store that reads every row with its ranking
        settled = _settled(rows, cut)
        return (settled if settled is not None else rows), None

    def best() -> list[SearchRow]:
        settled = _settled(store.vector_search(vector, model, sources, limit, read=cut + 1), cut)
        return settled if settled is not None else store.vector_search(vector, model, sources, limit)

    if len(rows) <= first:  # every row there is
        return rows, None
    start = _settled(rows, first)
    return (start, best) if start is not None else (best(), None)


# Only the best fused candidates are re-scored by their windows: the blend decides the first results, and
# cutting windows and asking FTS for context terms costs time per candidate. LoCoMo dev: 30 scores as all
# candidates do (20: hit@1 .755, ev@10 .919); search CPU p50 at 11k chunks (bench/quality/search_latency.py)
# 1.26x the code before the blend. A search asking for many results blends 3 per result asked (the Python
# docs eval asks 40: nDCG@10 .897 / R@5 .915 with 30, .900 / .923 with 120).
WINDOW_CANDIDATES = 30
WINDOW_CANDIDATES_PER_RESULT = 3


def top_count(limit: int) -> int:
    """How many of the best fused candidates are re-scored (window blend) and calibrated."""
    return max(WINDOW_CANDIDATES, WINDOW_CANDIDATES_PER_RESULT * limit)


def window_vectors_of(store: IndexStore, rows: Sequence[SearchRow], cache: dict[str, np.ndarray] | None) -> dict:
    """The rows' stored window vectors, read once per search (`cache` holds what was already read)."""
    if cache is None:
        return store.window_vectors([r.id for r in rows])
    missing = [r.id for r in rows if r.id not in cache]
    if missing:
        cache.update(store.window_vectors(missing))
    return cache


def calibrate_hits(
    store: IndexStore,
    calibration: Calibration,
    hits: list[Hit],
    terms: Sequence[str],
    name_missing: bool,
    vector: np.ndarray,
    ranges: list[tuple[date, date]],
    forms: bool,
    limit: int,
    cache: dict[str, np.ndarray] | None = None,
    crossing: Crossing | None = None,
) -> list[Hit]:
    """The best `top_count(limit)` hits, in the same order, each scored by its calibrated probability
    (calibration.py) from what it holds itself: its best window's cosine, its keyword coverage, whether the
    query names something the index never mentions, whether it is a log of a time the query names. A hit
    written in another language than the query (`crossing`) is scored by the calibration's cross-language
    model. The fused score stays in `Hit.fused`. Later candidates are dropped: they are never shown."""
    import numpy as np

    top = hits[: top_count(limit)]
    # a vector-side candidate's score already is its best window's cosine with this query vector (exact)
    unscored = [h.row for h in top if h.vector_score <= 0.0]
    vectors = window_vectors_of(store, unscored, cache) if unscored else {}
    for hit in top:
        row = hit.row
        matrix = vectors.get(row.id) if hit.vector_score <= 0.0 else None
        cosine = float(np.max(matrix @ vector)) if matrix is not None and len(matrix) else hit.vector_score
        coverage = row.extra.get("coverage") if not row.extra.get("identifier") else None
        if not terms:  # the query has no keyword (stop words, symbols): nothing a chunk could be seen to hold
            coverage = 0.0
        elif coverage is None:  # keyword rows of the OR query carry it already (the same terms and forms)
            coverage = keyword_coverage(terms, with_context(path_context(row.path), row.text), forms)
        dated = in_ranges(file_date(row.path), ranges)
        hit.fused = hit.score
        if crossing is not None and calibration.cross is not None and crossing.applies(row.id, row.text):
            values = cross_features(cosine, crossing.holds_keywords(), crossing.name_missing(name_missing), dated)
            hit.score = calibration.cross.probability(values)
            continue
        hit.score = calibration.probability(features(cosine, coverage, name_missing, dated))
    return top


def names_missing(store: IndexStore, query: str, terms: Sequence[str], forms: bool) -> bool:
    """The query names something (a capitalised keyword past its first word) that no indexed chunk holds."""
    names = named_terms(query, terms)
    if not names:
        return False
    matches = [keyword_match(t, forms) for t in names]
    return len(store.terms_present(matches)) < len(set(matches))


IndexedFiles = Callable[[], list[tuple[str, str, int]]]  # (source, path, mtime ms) of every indexed file


def indexed_files(store: IndexStore, sources: Sequence[str]) -> IndexedFiles:
    """The files of these sources as one search needs them: listed on the first call only (a search that says no
    time never lists them), then shared by `query_today` and `logs_of_that_time`."""

    @functools.cache
    def files() -> list[tuple[str, str, int]]:
        return [(source, path, row.mtime) for source in sources for path, row in store.get_files(source).items()]

    return files


def query_today(files: IndexedFiles, now_s: float, query: str) -> date:
    """The day the query's relative times are read against: today, or the newest daily log's day when the
    workspace is an archive (`dates.anchor_day`). The files are only listed when the query says such a time."""
    today = datetime.fromtimestamp(now_s, timezone.utc).date()
    if not relative_spans(query):
        return today
    days = [file_date(path) for _, path, _ in files()]
    newest = max((d for d in days if d is not None and d <= today), default=None)
    return anchor_day(today, newest)


def logs_of_that_time(files: IndexedFiles, query: str, ranges: list[tuple[date, date]]) -> dict[str, date] | None:
    """The files written in the time a query asks only about ("what happened yesterday", "what did we decide
    in March": `dates.names_only_a_time`), by path: daily logs by the date in their name, session transcripts
    by their mtime. None for any other query. Only these can answer such a question: any other note could
    only share a stray word with it."""
    if not ranges or not names_only_a_time(expand_query_terms(query), query):
        return None
    found: dict[str, date] = {}
    for source, path, mtime in files():
        day = file_date(path)
        if day is None and source == "sessions":
            day = datetime.fromtimestamp(mtime / 1000, timezone.utc).date()
        if day is not None and in_ranges(day, ranges):
            found[path] = day
    return found


def _log_rows(
    store: IndexStore, logs: dict[str, date], model: str, sources: Sequence[str], limit: int
) -> list[SearchRow]:
    """Chunks of these daily logs, found by the date each chunk's indexed context carries (`2026 11 24`)."""
    days = sorted({day for path, day in logs.items() if file_date(path) is not None}, reverse=True)[:MAX_LOG_DAYS]
    if not days:
        return []
    expression = " OR ".join(f'"{day.year} {day.month:02d} {day.day:02d}"' for day in days)
    return [row for row in store.keyword_search(expression, model, sources, limit) if row.path in logs]


def _blend_windows(
    store: IndexStore,
    provider: EmbeddingProvider,
    query_cfg: QueryConfig,
    hits: list[Hit],
    query: str,
    vector: np.ndarray | None,
    limit: int,
    trace: SearchTrace | None = None,
    cache: dict[str, np.ndarray] | None = None,
) -> list[Hit]:
    """Hybrid min-max hits re-scored with their best window (retrieval/window_blend.py), when windows are stored."""
    from mdrecall.indexing.sync import window_plan
    from mdrecall.retrieval.window_blend import best_window_scores, blend

    weight = query_cfg.hybrid.window_weight
    plan = window_plan(provider)
    if weight <= 0 or plan is None or vector is None or not hits:
        return hits
    rows = [h.row for h in hits[: top_count(limit)]]
    vectors = window_vectors_of(store, rows, cache)
    weights = query_cfg.hybrid.normalized_weights()
    terms = expand_query_terms(query)
    held = store.terms_held([r.id for r in rows], terms)
    context = {key: {fold_term(t) for t in found} for key, found in held.items()}
    best: dict[str, tuple[str, float]] = {}
    windows = best_window_scores(rows, vectors, vector, terms, plan, weights, path_context, context, best)
    if not windows:
        return hits
    scores = blend({h.row.id: h.score for h in hits}, windows, weight)
    for hit in hits:
        hit.score = scores[hit.row.id]
        if hit.row.id in best:
            hit.focus = best[hit.row.id][0]
    if trace is not None:
        trace.stage("window", "best window", hits, lambda h: window_detail(h, best, weight))
    return sort_hits(hits)


def _resolve_mode(provider: EmbeddingProvider | None, query_cfg: QueryConfig, mode: SearchMode) -> SearchMode:
    """No provider -> keyword; hybrid disabled -> vector; vectorWeight 0 -> keyword."""
    hybrid_cfg = query_cfg.hybrid
    if provider is None or not hybrid_cfg.enabled and mode == "hybrid":
        mode = "keyword" if provider is None else "vector"
    if mode == "hybrid" and hybrid_cfg.vector_weight == 0:
        mode = "keyword"
    return mode


# bm25 relevance below this for every hit means FTS5 clamped every IDF (a word in half of the chunks or more
# gets an IDF of 1e-6): bm25 then says nothing about how well a chunk matches.
UNINFORMATIVE_BM25 = 1e-3


def keyword_only_hits(keyword: Sequence[SearchRow]) -> list[Hit]:
    """Keyword-mode hits scored by bm25, or by keyword coverage alone when bm25 carries no information.

    In a workspace of a few files every query word sits in half of the chunks, so bm25 scores every match
    ~0.000 and minScore hides them all (they came back only through the never-empty rule, with a notice). The
    share of the query's keywords a chunk holds is then the honest score: 1.0 when it holds all of them;
    bm25's order (term frequency, length) still ranks chunks holding the same share.
    """
    hits = merge_hybrid([], keyword, 0.0, 1.0)
    if not hits or any(-row.score >= UNINFORMATIVE_BM25 for row in keyword):
        return hits
    for hit in hits:
        hit.text_score = hit.score = float(hit.row.extra.get("coverage", 1.0))
    return sorted(hits, key=lambda h: -h.score)  # stable: bm25's order (term frequency) among equal shares


def _fuse(
    store: IndexStore, query_cfg: QueryConfig, mode: SearchMode, vector: list[SearchRow], keyword: list[SearchRow]
) -> list[Hit]:
    if mode == "keyword":
        return keyword_only_hits(keyword)
    if mode == "vector":
        return merge_hybrid(vector, [], 1.0, 0.0)
    vector_weight, text_weight = query_cfg.hybrid.normalized_weights()
    if not store.fts.available:
        vector_weight, text_weight = 1.0, 0.0
    return FUSIONS[query_cfg.hybrid.mode](vector, keyword, vector_weight, text_weight)


def _merge_rows(first: list[SearchRow], extra: list[SearchRow]) -> list[SearchRow]:
    seen = {row.id for row in first}
    return first + [row for row in extra if row.id not in seen]


def _apply_min_score(
    store: IndexStore,
    hits: list[Hit],
    threshold: float,
    query: str,
    model: str,
    sources: Sequence[str],
    limit: int,
    relax: bool = True,
    abstain_below: float = 0.0,
) -> tuple[list[Hit], bool]:
    """Hits at or above minScore, none when the best is below `abstain_below`. With `relax` (no minScore set
    by the caller or the config) never silently empty: when none pass but chunks hold every keyword of the
    query, those are kept (relaxed = True). A minScore the caller set is a hard floor (`relax` False)."""
    best = max((h.score for h in hits), default=0.0)
    passing = [h for h in hits if h.score >= threshold] if best >= abstain_below else []
    if passing or not relax or not any(h.text_score > 0 for h in hits):
        return passing, False
    strict = _all_keywords_ids(store, query, model, sources, limit)
    passing = [h for h in hits if h.text_score > 0 and h.row.id in strict]
    return passing, bool(passing)


NOTHING = "nothing in memory matches"


def empty_notice(hits: Sequence[Hit], threshold: float, abstain_below: float, calibrated: bool) -> str:
    """Why a search answers nothing, in words an agent reads as "no memory" (not as an error)."""
    if not hits:
        return NOTHING
    best = max(h.score for h in hits)
    kind = "estimated chance" if calibrated else "score"
    if best < abstain_below and threshold <= abstain_below:
        return f"{NOTHING} (best {kind} {best:.3f}, below {abstain_below:g})"
    return f"{NOTHING} minScore {threshold:g} (best {kind} {best:.3f})"


def shown_count(hits: Sequence[Hit], query_cfg: QueryConfig, limit: int) -> int | None:
    """How many of the leading hits `select_results` makes the results of, whatever their scores, when every
    hit is passed to it in this order; None with MMR (its order follows the scores)."""
    if query_cfg.mmr.enabled:
        return None
    if query_cfg.merge_overlapping:
        return _merge_overlapping(hits, limit)[1]
    return min(limit, len(hits))


def select_results(hits: list[Hit], query_cfg: QueryConfig, limit: int) -> list[Hit]:
    """The results shown: MMR order when it is on, overlapping chunks merged when that is on, `limit` of them."""
    merge = query_cfg.merge_overlapping
    if query_cfg.mmr.enabled:
        hits = select_mmr(hits, query_cfg.mmr.lambda_, len(hits) if merge else limit)
    return merge_overlapping(hits, limit) if merge else hits[:limit]


def run_search(
    store: IndexStore,
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
    explain: bool = False,
    default_min_score: float | None = None,
) -> SearchResponse:
    """Search the index: keyword side (+ identifier phrases) and vector side -> fusion (min-max, weighted or
    RRF) -> date boost -> identifiers first -> temporal decay -> calibrated scores -> minScore / answer
    floor -> MMR/limit -> citations.

    Returns `max_results` results (config `maxResults` by default): the injection budget is the QMD
    backend's (`apply_injection_budget`). The keyword side is the OR query (stop words dropped) unless
    `query.hybrid.keywordQuery` (or `hybrid_keyword_query`) says "and". `citations` defaults to "off" so that
    library/CLI callers get plain snippets; the memory_search tool passes the configured mode and its session
    key. `now` (tests fix it) anchors relative dates and decay. `explain` gives each result the score after
    every stage (`SearchResult.explain`, retrieval/explain.py).

    Scores: with `query.scoring = "calibrated"` and a model that has a calibration (calibration.py), each
    result's score is its estimated chance of holding the answer, whatever else was found; the order stays
    the fusion's. A `min_score` given here (or `query.minScore` in the config) is a hard floor on it. Without
    one, the floor is 0 with a calibration (`default_min_score`, the model's floor, or `query.minScore`'s
    default without), the search answers nothing when its best result is below `query.abstainBelow` (the
    calibration's by default), results under `query.relativeFloor` x the best one's score are not listed
    (tail.py), and the never-empty rule may show keyword matches below (relaxed, said so).
    An empty answer carries the notice "nothing in memory matches".
    """
    limit = max_results if max_results is not None else query_cfg.max_results
    strict = min_score is not None or "min_score" in query_cfg.model_fields_set
    provider_name = provider.id if provider is not None else "none"
    cleaned = bound_query(query)  # at most MAX_QUERY_WORDS words: a long prompt costs a bounded time
    mode = _resolve_mode(provider, query_cfg, mode)
    label = "fts-only" if provider is None else mode
    if not cleaned:
        return SearchResponse([], provider_name, model, label, notice="empty query")

    now_s = to_epoch(now)
    files = indexed_files(store, sources)
    today = query_today(files, now_s, cleaned)
    ranges = date_ranges(cleaned, today)
    then = logs_of_that_time(files, cleaned, ranges)
    if then is not None and not then:
        past = [(start, end) for start, end in ranges if start <= today] or ranges
        return SearchResponse([], provider_name, model, label, notice=f"nothing in memory from {describe_ranges(past)}")
    # a time of days or weeks said relative to today ("yesterday", "last week", "last month") is what the
    # question is about: its logs are looked for deeper and boosted more, and its words ("last", "week") stay
    # off the keyword side (a log saying "last night" is no better a match). Longer ones ("last year", "in the
    # spring") are read as dates are: people also quote them ("we went on a road trip last year")
    relative = bool(ranges) and bool(relative_spans(cleaned)) and _short(ranges)
    candidates = candidate_count(limit, query_cfg.hybrid.candidate_multiplier)
    if relative:
        candidates = max(candidates, DATED_CANDIDATES)
    expanded = mode == "keyword" or (hybrid_keyword_query or query_cfg.hybrid.keyword_query) == "or"
    what = (without_relative_times(cleaned) or cleaned) if relative else cleaned
    identifiers = query_identifiers(what) if mode != "vector" else []
    query_vector = _query_vector(provider, cleaned) if provider and mode != "keyword" else None
    if provider is not None and query_vector is not None:
        query_vector = center_query(provider, query_vector, centering_weight(provider, query_cfg.centering))
    # hybrid: the store's vector scan runs beside the keyword side (IndexStore.start_vector_search)
    vector_model = provider.model if provider else model
    calibration = calibration_for(model, query_cfg.scoring, cleaned) if query_vector is not None else None
    decay_cfg = query_cfg.temporal_decay
    reorders = bool(ranges) or decay_cfg.enabled or explain  # (explain: every candidate's scores are shown)
    more: Callable[[], list[SearchRow]] | None = None  # the rest of the vector rows the search may need
    if mode == "vector" and query_vector is not None and calibration is not None and not reorders:
        cut, first = top_count(limit), limit + 2  # `limit` results and a chunk that may join one of them
        vector_rows, more = _vector_prefix(store, query_vector, vector_model, sources, candidates, cut, first)
        finish_vector = lambda: vector_rows  # noqa: E731
    else:
        finish_vector = _start_vector_rows(store, query_vector, vector_model, sources, candidates, mode)
    keyword: list[SearchRow] = []
    if mode != "vector":
        keyword = _keyword_rows(store, what, model, sources, candidates, expanded, query_cfg.word_forms)
        keyword = _merge_rows(keyword, _identifier_rows(store, identifiers, model, sources, candidates))
        if then:
            keyword = _merge_rows(keyword, _log_rows(store, then, model, sources, candidates))
    vector = finish_vector()

    windows: dict[str, np.ndarray] = {}
    hits = _fuse(store, query_cfg, mode, vector, keyword)
    trace = _start_trace(store, query_cfg, mode, vector, keyword, hits) if explain else None
    if mode == "hybrid" and provider is not None and query_cfg.hybrid.mode == "minmax" and store.fts.available:
        hits = _blend_windows(store, provider, query_cfg, hits, what, query_vector, limit, trace, windows)
    hits = boost_dates(hits, cleaned, today, ranges, relative=relative)
    if then:  # a question only about a time: the files of that time answer it, when the candidates hold any
        hits = [hit for hit in hits if hit.row.path in then] or hits
    if trace is not None:
        trace.stage("date", "date boost", hits, lambda h: "a daily log of a time the query names")
    hits = boost_identifiers(hits, identifiers)
    if trace is not None:
        held = lambda h: ", ".join(i for i in identifiers if holds_identifier(h.row.text, i))  # noqa: E731
        trace.stage("identifier", "identifier boost", hits, lambda h: f"holds {held(h)} verbatim")
    if decay_cfg.enabled and hits:
        mtimes = _session_mtimes(store, hits)
        hits = apply_temporal_decay(hits, decay_cfg.half_life_days, now_s, mtimes, decay_cfg.floor)
        if trace is not None:
            cfg = decay_cfg
            trace.stage(
                "decay", "temporal decay", hits, lambda h: decay_detail(h, cfg.half_life_days, now_s, mtimes, cfg.floor)
            )

    if min_score is not None:
        threshold = min_score
    elif strict or calibration is None:
        threshold = query_cfg.min_score if strict or default_min_score is None else default_min_score
    else:
        threshold = 0.0
    abstain = query_cfg.abstain_below
    if abstain is None:
        abstain = calibration.abstain_below if calibration is not None and not strict else 0.0
    if calibration is not None and hits:
        # a query of stop words alone is searched by them, but no chunk holds what it asks by holding them
        terms = expand_query_terms(what) if has_keywords(what) else []
        forms = query_cfg.word_forms
        missing = names_missing(store, what, terms, forms)
        top = hits[: top_count(limit)]
        crossing = Crossing(store, what, terms, forms) if calibration.cross is not None else None

        def calibrated(part: list[Hit]) -> list[Hit]:
            return calibrate_hits(
                store, calibration, part, terms, missing, query_vector, ranges, forms, limit, windows, crossing
            )

        # no floor above 0, no reranker, no explanation: only the hits the results are made of need a score,
        # unless none of them reaches the answer floor (then whether to answer at all depends on every one)
        shown = None
        if threshold <= 0 and limit > 0 and not then and trace is None and not query_cfg.rerank.enabled:
            shown = shown_count(top, query_cfg, limit)
        if more is not None and (shown is None or shown >= len(top)):  # the rows read so far do not settle them
            top, more = _fuse(store, query_cfg, mode, more(), [])[: top_count(limit)], None
            shown = shown_count(top, query_cfg, limit) if shown is not None else None
        shown = len(top) if shown is None else shown
        hits = calibrated(top[:shown])
        if more is not None and max(h.score for h in hits) < abstain:  # every candidate decides: read them
            top = _fuse(store, query_cfg, mode, more(), [])[: top_count(limit)]
        if shown < len(top) and max(h.score for h in hits) < abstain:
            hits += calibrated(top[shown:])
        if trace is not None:
            trace.stage("calibrated", "estimated chance", hits, lambda h: "the chance it holds the answer")
    if then and not strict and any(hit.row.path in then for hit in hits):
        threshold, abstain = 0.0, 0.0  # the logs of the time asked about answer it, whatever they say
    # never empty by keyword matches only when the query has a keyword ("and the" is matched by every chunk)
    relax = not strict and has_keywords(what)
    passing, relaxed = _apply_min_score(
        store, hits, threshold, what, model, sources, candidates, relax=relax, abstain_below=abstain
    )
    if trace is not None:
        floor = max(threshold, abstain)
        why = f"below {floor:g}, kept: it holds every keyword" if relaxed else f">= minScore {threshold:g}"
        trace.stage("minScore", "minScore", passing, lambda h: why)
    passing, rerank_notice = rerank_hits(  # off by default
        query_cfg.rerank, cleaned, passing, identifiers, keep_scores=calibration is not None
    )
    if trace is not None:
        trace.stage("rerank", "reranker", passing, lambda h: f"reranked ({query_cfg.rerank.weight:g} reranker weight)")
    kept = select_results(passing, query_cfg, limit)
    # the tail floor; not for a question only about a time, whose logs all answer it (whatever they score)
    if calibration is not None and not relaxed and not then and (not strict or query_cfg.relative_floor is not None):
        kept = drop_tail(kept, tail_share(query_cfg, calibration))
    notice = None
    if relaxed:
        floor = max(threshold, abstain)
        notice = (
            f"no result reached {'minScore' if threshold >= abstain else 'the answer floor'} {floor:g}; "
            f"relaxed: showing {len(kept)} keyword match{'es' if len(kept) != 1 else ''} below it"
        )
    elif not kept:
        notice = empty_notice(hits, threshold, abstain, calibration is not None)
    notice = join_notices(notice, rerank_notice, cut_notice(query, cleaned))
    words, keywords = query_words(cleaned), expand_query_terms(what)  # the keywords the ranking used
    results = [_to_result(h, query_cfg.snippet_max_chars, mode, words, keywords) for h in kept]
    if trace is not None:
        for result, hit in zip(results, kept, strict=True):
            result.explain = trace.for_hit(hit)
    results = finish_results(results, citations_enabled(citations, session_key))
    scoring = "calibrated" if calibration is not None else "fused"
    return SearchResponse(results, provider_name, model, label, notice=notice, relaxed=relaxed, scoring=scoring)


def _start_trace(
    store: IndexStore,
    query_cfg: QueryConfig,
    mode: str,
    vector: list[SearchRow],
    keyword: list[SearchRow],
    hits: list[Hit],
) -> SearchTrace:
    """The explanation's first stage: both sides' raw scores and the fused score (explain=True only)."""
    weights: tuple[float, float] | None = None
    if mode == "hybrid":
        weights = query_cfg.hybrid.normalized_weights() if store.fts.available else (1.0, 0.0)
    trace = SearchTrace(mode, query_cfg.hybrid.mode if mode == "hybrid" else None, weights)
    trace.inputs(vector, keyword, bm25_rank_to_score)
    by_coverage = mode == "keyword" and bool(hits) and not any(-r.score >= UNINFORMATIVE_BM25 for r in keyword)
    label = fusion_label(mode, query_cfg.hybrid.mode, by_coverage)
    trace.stage("fusion", "fusion", hits, lambda h: label)
    return trace
