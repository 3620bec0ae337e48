"""Ranking pieces (pure functions) and the search flow over a real index."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mdrecall.retrieval.search import bm25_rank_to_score, build_fts_query, candidate_count, merge_hybrid
from mdrecall.storage.sqlite import SearchRow

from .conftest import HashingProvider, search_with_default_floor, write


def test_fts_query_quotes_and_and_joins_unicode_tokens() -> None:
    assert build_fts_query("hello world") == '"hello" AND "world"'
    assert build_fts_query("memorySearch.query.hybrid") == '"memorySearch" AND "query" AND "hybrid"'
    assert build_fts_query("café Zürich 東京 42") == '"café" AND "Zürich" AND "東京" AND "42"'
    # NFC: a decomposed é becomes the composed one
    assert build_fts_query("cafe\u0301") == '"caf\u00e9"'


@pytest.mark.parametrize("blank", ["", "   ", "!!! ... ---", '"', "()*"])
def test_fts_query_blank_means_no_keyword_search(blank: str) -> None:
    assert build_fts_query(blank) is None


def test_fts_query_neutralises_fts_syntax() -> None:
    query = build_fts_query('NEAR(a b) OR c* -d text:e "f')
    assert query == '"NEAR" AND "a" AND "b" AND "OR" AND "c" AND "d" AND "text" AND "e" AND "f"'


def test_bm25_score_follows_spec_for_non_negative_ranks() -> None:
    assert bm25_rank_to_score(0) == 1.0
    assert bm25_rank_to_score(1) == 0.5
    assert bm25_rank_to_score(3) == 0.25
    assert math.isclose(bm25_rank_to_score(float("nan")), 1 / 1000)


def test_bm25_score_keeps_order_for_fts5_negative_ranks() -> None:
    scores = [bm25_rank_to_score(r) for r in (-12.0, -4.0, -1.0, -0.1)]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s < 1 for s in scores)


def test_candidates_are_capped_at_200() -> None:
    assert candidate_count(6, 4) == 24
    assert candidate_count(100, 4) == 200
    assert candidate_count(0, 4) == 1


def _row(chunk_id: str, score: float) -> SearchRow:
    return SearchRow(chunk_id, f"{chunk_id}.md", "memory", 1, 2, f"text {chunk_id}", score)


def test_weighted_merge() -> None:
    vector = [_row("a", 0.9), _row("b", 0.5)]
    keyword = [_row("b", 0.0), _row("c", 1.0)]  # bm25 ranks: 0 -> 1.0, 1 -> 0.5
    hits = {h.row.id: h for h in merge_hybrid(vector, keyword, 0.7, 0.3)}
    assert math.isclose(hits["a"].score, 0.63)
    assert math.isclose(hits["b"].score, 0.7 * 0.5 + 0.3 * 1.0)
    assert math.isclose(hits["c"].score, 0.3 * 0.5)
    ordered = [h.row.id for h in merge_hybrid(vector, keyword, 0.7, 0.3)]
    assert ordered == ["b", "a", "c"]


@pytest.fixture
def hashed_index(workspace: Path, make_index):
    index = make_index(workspace, HashingProvider())
    index.sync()
    return index


def test_exact_identifier_found_by_keyword_side(hashed_index) -> None:
    response = hashed_index.search("a828e60")
    assert response.results[0].path == "MEMORY.md"
    assert response.results[0].text_score > 0


def test_results_have_spec_shape_and_limits(workspace: Path, make_index) -> None:
    for i in range(30):
        write(workspace, f"memory/n{i}.md", "\n".join(f"espresso machine line {j} " + "x" * 60 for j in range(40)))
    index = make_index(workspace, HashingProvider())
    index.sync()
    response = index.search("espresso machine", min_score=0.0)
    assert len(response.results) == 6
    for result in response.results:
        data = result.to_dict()
        assert set(data) == {"path", "startLine", "endLine", "score", "snippet", "source"}
        assert len(data["snippet"]) <= 700 and data["source"] == "memory"
        assert 1 <= data["startLine"] <= data["endLine"]
    scores = [r.score for r in response.results]
    assert scores == sorted(scores, reverse=True)
    assert len(index.search("espresso machine", max_results=3, min_score=0.0).results) == 3


def test_min_score_never_leaves_keyword_hits_silently_empty(hashed_index) -> None:
    response = search_with_default_floor(hashed_index, "a828e60")
    assert response.results and response.relaxed
    assert "minScore" in response.notice and "relaxed" in response.notice
    none = search_with_default_floor(hashed_index, "zebra unicorn")
    assert none.results == [] and not none.relaxed


def test_a_min_score_the_caller_sets_is_never_relaxed(hashed_index) -> None:
    response = hashed_index.search("a828e60", min_score=0.99)
    assert response.results == [] and not response.relaxed
    assert response.notice.startswith("nothing in memory matches minScore 0.99")


def test_vector_search_uses_vec0_knn_not_a_full_scan(workspace: Path, make_index) -> None:
    hashed_index = make_index(workspace, HashingProvider(), config={"store": {"vector": {"engine": "sqlite-vec"}}})
    hashed_index.sync()
    seen: list[str] = []

    def tracer(cursor, sql, bindings) -> bool:
        seen.append(sql)
        return True

    hashed_index.store.conn.exec_trace = tracer
    try:
        hashed_index.search("gateway closet", mode="vector")
    finally:
        hashed_index.store.conn.exec_trace = None
    assert any("MATCH ? AND k = ?" in sql for sql in seen)
    assert not any("vec_distance_cosine" in sql for sql in seen)


def test_numpy_fallback_gives_same_ranking_as_sqlite_vec(workspace: Path, make_index, tmp_path: Path) -> None:
    # float32 on both sides: vec0 keeps its own float32 copy, the numpy engine reads chunk_vectors' encoding
    vec0 = {"store": {"vector": {"engine": "sqlite-vec", "encoding": "float32"}}}
    with_vec = make_index(workspace, HashingProvider(), config=vec0, db_path=tmp_path / "a.sqlite")
    with_vec.sync()
    numpy_only = {"store": {"vector": {"enabled": False, "encoding": "float32"}}}
    without = make_index(workspace, HashingProvider(), config=numpy_only, db_path=tmp_path / "b.sqlite")
    without.sync()
    assert "numpy" in without.status()["vector"]["mode"]
    a = [(r.path, round(r.score, 4)) for r in with_vec.search("gateway Mac Studio", mode="vector", min_score=0).results]
    b = [(r.path, round(r.score, 4)) for r in without.search("gateway Mac Studio", mode="vector", min_score=0).results]
    assert a == b and a


def test_empty_query_returns_nothing(hashed_index) -> None:
    assert hashed_index.search("   ").results == []


def test_keyword_only_expansion_and_relaxed_notice(workspace: Path, make_index) -> None:
    index = make_index(workspace, None)
    index.sync()
    response = index.search("what are Dana's metric units?", min_score=0.0)
    assert response.mode == "fts-only" and response.results[0].path == "MEMORY.md"
    relaxed = search_with_default_floor(index, "what are Dana's metric units?")
    assert relaxed.results and relaxed.relaxed and "minScore" in relaxed.notice


def test_rrf_never_silently_empty(workspace: Path, make_index) -> None:
    index = make_index(workspace, HashingProvider(), {"query": {"hybrid": {"mode": "rrf"}}})
    index.sync()
    response = search_with_default_floor(index, "a828e60")
    assert response.results and response.relaxed


def test_relaxed_results_need_every_keyword(hashed_index) -> None:
    # "gateway" alone matches a note, but a chunk sharing one word with the question is not shown below minScore
    assert search_with_default_floor(hashed_index, "gateway zebra unicorn").results == []


def test_relaxed_results_accept_other_forms_of_a_word(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Notes\n\nDana prefers metric units.\n")
    write(ws, "memory/2026-11-01.md", "The gateway runs on the Mac Studio.\n")
    index = make_index(ws, None)  # keyword-only: on two files BM25 scores sit near 0, far below minScore
    index.sync()
    response = search_with_default_floor(index, "where does the gateway run")
    assert [r.path for r in response.results] == ["memory/2026-11-01.md"] and response.relaxed
    assert search_with_default_floor(index, "where does the gateway fly").results == []  # every keyword still needed


def test_tiny_keyword_only_workspace_scores_by_keywords_held(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Notes\n\nNightly backups go to the S3 bucket.\n")
    write(ws, "memory/2026-11-01.md", "The gateway listens on port 8080.\n")
    index = make_index(ws, None)  # two files: FTS5 clamps every IDF, so bm25 says ~0.000 for every match
    index.sync()
    response = index.search("gateway port")  # default minScore 0.35
    assert [r.path for r in response.results] == ["memory/2026-11-01.md"] and not response.relaxed
    assert response.results[0].score == 1.0
    half = index.search("nightly gateway")
    assert sorted(r.score for r in half.results) == [0.5, 0.5] and not half.relaxed


def test_keyword_only_scores_stay_bm25_when_it_informs(workspace: Path, make_index) -> None:
    index = make_index(workspace, None)
    index.sync()
    scores = [r.score for r in index.search("what are Dana's metric units?", min_score=0.0).results]
    assert scores and scores[0] < 1.0 and scores == sorted(scores, reverse=True)


def test_library_search_refuses_impossible_limits_in_one_line(workspace: Path, make_index) -> None:
    """What the CLI and the tools refuse, the library refuses too: max_results 0 or "3" and min_score 5 are one
    MdrecallError naming the argument, not an empty answer or a TypeError from inside the ranking."""
    from mdrecall.errors import MdrecallError

    index = make_index(workspace)
    index.sync()
    assert index.search("a828e60", max_results=1).results[0].path == "MEMORY.md"
    import numpy as np

    assert len(index.search("a828e60", max_results=np.int64(2), min_score=np.float32(0.0)).results) >= 1
    for bad in ({"max_results": 0}, {"max_results": -1}, {"max_results": "3"}, {"max_results": True}):
        with pytest.raises(MdrecallError, match="max_results"):
            index.search("a828e60", **bad)
    for bad in ({"min_score": 5}, {"min_score": -0.1}, {"min_score": "high"}, {"min_score": float("nan")}):
        with pytest.raises(MdrecallError, match="min_score"):
            index.search("a828e60", **bad)
