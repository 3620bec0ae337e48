"""The faster paths of one search call give exactly what the plain ones give."""

from __future__ import annotations

import random
import re
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from mdrecall.embeddings.base import as_provider
from mdrecall.storage import vectors
from mdrecall.storage.sqlite import ChunkRow, Store
from mdrecall.storage.vectors import VectorMatrix
from mdrecall.text.fts_query import expand_query_terms, fold_term, indexed_tokens, keyword_coverage
from mdrecall.text.tokens import has_cjk
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


class Provider:
    """An 8-d provider of the calibrated model whose query vector is given (the centring direction is null)."""

    id, model, dims, provider_key, max_seq_length, recommended_centering = "local", CALIBRATED, 8, "k", 512, 0.0

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 8), dtype=np.float32)


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


def _time_phrases() -> list[str]:
    """Queries that say times (and many that do not) in the eight languages the date reader reads, in many
    shapes: every table word alone, after a preposition, beside a number, in other cases and scripts."""
    from mdrecall.text import dates
    from mdrecall.text.dates_languages import LANGUAGES

    words = {*dates._MONTHS, *dates._WEEKDAYS, *dates._SEASONS, *dates._NUMBERS, *dates._HINT_WORDS}
    for language in LANGUAGES:
        words |= {*language.months, *language.weekdays, *language.seasons, *language.numbers, *language.units}
        words |= {*language.counted, *language.words, *language.ambiguous}
    fixed = [
        "what did we decide yesterday",
        "the day before yesterday",
        "2023-05-08 notes",
        "on 8 May 2023",
        "May I ask about the budget",
        "last March",
        "two weeks ago",
        "over the weekend",
        "in the spring",
        "was ist gestern passiert",
        "letzte Woche",
        "hace dos semanas",
        "8 de maio de 2023",
        "en mars dernier",
        "qu'est-ce qu'on a fait hier",
        "füge hier ein Logging hinzu",
        "先週の金曜日",
        "上周",
        "2023년 5월 8일",
        "昨日何があった",
        "8.5.2023",
        "am 8. Mai",
        "what did Caroline adopt",
        "deploy the gateway",
        "",
        "WEEKEND plans",
        "Yesterday",
        "la semaine dernière",
        "vor drei Tagen",
        "il y a deux semaines",
        "a couple of days ago",
        "this past Friday",
        "ＭＡＹ ２０２３",
        "\u212aelvin last week",
        "la\u017ft year",
        "İstanbul today",
        "ﬁrst of March",
        "no time here at all",
        "mid-April",
        "since 2021",
        "what happened last night",
        "the past few days",
        "over the last couple of weeks",
        "Q3 2025 revenue",
        "the summer of 2023",
        "over the holidays",
        "on the 3rd",
        "since last Monday",
        "last quarter",
        "late 2024",
    ]
    rng = random.Random(9)
    pool = sorted(words)
    fillers = ["what", "did", "we", "in", "last", "the", "de", "der", "le", "3", "12", "2024", "ago", "前", "に", "은"]
    out = list(fixed) + pool + [w.upper() for w in pool[::3]] + [w.title() for w in pool[1::3]]
    for language in LANGUAGES:  # shapes the tables' patterns read: a day and a month, a number and a unit
        out += [f"8 {m} 2023" for m in language.months] + [f"am 3. {m}" for m in language.months]
        out += [f"2 {u}" for u in language.units] + [f"hace 3 {u}" for u in language.units]
        out += [f"il y a 2 {u}" for u in language.units] + [f"{w} passado" for w in language.weekdays]
    for _ in range(1500):
        picked = [rng.choice(pool) if rng.random() < 0.4 else rng.choice(fillers) for _ in range(rng.randint(1, 6))]
        joined = ("" if rng.random() < 0.15 else " ").join(picked)
        out.append(joined.upper() if rng.random() < 0.1 else joined)
    return out


def test_dates_read_with_the_shortcuts_as_with_every_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query without a digit or a time word skips the English patterns, and one whose words let no rule of
    another language be tried skips those: every answer equals the full reading's."""
    from mdrecall.text import dates, dates_languages

    phrases = _time_phrases()
    today = date(2026, 6, 17)

    def read_all() -> list:
        dates._other_languages.cache_clear()
        out = []
        for q in phrases:
            terms = expand_query_terms(q)
            out.append(
                (
                    dates.date_ranges(q, today),
                    dates.relative_spans(q),
                    dates.without_relative_times(q),
                    dates.names_only_a_time(terms, q),
                    dates._other_languages(q),
                )
            )
        return out

    hinted = [dates._english_hint(q) for q in phrases]
    regex_hint = [dates._ENGLISH_HINT.search(q) is not None for q in phrases]
    guard, unguarded = dates._spaced_rule_guard()
    quiet = [
        not has_cjk(dates_languages.fold(q))
        and guard.isdisjoint(re.findall(r"\w+", dates_languages.fold(q)))
        and not any(r.pattern.search(dates_languages.fold(q)) for r in unguarded)
        for q in phrases
    ]
    fast = read_all()
    # the plain reading: every English pattern and every other language's rule tried on every query
    always = dates_languages.Rule(re.compile(""), "date", frozenset())
    monkeypatch.setattr(dates, "_english_hint", lambda query: True)
    monkeypatch.setattr(dates, "_spaced_rule_guard", lambda: (frozenset(), (always,)))
    monkeypatch.setattr(dates_languages, "fold", lambda text: "".join(dates_languages._fold_char(c) for c in text))
    monkeypatch.setattr(dates, "fold", dates_languages.fold)
    full = read_all()
    dates._other_languages.cache_clear()
    for q, a, b in zip(phrases, fast, full, strict=True):
        assert a == b, q
    # both shortcuts were taken often, and the full reading found times in many of the phrases
    assert sum(not h for h in hinted) > 300 and sum(quiet) > 300
    assert sum(1 for ranges, *_ in full if ranges) > 350
    assert sum(1 for *_, said in full if said) > 300
    # the ASCII word-set hint says what the regex says
    assert hinted == regex_hint


