"""A sync that leaves many FTS segments merges them, and keyword rankings stay exactly the same."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mdrecall.storage.sqlite import FTS_MAX_SEGMENTS, ChunkRow, Store

from .conftest import random_word_store

WORDS = [
    "billing",
    "invoice",
    "gateway",
    "kitten",
    "boiler",
    "painting",
    "concert",
    "schema",
    "migration",
    "review",
    "budget",
    "laptop",
]


def segments(store: Store) -> int:
    return int(store.conn.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def test_tidy_merges_segments_without_changing_rankings(tmp_path: Path) -> None:
    store = Store(tmp_path / "i.sqlite")
    store.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('automerge', 0)")  # keep every segment
    rng = random.Random(1)
    for batch in range(FTS_MAX_SEGMENTS + 4):
        rows = [
            ChunkRow(
                f"c{batch}-{i}",
                f"memory/{batch}.md",
                "memory",
                i,
                i,
                f"h{batch}-{i}",
                "m",
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))),
            )
            for i in range(30)
        ]
        with store.transaction():
            store.insert_chunks(rows)
    assert segments(store) > FTS_MAX_SEGMENTS
    queries = ['"billing" OR "kitten"', '"schema" AND "review"', '"budget"', '"laptop" OR "boiler" OR "concert"']
    before = [[(r.id, r.score) for r in store.keyword_search(q, "m", ["memory"], 25)] for q in queries]
    with store.transaction():
        assert store.tidy_fts()
    assert segments(store) == 1
    after = [[(r.id, r.score) for r in store.keyword_search(q, "m", ["memory"], 25)] for q in queries]
    assert after == before and all(before)
    with store.transaction():
        assert not store.tidy_fts()  # one segment: nothing to do
    store.close()


def test_prefix_terms_of_the_min_score_query_are_ranked_without_common_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """search's AND query of word prefixes ("noted"* AND ...) takes the common-term path too: common prefixes
    only decide which chunks match; the rows a rare prefix scores come first, in full bm25's order."""
    from mdrecall.storage import sqlite as store_module
    from mdrecall.storage.sqlite import _plain_terms

    assert _plain_terms('"noted"* AND "work"* AND "x"') == ("AND", ['"noted"*', '"work"*', '"x"'])
    assert _plain_terms('"a"* OR "b" AND "c"') is None
    store = random_word_store(tmp_path / "k.sqlite", WORDS, ["commonly", "usually"], "rarely")
    queries = ['"common"* AND "rare"*', '"common"* AND "usual"*', '"rare"* OR "bill"*']
    sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 10"
    expected = {q: store.conn.execute(sql, (q,)).fetchall() for q in queries}
    monkeypatch.setattr(store_module, "COMMON_TERM_MIN_ROWS", 0)
    assert store._common_terms(['"common"*', '"rare"*', '"usual"*']) == ['"common"*', '"usual"*']
    for query in queries:
        got, want = store._ranked_rowids(query, 10), expected[query]
        assert len(got) == len(want), query
        informative = [(rowid, rank) for rowid, rank in want if rank < -1e-3]
        head = got[: len(informative)]
        # the same rows, in full bm25's order up to the common terms' 1e-6 contributions (exact ties otherwise)
        scored = {r for r, rank in store.conn.execute(sql.replace("LIMIT 10", ""), (query,)) if rank < -1e-3}
        assert {r for r, _ in head} <= scored, query
        assert all(abs(a[1] - b[1]) < 1e-5 for a, b in zip(head, informative, strict=True)), query
        matching = {r for (r,) in store.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (query,))}
        assert {rowid for rowid, _ in got} <= matching, query
    store.close()
