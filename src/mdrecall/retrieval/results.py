"""What a search returns: the scored candidate (`Hit`), one result (`SearchResult`, the MemorySearchResult
shape) and the answer (`SearchResponse`). Every backend returns these types."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mdrecall.retrieval.ranking import citation_suffix, format_citation
from mdrecall.storage.base import SearchRow


@dataclass
class Hit:
    """A chunk with the scores of both sides and the merged score."""

    row: SearchRow
    vector_score: float = 0.0
    text_score: float = 0.0
    score: float = 0.0
    fused: float | None = None  # the fusion's score when `score` holds the calibrated one (calibration.py)
    # the lines of the chunk's best window (its best-scoring few lines, window_blend.py), when known: the
    # snippet shows them
    focus: str | None = None


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
    explain: dict[str, Any] | None = None  # why it ranked: only with run_search(explain=True) (explain.py)
    fused_score: float | None = None  # the fusion's (relative) score when `score` is calibrated

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
        if self.explain is not None:
            out["explain"] = self.explain
        return out


@dataclass
class SearchResponse:
    results: list[SearchResult]
    provider: str
    model: str | None
    mode: str  # "hybrid" | "keyword" | "vector" | "fts-only"
    notice: str | None = None
    relaxed: bool = False  # the results are below the floor in force, shown by the never-empty rule
    backend: str = "builtin"  # the engine that served these results (see mdrecall.backends)
    backend_fallback: dict[str, str] | None = None  # {"from": "qmd", "reason": ...} when the primary failed
    scoring: str = "fused"  # "calibrated": each score is the result's estimated chance of holding the answer
    fallback_logged: bool = False  # the reason was already logged as a warning: a CLI need not repeat it


def _overlaps(a: Any, b: Any) -> bool:
    return a.path == b.path and a.source == b.source and a.start_line <= b.end_line and b.start_line <= a.end_line


def _body(result: Any) -> str:
    """The snippet without its `Source:` footer (citations on)."""
    if result.citation and result.snippet.endswith(citation_suffix(result.citation)):
        return result.snippet[: -len(citation_suffix(result.citation))]
    return result.snippet


def _whole_lines(result: Any, body: str) -> dict[int, str] | None:
    """line number -> text when the snippet holds exactly the result's lines (not a cut window), else None."""
    lines = body.split("\n")
    if len(lines) != result.end_line - result.start_line + 1:
        return None
    return {result.start_line + i: line for i, line in enumerate(lines)}


def _absorb(kept: Any, other: Any) -> None:
    """Fold a lower-ranked hit into an overlapping better one: one result covering both line ranges."""
    kept_body, other_body = _body(kept), _body(other)
    mine, theirs = _whole_lines(kept, kept_body), _whole_lines(other, other_body)
    start, end = min(kept.start_line, other.start_line), max(kept.end_line, other.end_line)
    if mine is not None and theirs is not None:
        joined = {**theirs, **mine}
        if all(n in joined for n in range(start, end + 1)):
            kept_body = "\n".join(joined[n] for n in range(start, end + 1))
    kept.start_line, kept.end_line = start, end
    kept.score = max(kept.score, other.score)
    for field in ("vector_score", "text_score"):
        values = [v for v in (getattr(kept, field, None), getattr(other, field, None)) if v is not None]
        if values:
            setattr(kept, field, max(values))
    if kept.citation:
        kept.citation = format_citation(kept.path, start, end)
        kept.snippet = kept_body + citation_suffix(kept.citation)
    else:
        kept.snippet = kept_body


def merge_overlapping_results(results: Sequence[SearchResult], enabled: bool = True) -> list[SearchResult]:
    """Overlapping results of one file (neighbouring chunks share `overlap` lines) become one, best first.

    The builtin search merges chunks before it fills `maxResults` (`search.merge_overlapping`, on rows); a
    backend that returns finished results (qmd) runs this pass instead. The merged result spans both line
    ranges and keeps the better score; its snippet joins both when both are whole chunks, else it is the
    better hit's snippet. The inputs are not modified. `query.mergeOverlapping = false` (the spec's one chunk
    per result) turns both off.
    """
    if not enabled:
        return list(results)
    merged: list[SearchResult] = []
    for result in results:
        for kept in merged:
            if _overlaps(kept, result):
                _absorb(kept, result)
                break
        else:
            merged.append(copy.copy(result))
    return merged