def test_fold_and_latin_letters_of_ascii_text_as_character_by_character() -> None:
    from mdrecall.retrieval.calibration import latin_letters
    from mdrecall.text.dates_languages import _fold_char, fold

    text = "".join(chr(c) for c in range(128))
    assert fold(text) == "".join(_fold_char(c) for c in text)
    assert latin_letters(text) and not latin_letters("Москва today") and latin_letters("café")


def test_vector_only_search_reading_its_best_rows_first_answers_as_reading_every_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A calibrated vector-only search reads the rows of its best few first and the rest of its best top_count
    only when its results or its answer floor need them: results (every field), notices and scores equal
    those of a search that reads every candidate, with ties (duplicated chunks), rows of other sources and
    models filtered out, merged neighbours, MMR, a minScore, no tail floor, abstained questions."""
    from mdrecall.config.settings import parse_config
    from mdrecall.retrieval import search

    rng = np.random.default_rng(11)
    store = Store(tmp_path / "i.sqlite")
    store.ensure_vector_table(8)
    rows = _overlapping_rows(rng)
    extra = []
    for i, row in enumerate(rows[::2]):  # the same vector in another file: equal scores, ordered by path
        for copy in range(1 + i % 2):
            name = f"dup{i}-{copy}"
            extra.append(
                ChunkRow(name, f"memory/d{i}{copy}.md", "memory", 1, 4, f"h{name}", CALIBRATED, row.text, row.embedding)
            )
        kind = ("sessions", CALIBRATED) if i % 3 else ("memory", "another-model")
        extra.append(
            ChunkRow(f"x{i}", f"sessions/x{i}.jsonl", kind[0], 1, 4, f"hx{i}", kind[1], row.text, row.embedding)
        )
    with store.transaction():
        store.insert_chunks(rows + extra)

    asks = []
    for i in range(30):
        row = rows[int(rng.integers(len(rows)))]
        words = " ".join(w for w in row.text.split() if w.startswith("note"))
        away = np.r_[rng.standard_normal(6) * (i % 8) / 8, rng.standard_normal(2)]
        vector = row.embedding[0] if i % 5 == 0 else row.embedding[0] + 0.2 * rng.standard_normal(8)
        asks.append((f"what about {words}" if i % 3 else "how do I knit a scarf", vector if i % 2 else away))
    configs = [{}, {"mergeOverlapping": False}, {"mmr": {"enabled": True}}, {"minScore": 0.05}]
    configs += [{"abstainBelow": 0.0}, {"relativeFloor": 0.0}, {"abstainBelow": 0.5}]
    reads: list[int | None] = []
    real = store.vector_search
    monkeypatch.setattr(store, "vector_search", lambda *a, read=None: reads.append(read) or real(*a, read=read))

    def answers() -> list:
        out = []
        for query_cfg in configs:
            cfg = parse_config({"query": query_cfg}).query
            for limit in (1, 3, 10, 14):
                for text, vector in asks:
                    provider = Provider(np.asarray(vector, dtype=np.float32))
                    r = search.run_search(store, provider, CALIBRATED, cfg, text, ["memory"], limit, mode="vector")  # type: ignore[arg-type]
                    found = [
                        (
                            x.path,
                            x.start_line,
                            x.end_line,
                            x.score,
                            x.snippet,
                            x.vector_score,
                            x.text_score,
                            x.fused_score,
                        )
                        for x in r.results
                    ]
                    out.append((found, r.notice, r.relaxed, r.scoring))
        return out

    first = answers()
    first_reads = list(reads)
    reads.clear()
    monkeypatch.setattr(
        search, "_vector_prefix", lambda st, v, m, s, limit, cut, first: (st.vector_search(v, m, s, limit), None)
    )
    plain = answers()
    assert first == plain
    assert set(reads) == {None}  # the plain search read every candidate
    # the first reads asked for a few rows; some searches went on to their best top_count, some read them all
    # (a tie across a cut), and most stopped at the first few
    asked = [r for r in first_reads if r is not None]
    assert len(asked) > 0.5 * len(plain) and sum(1 for r in first_reads if r == 31) > 20
    assert None in first_reads
    assert sum(1 for found, *_ in plain if not found) > 30 and sum(1 for found, *_ in plain if len(found) > 2) > 30
    store.close()


def test_terms_present_are_remembered_until_the_index_changes(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    store = Store(tmp_path / "i.sqlite")
    store.ensure_vector_table(8)
    with store.transaction():
        store.insert_chunks(_window_rows(rng, {"a": "billing invoice", "b": "garden tomatoes"}))
    units = ['"billing"', '"kitten"', '"garden"*']
    assert store.terms_present(units) == {'"billing"', '"garden"*'}
    queries: list[str] = []
    store.conn.exec_trace = lambda _cursor, sql, _bindings: queries.append(sql) or True
    assert store.terms_present(units) == {'"billing"', '"garden"*'}
    assert not any("MATCH" in q for q in queries)  # remembered
    store.conn.exec_trace = None
    with store.transaction():  # this connection writes: asked again
        store.insert_chunks(_window_rows(rng, {"c": "a kitten"}))
    assert store.terms_present(units) == set(units)
    other = Store(tmp_path / "i.sqlite")
    with other.transaction():  # another connection deletes it
        other.delete_chunks_for("memory/c.md", "memory")
    other.close()
    assert store.terms_present(units) == {'"billing"', '"garden"*'}
    store.close()
