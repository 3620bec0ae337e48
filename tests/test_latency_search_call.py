"""The faster paths of one search call give exactly what the plain ones give."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from mdrecall.embeddings.base import as_provider
from mdrecall.storage import vectors
from mdrecall.storage.sqlite import ChunkRow, Store
from mdrecall.storage.vectors import VectorMatrix
from mdrecall.text.fts_query import fold_term, indexed_tokens, keyword_coverage
from mdrecall.text.word_forms import word_forms

_WORD = re.compile(r"\w+")
WORDS = [
    "adopt",
    "adopted",
    "adopting",
    "stories",
    "story",
    "moved",
    "moving",
    "Caroline",
    "café",
    "cafe",
    "東京",
    "tokyo",
    "id0001x",
    "foo_bar",
    "foo",
    "bar",
    "c++",
    "run",
    "running",
    "e-mail",
    "naïve",
    "Straße",
]


def reference_coverage(terms: list[str], text: str, forms: bool) -> float:
    """keyword_coverage as it was written first: every indexed token of the text (ASCII text: the matches of
    the word pattern), then one test per term."""
    if not terms:
        return 1.0
    tokens = set(_WORD.findall(text.lower())) if text.isascii() else indexed_tokens(text)
    held = 0
    for term in terms:
        folded = fold_term(term)
        if folded in tokens or (forms and not tokens.isdisjoint(word_forms(folded))):
            held += 1
    return held / len(terms)


def test_keyword_coverage_equals_the_token_set_reference() -> None:
    rng = random.Random(4)
    seps = [" ", "\n", ". ", "-", "_", "/", "'", " (", "), "]
    checked = 0
    for _ in range(600):
        text = "".join(rng.choice(WORDS) + rng.choice(seps) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.3:
            text = text.upper() if rng.random() < 0.5 else text.title()
        terms = [rng.choice(WORDS).lower() for _ in range(rng.randint(0, 5))]
        for forms in (False, True):
            assert keyword_coverage(terms, text, forms) == reference_coverage(terms, text, forms), (terms, text)
            checked += 1
    assert checked == 1200
    # a keyword that is not a whole word is never held, as no indexed token can equal it
    assert keyword_coverage(["c++"], "we use c++ daily") == 0.0
    assert keyword_coverage(["moved"], "she moves on", forms=True) == 1.0
    assert keyword_coverage(["moved"], "she moves on", forms=False) == 0.0


def test_indexed_tokens_of_ascii_text_are_the_word_pattern_matches() -> None:
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(128)]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        assert indexed_tokens(text) == set(_WORD.findall(text.lower())), text


def _window_rows(rng: np.random.Generator, texts: dict[str, str]) -> list[ChunkRow]:
    return [
        ChunkRow(cid, f"memory/{cid}.md", "memory", 1, 2, f"h{cid}{text}", "m", text, rng.standard_normal((3, 8)))
        for cid, text in texts.items()
    ]


def test_lookups_after_a_search_use_the_rows_it_read_until_the_index_changes(tmp_path: Path) -> None:
    """window_vectors and terms_held skip the id lookup for rows a search just read, and see a rewritten
    chunk's new rowid (from this connection or another one)."""
    rng = np.random.default_rng(3)
    store = Store(tmp_path / "i.sqlite")
    store.ensure_vector_table(8)
    texts = {"a": "billing invoice", "b": "garden tomatoes", "c": "billing garden"}
    with store.transaction():
        store.insert_chunks(_window_rows(rng, texts))
    assert store.vector_matrix() is not None
    found = store.vector_search(rng.standard_normal(8).astype(np.float32), "m", ["memory"], 3)
    assert {r.id for r in found} == {"a", "b", "c"}

    def check(current: Store, remembered: bool = False) -> None:
        fresh = Store(tmp_path / "i.sqlite")
        terms = ["billing", "garden"]
        ids = ["a", "b", "c", "x"]
        assert fresh.vector_matrix() is not None
        want, held = fresh.window_vectors(ids), fresh.terms_held(ids, terms)
        fresh.close()
        assert current.vector_matrix() is not None  # as a search reads it (window_vectors slices it)
        current.window_vectors(ids)  # the first lookup of "x" (not indexed) queries
        queries: list[str] = []
        current.conn.exec_trace = lambda _cursor, sql, _bindings: queries.append(sql) or True
        got = current.window_vectors(ids)
        assert sorted(got) == sorted(want) == ["a", "b", "c"]
        assert all(np.array_equal(got[k], want[k]) for k in want)
        assert current.terms_held(ids, terms) == held
        current.conn.exec_trace = None
        assert not any("SELECT rowid, id FROM chunks" in q for q in queries), (
            queries
        )  # remembered: the search read them, or looked up

    check(store)
    with store.transaction():  # this connection rewrites a chunk: it gets a new rowid
        store.delete_chunks_for("memory/a.md", "memory")
        store.insert_chunks(_window_rows(rng, {"a": "garden only"}))
    check(store)
    other = Store(tmp_path / "i.sqlite")
    with other.transaction():  # another connection rewrites one
        other.delete_chunks_for("memory/b.md", "memory")
        other.insert_chunks(_window_rows(rng, {"b": "billing now"}))
    other.close()
    check(store)
    assert store.terms_held(["a", "b"], ["billing"]) == {"b": {"billing"}}
    store.close()


