"""Ranking rules: temporal decay, MMR, RRF, keyword-only expansion (stop words, CJK), citations, budget."""

from __future__ import annotations

import os
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdrecall.retrieval.ranking import (
    age_days,
    citations_enabled,
    clamp_to_budget,
    decay_multiplier,
    file_date,
    format_citation,
    jaccard,
    mmr_order,
    rrf_fuse,
    rrf_rescale,
    to_epoch,
    word_set,
)
from mdrecall.retrieval.search import (
    build_fts_query,
    build_keyword_query,
    expand_query_terms,
    merge_rrf,
    strip_korean_particle,
)
from mdrecall.storage.sqlite import SearchRow
from mdrecall.text.tokens import index_text

from .conftest import HashingProvider, write

NOW = datetime(2025, 7, 1, tzinfo=timezone.utc)

# -- temporal decay -------------------------------------------------------------------------------------


def test_decay_is_one_half_at_exactly_the_half_life() -> None:
    age = age_days("memory/2025-06-01.md", "memory", None, NOW.timestamp())
    assert age == 30.0
    assert decay_multiplier(age, 30) == pytest.approx(0.5)
    assert decay_multiplier(60.0, 30) == pytest.approx(0.25)
    assert decay_multiplier(0.0, 30) == 1.0


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory/2025-06-15.md", date(2025, 6, 15)),
        ("memory/2025-06-15-standup.md", date(2025, 6, 15)),
        ("memory/notes-2025-06-15.md", date(2025, 6, 15)),
        ("memory/daily/2025-06-15_retro.md", date(2025, 6, 15)),
        ("memory/ticket-92025-06-15.md", None),  # glued to another digit
        ("memory/2025-06-153.md", None),
        ("memory/2025-13-40.md", None),  # not a real date
        ("memory/2025-02-30.md", None),
        ("memory/topics.md", None),
        ("MEMORY.md", None),
        ("memory/2024/notes.md", None),  # a date in a folder is not the file's date
    ],
)
def test_file_date_guard(path: str, expected: date | None) -> None:
    assert file_date(path) == expected


def test_evergreen_and_future_files_do_not_decay() -> None:
    now = NOW.timestamp()
    assert age_days("MEMORY.md", "memory", None, now) is None
    assert age_days("memory/topics/infra.md", "memory", None, now) is None
    assert decay_multiplier(age_days("memory/2030-01-01.md", "memory", None, now), 30) == 1.0


def test_sessions_decay_by_mtime() -> None:
    mtime_ms = int((NOW.timestamp() - 30 * 86400) * 1000)
    age = age_days("sessions/abc.jsonl", "sessions", mtime_ms, NOW.timestamp())
    assert age == pytest.approx(30.0)
    assert age_days("sessions/abc.jsonl", "sessions", None, NOW.timestamp()) is None


def test_now_accepts_naive_datetimes_as_utc() -> None:
    assert to_epoch(datetime(2025, 7, 1)) == NOW.timestamp()
    assert to_epoch(12.5) == 12.5


@pytest.fixture
def dated_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nThe kiwi deploy pipeline is owned by Dana.\n")
    write(ws, "memory/2025-01-01.md", "# Jan\n\nkiwi deploy pipeline moved to buildkite.\n")
    write(ws, "memory/2025-06-30.md", "# June\n\nkiwi deploy pipeline moved to github actions.\n")
    for i in range(12):  # unrelated notes give the query words a real IDF
        write(ws, f"memory/topics/t{i}.md", f"# Topic {i}\n\nlunch order number {i} for the team offsite.\n")
    return ws


