"""A sync that leaves many FTS segments merges them, and keyword rankings stay exactly the same."""

from __future__ import annotations

import random
from pathlib import Path

from mdrecall.store import FTS_MAX_SEGMENTS, ChunkRow, Store

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
