"""A fact as mdrecall keeps it: categories, the `Fact` row (OpenClaw's MemoryEntry), and how text becomes one.

Pure: no LanceDB, no files. Both the store and the capture rules build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from mdrecall.errors import MdrecallError
from mdrecall.text.redact import redact

CATEGORIES = ("preference", "fact", "decision", "entity", "other")


DEFAULT_IMPORTANCE = 0.7


MAX_FACT_CHARS = 1000


@dataclass(frozen=True)
class Fact:
    """One memory: what OpenClaw calls a MemoryEntry (created_at in epoch milliseconds)."""

    id: str
    text: str
    category: str = "other"
    importance: float = DEFAULT_IMPORTANCE
    created_at: int = 0

    @property
    def date(self) -> str:
        return datetime.fromtimestamp(self.created_at / 1000, tz=timezone.utc).date().isoformat()

    def line(self) -> str:
        """The fact's line in facts.md."""
        return f"- [{self.id}] ({self.category}, {self.date}, importance {self.importance:.2f}) {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "category": self.category,
            "importance": round(self.importance, 3),
            "createdAt": self.created_at,
            "date": self.date,
        }


@dataclass(frozen=True)
class FactHit:
    fact: Fact
    score: float
    vector_score: float | None = None
    text_score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {**self.fact.to_dict(), "score": round(self.score, 4), "textScore": round(self.text_score, 4)}
        if self.vector_score is not None:
            out["vectorScore"] = round(self.vector_score, 4)
        return out


def clean_text(text: str) -> str:
    """One line, whitespace collapsed, secrets redacted, at most MAX_FACT_CHARS (a fact is one line)."""
    return _one_line(text)[:MAX_FACT_CHARS].strip()


def checked_text(text: str) -> str:
    """`clean_text` for text a person or an agent asked to store: longer than MAX_FACT_CHARS is refused in one
    line (MdrecallError), never cut, so no part of it is lost while the answer says 'stored'."""
    line = _one_line(text)
    if len(line) > MAX_FACT_CHARS:
        raise MdrecallError(
            f"a memory is one short line: this text has {len(line)} characters (at most {MAX_FACT_CHARS}); "
            "store a shorter sentence, or keep longer notes in memory/*.md"
        )
    return line


def _one_line(text: str) -> str:
    return redact(" ".join(str(text).split())).strip()


def normalize_category(category: str | None) -> str | None:
    if category is None:
        return None
    value = str(category).strip().lower()
    if value not in CATEGORIES:
        raise MdrecallError(f"category must be one of {', '.join(CATEGORIES)} (got {category!r})")
    return value


_INJECTED_RE = re.compile(r"<relevant-memories>.*?(</relevant-memories>|$)", re.S)


def strip_injected(text: str) -> str:
    """Text without any `<relevant-memories>` block, so injected memories are never captured or re-queried."""
    return _INJECTED_RE.sub(" ", text or "")
