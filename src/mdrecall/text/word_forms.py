"""Other forms of an English keyword, so a question's "adopted" meets a note's "adopting" or "adopts".

The index does not stem (Porter stemming of the whole index cost the Python docs' R@5 .019 and the dated
set's exact tier; bench/quality/README.md), so the keyword side widens a question's words at query time:
- the FTS5 query asks for a word's stem as a prefix when an inflection leaves 5+ letters ("adopted" ->
  "adopt"*, one bm25 term whose frequency counts every form), shorter stems stay exact words (a 3-4 letter
  prefix matches too many unrelated words);
- a chunk's keyword coverage counts a keyword as held when the chunk holds one of its regular inflections
  (`word_forms`: -s, -es, -ed, -ing, -ly taken off and put back, with the e-drop, doubled consonant and
  y -> ies rules).
Only lowercase ASCII words: other scripts have no such suffixes, and identifiers keep their exact form.
`query.wordForms = false` keeps the exact words (the spec's keyword side).
"""

from __future__ import annotations

import functools
import re

# Suffixes an inflection adds, longest first; a stem keeps at least STEM_MIN_LETTERS letters.
STRIPPED_SUFFIXES = ("ing", "ed", "es", "s", "ly")
STEM_MIN_LETTERS = 5
# Words shorter than this keep their exact form in coverage too.
FORMS_MIN_LETTERS = 4
_ASCII_WORD = re.compile(r"[a-z]+")
_VOWELS = frozenset("aeiou")


def word_stem(word: str) -> str | None:
    """The stem an inflected word shares with its other forms ("adopted" -> "adopt"), None when the word
    has no suffix to take off or the stem would be shorter than STEM_MIN_LETTERS."""
    if not _ASCII_WORD.fullmatch(word):
        return None
    for suffix in STRIPPED_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= STEM_MIN_LETTERS:
            return word[: -len(suffix)]
    return None


@functools.lru_cache(maxsize=4096)  # asked again for every candidate chunk of a search
def word_forms(word: str) -> frozenset[str]:
    """Regular inflections of a word other than itself: "moved" -> move, moves, moving, ...; "story" ->
    stories, storied. Forms that are not words ("movs") are harmless: they only have to be found in a text."""
    if len(word) < FORMS_MIN_LETTERS or not _ASCII_WORD.fullmatch(word):
        return frozenset()
    forms: set[str] = set()
    for base in _bases(word):
        forms |= _inflections(base)
    forms.discard(word)
    return frozenset(forms)


def _doubled(stem: str) -> bool:
    return len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in _VOWELS


def _bases(word: str) -> set[str]:
    """What the word may be an inflection of (the word itself when it has no inflectional suffix)."""
    if word.endswith(("ies", "ied")) and len(word) > 4:
        bases = {word[:-3] + "y"}
    elif word.endswith("ing") and len(word) > 5:
        stem = word[:-3]
        bases = {stem, stem + "e"} | ({stem[:-1]} if _doubled(stem) else set())
    elif word.endswith("ed") and len(word) > 4:
        stem = word[:-2]
        bases = {stem, word[:-1]} | ({stem[:-1]} if _doubled(stem) else set())
    elif word.endswith("es") and len(word) > 4:
        bases = {word[:-2], word[:-1]}
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 4:
        bases = {word[:-1]}
    elif word.endswith("ly") and len(word) > 5:
        bases = {word[:-2]}
    else:
        return {word}
    return {base for base in bases if len(base) >= 3}


def _inflections(base: str) -> set[str]:
    if base.endswith("e"):
        return {base, base + "s", base + "d", base[:-1] + "ing"}
    if base.endswith("y") and len(base) > 3 and base[-2] not in _VOWELS:
        return {base, base[:-1] + "ies", base[:-1] + "ied", base + "ing"}
    return {base, base + "s", base + "es", base + "ed", base + "ing"}