def _matrix(rng: np.random.Generator, chunks: int, dims: int) -> VectorMatrix:
    counts = rng.integers(1, 4, chunks)
    ids = np.repeat(np.arange(1, chunks + 1), counts)
    vectors = rng.standard_normal((len(ids), dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return VectorMatrix.from_rows(((int(i), v.tobytes()) for i, v in zip(ids, vectors, strict=True)), dims, len(ids))


def test_a_scan_in_two_halves_or_beside_the_caller_gives_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    matrix = _matrix(rng, 30_000, 16)  # ~60k windows: above the split threshold
    assert vectors.split_point(int(matrix.matrix.shape[0])) > 0
    queries = rng.standard_normal((5, 16)).astype(np.float32)
    split_exact = [matrix.chunk_scores(q) for q in queries]
    split_top = [matrix.top(q, 10) for q in queries]
    beside_top = [matrix.start_top(q, 10)() for q in queries]
    monkeypatch.setattr(vectors, "QUANTIZED_MIN_WINDOWS", 1000)  # the int8 pass, split
    assert matrix.prepare().quantized_pass
    split_int8 = [matrix.window_approximations(q) for q in queries]
    beside_int8 = [matrix.start_top(q, 10)() for q in queries]
    monkeypatch.setattr(vectors, "SPLIT_MIN_WINDOWS", 10**9)  # one scan on this thread
    for i, q in enumerate(queries):
        assert np.array_equal(matrix.window_approximations(q), split_int8[i])
        one = matrix.top(q, 10)
        assert all(np.array_equal(a, b) for a, b in zip(one, beside_int8[i], strict=True))
    monkeypatch.setattr(vectors, "QUANTIZED_MIN_WINDOWS", 10**9)
    for i, q in enumerate(queries):
        assert np.array_equal(matrix.chunk_scores(q), split_exact[i])
        one = matrix.top(q, 10)
        assert all(np.array_equal(a, b) for a, b in zip(one, split_top[i], strict=True))
        assert all(np.array_equal(a, b) for a, b in zip(one, beside_top[i], strict=True))


def test_hybrid_search_with_the_scan_beside_the_keyword_side_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdrecall.config.settings import parse_config
    from mdrecall.retrieval.search import run_search

    rng = np.random.default_rng(4)
    words = ["billing", "invoice", "garden", "tomato", "deploy", "gateway", "kitten", "budget"]
    store = Store(tmp_path / "i.sqlite")
    store.ensure_vector_table(8)
    texts = {f"c{i}": " ".join(rng.choice(words, 6)) + f"\nline {i}\nmore {i}" for i in range(300)}
    with store.transaction():
        store.insert_chunks(_window_rows(rng, texts))

    class Provider:
        id, model, dims, provider_key, max_seq_length = "local", "m", 8, "k", 512

        def __init__(self, vector: np.ndarray) -> None:
            self.vector = vector

        def embed_query(self, text: str) -> np.ndarray:
            return self.vector

    cfg = parse_config({}).query
    asks = [(" ".join(rng.choice(words, 2)), rng.standard_normal(8).astype(np.float32)) for _ in range(8)]

    def answers() -> list:
        out = []
        for text, vector in asks:
            response = run_search(store, as_provider(Provider(vector)), "m", cfg, text, ["memory"], 10)  # type: ignore[arg-type]
            out.append([(r.path, r.start_line, r.score, r.vector_score, r.text_score) for r in response.results])
        return out

    plain = answers()
    monkeypatch.setattr(vectors, "SPLIT_MIN_WINDOWS", 64)  # 900 windows: the scan now runs beside
    monkeypatch.setattr(vectors, "SPLIT_ALIGN", 16)
    beside: list[int] = []
    real = vectors._beside
    monkeypatch.setattr(vectors, "_beside", lambda *a: beside.append(1) or real(*a))
    assert store.vector_matrix() is not None and vectors.split_point(900) > 0
    assert answers() == plain and any(plain)
    assert len(beside) == len(asks)  # every hybrid search scanned on the helper thread
    store.close()


CALIBRATED = "multilingual-e5-small"  # the model name its calibration is for (vectors here are 8-d stand-ins)
TOPICS = ["billing", "invoice", "garden", "tomato", "deploy", "gateway", "kitten", "budget", "Caroline", "Vienna"]


def _overlapping_rows(rng: np.random.Generator) -> list[ChunkRow]:
    """30 files of 12 lines, each cut in chunks of 4 lines overlapping by one (as chunking does), one vector per
    chunk: neighbouring chunks of a file are merged into one result."""
    rows = []
    for f in range(30):
        lines = [" ".join(rng.choice(TOPICS, 2)) + f" note{f}k{i} line {i} of {f}" for i in range(12)]
        for start in (0, 3, 6, 9):
            end = min(start + 4, 12)
            text = "\n".join(lines[start:end])
            vector = np.r_[rng.standard_normal(6), 0.0, 0.0][None, :]  # the last two dimensions: off-topic
            name, path = f"{f}-{start}", f"memory/f{f}.md"
            rows.append(ChunkRow(name, path, "memory", start + 1, end, f"h{name}", CALIBRATED, text, vector))
    return rows


def test_calibrating_only_the_shown_hits_answers_as_calibrating_every_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Results, scores, snippets and notices equal those of the full computation (every candidate calibrated),
    for answered and abstained questions, with overlapping results merged or not, MMR, a minScore, both modes."""
    from mdrecall.config.settings import parse_config
    from mdrecall.retrieval import search

    rng = np.random.default_rng(6)
    store = Store(tmp_path / "i.sqlite")
    store.ensure_vector_table(8)
    rows = _overlapping_rows(rng)
    with store.transaction():
        store.insert_chunks(rows)
    null = np.zeros(8, dtype=np.float32)

    class Provider:
        id, model, dims, provider_key, max_seq_length, recommended_centering = "local", CALIBRATED, 8, "k", 512, 0.0

        def __init__(self, vector: np.ndarray) -> None:
            self.vector = vector

        def embed_query(self, text: str) -> np.ndarray:
            return self.vector

        def embed_batch(self, texts: list[str]) -> np.ndarray:
            return np.stack([null for _ in texts])

    asks = []
    for i in range(24):
        row = rows[int(rng.integers(len(rows)))]
        words = " ".join(w for w in row.text.split() if w.startswith("note"))
        away = np.r_[rng.standard_normal(6) * (i % 8) / 8, rng.standard_normal(2)]  # near a chunk .. far from all
        if i % 3 == 0:  # a question about a chunk, asked near it
            asks.append((f"what about {words}", row.embedding[0] + 0.2 * rng.standard_normal(8)))
        elif i % 3 == 1:  # its words, asked away from it: its chance may come after worse ones
            asks.append((f"what about {words}", away))
        else:
            asks.append(("how do I knit a scarf", away))
    configs = [
        {},
        {"mergeOverlapping": False},
        {"mmr": {"enabled": True}},
        {"minScore": 0.05},
        {"abstainBelow": 0.0},
        {"relativeFloor": 0.0},
    ]
    calibrated: list[int] = []
    real = search.calibrate_hits
    monkeypatch.setattr(search, "calibrate_hits", lambda *a: calibrated.append(len(a[2])) or real(*a))

    def answers() -> list:
        out = []
        for query_cfg in configs:
            cfg = parse_config({"query": query_cfg}).query
            for mode in ("vector", "hybrid"):
                for limit in (1, 3, 10):
                    for text, vector in asks:
                        provider = Provider(np.asarray(vector, dtype=np.float32))
                        r = search.run_search(store, provider, CALIBRATED, cfg, text, ["memory"], limit, mode=mode)  # type: ignore[arg-type]
                        found = [
                            (x.path, x.start_line, x.end_line, x.score, x.snippet, x.fused_score) for x in r.results
                        ]
                        out.append((found, r.notice, r.relaxed, r.scoring))
                        calls.append(len(calibrated))
        return out

    calls: list[int] = []

    shown = answers()
    lazy_calibrated = sum(calibrated)
    calibrated.clear()
    lazy_calls = list(calls)
    monkeypatch.setattr(search, "shown_count", lambda *a: None)  # every candidate calibrated, as before
    full = answers()
    assert shown == full
    twice = [b - a == 2 for a, b in zip([0, *lazy_calls], lazy_calls, strict=False)]  # the shown hits reached no floor
    assert any(t and found for t, (found, *_) in zip(twice, shown, strict=True))  # ... but a later one did
    assert lazy_calibrated < 0.7 * sum(calibrated)  # the shown hits alone were scored, most of the time
    assert {s for _, _, _, s in full} == {"calibrated"}
    assert sum(1 for found, *_ in full if not found) > 50  # abstained: nothing in memory matches
    assert all("nothing in memory matches" in str(notice) for found, notice, *_ in full if not found)
    assert sum(1 for found, *_ in full if len(found) > 1) > 50
    assert any(b - a > 3 for found, *_ in full for _, a, b, *_ in found)  # merged overlapping chunks
    store.close()


def test_searched_rows_unpack_a_compressed_text_only_when_it_is_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    store = Store(tmp_path / "i.sqlite", compress_text=True)
    store.ensure_vector_table(8)
    texts = {f"c{i}": f"billing garden {i}\n" + "a long line of notes about the garden " * 12 for i in range(40)}
    texts["short"] = "billing"  # under the size worth compressing: stored as TEXT
    with store.transaction():
        store.insert_chunks(_window_rows(rng, texts))
    assert store.conn.execute("SELECT count(*) FROM chunks WHERE typeof(text) = 'blob'").fetchone()[0] == 40
    rows = store.vector_search(rng.standard_normal(8).astype(np.float32), "m", ["memory"], 41)
    rows += store.keyword_search('"billing"', "m", ["memory"], 41)
    assert len(rows) == 82
    assert all(isinstance(r.__dict__["_stored"], bytes) for r in rows if r.id != "short")  # nothing unpacked yet
    assert all(r.text == texts[r.id] for r in rows)  # as written, once read
    assert all(isinstance(r.__dict__["_stored"], str) for r in rows)  # unpacked once, kept
    store.close()


def test_query_terms_are_cut_once_per_query_and_each_caller_gets_its_own_list() -> None:
    from mdrecall.text import fts_query

    query = "What did Caroline adopt in Vienna last spring?"
    first = fts_query.expand_query_terms(query)
    hits = fts_query._expanded_terms.cache_info().hits
    first.append("changed by a caller")
    again = fts_query.expand_query_terms(query)
    assert again == first[:-1] and again is not first and "caroline" in [t.lower() for t in again]
    assert fts_query._expanded_terms.cache_info().hits == hits + 1
