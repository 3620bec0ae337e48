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
    """
    words = query_words(raw)
    keywords = extract_keywords(raw)
    terms = _dedupe([t for word in keywords for t in word_terms(word, drop_stop_words=True)])
    if not terms:
        terms = _dedupe([t for word in words for t in word_terms(word, drop_stop_words=False)])
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
        return set(_WORD.findall(text.lower()))
    return set(_WORD.findall(fold_term(index_text(text))))


class TermFinder:
    """Which of the query's (folded) terms a text holds as whole indexed tokens.

    ASCII text (most of it) is searched with one regex of the terms, which is several times faster than
    cutting every window into tokens; other text goes through the index's own cutting (`indexed_tokens`:
    NFKC, accents, CJK bigrams). When every term is a whole word (letters, digits, `_`), the regex has no
    look-behind, so the engine skips to the terms' first letters, and a match is kept when it starts a word:
    a match inside a word ends where that word ends, so it never hides one that starts a word."""

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = set(terms)
        ascii_terms = sorted((t for t in self.terms if t.isascii()), key=len, reverse=True)
        alternation = "|".join(re.escape(t) for t in ascii_terms)
        self._pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)") if ascii_terms else None
        words = bool(ascii_terms) and all(_WORD.fullmatch(t) for t in ascii_terms)
        self._words = re.compile(rf"(?:{alternation})(?!\w)") if words else None

    def __call__(self, text: str) -> set[str]:
        if not text.isascii():
            return indexed_tokens(text) & self.terms
        if self._pattern is None:
            return set()
        return self._scan(text.lower())

    def _scan(self, lowered: str) -> set[str]:
        """The terms found whole in lower-cased ASCII text."""
        if self._words is None:
            assert self._pattern is not None
            return set(self._pattern.findall(lowered))
        found = set()
        for match in self._words.finditer(lowered):
            start = match.start()
            if start == 0 or not (lowered[start - 1].isalnum() or lowered[start - 1] == "_"):
                found.add(match.group())
        return found

    def in_windows(self, text: str, windows: Sequence[str]) -> list[set[str]]:
        """`[self(w) for w in windows]` for the windows of `text`, with less work (speed only, same sets).

        In ASCII, a term is matched whole within one line, so a window's terms are the union of its lines'
        terms: each distinct line is searched once (windows overlap by two thirds). A chunk holding none of
        the terms even as a substring gives every window an empty set without a search."""
        if self._pattern is None or not text.isascii() or not all(w.isascii() for w in windows):
            return [self(w) for w in windows]
        lowered = text.lower()
        if not any(t in lowered for t in self.terms if t.isascii()):
            return [set() for _ in windows]
        lines: dict[str, set[str]] = {}
        out = []
        for window in windows:
            held: set[str] = set()
            for line in window.split("\n"):
                found = lines.get(line)
                if found is None:
                    found = lines[line] = self._scan(line.lower())
                held |= found
            out.append(held)
        return out


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
    wanted, find = _coverage_plan(tuple(terms), forms)
    tokens = find(text)  # the indexed tokens of the text that are a keyword or one of its forms
    held = sum(1 for folded, other in wanted if folded in tokens or not tokens.isdisjoint(other))
    return held / len(terms)


@functools.lru_cache(maxsize=256)
def _coverage_plan(terms: tuple[str, ...], forms: bool) -> tuple[list[tuple[str, frozenset[str]]], TermFinder]:
    """Per keyword its folded form and the other forms that count, and one finder of all of them (a search
    asks the coverage of tens of chunks for the same keywords). Only whole words can be indexed tokens: a
    candidate with other characters is never held, so the finder does not look for it."""
    wanted = [(fold_term(t), word_forms(fold_term(t)) if forms else frozenset()) for t in terms]
    candidates = {folded for folded, _ in wanted} | {form for _, other in wanted for form in other}
    return wanted, TermFinder([c for c in candidates if _WORD.fullmatch(c)])


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