def test_decay_reorders_search_and_applies_before_threshold(dated_workspace: Path, make_index) -> None:
    config = {"query": {"temporalDecay": {"enabled": True, "halfLifeDays": 30, "floor": 0}}}  # spec's decay
    index = make_index(dated_workspace, None, config)
    index.sync()
    store = index.store
    from mdrecall.retrieval.search import run_search

    response = run_search(store, None, "fts-only", index.config.query, "kiwi pipeline", ["memory"], 10, 0.0, now=NOW)
    scores = {r.path: r.score for r in response.results}
    assert scores["memory/2025-01-01.md"] < 0.02 * scores["memory/2025-06-30.md"]  # 181 days: 6 half-lives
    # the old note falls under minScore once decayed; the evergreen note does not decay
    undecayed = run_search(store, None, "fts-only", index.config.query, "kiwi pipeline", ["memory"], 10, 0.0)
    assert min(r.score for r in undecayed.results) > 0.0
    kept = run_search(store, None, "fts-only", index.config.query, "kiwi pipeline", ["memory"], 10, 0.05, now=NOW)
    assert "memory/2025-01-01.md" not in {r.path for r in kept.results}
    assert "MEMORY.md" in {r.path for r in kept.results}


def test_session_transcripts_decay_by_their_mtime(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nnothing here\n")
    index = make_index(ws, None, {"sources": ["memory", "sessions"], "query": {"temporalDecay": {"enabled": True}}})
    index.sync()
    store = index.store
    from mdrecall.retrieval.search import _session_mtimes, apply_temporal_decay, merge_hybrid

    old_ms = int((NOW.timestamp() - 60 * 86400) * 1000)
    store.conn.execute(
        "INSERT INTO files(path, source, hash, mtime, size) VALUES('sessions/s1.jsonl', 'sessions', 'h', ?, 1)",
        (old_ms,),
    )
    hits = merge_hybrid([SearchRow("c1", "sessions/s1.jsonl", "sessions", 1, 1, "x", 1.0)], [], 1.0, 0.0)
    mtimes = _session_mtimes(store, hits)
    assert mtimes == {"sessions/s1.jsonl": old_ms}
    decayed = apply_temporal_decay(hits, 30, NOW.timestamp(), mtimes)
    assert decayed[0].score == pytest.approx(0.25)


# -- MMR ------------------------------------------------------------------------------------------------


def test_jaccard_and_word_sets() -> None:
    assert word_set("The Cat, the cat!") == frozenset({"the", "cat"})
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 1.0  # the spec: two empty sets are identical
    assert {"数据", "据库"} <= word_set("数据库")


def test_mmr_pushes_near_duplicates_down() -> None:
    texts = [
        "deploy pipeline moved to actions",
        "deploy pipeline moved to actions today",
        "dana owns the pipeline",
        "lunch on friday",
    ]
    sets = [word_set(t) for t in texts]
    # relevance is min-max normalised (the spec): 1, .975, .875, 0
    assert mmr_order([0.9, 0.89, 0.85, 0.5], sets, lam=0.7) == [0, 2, 1, 3]
    assert mmr_order([0.9, 0.89, 0.85, 0.5], sets, lam=1.0) == [0, 1, 2, 3]
    # equal scores all normalise to 1: diversity alone decides after the first
    assert mmr_order([0.5, 0.5, 0.5], sets[:3], lam=0.7) == [0, 2, 1]


def test_mmr_edge_sizes_and_lambda_clamp() -> None:
    assert mmr_order([], [], 0.7) == []
    assert mmr_order([0.3], [frozenset({"a"})], 0.7) == [0]
    assert mmr_order([0.1, 0.5], [frozenset("a"), frozenset("a")], 5.0) == [1, 0]  # clamped to 1: relevance
    assert mmr_order([0.1, 0.5, 0.4], [frozenset("a")] * 3, -3.0, k=2)[0] == 1


_sets = st.frozensets(st.sampled_from(list("abcdefgh")), max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(st.tuples(st.floats(0, 1), _sets), max_size=12),
    lam=st.floats(-1, 2),
    k=st.one_of(st.none(), st.integers(0, 15)),
)
def test_mmr_properties(items: list[tuple[float, frozenset[str]]], lam: float, k: int | None) -> None:
    relevance = [r for r, _ in items]
    sets = [s for _, s in items]
    order = mmr_order(relevance, sets, lam, k)
    expected_len = len(items) if k is None else min(k, len(items))
    assert len(order) == expected_len and len(set(order)) == len(order)
    if order:
        assert relevance[order[0]] == max(relevance)  # the top result always first
    if min(1.0, max(0.0, lam)) == 1.0:  # pure relevance: a stable sort by score
        assert order == sorted(range(len(items)), key=lambda i: -relevance[i])[:expected_len]


# -- RRF ------------------------------------------------------------------------------------------------


def test_rrf_math() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["b", "d"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)
    scaled = rrf_rescale(fused, anchor=0.8)
    assert scaled["b"] == pytest.approx(0.8)  # the best fused item carries the anchor
    assert scaled["a"] == pytest.approx(0.8 * (1 / 61) / (1 / 62 + 1 / 61))
    assert rrf_rescale({}, 1.0) == {}


def _row(chunk_id: str, score: float) -> SearchRow:
    return SearchRow(chunk_id, f"{chunk_id}.md", "memory", 1, 2, f"text {chunk_id}", score)


def test_rrf_merge_orders_by_rank_and_keeps_weighted_scale() -> None:
    vector = [_row("a", 0.9), _row("b", 0.5)]
    keyword = [_row("b", -3.0), _row("c", -2.0)]
    hits = merge_rrf(vector, keyword, 0.7, 0.3)
    assert [h.row.id for h in hits] == ["b", "a", "c"]  # b is in both lists
    best_weighted = max(0.63, 0.7 * 0.5 + 0.3 * 0.75, 0.3 * 2 / 3)
    assert hits[0].score == pytest.approx(best_weighted)
    assert hits[1].score == pytest.approx(best_weighted * (1 / 61) / (1 / 62 + 1 / 61))
    assert merge_rrf([], [], 0.7, 0.3) == []


def test_rrf_mode_through_the_index(workspace: Path, make_index) -> None:
    index = make_index(workspace, HashingProvider(), {"query": {"hybrid": {"mode": "rrf"}}})
    index.sync()
    response = index.search("a828e60 deploy")
    assert response.results[0].path == "MEMORY.md"
    assert 0 < response.results[0].score <= 1


# -- keyword-only expansion and CJK ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "keywords"),
    [
        ("what did we decide about the database migration", ["decide", "database", "migration"]),
        ("¿Qué decidimos sobre la base de datos?", ["decidimos", "base", "datos"]),
        ("O que decidimos sobre o banco de dados", ["decidimos", "banco", "dados"]),
        ("Was haben wir über die Datenbank entschieden", ["die", "datenbank", "entschieden"]),  # FTS folds case
        ("Qu'avons-nous décidé pour la base de données", ["avons", "décidé", "base", "données"]),
        ("我们的项目用什么数据库", ["项目", "目用", "数据", "据库"]),
        ("東京の会議はいつですか", ["東京", "会議"]),
        ("예산 회의는 언제인가요", ["예산", "회의"]),
    ],
)
def test_stop_words_dropped_per_language(query: str, keywords: list[str]) -> None:
    assert expand_query_terms(query) == keywords


