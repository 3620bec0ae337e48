"""Chunk text stored zlib-compressed (store.compressText): smaller rows, the same text everywhere it is read."""

from __future__ import annotations

from pathlib import Path

from mdrecall.storage.sqlite import ChunkRow, Store, pack_text, stored_text

from .conftest import HashingProvider, write

NOTE = "\n".join(f"- Line {i}: the gateway deploy moved to Friday, Dana signed off on run {i}." for i in range(20))


def test_pack_text_compresses_only_when_it_pays() -> None:
    packed = pack_text(NOTE)
    assert isinstance(packed, bytes) and len(packed) < len(NOTE) / 2
    assert stored_text(packed) == NOTE
    assert pack_text("short note") == "short note"  # a line or two stays plain
    assert stored_text("plain") == "plain" and stored_text(None) is None
    unicode = "東京の会議メモ、カフェ・ナイーヴ。" * 20
    assert stored_text(pack_text(unicode)) == unicode


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "memory/2026-11-05.md", f"# Deploys\n\n{NOTE}\n")
    write(ws, "memory/short.md", "# Short\n\nThe okapi lives in the closet.\n")
    return ws


def _stored_kinds(index) -> set[str]:  # type: ignore[no-untyped-def]
    return {r[0] for r in index.store.conn.execute("SELECT typeof(text) FROM chunks")}


def test_compressed_and_plain_indexes_answer_the_same(tmp_path: Path, make_index) -> None:
    ws = _workspace(tmp_path)
    packed = make_index(ws, HashingProvider(), db_path=tmp_path / "packed.sqlite")
    plain = make_index(
        ws, HashingProvider(), config={"store": {"compressText": False}}, db_path=tmp_path / "plain.sqlite"
    )
    packed.sync()
    plain.sync()
    assert _stored_kinds(packed) == {"blob", "text"}  # the long note packed, the short one not worth it
    assert _stored_kinds(plain) == {"text"}
    for query, mode in [("gateway Friday run 7", "hybrid"), ("okapi closet", "keyword"), ("Dana deploy", "vector")]:
        a = [(r.path, r.start_line, r.snippet) for r in packed.search(query, mode=mode, min_score=0).results]
        b = [(r.path, r.start_line, r.snippet) for r in plain.search(query, mode=mode, min_score=0).results]
        assert a == b and a, (query, mode)
    assert "run 7" in packed.search("gateway Friday run 7").results[0].snippet
    texts = packed.store.conn.execute("SELECT chunk_text(text) FROM chunks WHERE path = 'memory/2026-11-05.md'")
    assert NOTE in "".join(r[0] for r in texts)


def test_rows_of_both_kinds_are_read_and_a_setting_change_rewrites_nothing(tmp_path: Path, make_index) -> None:
    ws = _workspace(tmp_path)
    db = tmp_path / "index.sqlite"
    plain = make_index(ws, HashingProvider(), config={"store": {"compressText": False}}, db_path=db)
    plain.sync()
    plain.close()
    write(ws, "memory/later.md", f"# Later\n\n{NOTE.replace('gateway', 'warehouse')}\n")
    packed = make_index(ws, HashingProvider(), db_path=db)
    report = packed.sync()
    assert not report.full_reindex and report.files_indexed == 1  # only the new file is written, packed
    assert _stored_kinds(packed) == {"blob", "text"}
    assert packed.search("warehouse Friday", mode="keyword").results[0].path == "memory/later.md"
    assert packed.search("gateway Friday", mode="keyword").results[0].path == "memory/2026-11-05.md"


def test_store_reads_pending_chunks_through_the_packed_text(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite", compress_text=True)
    with store.transaction():
        store.insert_chunks([ChunkRow("c1", "n.md", "memory", 1, 20, "h1", "m", NOTE, None)])
    assert store.pending_vector_chunks("m", 10) == [("c1", "h1", NOTE)]
    store.close()
