"""`extract_keywords(query)`: the words of a conversational query worth searching for, in any of 12 languages.

"that thing we discussed about the API" -> ["discussed", "api"]; "之前讨论的那个方案" -> ["讨论", "方案"];
"어제 논의한 배포 전략" -> ["논의한", "배포", "전략"]. This is the keyword-only expansion OpenClaw applies when no
embeddings are available (its reference cases are ported in tests/test_ux_openclaw.py); how the keywords
become an FTS5 query is `fts_query`'s business.

Rules, per whitespace/punctuation-separated segment (lower-cased, NFKC):
- Latin, Cyrillic, Arabic... : dropped when a stop word of any supported language (vague time words such
  as yesterday/ayer/igår/بالأمس included) or a single ASCII letter; numbers and 2-letter words are kept
  (OpenClaw drops them; ports, versions and "db"/"ui" are worth finding).
- Korean (a segment with Hangul): the word is kept unless it, or its stem without a trailing particle, is
  a stop word; the stem is added too when it is a useful keyword (>= 2 syllables, or ASCII as in "API를").
  Verb endings are not stripped ("배포했다" stays), as in OpenClaw.
- Japanese (a segment with kana): cut into ASCII, katakana, kanji and hiragana parts; kanji and kana parts
  are cut on stop words; single hiragana (particles) are dropped.
- Chinese: Han runs are cut on stop words and function characters (的, 了, 吗...).
A query made only of stop words gives no keywords. Duplicates are removed, first occurrence wins.
"""

from __future__ import annotations

import re
import unicodedata

from mdrecall.text.stopwords import ARABIC, CHINESE_CHARS, CHINESE_WORDS, JAPANESE, KOREAN, KOREAN_PARTICLES, LATIN
from mdrecall.text.tokens import char_class, script_runs

_SEPARATOR_CATEGORIES = ("P", "S", "Z", "C")  # punctuation, symbols, spaces, controls (not "_": Pc is kept)
_HANGUL, _HAN, _HIRAGANA, _KATAKANA = "hangul", "han", "hiragana", "katakana"
_ASCII_WORD = re.compile(r"^[a-z0-9_]+$")
_JAPANESE_PART = re.compile(r"[a-z0-9_]+|[\u30a0-\u30ff\u31f0-\u31ff]+|[\u3400-\u4dbf\u4e00-\u9fff]+|[\u3040-\u309f]+")

OTHER_STOPWORDS = LATIN | ARABIC
HAN_STOPWORDS = CHINESE_WORDS | CHINESE_CHARS | frozenset(w for w in JAPANESE if char_class(w[0]) == _HAN)
KANA_STOPWORDS = frozenset(w for w in JAPANESE if char_class(w[0]) != _HAN)
# OpenClaw strips one trailing particle, longest first.
_TRAILING_PARTICLES = tuple(sorted(KOREAN_PARTICLES, key=len, reverse=True))


def _segments(query: str) -> list[str]:
    """Lower-cased NFKC text split on whitespace, punctuation and symbols (underscores stay in words)."""
    text = unicodedata.normalize("NFKC", query or "").lower()
    cleaned = "".join(" " if unicodedata.category(ch)[0] in _SEPARATOR_CATEGORIES and ch != "_" else ch for ch in text)
    return cleaned.split()


def split_on_stopwords(run: str, stopwords: frozenset[str]) -> list[str]:
    """The pieces of a CJK run left once its stop words are cut out, longest stop word first."""
    longest = max((len(w) for w in stopwords), default=0)
    pieces: list[str] = []
    current = ""
    i = 0
    while i < len(run):
        for size in range(min(longest, len(run) - i), 0, -1):
            if run[i : i + size] in stopwords:
                if current:
                    pieces.append(current)
                current = ""
                i += size
                break
        else:
            current += run[i]
            i += 1
    if current:
        pieces.append(current)
    return pieces


def _strip_trailing_particle(word: str) -> str | None:
    for particle in _TRAILING_PARTICLES:
        if len(word) > len(particle) and word.endswith(particle):
            return word[: -len(particle)]
    return None


def _useful_korean_stem(stem: str) -> bool:
    """A stem worth searching: two or more characters when it has Hangul ("논의" -> "논" is not), or ASCII."""
    if any(char_class(ch) == _HANGUL for ch in stem):
        return len(stem) >= 2
    return bool(_ASCII_WORD.match(stem))


def _korean(segment: str) -> list[str]:
    stem = _strip_trailing_particle(segment)
    out: list[str] = []
    if segment not in KOREAN and not (stem is not None and stem in KOREAN):
        out.append(segment)
    if stem and stem not in KOREAN and _useful_korean_stem(stem):
        out.append(stem)
    return out


def _japanese(segment: str) -> list[str]:
    out: list[str] = []
    for part in _JAPANESE_PART.findall(segment):
        cls = char_class(part[0])
        if cls == _HAN:
            out += split_on_stopwords(part, HAN_STOPWORDS)
        elif cls in (_HIRAGANA, _KATAKANA):
            out += [p for p in split_on_stopwords(part, KANA_STOPWORDS) if cls == _KATAKANA or len(p) >= 2]
        else:
            out += _other(part)
    return out


def _chinese(segment: str) -> list[str]:
    out: list[str] = []
    for cls, run in script_runs(segment):
        out += split_on_stopwords(run, HAN_STOPWORDS) if cls == _HAN else _other(run)
    return out


def _other(word: str) -> list[str]:
    if word in OTHER_STOPWORDS or (len(word) < 2 and word.isascii() and word.isalpha()):
        return []
    return [word]


def extract_keywords(query: str) -> list[str]:
    """The query's keywords (lower-cased, deduplicated, in query order); [] when only stop words remain."""
    keywords: list[str] = []
    for segment in _segments(query):
        classes = {char_class(ch) for ch in segment}
        if _HANGUL in classes:
            keywords += _korean(segment)
        elif classes & {_HIRAGANA, _KATAKANA}:
            keywords += _japanese(segment)
        elif _HAN in classes:
            keywords += _chinese(segment)
        else:
            keywords += _other(segment)
    return list(dict.fromkeys(k for k in keywords if k))
