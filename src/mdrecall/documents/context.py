"""The context a reader of a chunk sees but the chunk's own lines do not say: the log's date and headings.

A line of `memory/2023-05-08.md` under `## 13:56 Caroline and Melanie` means "on Monday 8 May 2023, in that
conversation"; cut out as a chunk, it says neither. `context_prefix` returns those facts as a short text
that is put in front of the chunk in what is EMBEDDED and what is KEYWORD-INDEXED (FTS). The stored chunk
text, the snippet and the line range stay the file's own: the prefix is never shown.

Anyone producing an embedding input or FTS text for a chunk (whole chunk or one window of it) must use
`with_context(prefix, text)`, so that both sides and every window see the same context. Changing what
this module returns changes existing indexes: bump `CONTEXT_VERSION` (part of the index meta) so they are
rebuilt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from mdrecall.text.dates import file_date

CONTEXT_VERSION = "date-headings-2"

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


def date_phrase(day: date) -> str:
    """`2023-05-08 Monday 8 May 2023`: the ISO form and the words people ask with (weekday, month, year)."""
    return f"{day.isoformat()} {day.strftime('%A')} {day.day} {day.strftime('%B')} {day.year}"


def heading_paths(text: str) -> list[tuple[str, ...]]:
    """For each line (index 0 = line 1), the markdown headings above it, outermost first.

    A heading line belongs to its own section. Lines inside fenced code blocks are never headings.
    """
    stack: list[tuple[int, str]] = []
    out: list[tuple[str, ...]] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            level = len(match[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, match[0].strip()))
        out.append(tuple(h for _, h in stack))
    return out


def context_prefix(path: str, headings: Sequence[str]) -> str:
    """The context text of a chunk of `path` whose first line lies under `headings` ("" when there is none).

    Daily logs (a YYYY-MM-DD in the file name, MEMORY.md excepted) get their date spelled out; the heading
    path follows, joined by " > ". A date heading that only repeats the file's date is left out.
    """
    day = file_date(path)
    parts: list[str] = []
    if day is not None:
        parts.append(date_phrase(day))
    shown = [h for h in headings if day is None or h.lstrip("#").strip() != day.isoformat()]
    if shown:
        parts.append(" > ".join(shown))
    return "\n".join(parts)


def chunk_prefixes(path: str, text: str, start_lines: Sequence[int]) -> list[str]:
    """`context_prefix` for each chunk of one file, given the chunks' 1-based start lines."""
    lines = text.split("\n")
    paths = heading_paths(text)
    out = []
    for start in start_lines:
        headings = paths[start - 1] if 0 < start <= len(paths) else ()
        if headings and _HEADING.match(lines[start - 1]):
            headings = headings[:-1]  # the chunk opens with its own heading: it is in the text already
        out.append(context_prefix(path, headings))
    return out


def with_context(prefix: str, text: str) -> str:
    """What is embedded and keyword-indexed for a chunk (or a window of it): prefix, a blank line, text."""
    return f"{prefix}\n\n{text}" if prefix else text
