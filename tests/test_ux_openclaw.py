"""OpenClaw parity: its own query-expansion reference cases (src/memory/query-expansion.test.ts, ported case by
case), MMR and Jaccard as the spec has them, session keys, decay of undated extra-path files by mtime."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mdrecall.config.settings import parse_config
from mdrecall.retrieval.ranking import age_days, jaccard, mmr_order
from mdrecall.text.keywords import extract_keywords

from .conftest import write

# -- extractKeywords: OpenClaw's cases -------------------------------------------------------------------------
# (query, must contain, must not contain)
CASES: list[tuple[str, list[str], list[str]]] = [
    ("that thing we discussed about the API", ["discussed", "api"], ["that", "thing", "we", "about", "the"]),
    ("之前讨论的那个方案", ["讨论", "方案"], ["之前", "的", "那个"]),
    ("昨天讨论的 API design", ["讨论", "api", "design"], []),
    ("what was the solution for the CFR bug", ["solution", "cfr", "bug"], []),
    ("어제 논의한 배포 전략", ["논의한", "배포", "전략"], ["어제"]),
    ("서버에서 발생한 에러를 확인", ["서버", "에러", "확인"], []),
    ("나는 그리고 그래서", [], ["나", "나는", "그리고", "그래서"]),
    ("그녀는 우리는", [], ["그녀는", "우리는", "그녀", "우리"]),
    ("논의", ["논의"], ["논"]),
    ("기능으로 설명", ["기능"], ["기능으"]),
    ("API를 배포했다", ["api", "배포했다"], []),
    ("API 배포에 대한 논의", ["api", "배포", "논의"], []),
    ("昨日話したデプロイ戦略", ["デプロイ", "戦略"], ["昨日"]),
    ("昨日話したAPIのバグ", ["api", "バグ"], ["した"]),
    ("これ それ そして どう", [], ["これ", "それ", "そして", "どう"]),
    ("ayer hablamos sobre la estrategia de despliegue", ["estrategia", "despliegue"], ["ayer", "sobre"]),
    ("ontem falamos sobre a estratégia de implantação", ["estratégia", "implantação"], ["ontem", "sobre"]),
    ("cómo cuando donde porquê quando onde", [], ["cómo", "cuando", "donde", "porquê", "quando", "onde"]),
    ("بالأمس ناقشنا استراتيجية النشر", ["ناقشنا", "استراتيجية", "النشر"], ["بالأمس"]),
    ("كيف متى أين ماذا", [], ["كيف", "متى", "أين", "ماذا"]),
    (
        "igår diskuterede vi vagtplanen for plejehjemmet",
        ["diskuterede", "vagtplanen", "plejehjemmet"],
        ["igår", "vi", "for"],
    ),
    ("hvad er det vi skal gøre nu", [], ["hvad", "er", "det", "vi", "skal", "gøre", "nu"]),
    ("igår diskuterte vi distribusjonsstrategien", ["diskuterte", "distribusjonsstrategien"], ["igår", "vi"]),
    ("hva er det vi skal gjøre nå", [], ["hva", "er", "det", "vi", "skal", "gjøre", "nå"]),
    ("igår diskuterade vi distributionsstrategin", ["diskuterade", "distributionsstrategin"], ["igår", "vi"]),
    ("vad är det vi ska göra nu", [], ["vad", "är", "det", "vi", "ska", "göra", "nu"]),
]


@pytest.mark.parametrize(("query", "present", "absent"), CASES, ids=[c[0] for c in CASES])
def test_openclaw_extraction_case(query: str, present: list[str], absent: list[str]) -> None:
    keywords = extract_keywords(query)
    for word in present:
        assert word in keywords, (query, keywords)
    for word in absent:
        assert word not in keywords, (query, keywords)


def test_empty_and_blank_queries_give_no_keywords() -> None:
    assert extract_keywords("") == [] and extract_keywords("   ") == []


def test_a_stop_word_only_query_gives_no_keywords() -> None:
    assert extract_keywords("the a an is are") == []
    assert extract_keywords("what did we do yesterday") == []


def test_duplicates_removed() -> None:
    assert extract_keywords("test test testing") == ["test", "testing"]


def test_temporal_words_are_dropped_in_every_language() -> None:
    words = ("yesterday", "ayer", "ontem", "昨天", "어제", "昨日", "igår", "بالأمس", "today", "hoy", "今天", "오늘")
    for query in words:
        assert extract_keywords(f"{query} deploy") == ["deploy"], query


def test_identifiers_numbers_and_english_content_words_survive() -> None:
    """Where mdrecall keeps more than OpenClaw: numbers and short words are what people search memory for."""
    assert extract_keywords("port 18789 for the gateway") == ["port", "18789", "gateway"]
    assert extract_keywords("memorySearch.query.hybrid a828e60") == ["memorysearch", "query", "hybrid", "a828e60"]
    # function words of one language that are content words in English stay searchable
    assert extract_keywords("the dog and the car on the mod list") == ["dog", "car", "mod", "list"]


# -- MMR and Jaccard as the spec has them -----------------------------------------------------------------------


def test_jaccard_of_two_empty_sets_is_one() -> None:
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0


def test_mmr_min_max_normalises_relevance() -> None:
    """Scores 0.52/0.51/0.50 become 1/0.5/0 (dividing by the max would give 1/0.98/0.96): at λ 0.7 the
    duplicate keeps its place (0.7*0.5 - 0.3*1 > 0.7*0), at λ 0.5 the distinct one goes first."""
    sets = [frozenset({"a", "b"}), frozenset({"a", "b"}), frozenset({"c", "d"})]
    assert mmr_order([0.52, 0.51, 0.50], sets, lam=0.7) == [0, 1, 2]
    assert mmr_order([0.52, 0.51, 0.50], sets, lam=0.5) == [0, 2, 1]
    # all equal: every relevance is 1, diversity decides
    assert mmr_order([0.4, 0.4, 0.4], sets, lam=0.9) == [0, 2, 1]


# -- session keys ------------------------------------------------------------------------------------------------


def test_include_reset_archives_is_accepted_and_honoured(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n")
    config = {"sources": ["memory", "sessions"], "sync": {"sessions": {"includeResetArchives": False}}}
    index = make_index(ws, None, config)
    sessions = index.settings.sessions_dir
    line = '{"type":"message","message":{"role":"user","content":"the zeppelin tour is booked"}}\n'
    write(sessions, "live.jsonl", line)
    write(sessions, "old.jsonl.reset.2026-11-01T10-00-00.000Z", line)
    assert [f.path for f in index.discover_sessions() or []] == ["sessions/live.jsonl"]
    index.config.sync.sessions.include_reset_archives = True
    assert len(index.discover_sessions() or []) == 2
    assert parse_config({}).sync.sessions.include_reset_archives is True


def test_experimental_session_memory_turns_the_sessions_source_on() -> None:
    assert parse_config({"experimental": {"sessionMemory": True}}).sources == ["memory", "sessions"]
    assert parse_config({}).sources == ["memory"]


def test_openclaw_needs_both_the_flag_and_the_source() -> None:
    from mdrecall.config.openclaw import memory_config_from_openclaw

    def sources(memory_search: dict) -> tuple[list[str], list[str]]:
        raw = {"agents": {"defaults": {"memorySearch": memory_search}}}
        config, warnings = memory_config_from_openclaw(raw, "main")
        return list(config.sources), warnings

    assert sources({"sources": ["memory", "sessions"], "experimental": {"sessionMemory": True}})[0] == [
        "memory",
        "sessions",
    ]
    listed_only, warnings = sources({"sources": ["memory", "sessions"]})
    assert listed_only == ["memory"] and any("sessionMemory" in w for w in warnings)
    assert sources({"experimental": {"sessionMemory": True}})[0] == ["memory"]


# -- temporal decay of undated extra-path files ------------------------------------------------------------------


def test_age_rules() -> None:
    now = time.time()
    month_ago_ms = int((now - 30 * 86400) * 1000)
    assert age_days("MEMORY.md", "memory", month_ago_ms, now) is None
    assert age_days("memory/topics/infra.md", "memory", month_ago_ms, now) is None  # evergreen
    assert age_days("../team/notes.md", "memory", month_ago_ms, now) == pytest.approx(30, abs=0.01)
    assert age_days("docs/runbook.md", "memory", month_ago_ms, now) == pytest.approx(30, abs=0.01)
    assert age_days("sessions/a.jsonl", "sessions", month_ago_ms, now) == pytest.approx(30, abs=0.01)
    dated = age_days("../team/2026-01-01.md", "memory", month_ago_ms, now)
    assert dated is not None and dated != pytest.approx(30, abs=0.01)  # the name's date wins


def test_undated_extra_path_files_decay_by_mtime(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    text = "The kestrel nests under the north bridge.\n"
    write(ws, "memory/topics/birds.md", "# Birds\n\n" + text)
    old = write(tmp_path / "team", "birds.md", "# Team birds\n\n" + text)
    two_months = time.time() - 60 * 86400
    os.utime(old, (two_months, two_months))
    decay = {"enabled": True, "floor": 0}  # the spec's plain decay (mdrecall bounds it at 0.5 by default)
    config = {"extraPaths": [str(tmp_path / "team")], "query": {"temporalDecay": decay}}
    index = make_index(ws, None, config)
    index.sync()
    results = {r.path: r.score for r in index.search("kestrel bridge", min_score=0).results}
    evergreen, extra = results["memory/topics/birds.md"], results["../team/birds.md"]
    assert extra == pytest.approx(evergreen * 0.25, rel=0.05)  # two half-lives of 30 days
