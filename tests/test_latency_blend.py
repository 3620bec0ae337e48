"""The faster read paths of the best-window blend give exactly what the plain ones give."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mdrecall.documents.windows import WindowPlan, chunk_windows
from mdrecall.retrieval.window_blend import TermFinder
from mdrecall.storage.sqlite import ChunkRow, Store

TEXTS = [
    "- Tom fixed the billing invoice bug\n- Priya reviewed the invoice flow\n\n- lunch at noon\n- billing again",
    "nothing to see here\njust notes about gardens\nand tomatoes\nand more tomatoes\nend",
    "x" * 3000 + "billing" + "y" * 2000 + "\nbilling-invoice line\ninvoices are not invoice",
    "Café notes: billing in 東京 and the invoice\n- second line billing\n- third\n- fourth\n- fifth",
    "prebilling and billingx are not whole words\n" + "word " * 700 + "billing",
    "",
]
TERMS = ["billing", "invoice", "東京", "tomatoes"]


def test_terms_in_windows_match_a_search_of_each_window() -> None:
    find = TermFinder(TERMS)
    for plan in (WindowPlan(3, 3, 512), WindowPlan(3, 1, 64)):
        for text in TEXTS:
            windows = chunk_windows(text, plan)
            assert find.in_windows(text, windows) == [find(w) for w in windows]
    assert TermFinder([]).in_windows(TEXTS[0], ["a", "b"]) == [set(), set()]


def test_window_vectors_from_the_matrix_equal_the_stored_ones(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    store = Store(tmp_path / "i.sqlite")
    store.ensure_vector_table(16)
    counts = [1, 3, 7, 2, 5]
    rows = []
    for i, count in enumerate(counts):
        windows = rng.standard_normal((count, 16)).astype(np.float32)
        rows.append(ChunkRow(f"c{i}", f"memory/{i}.md", "memory", 1, 2, f"h{i}", "m", f"text {i}", windows))
    with store.transaction():
        store.insert_chunks(rows)
    with store.transaction():  # a chunk written again later: its windows now sit after the others
        store.delete_chunks_for("memory/1.md", "memory")
        store.insert_chunks([ChunkRow("c1", "memory/1.md", "memory", 1, 2, "h1b", "m", "new", rows[1].embedding[::-1])])
    ids = [f"c{i}" for i in range(len(counts))] + ["missing"]
    stored = store._window_vectors_stored(ids)
    assert store.vector_matrix() is not None
    fast = store.window_vectors(ids)
    assert sorted(fast) == sorted(stored) and len(fast) >= 4
    for key, value in stored.items():
        assert np.array_equal(fast[key], value)
    store.close()


def test_the_whole_words_pattern_finds_what_the_plain_alternation_finds() -> None:
    """The first-character form of the whole-word regex (twice as fast) against `(?<!\\w)(?:a|b)(?!\\w)`, on
    random term sets (specials included: regex characters, one-letter terms, shared first letters)."""
    import random
    import re

    from mdrecall.retrieval.window_blend import whole_words_pattern

    text = " ".join(TEXTS).lower() + " c++ a.b x-ray foo] ^up o'neil ab abc a i billings rebill bill"
    words = sorted(set(re.findall(r"\w+", text)) | {"c++", "a.b", "x-ray", "foo]", "^up", "o'neil", "bill"})
    words = [w for w in words if w.isascii()]
    rng = random.Random(7)
    for _ in range(500):
        terms = sorted(set(rng.sample(words, rng.randint(1, 8))), key=len, reverse=True)
        plain = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(t) for t in terms) + r")(?!\w)")
        assert whole_words_pattern(terms).findall(text) == plain.findall(text), terms


def test_the_snippet_focus_finds_the_terms_as_the_term_finder_does() -> None:
    """keyword_focus reads ASCII lines without compiling TermFinder's regex: the same whole-word terms (query
    terms are words: `expand_query_terms` cuts "x-ray" into "x" and "ray")."""
    import random
    import re

    from mdrecall.retrieval.window_blend import _whole_words_in, keyword_focus

    lines = [line for text in TEXTS for line in text.split("\n") if line.strip() and line.isascii()]
    lines += ["c++ and x-ray", "the invoice-billing flow_id", "billing_invoice", "re-billing rebilling"]
    words = sorted({w for line in lines for w in re.findall(r"\w+", line.lower())})
    rng = random.Random(11)
    for _ in range(300):
        terms = sorted(set(rng.sample(words, rng.randint(1, 6))))
        find = TermFinder(terms)
        for line in lines:
            assert _whole_words_in(line.lower(), terms) == find(line), (terms, line)
    # the window (cut as at indexing) holding the most and rarest terms, in ASCII and CJK text alike
    long = "\n".join(f"- note {i} about the weekly routine of the team and nothing else at all" for i in range(30))
    long = long.replace("note 20 about", "note 20 about the billing invoice, and note about")
    windows = chunk_windows(long, WindowPlan())
    holding = [w for w in windows if "billing invoice" in w]
    assert len(windows) > 3 and len(holding) == 1
    assert keyword_focus(long, ["billing", "invoice", "routine"]) == holding[0]
    assert keyword_focus(long, ["routine", "weekly"]) == windows[0], "a tie: the first window"
    assert "東京" in (keyword_focus(TEXTS[3], ["東京", "invoice"]) or "")
    assert keyword_focus(TEXTS[1], ["billing"]) is None
    assert "Café notes" in (keyword_focus(TEXTS[3] + "\n- x\n- y\n- z", ["cafe"]) or ""), "folded as the index folds"