def test_all_stop_word_query_keeps_its_words() -> None:
    assert expand_query_terms("what is it") == ["what", "is", "it"]
    assert build_keyword_query("   ") is None
    assert build_keyword_query("database migration") == '"database" OR "migration"'


def test_korean_particles_and_endings() -> None:
    assert strip_korean_particle("회의에서") == "회의"
    assert strip_korean_particle("예산을") == "예산"
    assert strip_korean_particle("언제인가요") == "언제"
    assert strip_korean_particle("아이") == "아이"  # ambiguous 이 needs two syllables left
    assert strip_korean_particle("고양이를") == "고양이"


def test_index_text_adds_cjk_bigrams_and_glued_latin() -> None:
    assert index_text("plain english text") == "plain english text"
    text = index_text("迁移到PostgreSQL")
    assert text.startswith("迁移到PostgreSQL\n")
    assert {"迁移", "移到", "PostgreSQL", "迁"} <= set(text.split("\n")[1].split())
    assert index_text("ＡＢＣ ｶﾀｶﾅ") == "ABC カタカナ\nカタ タカ カナ カ タ カ ナ"


def test_cjk_and_query_uses_bigrams() -> None:
    assert build_fts_query("数据库") == '"数据" AND "据库"'
    assert build_fts_query("東京") == '"東京"'


