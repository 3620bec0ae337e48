"""Recall: a chunk also scores by its best window, where meaning and keywords meet on the same lines."""

from __future__ import annotations

from pathlib import Path

from mdrecall.retrieval.search import run_search
from mdrecall.retrieval.window_blend import TermFinder, blend, window_bm25

from .conftest import HashingProvider, write


class LocalHashing(HashingProvider):
    """The hashing embedder, declared local so chunks are embedded as windows like the default models."""

    id = "local"
    max_seq_length = 512


def test_term_finder_matches_whole_tokens_like_the_index() -> None:
    find = TermFinder(["caroline", "go", "support", "東京"])
    assert find("Caroline's support-group: we go, going") == {"caroline", "support", "go"}
    assert find("goal gopher") == set()  # never inside a longer word
    assert find("Café Caroline, 東京タワー") == {"caroline", "東京"}  # non-ASCII goes through the index's cutting


def test_window_bm25_prefers_windows_holding_more_and_rarer_terms() -> None:
    windows = [{"kitten", "adopted"}, {"adopted"}, {"adopted", "garden"}, set()]
    scores = window_bm25(windows, ["kitten", "adopted"])
    assert scores[0] > scores[1] > scores[3] == 0.0
    assert window_bm25(windows, []) == [0.0] * 4


def test_blend_keeps_the_fused_scale_and_falls_back_to_the_chunk_score() -> None:
    chunk = {"a": 0.8, "b": 0.6, "c": 0.2}
    out = blend(chunk, {"a": 0.1, "b": 0.9}, 0.5)  # c has no window score: its chunk score stands for it
    assert max(out.values()) == 0.8  # the best blended chunk gets the best chunk score
    assert out["b"] > out["a"]  # b's best window wins the blend
    alone = blend(chunk, {}, 0.5)  # no window scores at all: the chunk order, min-max scaled onto its scale
    assert alone["a"] == 0.8 and abs(alone["b"] - 0.8 * 2 / 3) < 1e-9 and alone["c"] == 0.0


FILLER = [f"Ben: line {n} about the weather and the market and the bus" for n in range(12)]


def _logs(ws: Path) -> None:
    # 05-09 repeats both keywords (the chunk-level bm25 likes it) but never in the same turn; in 05-08 they meet
    write(ws, "memory/2023-05-08.md", "\n".join(FILLER[:5] + ["Ana: we adopted a kitten called Miso"] + FILLER[5:9]))
    apart = ["Ana: the kitten show, kitten kitten", "Ben: kitten again", *FILLER[:6], "Ana: adopted, a plan adopted"]
    write(ws, "memory/2023-05-09.md", "\n".join(apart) + "\n")
    for i in range(4):
        write(ws, f"memory/2023-06-0{i + 1}.md", "\n".join(FILLER[i : i + 8]) + "\n")


def _top(index, weight: float) -> list[tuple[str, float]]:
    cfg = index.config.query
    cfg = cfg.model_copy(update={"hybrid": cfg.hybrid.model_copy(update={"window_weight": weight})})
    response = run_search(index.store, index.provider, "hash-64", cfg, "who adopted a kitten", ["memory"], 4, 0.0)
    return [(r.path, r.score) for r in response.results]


def test_the_window_where_meaning_and_keywords_meet_lifts_its_chunk(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _logs(ws)
    index = make_index(ws, LocalHashing())
    index.sync()
    windows = index.store.conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0]
    assert windows > index.store.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]  # several per chunk
    off, default, whole = _top(index, 0.0), _top(index, 0.3), _top(index, 1.0)
    assert off[0][0] == "memory/2023-05-09.md"  # chunk-level fusion alone
    assert whole[0][0] == "memory/2023-05-08.md"  # only the best windows
    ratio = dict(default)["memory/2023-05-08.md"] / dict(off)["memory/2023-05-08.md"]
    assert ratio > 1.3  # the default blend lifts it part of the way
    assert default[0][1] == off[0][1]  # and keeps the fused scale: the best result keeps its score


def test_context_terms_come_from_the_index(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/2023-05-08.md", "Fine, 18 g in, 36 g out.\n")  # a Monday in May: said by the context only
    index = make_index(ws, LocalHashing())
    index.sync()
    ids = [row[0] for row in index.store.conn.execute("SELECT id FROM chunks")]
    held = index.store.terms_held(ids, ["monday", "may", "18", "kitten"])
    assert set().union(*held.values()) == {"monday", "may", "18"}
