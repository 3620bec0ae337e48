"""Which Latin-script language a text is written in, told by its stop words; and whether two texts differ.

A question asked in German over English notes shares its meaning with them (the multilingual embedding
sees it) but few of its words: "beschlossen" or "decidimos" can never occur in an English note. Telling that
apart from an English question about something the notes never mention ("how do I knit a scarf") needs to
know which language the question and the note are in. Their stop words say it (`dates_languages.language_counts`:
"the", "did", "und", "haben", "qué", "est"...): a text's languages are the ones whose stop words it uses most.
Short texts may use none (no language: nothing is assumed) or tie between close languages (Spanish and
Portuguese both: either way not English).
"""

from __future__ import annotations

import functools
import re

from mdrecall.text.dates_languages import LANGUAGES, LATIN_CODES, fold, language_counts, stop_words_of
from mdrecall.text.fts_query import indexed_tokens

_WORD = re.compile(r"\w+", re.UNICODE)
TEXT_CHARS = 400  # a note's language is read from its first characters (some 60 words: enough to tell)
_CODE_CHARS = "(){}[]=_;<>\\/*"
CODE_SHARE = 0.05
# a dotted name ("os.path.join"); the \b start makes the engine try it at word starts only (twice as fast,
# the same matches: a dotted name found inside a word is found from that word's start too)
_DOTTED = re.compile(r"\b\w+(?:\.\w+)+")


def _best(counts: dict[str, int], least: int) -> frozenset[str]:
    top = max(counts.values())
    if top < least:
        return frozenset()
    return frozenset(code for code, n in counts.items() if n == top)


@functools.lru_cache(maxsize=256)
def query_languages(query: str) -> frozenset[str]:
    """The languages a question's stop words belong to most ("Was haben wir beschlossen?" -> {"de"}; "O que a
    Caroline pesquisou?" -> {"es", "pt"}); empty when it has none ("budget Q3"). Another language than English
    needs two of its stop words, or one and a letter English does not write ("¿Qué investigó Caroline?"): an
    English question of keywords holds words that are stop words elsewhere ("OS upgrade", "dir listing")."""
    counts = language_counts(_WORD.findall(fold(_DOTTED.sub(" ", query))))
    languages = _best(counts, 1)
    if languages and "en" not in languages and max(counts.values()) < 2 and query.isascii():
        return frozenset()
    return languages


def text_languages(text: str) -> frozenset[str]:
    """The languages of a note's text, from its first `TEXT_CHARS` characters: at least three of its stop words
    (and, for another language than English, twice as many as English ones); else none (a list of names, a
    table of numbers). Code has none either: its short names are stop words somewhere ("os", "dir"), so a
    text with more than `CODE_SHARE` of code punctuation is not read, nor dotted names or single letters."""
    head = text[:TEXT_CHARS]
    if sum(head.count(ch) for ch in _CODE_CHARS) > CODE_SHARE * len(head):
        return frozenset()
    head = _DOTTED.sub(" ", head)  # "os.path.join", "self.fp": names, not words
    words = _WORD.findall(head.lower() if head.isascii() else fold(head))
    counts = language_counts([word for word in words if len(word) > 1])  # "a", "e", "y": letters in code
    languages = _best(counts, 3)
    if "en" not in languages and max(counts.values()) < 2 * counts["en"]:
        return frozenset()  # not clearly another language than English
    return languages


@functools.cache
def _other_than_english() -> frozenset[str]:
    """The stop words of the other Latin-script languages that English does not have ("und", "qué", "est")."""
    others = frozenset().union(*(stop_words_of(code) for code in LATIN_CODES if code != "en"))
    return others - stop_words_of("en")


def may_read_as_other_than_english(text: str) -> bool:
    """False when `text_languages(text)` is surely empty or holds English: its ASCII start has none of the
    other languages' own stop words, so no other language can count more of them than English (~4 us, against
    ~25 us for `text_languages`; a text with other letters is always read)."""
    head = text[:TEXT_CHARS]
    if not head.isascii():
        return True
    return not _other_than_english().isdisjoint(indexed_tokens(head))  # (ASCII: its lower-cased \w+ words)


def other_language(query_languages: frozenset[str], text: str) -> bool:
    """The text is written in another language than the question (both known, no language in common)."""
    return languages_differ(query_languages, text_languages(text))


def languages_differ(query_languages: frozenset[str], text_languages: frozenset[str]) -> bool:
    """Both languages known and none in common."""
    return bool(query_languages) and bool(text_languages) and text_languages.isdisjoint(query_languages)


def function_word(word: str, languages: frozenset[str]) -> bool:
    """The word is a stop word of one of these languages (German "hat", Spanish "son": words the keyword
    side keeps because English uses them as content words)."""
    folded = fold(word)
    return any(folded in stop_words_of(code) for code in languages)


def time_word(word: str, languages: frozenset[str]) -> bool:
    """The word names a time in one of these languages' date tables (German "Frühling", "Jahr", "Woche")."""
    folded = fold(word)
    return any(folded in language.time_words for language in LANGUAGES if language.code in languages)
