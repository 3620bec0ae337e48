"""Hostile input: FTS syntax and huge or odd queries never raise, paths never escape, odd files never crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdrecall.documents.workspace import resolve_memory_path
from mdrecall.errors import PathRefusedError
from mdrecall.retrieval.search import build_fts_query
from mdrecall.storage.sqlite import Store

from .conftest import HashingProvider, write

HOSTILE_QUERIES = [
    '"',
    '""""',
    "NEAR(a b, 3)",
    "a OR b",
    "a AND",
    "NOT",
    "-a",
    "text:secret",
    "{text path}: x",
    "^start",
    "a*",
    "*",
    "(",
    ")",
    "a + b",
    "'; DROP TABLE chunks; --",
    "\x00\x01\x02\x1b[31m",
    "\u202e\u200b\ufeff",
    "ñandú 東京 Москва العربية",
    "x" * 100_000,
    " ".join(f"w{i}" for i in range(20_000)),
]

FTS_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)


@pytest.fixture(scope="module")
def fts_conn():
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    conn.execute("INSERT INTO t(text) VALUES ('hello world'), ('東京 タワー'), ('a828e60 memorySearch.query.hybrid')")
    return conn


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(FTS_TEXT)
def test_fts_query_builder_never_raises_and_is_always_valid_fts5(fts_conn, raw: str) -> None:
    query = build_fts_query(raw)
    if query is not None:
        fts_conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (query,)).fetchall()


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=range(len(HOSTILE_QUERIES)))
def test_hostile_queries_never_error(workspace: Path, make_index, query: str) -> None:
    index = make_index(workspace, HashingProvider())
    index.sync()
    for mode in ("hybrid", "keyword", "vector"):
        response = index.search(query, mode=mode)
        assert isinstance(response.results, list)
    assert index.store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 3


SEGMENT = st.sampled_from(["..", ".", "memory", "MEMORY.md", "x.md", "%2e%2e", "a\\b", "", "sub", "/", "~", "\0"])


@settings(max_examples=500, deadline=None)
@given(st.lists(SEGMENT, max_size=6).map("/".join))
def test_path_resolution_never_escapes(tmp_path_factory, raw: str) -> None:
    root = tmp_path_factory.getbasetemp() / "paths-ws"
    (root / "memory" / "sub").mkdir(parents=True, exist_ok=True)
    try:
        resolved = resolve_memory_path(root, raw)
    except PathRefusedError:
        return
    resolved = Path(os.path.normpath(resolved))
    assert resolved == root / "MEMORY.md" or resolved == root / "memory.md" or resolved.is_relative_to(root / "memory")
    assert resolved.suffix.lower() == ".md"


def test_hostile_files_are_indexed_or_skipped_and_the_rest_still_indexes(workspace: Path, make_index) -> None:
    memory = workspace / "memory"
    (memory / "latin1.md").write_bytes("r\xe9sum\xe9 caf\xe9\n".encode("latin-1"))
    (memory / "binary.md").write_bytes(bytes(range(256)) * 40)
    write(workspace, "memory/one-line.md", "y" * 5_000_000)
    write(workspace, "memory/empty.md", "")
    deep = "memory/" + "/".join(f"level{i}" for i in range(40)) + "/deep.md"
    write(workspace, deep, "deeply nested aardvark\n")
    write(workspace, "memory/notes with spaces ✓ 日本.md", "unicode named file mentions okapi\n")
    (memory / "dir.md").mkdir()
    index = make_index(workspace, HashingProvider())
    report = index.sync()
    reasons = dict(report.skipped)
    assert "binary" in reasons["memory/binary.md"]
    assert "UTF-8" in reasons["memory/latin1.md"]
    assert index.search("aardvark", mode="keyword").results[0].path == deep
    assert index.search("okapi", mode="keyword").results[0].path == "memory/notes with spaces ✓ 日本.md"
    assert index.search("a828e60", mode="keyword").results[0].path == "MEMORY.md"
    long_chunks = index.store.conn.execute(
        "SELECT max(length(chunk_text(text))), count(*) FROM chunks WHERE path = 'memory/one-line.md'"
    ).fetchone()
    assert long_chunks[0] == 1600  # 3125 identical segments of one line: one chunk, stored once
    assert long_chunks[1] == 1
    assert not index.is_dirty()


KILL_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[3])
from conftest import HashingProvider
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.backends.builtin import MemoryIndex

class Steady(HashingProvider):
    def embed_batch(self, texts):
        time.sleep(0.002 * len(texts))
        return super().embed_batch(texts)

config = parse_config({"cache": {"enabled": False}})
settings = resolve_settings(workspace=sys.argv[1], db_path=sys.argv[2], config=config)
index = MemoryIndex(settings, ProviderResult(Steady(model=sys.argv[4]), "test"))
print("ready", flush=True)
index.sync(force=sys.argv[5] == "force", progress=lambda done, total, label: print(f"file {done}", flush=True))
print("done", flush=True)
"""


def test_sigkill_at_many_points_never_breaks_the_index(workspace: Path, make_index, tmp_path: Path) -> None:
    for i in range(60):
        write(
            workspace,
            f"memory/n{i:03d}.md",
            "\n".join(f"note {i} line {j} about kill point testing" for j in range(60)),
        )
    script = tmp_path / "indexer.py"
    script.write_text(KILL_SCRIPT)
    db = tmp_path / "idx.sqlite"
    tests_dir = str(Path(__file__).parent)
    baseline = make_index(workspace, HashingProvider(model="m0"), db_path=db)
    baseline.sync()
    baseline.close()
    # kill right after the k-th file is written (hooks, not timing), in incremental and forced runs
    kill_points = [
        (k, "force" if k % 2 else "incremental") for k in (0, 1, 2, 5, 9, 14, 20, 27, 35, 44, 53, 59, 60, 61)
    ]
    outcomes = []
    for attempt, (after_files, mode) in enumerate(kill_points):
        model = f"m{attempt % 3}"
        if mode == "incremental":
            for i in range(0, 60, 7):  # change some files so the incremental run has work to do
                write(
                    workspace, f"memory/n{i:03d}.md", f"note {i} changed in attempt {attempt} about kill point testing"
                )
        proc = subprocess.Popen(
            [sys.executable, str(script), str(workspace), str(db), tests_dir, model, mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout.readline().strip() == "ready"
        while True:
            line = proc.stdout.readline().strip()
            if not line or line == "done" or line == f"file {after_files}":
                break
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        outcomes.append(proc.returncode)
        check = apsw.Connection(str(db))
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok", (attempt, after_files)
        check.close()
        store = Store(db)
        indexed_model = store.read_meta()["model"]  # old or new content, whichever committed
        store.close()
        reader = make_index(workspace, HashingProvider(model=indexed_model), db_path=db)
        assert reader.search("kill point", mode="keyword").results, (attempt, after_files)
        reader.close()
    killed = outcomes.count(-signal.SIGKILL)
    assert killed >= len(kill_points) // 2, f"only {killed} of {len(kill_points)} runs were killed mid-way"
    final = make_index(workspace, HashingProvider(model="m0"), db_path=db)
    final.sync()
    assert final.store.counts()["memory"]["files"] == 63
    assert not list(tmp_path.glob("idx.sqlite.tmp-*"))
