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