@pytest.fixture
def cjk_index(tmp_path: Path, make_index):
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nEnglish only notes about the garden.\n")
    write(ws, "memory/zh.md", "# 决定\n\n我们决定把订单数据库迁移到PostgreSQL，因为性能更好。\n")
    write(ws, "memory/zh-other.md", "# 天气\n\n今天北京的天气很好，我们去公园散步。\n")
    write(ws, "memory/ja.md", "# 予定\n\n明日の会議は東京本社で午後三時に行います。\n")
    write(ws, "memory/ja-other.md", "# 料理\n\n昨日は大阪でたこ焼きを食べました。\n")
    write(ws, "memory/ko.md", "# 회의\n\n다음 주 회의에서 내년 예산을 논의합니다.\n")
    write(ws, "memory/ko-other.md", "# 여행\n\n지난 여름에 제주도로 가족 여행을 갔습니다.\n")
    index = make_index(ws, None)
    index.sync()
    return index


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("订单数据库迁移了吗", "memory/zh.md"),
        ("数据库", "memory/zh.md"),
        ("PostgreSQL", "memory/zh.md"),
        ("東京の会議はいつですか", "memory/ja.md"),
        ("本社", "memory/ja.md"),
        ("예산 회의는 언제인가요", "memory/ko.md"),
        ("예산을", "memory/ko.md"),
    ],
)
def test_cjk_queries_find_their_notes(cjk_index, query: str, path: str) -> None:
    response = cjk_index.search(query, min_score=0.0)
    assert response.mode == "fts-only"
    assert response.results and response.results[0].path == path


def test_vector_weight_zero_takes_the_keyword_path(workspace: Path, make_index) -> None:
    provider = HashingProvider()
    index = make_index(workspace, provider, {"query": {"hybrid": {"vectorWeight": 0, "textWeight": 1}}})
    index.sync()
    calls = provider.query_calls
    response = index.search("what is the gateway closet", min_score=0.0)
    assert response.mode == "keyword" and provider.query_calls == calls
    assert response.results[0].path == "memory/topics/infra.md"


# -- citations and budget -------------------------------------------------------------------------------


def test_citation_format() -> None:
    assert format_citation("memory/x.md", 5, 7) == "memory/x.md#L5-L7"
    assert format_citation("memory/x.md", 5, 5) == "memory/x.md#L5"


@pytest.mark.parametrize(
    ("mode", "key", "expected"),
    [
        ("on", "agent:main:group:42", True),
        ("off", None, False),
        ("auto", None, True),
        ("auto", "agent:main:main", True),
        ("auto", "agent:main:telegram:dm:123", True),
        ("auto", "agent:main:discord:group:42", False),
        ("auto", "agent:main:slack:channel:c1", False),
    ],
)
def test_citation_modes(mode: str, key: str | None, expected: bool) -> None:
    assert citations_enabled(mode, key) is expected


def test_citations_through_search(hashed_index) -> None:
    plain = hashed_index.search("a828e60")
    assert plain.results[0].citation is None and "Source:" not in plain.results[0].snippet
    from mdrecall.retrieval.search import run_search

    index = hashed_index
    args = (index.store, index.provider, index.provider.model, index.config.query, "a828e60", ["memory"])
    on = run_search(*args, citations="on").results[0]
    assert on.citation == f"MEMORY.md#L{on.start_line}-L{on.end_line}" and on.start_line < on.end_line
    assert on.snippet.endswith(f"\n\nSource: {on.citation}")
    assert on.to_dict()["citation"] == on.citation
    group = run_search(*args, citations="auto", session_key="agent:main:whatsapp:group:9").results[0]
    assert group.citation is None
    direct = run_search(*args, citations="auto", session_key="agent:main:main").results[0]
    assert direct.citation is not None


