"""Input bounds: what a query, a tool argument or a file's text may hold before mdrecall works on it.

- A query is cut to its first `MAX_QUERY_WORDS` words (a CJK character counts as a word) and `MAX_QUERY_CHARS`
  characters before it is embedded or turned into a keyword query: a local embedding model's cost grows with
  the square of the text's length (a 2,000-word prompt took seconds). NULs become spaces.
- Text that cannot be encoded as UTF-8 (a lone surrogate from JSON `"\\ud800"`, or undecodable bytes on the
  command line, which Python carries as surrogates) is refused with one line that does not repeat it.
- NUL characters in a file's text become U+FFFD, on every backend, before indexing and in `memory_get`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mdrecall.text.tokens import cjk_prefix

MAX_QUERY_WORDS = 32
MAX_QUERY_CHARS = 256
REPLACEMENT = "\ufffd"


def no_results_line(query: str, notice: str | None) -> str:
    """The line a search with no result prints: the query as it was searched (a long one cut as `bound_query`
    cuts it, so a 5,000-word prompt is not printed back) and why nothing came back."""
    return f"no results for {bound_query(query)!r} ({notice or 'nothing matched'})"


def bound_query(text: str) -> str:
    """The part of a query that is searched: whitespace collapsed, NULs dropped, at most MAX_QUERY_WORDS words
    (each Chinese, Japanese or Korean character counts as a word: a model reads it as one token or more) and
    MAX_QUERY_CHARS characters (cut at a word boundary when there is one)."""
    raw = str(text or "")
    words = raw.replace("\x00", " ").split()
    if raw.isascii():  # no CJK character: one word each
        kept = words[:MAX_QUERY_WORDS]
    else:
        kept, used = [], 0
        for word in words:
            if used >= MAX_QUERY_WORDS:
                break
            prefix, cjk = cjk_prefix(word, MAX_QUERY_WORDS - used)
            if prefix:
                kept.append(prefix)
            used += max(1, cjk)
            if prefix != word:
                break
    query = " ".join(kept)
    if len(query) <= MAX_QUERY_CHARS:
        return query
    cut = query[:MAX_QUERY_CHARS]
    space = cut.rfind(" ")
    return cut[:space] if space > MAX_QUERY_CHARS // 2 else cut


def is_query_cut(text: str, bounded: str | None = None) -> bool:
    """Whether `bound_query` drops any of this query's words or characters. `bounded`: `bound_query(text)`,
    when the caller has it."""
    bounded = bound_query(text) if bounded is None else bounded
    return bounded != " ".join(str(text or "").replace("\x00", " ").split())


def cut_notice(text: str, bounded: str | None = None) -> str | None:
    """The notice a search adds when its query was cut, else None. `bounded`: `bound_query(text)`, when the
    caller has it."""
    bounded = bound_query(text) if bounded is None else bounded
    if not is_query_cut(text, bounded):
        return None
    kept = len(bounded.split())
    return f"the query was cut to its first {kept} words (at most {MAX_QUERY_WORDS} words, {MAX_QUERY_CHARS} chars)"


def is_valid_text(text: str) -> bool:
    """Can this string be written as UTF-8? (False for lone surrogates.)"""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def invalid_text_field(value: Any, name: str = "arguments") -> str | None:
    """The name of the first string inside `value` (a tool's arguments: dicts, lists, strings) that is not valid
    text, e.g. `query` or `arguments`; None when all are valid. Keys count too."""
    if isinstance(value, str):
        return None if is_valid_text(value) else name
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and not is_valid_text(key):
                return name
            found = invalid_text_field(item, key if isinstance(key, str) else name)
            if found:
                return found
        return None
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for item in value:
            found = invalid_text_field(item, name)
            if found:
                return found
    return None


def invalid_text_message(field: str) -> str:
    """The one line for an argument that is not valid text (never repeating the text itself)."""
    return f"{field} is not valid UTF-8 text (it holds a lone surrogate or undecodable bytes); send valid text"


def without_nul(text: str) -> str:
    """Text with NUL characters replaced by U+FFFD (PostgreSQL cannot store NUL in text; SQLite could, but both
    backends must hold the same text)."""
    return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
