"""Word forms on the keyword side: a question's "adopted" meets a note's "adopting" (query.wordForms)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdrecall.text.fts_query import keyword_coverage, keyword_match
from mdrecall.text.word_forms import word_forms, word_stem

from .conftest import write


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("adopted", "adopt"),
        ("painting", "paint"),
        ("tickets", "ticket"),
        ("quickly", "quick"),
        ("reading", None),  # "read" is 4 letters: as a prefix it would also find "ready", "realm"...
        ("adopt", None),  # nothing to take off
        ("class", None),
        ("café", None),  # ASCII words only
        ("v2beta", None),
    ],
)
def test_word_stem_takes_off_one_inflection_and_keeps_five_letters(word: str, stem: str | None) -> None:
    assert word_stem(word) == stem


def test_word_forms_puts_the_inflections_back() -> None:
    assert {"move", "moves", "moving"} <= word_forms("moved")
    assert {"hike", "hiked", "hikes"} <= word_forms("hiking")
    assert {"run", "runs"} <= word_forms("running")  # doubled consonant
    assert "story" in word_forms("stories") and "stories" in word_forms("story")
    assert "adopted" in word_forms("adopt") and "adopting" in word_forms("adopt")
    assert "moved" not in word_forms("moved")  # only the other forms
    assert word_forms("cat") == frozenset()  # too short to guess
    assert word_forms("東京") == frozenset()


def test_keyword_match_is_a_prefix_only_with_forms() -> None:
    assert keyword_match("Adopted", forms=True) == '"adopt"*'
    assert keyword_match("adopted", forms=False) == '"adopted"'
    assert keyword_match("read", forms=True) == '"read"'
    assert keyword_match('say "hi"', forms=True) == '"say ""hi"""'  # never FTS5 syntax


def test_coverage_counts_a_keyword_held_in_another_form() -> None:
    text = "Caroline is adopting a puppy and moved to Boston."
    assert keyword_coverage(["adopted", "moves"], text) == 0.0
    assert keyword_coverage(["adopted", "moves"], text, forms=True) == 1.0
    assert keyword_coverage(["adopted", "kitten"], text, forms=True) == 0.5


@pytest.fixture
def chat_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "memory/2023-05-08.md", "# 2023-05-08\n\nCaroline: We are adopting a rescue greyhound next week.\n")
    write(ws, "memory/2023-05-09.md", "# 2023-05-09\n\nMelanie: The pottery class was adopted by the school.\n")
    write(ws, "memory/2023-05-10.md", "# 2023-05-10\n\nMelanie: Running shoes are on sale downtown.\n")
    return ws


def test_keyword_search_finds_another_form_of_a_question_word(chat_workspace: Path, make_index) -> None:
    index = make_index(chat_workspace, None)
    index.sync()
    found = index.search("Who was adopting a greyhound?", min_score=0.0)
    assert found.results[0].path == "memory/2023-05-08.md"
    # "adopted" reaches "adopting" only through its forms; "greyhound" is exact on both sides
    paths = [r.path for r in index.search("adopted greyhound", min_score=0.0).results]
    assert paths[0] == "memory/2023-05-08.md"
    assert "memory/2023-05-09.md" in paths  # the exact "adopted" still matches


def test_word_forms_off_keeps_the_exact_words(chat_workspace: Path, make_index) -> None:
    exact = make_index(chat_workspace, None, config={"query": {"wordForms": False}})
    exact.sync()
    assert [r.path for r in exact.search("adopted", min_score=0.0).results] == ["memory/2023-05-09.md"]
    widened = make_index(chat_workspace, None, db_path=chat_workspace.parent / "forms.sqlite")
    widened.sync()
    paths = {r.path for r in widened.search("adopted", min_score=0.0).results}
    assert paths == {"memory/2023-05-08.md", "memory/2023-05-09.md"}


def test_two_forms_of_one_word_make_one_prefix_unit(chat_workspace: Path, make_index, monkeypatch) -> None:
    index = make_index(chat_workspace, None)
    index.sync()
    asked: list[str] = []
    search = index.store.keyword_search
    monkeypatch.setattr(index.store, "keyword_search", lambda q, *a: asked.append(q) or search(q, *a))
    index.search("adopted adopting greyhound", min_score=0.0)
    assert asked and asked[0].count('"adopt"*') == 1
