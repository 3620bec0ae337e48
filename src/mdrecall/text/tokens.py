"""What goes into the FTS5 index for a chunk's text, and how query words are cut the same way.

FTS5's unicode61 tokenizer splits on spaces and punctuation only, so a Chinese or Japanese sentence (and a
Korean word with its particle) is one long token that no query word matches. The index therefore gets,
after the normalised text, the CJK bigrams (and single characters) of every CJK run, and the Latin pieces
glued to CJK text ("迁移到PostgreSQL" -> "PostgreSQL"). Queries are segmented by the same rules
(`segment_word`), so a query word always maps onto tokens the index holds.

Snippets always come from the `chunks` table, never from FTS, so none of this is ever shown to anyone.
Changing what `index_text` returns changes existing indexes: bump `FTS_TEXT_VERSION` (part of the index
meta) so they are rebuilt.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

FTS_TEXT_VERSION = "nfkc-cjk-bigram-1"

_WORD = re.compile(r"\w+", re.UNICODE)

# Script classes: runs are split where the class changes, so Japanese kanji compounds and kana
# (particles, okurigana) become separate runs, and Latin text glued to CJK is separated from it.
_HAN = "han"
_HIRAGANA = "hiragana"
_KATAKANA = "katakana"
_HANGUL = "hangul"
_OTHER = "other"
CJK_CLASSES = frozenset({_HAN, _HIRAGANA, _KATAKANA, _HANGUL})

_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x1100, 0x11FF, _HANGUL),  # Jamo
    (0x2E80, 0x2FDF, _HAN),  # radicals
    (0x3005, 0x3007, _HAN),  # 々 〆 〇
    (0x3040, 0x309F, _HIRAGANA),
    (0x30A0, 0x30FF, _KATAKANA),
    (0x3130, 0x318F, _HANGUL),  # compatibility Jamo
    (0x31F0, 0x31FF, _KATAKANA),
    (0x3400, 0x4DBF, _HAN),
    (0x4E00, 0x9FFF, _HAN),
    (0xA960, 0xA97F, _HANGUL),
    (0xAC00, 0xD7AF, _HANGUL),  # syllables
    (0xD7B0, 0xD7FF, _HANGUL),
    (0xF900, 0xFAFF, _HAN),
    (0xFF66, 0xFF9F, _KATAKANA),  # half-width (NFKC folds these anyway)
    (0x20000, 0x3134F, _HAN),
)


# Any character of a CJK class: one regex search lets text without CJK skip the per-character checks.
_CJK_CHAR = re.compile(
    "[" + "".join(f"{chr(low)}-{chr(high)}" for low, high, name in _RANGES if name in CJK_CLASSES) + "]"
)


def normalize(text: str) -> str:
    """NFKC: composed accents, full-width Latin/digits and half-width kana fold to one spelling."""
    return unicodedata.normalize("NFKC", text)


def char_class(ch: str) -> str:
    code = ord(ch)
    if code < 0x1100:
        return _OTHER
    for low, high, name in _RANGES:
        if low <= code <= high:
            return name
    return _OTHER


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def cjk_prefix(text: str, limit: int) -> tuple[str, int]:
    """The longest prefix of `text` holding at most `limit` CJK characters, and how many it holds."""
    found = list(itertools.islice(_CJK_CHAR.finditer(text), limit + 1))
    if len(found) <= limit:
        return text, len(found)
    return text[: found[limit].start()], limit


def script_runs(word: str) -> list[tuple[str, str]]:
    """(class, run) pieces of a word, split wherever the script class changes."""
    runs: list[tuple[str, str]] = []
    for ch in word:
        cls = char_class(ch)
        if runs and runs[-1][0] == cls:
            runs[-1] = (cls, runs[-1][1] + ch)
        else:
            runs.append((cls, ch))
    return runs


def bigrams(run: str) -> list[str]:
    """Overlapping 2-character grams; a 1-character run is its own gram."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _index_segments(word: str) -> list[str]:
    out: list[str] = []
    for cls, run in script_runs(word):
        if cls in CJK_CLASSES:
            out.extend(bigrams(run))
            if len(run) > 1:
                out.extend(run)  # single characters, so a 1-character query word still matches
        else:
            out.append(run)
    return out


def index_text(text: str) -> str:
    """Text stored in chunks_fts for a chunk: NFKC text, then the CJK segments of its CJK-bearing words."""
    normalized = normalize(text)
    if not has_cjk(normalized):
        return normalized
    extra: list[str] = []
    for word in _WORD.findall(normalized):
        if has_cjk(word):
            extra.extend(_index_segments(word))
    return normalized if not extra else normalized + "\n" + " ".join(extra)


def query_words(raw: str) -> list[str]:
    """The \\w+ words of a query after NFKC (before any CJK segmentation)."""
    return _WORD.findall(normalize(raw or ""))
