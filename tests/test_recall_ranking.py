"""Recall: fusion with one-sided candidates, results as asked, identifiers first, date queries, never
empty, and bounded temporal decay. Small workspaces written here; a real index (apsw, FTS5)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from mdrecall.config.settings import parse_config
from mdrecall.retrieval.search import apply_injection_budget, merge_minmax, minmax_scale, run_search
from mdrecall.storage.sqlite import SearchRow

from .conftest import HashingProvider, search_with_default_floor, write

NOW = datetime(2023, 10, 1, tzinfo=timezone.utc)


def _row(chunk_id: str, score: float, coverage: float | None = None) -> SearchRow:
    row = SearchRow(chunk_id, f"memory/{chunk_id}.md", "memory", 1, 2, chunk_id, score)
    if coverage is not None:
        row.extra["coverage"] = coverage
    return row


def test_minmax_scale_spreads_each_side_over_zero_to_one() -> None:
    assert minmax_scale({"a": 0.2, "b": 0.3, "c": 0.25}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert minmax_scale({"a": 0.4}) == {"a": 1.0} and minmax_scale({}) == {}


def test_a_chunk_only_keyword_side_found_is_kept_and_can_win() -> None:
    # the vector side sees nothing close (cosines 0.10-0.14); the keyword side has one full match
    vector = [_row("v1", 0.14), _row("v2", 0.11), _row("v3", 0.105), _row("v4", 0.10)]
    keyword = [_row("k1", -9.0, coverage=1.0), _row("v4", -1.0, coverage=0.5)]
    hits = merge_minmax(vector, keyword, 0.7, 0.3)
    ids = [h.row.id for h in hits]
    assert set(ids) == {"v1", "v2", "v3", "v4", "k1"}
    assert ids.index("k1") < ids.index("v2")  # 0.3 * 1.0 beats 0.7 * 0.25 of a mid vector candidate
    k1 = next(h for h in hits if h.row.id == "k1")
    assert k1.vector_score == 0.0 and k1.text_score > 0.8  # one-sided: its own side's score is whole


def test_a_chunk_only_vector_side_found_keeps_its_rank_and_a_real_score() -> None:
    vector = [_row("v1", 0.62), _row("v2", 0.30)]
    keyword = [_row("k1", -2.0, coverage=0.25), _row("k2", -1.0, coverage=0.25)]
    hits = merge_minmax(vector, keyword, 0.7, 0.3)
    assert hits[0].row.id == "v1"
    assert hits[0].score >= 0.7 * 0.62 - 1e-9  # not capped below the raw weighted score of the best chunk


def test_weak_keyword_matches_do_not_count_as_full_matches() -> None:
    # the best keyword candidate shares one word of four: its scaled bm25 is multiplied by its coverage
    vector = [_row("answer", 0.40), _row("noise", 0.38)]
    keyword = [_row("noise", -3.0, coverage=0.25)]
    assert merge_minmax(vector, keyword, 0.7, 0.3)[0].row.id == "answer"


def _many_notes(ws: Path, count: int) -> None:
    for i in range(count):
        write(ws, f"memory/topics/t{i}.md", f"# Topic {i}\n\nThe espresso grinder note number {i}.\n")


def test_builtin_returns_max_results_as_asked(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _many_notes(ws, 14)
    index = make_index(ws, HashingProvider(), {"query": {"maxInjectedChars": 200}})
    index.sync()
    assert len(index.search("espresso grinder", min_score=0).results) == 6  # maxResults default
    assert len(index.search("espresso grinder", max_results=10, min_score=0).results) == 10
    assert len(index.search("espresso grinder", max_results=50, min_score=0, mode="keyword").results) == 14
    clamped = apply_injection_budget(index.search("espresso grinder", max_results=10, min_score=0).results, 200)
    assert 1 <= len(clamped) < 10 and sum(len(r.snippet) for r in clamped) <= 200  # the QMD backend's budget


def test_exact_identifier_ranks_first(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/a.md", "# Deploys\n\nThe deploy of the payment service went fine, deploy deploy deploy.\n")
    write(ws, "memory/b.md", "# Log\n\nHotfix 9f3c2ab fixed the deploy.\n")
    write(ws, "memory/c.md", "# Keys\n\nquery hybrid and vectorWeight are unrelated words here, deploy.\n")
    write(ws, "memory/d.md", "# Config\n\nWe set query.hybrid.vectorWeight to 0.6.\n")
    index = make_index(ws, HashingProvider())
    index.sync()
    assert index.search("which deploy was 9f3c2ab", min_score=0).results[0].path == "memory/b.md"
    top = index.search("what is query.hybrid.vectorWeight set to", min_score=0).results
    assert top[0].path == "memory/d.md" and top[0].score >= top[1].score


def _chat(ws: Path) -> None:
    write(ws, "memory/2023-05-08.md", "# 2023-05-08\n\n## 13:56 Ana and Ben\n\nAna: I adopted a kitten.\n")
    write(ws, "memory/2023-06-20.md", "# 2023-06-20\n\n## 09:10 Ana and Ben\n\nBen: I adopted a puppy.\n")
    write(ws, "memory/2023-09-30.md", "# 2023-09-30\n\n## 18:00 Ana and Ben\n\nAna: we adopted a turtle.\n")


def test_a_query_naming_a_month_prefers_that_months_log(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _chat(ws)
    index = make_index(ws, None)
    index.sync()
    cfg, sources = index.config.query, ["memory"]

    def top(query: str) -> str:
        return run_search(index.store, None, "fts-only", cfg, query, sources, 3, 0.0, now=NOW).results[0].path

    assert top("who adopted a pet in May 2023") == "memory/2023-05-08.md"
    assert top("who adopted a pet in June") == "memory/2023-06-20.md"
    assert top("who adopted a pet yesterday") == "memory/2023-09-30.md"
    assert top("what was adopted on 20 June") == "memory/2023-06-20.md"


def test_never_silently_empty_when_every_keyword_is_held(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _chat(ws)
    index = make_index(ws, HashingProvider())
    index.sync()
    response = search_with_default_floor(index, "turtle adopted")
    assert response.results and response.relaxed and response.results[0].path == "memory/2023-09-30.md"
    assert search_with_default_floor(index, "zebra migration plans").results == []


def test_decay_cannot_push_a_strong_old_match_below_weak_recent_ones(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/2023-01-10.md", "# 2023-01-10\n\nKowalski replaced the boiler; it cost 4200 EUR.\n")
    write(ws, "memory/2023-09-28.md", "# 2023-09-28\n\nThe boiler hummed a bit tonight.\n")
    write(ws, "memory/2023-09-27.md", "# 2023-09-27\n\nGroceries cost more this week.\n")
    write(ws, "memory/2023-09-26.md", "# 2023-09-26\n\nWe replaced the doormat.\n")
    for i in range(12):
        write(ws, f"memory/topics/t{i}.md", f"# Topic {i}\n\nUnrelated note {i} about gardening and tea.\n")
    config = {"query": {"temporalDecay": {"enabled": True, "halfLifeDays": 30}}}
    index = make_index(ws, None, parse_config(config))
    index.sync()
    query = "who replaced the boiler and what did the boiler replacement cost"
    results = run_search(index.store, None, "fts-only", index.config.query, query, ["memory"], 5, 0.0, now=NOW)
    assert results.results[0].path == "memory/2023-01-10.md"  # 263 days old: 9 half-lives, still first
    spec = parse_config({"query": {"temporalDecay": {"enabled": True, "halfLifeDays": 30, "floor": 0}}}).query
    plain = run_search(index.store, None, "fts-only", spec, query, ["memory"], 5, 0.0, now=NOW)
    assert [r.path for r in plain.results][-1] == "memory/2023-01-10.md"  # the spec's plain decay: below all weak ones