def test_budget_clamp_drops_and_trims_the_tail() -> None:
    assert clamp_to_budget(["a" * 100, "b" * 100], ["", ""], 1000) == ["a" * 100, "b" * 100]
    out = clamp_to_budget(["a" * 100, "b" * 100, "c" * 100], ["", "", ""], 280)
    assert out == ["a" * 100, "b" * 100, "c" * 80]
    assert clamp_to_budget(["a" * 100, "b" * 100, "c" * 100], ["", "", ""], 230) == ["a" * 100, "b" * 100]
    assert clamp_to_budget(["a" * 500], [""], 100) == ["a" * 100]  # the first result is always there
    cited = clamp_to_budget(["a" * 500], ["\n\nSource: x#L1"], 100)
    assert cited[0].endswith("Source: x#L1") and len(cited[0]) == 100
    assert clamp_to_budget([], [], 10) == []


def test_budget_is_for_qmd_only_builtin_returns_max_results(workspace: Path, make_index) -> None:
    for i in range(10):
        write(workspace, f"memory/n{i}.md", "\n".join(f"espresso machine line {j} " + "x" * 60 for j in range(40)))
    index = make_index(workspace, HashingProvider(), {"query": {"maxInjectedChars": 1000}})
    index.sync()
    results = index.search("espresso machine", max_results=8, min_score=0.0).results
    assert len(results) == 8 and sum(len(r.snippet) for r in results) > 1000  # the builtin backend: as asked
    from mdrecall.retrieval.search import apply_injection_budget

    clamped = apply_injection_budget(results, 1000)
    assert sum(len(r.snippet) for r in clamped) <= 1000 and len(clamped) == 2
    only = apply_injection_budget(index.search("espresso machine", min_score=0.0).results, 50)
    assert len(only) == 1 and len(only[0].snippet) == 50


@pytest.fixture
def hashed_index(workspace: Path, make_index):
    index = make_index(workspace, HashingProvider())
    index.sync()
    return index


def test_mmr_through_search(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    dup = "Standup: the billing migration is blocked on the schema review.\n"
    for i in range(3):
        write(ws, f"memory/dup{i}.md", f"# Standup {i}\n\n{dup}")
    write(ws, "memory/other.md", "# Owners\n\nPriya owns billing; the migration plan and its review are in the wiki.\n")
    for i in range(8):
        write(ws, f"memory/filler{i}.md", f"# Lunch {i}\n\nteam lunch order {i} on friday, review later.\n")
    plain = make_index(ws, None, db_path=tmp_path / "a.sqlite")
    plain.sync()
    diverse = make_index(ws, None, {"query": {"mmr": {"enabled": True, "lambda": 0.5}}}, db_path=tmp_path / "b.sqlite")
    diverse.sync()
    before = [r.path for r in plain.search("billing migration schema review", max_results=3, min_score=0).results]
    after = [r.path for r in diverse.search("billing migration schema review", max_results=3, min_score=0).results]
    assert after[0] == before[0]
    assert "memory/other.md" not in before and "memory/other.md" in after[:2]
    assert os.path.basename(after[0]).startswith("dup")


def test_sources_filter_is_honoured(workspace: Path, make_index) -> None:
    from mdrecall.retrieval.search import run_search

    index = make_index(workspace, None)
    index.sync()
    args = (index.store, None, "fts-only", index.config.query, "Dana metric units")
    assert run_search(*args, ["memory"], min_score=0).results
    assert run_search(*args, ["sessions"], min_score=0).results == []
