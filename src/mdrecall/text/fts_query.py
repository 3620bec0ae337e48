"""How a query becomes an FTS5 MATCH expression, cut exactly as `fts_text.index_text` cuts indexed text.

The spec's AND query (`build_fts_query`), the keyword expansion with stop words dropped
(`expand_query_terms`, `build_keyword_query`), Korean particle stripping and CJK stop-word splitting, and
the keyword coverage of a chunk. Every term is quoted, so user input is never parsed as FTS5 syntax.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from mdrecall.text.keywords import extract_keywords, split_on_stopwords
from mdrecall.text.stopwords import (
    CHINESE_CHARS,
    CHINESE_WORDS,
    KOREAN_AMBIGUOUS_PARTICLES,
    KOREAN_ENDINGS,
    KOREAN_PARTICLES,
)
from mdrecall.text.stopwords import JAPANESE as JAPANESE_STOPWORDS
from mdrecall.text.stopwords import KOREAN as KOREAN_STOPWORDS
from mdrecall.text.stopwords import LATIN as LATIN_STOPWORDS
from mdrecall.text.tokens import CJK_CLASSES, bigrams, char_class, index_text, normalize, query_words, script_runs
from mdrecall.text.word_forms import word_forms, word_stem

_HANGUL = "hangul"
_HAN = "han"
_WORD = re.compile(r"\w+", re.UNICODE)
# ASCII characters that are not word characters (`\w`), mapped to a space: in ASCII text, the words that
# `_WORD` finds are the pieces a split on whitespace gives after this translation (2x faster than findall)
_ASCII_NON_WORD = str.maketrans({chr(c): " " for c in range(128) if not _WORD.fullmatch(chr(c))})


def has_cjk_han(text: str) -> bool:
    return any(char_class(ch) == _HAN for ch in text)


def strip_korean_particle(run: str) -> str:
    """A Hangul word without its trailing ending and particle: 회의에서 -> 회의, 언제인가요 -> 언제.

    Ambiguous particles (이, 가, 도...) are only stripped when two syllables remain.

    Safe for recall: the stem's bigrams are a subset of the whole word's, which the index holds.
    """
    for ending in KOREAN_ENDINGS:
        if run.endswith(ending) and len(run) > len(ending):
            run = run[: -len(ending)]
            break
    for particle in KOREAN_PARTICLES:
        if run.endswith(particle) and len(run) > len(particle):
            stem = run[: -len(particle)]
            if particle in KOREAN_AMBIGUOUS_PARTICLES and len(stem) < 2:
                continue
            return stem
    return run


_HAN_STOPWORDS = CHINESE_WORDS | CHINESE_CHARS | frozenset(w for w in JAPANESE_STOPWORDS if has_cjk_han(w))
_KANA_STOPWORDS = frozenset(w for w in JAPANESE_STOPWORDS if not has_cjk_han(w))


def _content_pieces(cls: str, run: str) -> list[str]:
    """The parts of a CJK run left once stop words are cut out (Korean: the whole word or nothing)."""
    if cls == _HANGUL:
        return [] if run in KOREAN_STOPWORDS else [run]
    if cls == _HAN:
        return split_on_stopwords(run, _HAN_STOPWORDS)
    return split_on_stopwords(run, _KANA_STOPWORDS)


def word_terms(word: str, drop_stop_words: bool) -> list[str]:
    """FTS terms for one query word, cut like `fts_text.index_text` cuts the indexed text.

    Latin pieces stay whole; CJK runs become bigrams (one character stays itself); Korean words lose their
    particle and ending; with `drop_stop_words`, stop words of every supported language are dropped.
    """
    terms: list[str] = []
    runs = script_runs(word)
    for position, (cls, run) in enumerate(runs):
        if cls not in CJK_CLASSES:
            if not (drop_stop_words and run.lower() in LATIN_STOPWORDS):
                terms.append(run)
            continue
        if cls == _HANGUL and position == len(runs) - 1:
            run = strip_korean_particle(run)
        for piece in _content_pieces(cls, run) if drop_stop_words else [run]:
            terms.extend(bigrams(piece))
    return terms


def _dedupe(terms: list[str]) -> list[str]:
    return list(dict.fromkeys(terms))


def quote_term(term: str) -> str:
    """An FTS5 string for one term (a phrase of its words): user input is never parsed as FTS5 syntax."""
    return '"' + term.replace('"', '""') + '"'


def build_fts_query(raw: str) -> str | None:
    """FTS5 MATCH expression (the spec's, used on the hybrid keyword side): every term quoted, AND-joined.

    Terms are NFKC-normalised words; CJK runs are cut into bigrams as the index is. Quoting every token
    means no user input is ever parsed as FTS5 syntax (NEAR, OR, column filters, *). None if blank.
    """
    terms = _dedupe([t for word in query_words(raw) for t in word_terms(word, drop_stop_words=False)])
    if not terms:
        return None
    return " AND ".join(quote_term(t) for t in terms)


def expand_query_terms(raw: str) -> list[str]:
    """Keywords of a query for the keyword-only path: stop words dropped (all languages), CJK segmented.

    Which words are keywords is `keywords.extract_keywords` (OpenClaw's rules); here they are cut into FTS
    terms the way the index is cut. A query made only of stop words has no keywords and keeps its words
    (OpenClaw searches the original query then): searching for them beats returning nothing.
    A search asks for the terms of its query several times (keyword side, window blend, calibration, snippets):
    they are computed once per query text (~50 us each time saved).
    """
    return list(_expanded_terms(raw))


def has_keywords(raw: str) -> bool:
    """Whether the query holds a keyword: not only stop words ("what is it", "and the"), punctuation or
    symbols ("???", an emoji). Without one, no chunk can be said to hold what was asked."""
    return bool(_keyword_terms(raw))


@functools.lru_cache(maxsize=256)
def _keyword_terms(raw: str) -> tuple[str, ...]:
    return tuple(_dedupe([t for word in extract_keywords(raw) for t in word_terms(word, drop_stop_words=True)]))


@functools.lru_cache(maxsize=256)
def _expanded_terms(raw: str) -> tuple[str, ...]:
    terms = _keyword_terms(raw)
    if not terms:
        terms = tuple(_dedupe([t for word in query_words(raw) for t in word_terms(word, drop_stop_words=False)]))
    return terms


def build_keyword_query(raw: str) -> str | None:
    """The keyword-only FTS5 query: expanded keywords OR-joined, so bm25 ranks chunks by how many (and how
    rare) keywords they hold instead of requiring all of them."""
    terms = expand_query_terms(raw)
    if not terms:
        return None
    return " OR ".join(quote_term(t) for t in terms)


_LAST_COMBINING_PLANE_END = 0x20000


@functools.cache
def _combining_marks() -> dict[int, None]:
    """str.translate table deleting every combining mark (built once, on the first non-ASCII text, ~40 ms).

    Unicode has none above U+1FFFF (the last is U+1E94A), so planes 2-16 are not scanned."""
    return {code: None for code in range(_LAST_COMBINING_PLANE_END) if unicodedata.combining(chr(code))}


def fold_term(term: str) -> str:
    """Case and accents folded like FTS5's unicode61 tokenizer folds them."""
    if term.isascii():
        return term.lower()
    return unicodedata.normalize("NFKD", term.lower()).translate(_combining_marks())


def indexed_tokens(text: str) -> set[str]:
    """The folded tokens FTS5 holds for a text (as `fts_text.index_text` cuts it).

    The text is folded once, not token by token (a per-token NFKD was most of a search's time); dropping
    combining marks before or after cutting words gives the same words."""
    if text.isascii():  # NFKC and CJK segmentation leave ASCII as it is
        return set(text.lower().translate(_ASCII_NON_WORD).split())
    return set(_WORD.findall(fold_term(index_text(text))))


def keyword_match(term: str, forms: bool) -> str:
    """One keyword of the OR query as FTS5 text: with `forms`, an inflected English word as its stem's prefix
    ("adopted" -> "adopt"*: every form counts as one term), else the quoted word."""
    stem = word_stem(term.lower()) if forms else None
    return quote_term(stem) + "*" if stem else quote_term(term)


def keyword_coverage(terms: Sequence[str], text: str, forms: bool = False) -> float:
    """Share of the query's keywords present in a chunk (its indexed form), in [0, 1]; with `forms`, a
    keyword also counts when the chunk holds one of its inflections (`word_forms.word_forms`)."""
    if not terms:
        return 1.0
    tokens = indexed_tokens(text)
    held = 0
    for term in terms:
        folded = fold_term(term)
        if folded in tokens or (forms and not tokens.isdisjoint(word_forms(folded))):
            held += 1
    return held / len(terms)


_TOKEN = re.compile(r"[^\s\"'`()\[\]{}<>,;!?]+")
_INNER_PUNCT = re.compile(r"\w[._:/#@-]\w")
_CAMEL = re.compile(r"[a-z][A-Z]")
_ISO_DATE = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}$")


def query_identifiers(raw: str) -> list[str]:
    """Tokens of a query that look like exact identifiers: hashes, versions, config keys, file names.

    An identifier mixes letters and digits (`a1b2c3d`, `v2`), or joins word pieces with `._:/#@-`
    (`query.hybrid.vectorWeight`, `max_results`, `INC-4211`), or is camelCase (`vectorWeight`); at least 3
    characters with a letter. Plain words, numbers, versions and ISO dates (handled by the date boost) are not.
    """
    out: list[str] = []
    for token in _TOKEN.findall(normalize(raw or "")):
        token = token.strip(".:/#@-")
        if len(token) < 3 or _ISO_DATE.match(token):
            continue
        if not any(c.isalpha() for c in token):
            continue  # numbers and versions (0.6, 3.11) are not identifiers
        mixed = any(c.isdigit() for c in token)
        if mixed or "_" in token or _INNER_PUNCT.search(token) or _CAMEL.search(token):
            out.append(token)
    return list(dict.fromkeys(out))


def identifier_phrase(identifier: str) -> str | None:
    """FTS5 phrase matching an identifier's word pieces in order (`query.hybrid.x` -> "query hybrid x")."""
    terms = [t for word in query_words(identifier) for t in word_terms(word, drop_stop_words=False)]
    return quote_term(" ".join(terms)) if terms else None


def holds_identifier(text: str, identifier: str) -> bool:
    """The identifier appears verbatim in the text (case-insensitive, NFKC)."""
    return identifier.casefold() in normalize(text).casefold()
