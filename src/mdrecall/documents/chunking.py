"""Line-based markdown chunking with 1-based line ranges (the spec's `chunkMarkdown`).

Lines are accumulated until the next one would push the chunk past `max(32, tokens*4)` characters; the
chunk is flushed and its trailing whole lines (about `overlap*4` characters) are carried into the next one.
Lines longer than the limit are cut into segments first. Unlike the upstream code, the carried overlap is
trimmed when it would make the next chunk exceed the limit, so the size bound always holds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    hash: str  # sha256 of text


@dataclass
class _Piece:
    text: str
    line_no: int


def hash_text(value: str) -> str:
    """SHA-256 hex of UTF-8 text: file hashes, chunk hashes and chunk ids all use it."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def max_chunk_chars(tokens: int) -> int:
    return max(32, tokens * 4)


def _segments(line: str, max_chars: int) -> list[str]:
    """A line cut into pieces of at most max_chars (an empty line stays one empty piece)."""
    if not line:
        return [""]
    return [line[start : start + max_chars] for start in range(0, len(line), max_chars)]


def _size(pieces: list[_Piece]) -> int:
    """Characters the pieces occupy, counting one newline per piece (the spec's accounting)."""
    return sum(len(piece.text) + 1 for piece in pieces)


def _to_chunk(pieces: list[_Piece]) -> Chunk:
    text = "\n".join(piece.text for piece in pieces)
    return Chunk(pieces[0].line_no, pieces[-1].line_no, text, hash_text(text))


def _overlap_tail(pieces: list[_Piece], overlap_chars: int) -> list[_Piece]:
    """The trailing whole pieces worth about overlap_chars, carried into the next chunk."""
    if overlap_chars <= 0:
        return []
    kept: list[_Piece] = []
    acc = 0
    for piece in reversed(pieces):
        acc += len(piece.text) + 1
        kept.insert(0, piece)
        if acc >= overlap_chars:
            break
    return kept


def chunk_markdown(text: str, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Split text into overlapping, line-aligned chunks; whitespace-only chunks are dropped."""
    max_chars = max_chunk_chars(tokens)
    overlap_chars = max(0, overlap * 4)
    # \r\n, \r and \n all end a line, and a final newline adds no line (so endLine is never past the end)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    chunks: list[Chunk] = []
    current: list[_Piece] = []
    current_chars = 0
    for index, line in enumerate(lines):
        for segment in _segments(line, max_chars):
            piece_size = len(segment) + 1
            if current and current_chars + piece_size > max_chars:
                chunks.append(_to_chunk(current))
                current = _overlap_tail(current, overlap_chars)
                while current and _size(current) + piece_size > max_chars:
                    current.pop(0)
                current_chars = _size(current)
            current.append(_Piece(segment, index + 1))
            current_chars += piece_size
    if current:
        chunks.append(_to_chunk(current))
    return [chunk for chunk in chunks if chunk.text.strip()]
