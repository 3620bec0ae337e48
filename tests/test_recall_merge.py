"""Recall: overlapping chunks of one file come back as one result, and the freed slots go to other results."""

from __future__ import annotations

from pathlib import Path

from mdrecall.retrieval.results import merge_overlapping_results as merge_tool_results
from mdrecall.retrieval.search import Hit, merge_overlapping, merged_row
from mdrecall.storage.sqlite import SearchRow

from .conftest import HashingProvider, write


def _chunk(path: str, start: int, end: int, score: float = 0.5) -> Hit:
    text = "\n".join(f"line {n}" for n in range(start, end + 1))
    return Hit(SearchRow(f"{path}:{start}", path, "memory", start, end, text, score), score=score)


def test_two_overlapping_chunks_become_one_row_with_each_line_once() -> None:
    row = merged_row(_chunk("a.md", 10, 20).row, _chunk("a.md", 18, 30).row)
    assert row is not None and (row.start_line, row.end_line) == (10, 30)
    assert row.text.split("\n") == [f"line {n}" for n in range(10, 31)]
    # the lower-ranked one may start first: the range and lines still come out in file order
    row = merged_row(_chunk("a.md", 18, 30).row, _chunk("a.md", 10, 20).row)
    assert row is not None and row.id == "a.md:18" and row.text.startswith("line 10\n")


def test_chunks_that_do_not_overlap_or_do_not_line_up_stay_apart() -> None:
    assert merged_row(_chunk("a.md", 1, 9).row, _chunk("a.md", 10, 20).row) is None  # adjacent, no shared line
    assert merged_row(_chunk("a.md", 1, 12).row, _chunk("b.md", 10, 20).row) is None  # another file
    cut = SearchRow("x", "a.md", "memory", 5, 5, "a line longer than a chunk,\ncut in two segments", 0.4)
    assert merged_row(_chunk("a.md", 1, 6).row, cut) is None


def test_merging_fills_the_freed_slots_with_the_next_results() -> None:
    hits = [
        _chunk("a.md", 1, 12, 0.9),
        _chunk("a.md", 10, 22, 0.8),  # joins the first
        _chunk("b.md", 1, 12, 0.7),
        _chunk("c.md", 1, 12, 0.6),
        _chunk("d.md", 1, 12, 0.5),
    ]
    out = merge_overlapping(hits, 3)
    assert [(h.row.path, h.row.start_line, h.row.end_line) for h in out] == [
        ("a.md", 1, 22),
        ("b.md", 1, 12),
        ("c.md", 1, 12),
    ]
    assert out[0].score == 0.9  # the better chunk's score


def test_a_chunk_bridging_two_results_joins_them_into_one() -> None:
    hits = [_chunk("a.md", 1, 12, 0.9), _chunk("a.md", 20, 30, 0.8), _chunk("a.md", 11, 21, 0.7)]
    out = merge_overlapping(hits, 5)
    assert [(h.row.start_line, h.row.end_line) for h in out] == [(1, 30)]


def _log(ws: Path) -> None:
    lines = [f"Ana: note {n} about the garden and the tomatoes we planted" for n in range(1, 80)]
    write(ws, "memory/2023-05-08.md", "\n".join(lines) + "\n")
    for name in ("b", "c", "d", "e", "f", "g", "h"):
        write(ws, f"memory/{name}.md", f"# {name}\n\nThe garden of {name} has tomatoes too.\n")


def test_search_returns_max_results_with_no_two_sharing_a_line(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _log(ws)
    index = make_index(ws, HashingProvider())
    index.sync()
    results = index.search("garden tomatoes planted", max_results=6, min_score=0).results
    assert len(results) == 6
    for i, a in enumerate(results):
        for b in results[i + 1 :]:
            assert a.path != b.path or a.end_line < b.start_line or b.end_line < a.start_line
    assert any(r.end_line - r.start_line + 1 > 25 for r in results if r.path == "memory/2023-05-08.md")


def test_merge_overlapping_off_gives_one_chunk_per_result(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    _log(ws)
    index = make_index(ws, HashingProvider(), {"query": {"mergeOverlapping": False}})
    index.sync()
    results = index.search("garden tomatoes planted", max_results=10, min_score=0).results
    chunks = {(r[0], r[1]) for r in index.store.conn.execute("SELECT start_line, end_line FROM chunks")}
    assert all((r.start_line, r.end_line) in chunks for r in results)
    log = sorted((r.start_line, r.end_line) for r in results if r.path == "memory/2023-05-08.md")
    assert any(a[1] >= b[0] for a, b in zip(log, log[1:], strict=False))  # neighbours overlap, both shown
    assert len(merge_tool_results(results, index.config.query.merge_overlapping)) == len(results)  # qmd's pass too
