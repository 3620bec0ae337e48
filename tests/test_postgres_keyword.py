"""The Postgres keyword side's fast path against its reference, on the real embedded server.

`PgStore.keyword_search` answers plain words from the postings (`BM25_POSTINGS_SQL`); `BM25_SQL` (per-row
BM25 over the tsvectors) answers the rest and is the reference: `keyword_fast = False` forces it. Both must
give the same rows, order and scores, and the postings must follow every write: inserts, a changed file's
rows replaced, a deleted file, a full reindex.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from conftest import HashingProvider, write
from mdrecall.backends.postgres import PostgresIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.storage.postgres.keyword import translate
from mdrecall.storage.postgres.schema import MIGRATIONS, migrate

WORDS = ["gateway", "deploy", "friday", "rollback", "canary", "database", "migration", "cache", "latency", "budget"]
QUERIES = [
    '"gateway"',
    '"gateway" OR "deploy"',
    '"gateway" OR "rollback" OR "latency" OR "nothingmatches"',
    '"gateway" AND "deploy"',
    '"canary" AND "database" AND "cache"',
    '"gateway deploy" OR "canary"',
    '"gateway" NOT "deploy"',
    '"gate"*',
    '"gate"* OR "deploy"',
    '"gatew"* AND "canar"*',
    '"dep"* OR "ca"* OR "nothingmatches"',
    '"gateway" OR "deploy" AND "cache"',
    '"nothingmatches"',
]


@pytest.fixture
def pg_index(pg_server, monkeypatch, tmp_path):
    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    opened: list[PostgresIndex] = []

    def factory(ws: Path, agent: str = "kw") -> PostgresIndex:
        settings = resolve_settings(
            workspace=ws,
            agent_id=agent,
            state_dir=tmp_path / "state",
            config=parse_config({"store": {"driver": "postgres"}}),
        )
        index = PostgresIndex(settings, ProviderResult(HashingProvider(), requested="test"))  # type: ignore[arg-type]
        opened.append(index)
        return index

    yield factory
    for index in opened:
        index.close()


def _corpus(ws: Path, files: int = 40) -> None:
    """Notes whose words repeat unevenly (different tf, doc lengths and ties), some in the sessions source."""
    for i in range(files):
        words = [WORDS[(i * 7 + j * j) % len(WORDS)] for j in range(5 + i % 9)]
        body = " ".join(words) + (" gateway" * (i % 4))
        write(ws, f"memory/n{i:03d}.md", f"# Note {i}\n\n{body}\n\nfiller text {i} here\n")


def _answers(index: PostgresIndex, fast: bool, sources: list[str], limit: int) -> dict[str, list]:
    store = index.store
    store.keyword_fast = fast  # this store only (the class default stays)
    model = index.provider.model
    return {
        q: [(r.id, r.path, r.start_line, r.score) for r in store.keyword_search(q, model, sources, limit)]
        for q in QUERIES
    }


def _assert_same(index: PostgresIndex, sources: list[str], limit: int, hits: bool = True) -> None:
    reference = _answers(index, False, sources, limit)
    fast = _answers(index, True, sources, limit)
    for query in QUERIES:
        assert [r[:3] for r in fast[query]] == [r[:3] for r in reference[query]], query
        for a, b in zip(fast[query], reference[query], strict=True):
            assert a[3] == pytest.approx(b[3], rel=1e-12), query
    assert any(reference[q] for q in QUERIES[:5]) == hits  # not vacuous


def _postings_consistent(index: PostgresIndex) -> None:
    """The postings of the live generation are exactly what its tsvectors hold; no generation has orphans."""
    with psycopg.connect(index.dsn, autocommit=True) as conn:
        gen = conn.execute(
            "SELECT active_generation FROM mdrecall_indexes WHERE id = %s", (index._reader_index_id(),)
        ).fetchone()[0]
        expected = conn.execute(
            "SELECT c.rid, u.lexeme, cardinality(u.positions), c.doc_len FROM mdrecall_chunks c, unnest(c.tsv) u "
            "WHERE c.generation = %s ORDER BY 1, 2",
            (gen,),
        ).fetchall()
        held = conn.execute(
            "SELECT rid, term, tf, doc_len FROM mdrecall_postings WHERE generation = %s ORDER BY 1, 2", (gen,)
        ).fetchall()
        orphans = conn.execute(
            "SELECT count(*) FROM mdrecall_postings WHERE generation NOT IN (SELECT id FROM mdrecall_generations)"
        ).fetchone()[0]
    assert held == expected and held
    assert orphans == 0


def test_fast_paths_equal_the_reference(pg_index, workspace):
    """Every query shape, small and large limits, a source filter that empties the first cut (widening)."""
    _corpus(workspace)
    index = pg_index(workspace)
    index.sync()
    for limit in (1, 3, 50):
        _assert_same(index, ["memory"], limit)
    _assert_same(index, ["sessions"], 5, hits=False)  # nothing in that source: the cut widens until every chunk is seen
    with psycopg.connect(index.dsn, autocommit=True) as conn:  # the best chunks of some queries leave "memory"
        conn.execute(
            "UPDATE mdrecall_chunks SET source = 'sessions' WHERE path < 'memory/n030.md' AND generation = "
            "(SELECT active_generation FROM mdrecall_indexes WHERE id = %s)",
            (index._reader_index_id(),),
        )
    for limit in (2, 8):
        _assert_same(index, ["memory"], limit)  # the first cut holds too few "memory" rows: it widens
        _assert_same(index, ["sessions", "memory"], limit)
    assert translate('"gateway" OR "deploy"').plain_words and translate('"a" AND "b"').plain_words
    assert not translate('"a b" OR "c"').plain_words and translate('"a b" OR "c"').shape == "or"
    assert translate('"a" NOT "b"').shape == "" and translate('"a b"*').shape == ""
    # a word's prefix is one unit the postings answer (a range of their byte-ordered terms)
    prefixed = translate('"adopt"* OR "dog"')
    assert prefixed.plain_words and prefixed.prefixes == ["adopt"] and prefixed.prefix_ends == ["adopu"]


def test_postings_follow_changes_and_reindex(pg_index, workspace):
    """Changed and deleted files take their postings with them; a full reindex leaves no orphans."""
    _corpus(workspace, files=12)
    index = pg_index(workspace, agent="kw-changes")
    index.sync()
    _postings_consistent(index)
    write(workspace, "memory/n003.md", "# Changed\n\ncanary canary rollback\n")
    (workspace / "memory" / "n004.md").unlink()
    index.sync()
    _postings_consistent(index)
    _assert_same(index, ["memory"], 10)
    index.sync(force=True)  # a new generation replaces the old one
    _postings_consistent(index)
    _assert_same(index, ["memory"], 10)


def test_migration_backfills_postings(pg_server, tmp_path):
    """A server at schema 3 with chunks gets their postings (and chunk keys) from migration 4."""
    dsn = pg_server.fresh_database("mdrecall_kw_migrate")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE mdrecall_schema_version (version integer PRIMARY KEY, applied_at timestamptz)")
        for version, sql in MIGRATIONS[:3]:
            conn.execute(sql)
            conn.execute("INSERT INTO mdrecall_schema_version(version) VALUES (%s)", (version,))
        conn.execute("INSERT INTO mdrecall_indexes(agent_id, workspace_key) VALUES ('a', 'w')")
        conn.execute("INSERT INTO mdrecall_generations(index_id, n_chunks, total_len) VALUES (1, 2, 5)")
        conn.execute(
            "INSERT INTO mdrecall_chunks(generation, id, path, source, start_line, end_line, hash, model, text, "
            "tsv, doc_len, updated_at) VALUES "
            "(1, 'x', 'memory/a.md', 'memory', 1, 2, 'h', 'm', 't', $$'gateway':1,3 'deploy':2$$, 3, 0), "
            "(1, 'y', 'memory/b.md', 'memory', 1, 2, 'h', 'm', 't', $$'gateway':1 'cache':2$$, 2, 0)"
        )
        assert migrate(conn) >= 4
        held = conn.execute(
            "SELECT c.id, p.term, p.tf, p.doc_len FROM mdrecall_postings p JOIN mdrecall_chunks c ON c.rid = p.rid "
            "ORDER BY 1, 2"
        ).fetchall()
        assert held == [("x", "deploy", 1, 3), ("x", "gateway", 2, 3), ("y", "cache", 1, 2), ("y", "gateway", 1, 2)]
        conn.execute("DELETE FROM mdrecall_generations WHERE id = 1")  # postings go with their generation
        assert conn.execute("SELECT count(*) FROM mdrecall_postings").fetchone()[0] == 0


def test_terms_present_as_the_builtin_store_says(pg_index, workspace, make_index):
    """Which match units some chunk holds (calibrated search asks it for the names a question uses): the same
    answer on PostgreSQL as on SQLite, prefixes included."""
    _corpus(workspace, files=6)
    index = pg_index(workspace)
    index.sync()
    builtin = make_index(workspace, HashingProvider())
    builtin.sync()
    units = ['"gateway"', '"gertrude"', '"gate"*', '"zzz"*', '"canary"']
    assert (
        index.store.terms_present(units) == builtin.store.terms_present(units) == {'"gateway"', '"gate"*', '"canary"'}
    )
