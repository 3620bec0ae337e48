"""Why a result ranked: the score of each chunk after every stage of `run_search`, when asked (`explain=True`).

The trace only reads what the pipeline computed (each hit's score after a stage, the fusion's inputs, the
best window, the decay multiplier); it changes nothing. `run_search` creates one only when `explain` is on,
and every call into it is behind `if trace is not None`, so a search without it costs nothing more.

A result's explanation (`SearchResult.explain`):

    {"mode": "hybrid", "fusion": "minmax", "weights": {"vector": 0.7, "text": 0.3},
     "vector": {"cosine": 0.61}, "keyword": {"bm25": 0.42, "coverage": 1.0},
     "steps": [{"stage": "fusion", "label": ..., "score": 0.55, "detail": ...},
               {"stage": "window", ..., "delta": +0.03}, {"stage": "date", ...}, {"stage": "identifier", ...},
               {"stage": "decay", ...}, {"stage": "minScore", ...}, {"stage": "final", "score": 0.58}]}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# stages whose effect is shown only on the hits it changed (the others are shown for every hit)
_ONLY_CHANGED = {"date", "identifier", "rerank"}


class SearchTrace:
    """Scores of every candidate after each stage, by chunk id."""

    def __init__(self, mode: str, fusion: str | None, weights: tuple[float, float] | None) -> None:
        self.mode = mode
        self.fusion = fusion
        self.weights = weights
        self.components: dict[str, dict[str, Any]] = {}
        self.steps: dict[str, list[dict[str, Any]]] = {}
        self._last: dict[str, float] = {}

    def inputs(self, vector: Sequence[Any], keyword: Sequence[Any], bm25: Callable[[float], float]) -> None:
        """The two sides' raw scores: the vector side's cosine, the keyword side's bm25 score and coverage."""
        for row in vector:
            self.components.setdefault(row.id, {})["vector"] = {"cosine": round(float(row.score), 6)}
        for row in keyword:
            side = {"bm25": round(bm25(row.score), 6), "coverage": round(float(row.extra.get("coverage", 1.0)), 4)}
            self.components.setdefault(row.id, {})["keyword"] = side

    def stage(
        self,
        stage: str,
        label: str,
        hits: Sequence[Any],
        detail: Callable[[Any], str | None] | None = None,
    ) -> None:
        """Record each hit's score after `stage`; its change from the stage before is the stage's effect."""
        for hit in hits:
            key = hit.row.id
            before = self._last.get(key)
            delta = None if before is None else hit.score - before
            if stage in _ONLY_CHANGED and (delta is None or abs(delta) < 1e-12):
                continue
            step: dict[str, Any] = {"stage": stage, "label": label, "score": round(hit.score, 6)}
            if delta is not None:
                step["delta"] = round(delta, 6)
            text = detail(hit) if detail is not None else None
            if text:
                step["detail"] = text
            self.steps.setdefault(key, []).append(step)
            self._last[key] = hit.score

    def for_hit(self, hit: Any, note: str | None = None) -> dict[str, Any]:
        """One result's explanation, ending with its final score (`note`: how the result was assembled)."""
        key = hit.row.id
        out: dict[str, Any] = {"mode": self.mode}
        if self.fusion:
            out["fusion"] = self.fusion
        if self.weights:
            out["weights"] = {"vector": round(self.weights[0], 4), "text": round(self.weights[1], 4)}
        parts = self.components.get(key, {})
        if self.mode != "keyword":
            out["vector"] = parts.get("vector") or {"cosine": None, "note": "not among the vector candidates"}
        if self.mode != "vector":
            out["keyword"] = parts.get("keyword") or {"bm25": None, "coverage": 0.0, "note": "no keyword match"}
        final: dict[str, Any] = {"stage": "final", "label": "final score", "score": round(hit.score, 6)}
        if note:
            final["detail"] = note
        out["steps"] = [*self.steps.get(key, []), final]
        return out


def window_lines(row: Any, window: str) -> tuple[int, int] | None:
    """File lines (first, last) of one window of a chunk: where its first and last lines sit in the chunk."""
    lines = row.text.split("\n")
    parts = [p for p in window.split("\n") if p.strip()]
    if not parts:
        return None
    first = next((i for i, line in enumerate(lines) if parts[0] in line), None)
    if first is None:
        return None
    last = next((i for i in range(first, len(lines)) if parts[-1] in lines[i]), first)
    return row.start_line + first, row.start_line + last


FUSION_LABELS = {
    "minmax": "min-max fusion: each side scaled over its candidates, weighted, back on the raw scale",
    "weighted": "weighted sum: vector weight x cosine + text weight x keyword score",
    "rrf": "reciprocal rank fusion (k = 60), rescaled onto the weighted sum's scale",
}


def fusion_label(mode: str, fusion: str, keyword_only_by_coverage: bool) -> str:
    if mode == "keyword":
        if keyword_only_by_coverage:
            return "keyword only: share of the query's keywords held (bm25 says nothing in so few notes)"
        return "keyword only: bm25 x keyword coverage"
    if mode == "vector":
        return "vector only: cosine"
    return FUSION_LABELS.get(fusion, fusion)


def decay_detail(hit: Any, half_life_days: float, now_s: float, mtimes: dict[str, int], floor: float) -> str:
    """What temporal decay did to one hit: the note's age and the multiplier (evergreen notes keep their score)."""
    from mdrecall.retrieval.ranking import age_days, bounded_decay, decay_multiplier

    row = hit.row
    age = age_days(row.path, row.source, mtimes.get(row.path), now_s)
    if age is None:
        return "evergreen note: no decay"
    multiplier = bounded_decay(decay_multiplier(age, half_life_days), floor)
    return f"{age:.0f} days old: x{multiplier:.3f} (half-life {half_life_days:g} days, floor {floor:g})"


def window_detail(hit: Any, best: dict[str, tuple[str, float]], weight: float) -> str:
    found = best.get(hit.row.id)
    if found is None:
        return f"no window score: chunk score kept (window weight {weight:g})"
    text, cosine = found
    lines = window_lines(hit.row, text)
    where = f"lines {lines[0]}-{lines[1]}" if lines else "one window"
    return f"best window {where}, cosine {cosine:.3f} (window weight {weight:g})"
