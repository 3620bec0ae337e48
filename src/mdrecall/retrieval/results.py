"""What a search returns: the scored candidate (`Hit`), one result (`SearchResult`, the MemorySearchResult
shape) and the answer (`SearchResponse`). Every backend returns these types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mdrecall.storage.sqlite import SearchRow


@dataclass
class Hit:
    """A chunk with the scores of both sides and the merged score."""

    row: SearchRow
    vector_score: float = 0.0
    text_score: float = 0.0
    score: float = 0.0


@dataclass
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    vector_score: float | None = None
    text_score: float | None = None
    citation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec's MemorySearchResult shape (camelCase)."""
        out: dict[str, Any] = {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "source": self.source,
        }
        if self.citation is not None:
            out["citation"] = self.citation
        return out


@dataclass
class SearchResponse:
    results: list[SearchResult]
    provider: str
    model: str | None
    mode: str  # "hybrid" | "keyword" | "vector" | "fts-only"
    notice: str | None = None
    relaxed: bool = False
    backend: str = "builtin"  # the engine that served these results (see mdrecall.backends)
    backend_fallback: dict[str, str] | None = None  # {"from": "qmd", "reason": ...} when the primary failed
