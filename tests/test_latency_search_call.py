"""The faster paths of one search call give exactly what the plain ones give."""

from __future__ import annotations

import random
import re

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
