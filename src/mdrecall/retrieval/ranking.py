"""Ranking rules as pure functions: temporal decay, MMR, reciprocal rank fusion, citations, injection budget.

Nothing here touches the store or a provider; `search.run_search` feeds these with rows and config.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from datetime import datetime, timezone
from typing import Literal, TypeVar

from mdrecall.text.dates import EVERGREEN_NAMES, file_date  # noqa: F401  (file_date is part of the ranking rules)
from mdrecall.text.tokens import CJK_CLASSES, bigrams, normalize, script_runs

DAY_SECONDS = 86_400.0
RRF_K = 60
CitationsMode = Literal["auto", "on", "off"]
K = TypeVar("K", bound=Hashable)

# ---------------------------------------------------------------------------------------------------------
# Temporal decay
# ---------------------------------------------------------------------------------------------------------


def to_epoch(now: datetime | float | None) -> float:
    """Seconds since the epoch; naive datetimes are taken as UTC (what tests inject)."""
    if now is None:
        return datetime.now(timezone.utc).timestamp()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).timestamp()
    return float(now)


def is_evergreen_path(path: str) -> bool:
    """MEMORY.md / memory.md and undated notes under memory/ never decay (the spec's evergreen files)."""
    normalized = path.replace("\\", "/").removeprefix("./")
    if normalized.lower() in EVERGREEN_NAMES or normalized == "MEMORY.md":
        return True
    return normalized.startswith("memory/") and file_date(normalized) is None


def age_days(path: str, source: str, mtime_ms: int | None, now_s: float) -> float | None:
    """Age used for decay; None = no decay.

    Sessions by file mtime; memory notes by the date in their name; evergreen files (MEMORY.md, undated
    notes under memory/) never; other undated files (extra paths) by their mtime, as the spec says. A date
    in the future (or an mtime after `now`) counts as age 0: it never boosts a score.
    """
    day = file_date(path) if source != "sessions" else None
    if day is None:
        if mtime_ms is None or (source != "sessions" and is_evergreen_path(path)):
            return None
        return max(0.0, (now_s - mtime_ms / 1000.0) / DAY_SECONDS)
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()
    return max(0.0, (now_s - start) / DAY_SECONDS)


def decay_multiplier(age: float | None, half_life_days: float) -> float:
    """exp(-ln2 / halfLife * age): 1 at age 0, 0.5 at one half-life; 1 for evergreen (age None)."""
    if age is None or age <= 0 or half_life_days <= 0:
        return 1.0
    return math.exp(-math.log(2) / half_life_days * age)


DECAY_FLOOR = 0.5


def bounded_decay(multiplier: float, floor: float = DECAY_FLOOR) -> float:
    """floor + (1 - floor) * multiplier: decay can at most halve a score (floor 0.5).

    Plain exponential decay multiplies a 6-month-old note by 1/64 at a 30-day half-life, so on old logs the
    date decides the order instead of the match (LoCoMo hit@5 0.25 with decay on). Bounded, a newer note
    still wins among near-equal matches, but a strong old match keeps its place above weak recent ones.
    """
    return floor + (1.0 - floor) * multiplier


# ---------------------------------------------------------------------------------------------------------
# Reciprocal rank fusion
# ---------------------------------------------------------------------------------------------------------


def minmax(values: Sequence[float]) -> list[float]:
    """Min-max scaling onto [0, 1], per query (all equal -> all 1)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def minmax_scale(values: dict[K, float]) -> dict[K, float]:
    """Per-query min-max scaling of one side's candidate scores onto [0, 1] (all equal -> all 1)."""
    keys = list(values)
    return dict(zip(keys, minmax([values[key] for key in keys]), strict=True))


def rrf_fuse(rankings: Sequence[Sequence[K]], k: int = RRF_K) -> dict[K, float]:
    """Sum over lists of 1 / (k + rank), rank 1-based; an item missing from a list gets nothing from it."""
    fused: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def rrf_rescale(fused: dict[K, float], anchor: float) -> dict[K, float]:
    """Put fused scores on the weighted-merge scale so minScore keeps its meaning.

    RRF values (about 0.016-0.033 at k = 60) only encode ranks. The best fused item gets `anchor` (the best
    weighted-hybrid score among the candidates, i.e. how relevant the best chunk really is), the others
    `anchor * fused / best_fused`. So a query with nothing relevant still falls below minScore, and chunks
    that only one side found sit at about half the score of chunks both sides agree on.
    """
    if not fused:
        return {}
    best = max(fused.values())
    if best <= 0:
        return {key: 0.0 for key in fused}
    return {key: anchor * value / best for key, value in fused.items()}


# ---------------------------------------------------------------------------------------------------------
# MMR
# ---------------------------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)


def word_set(text: str) -> frozenset[str]:
    """Lower-cased words of a text; CJK runs as bigrams (they have no spaces to split on)."""
    out: set[str] = set()
    for word in _WORD.findall(normalize(text).lower()):
        for cls, run in script_runs(word):
            out.update(bigrams(run) if cls in CJK_CLASSES else [run])
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 1 when both are empty (the spec's and OpenClaw's rule: two empty texts are the same)."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def mmr_order(
    relevance: Sequence[float], token_sets: Sequence[frozenset[str]], lam: float, k: int | None = None
) -> list[int]:
    """Indices picked greedily by λ·rel − (1−λ)·max Jaccard to the already picked; the most relevant first.

    Relevance is min-max normalised to 0..1 first (as the spec and OpenClaw do), so λ weighs two quantities
    on the same scale whatever the score range of the merge; equal scores all count as 1. λ is clamped to
    [0, 1]; ties go to the earlier (better-ranked) index.
    """
    n = len(relevance)
    count = n if k is None else max(0, min(k, n))
    if count == 0:
        return []
    lam = min(1.0, max(0.0, lam))
    high, low = max(relevance), min(relevance)
    rel = [(r - low) / (high - low) for r in relevance] if high > low else [1.0] * n
    first = max(range(n), key=lambda i: (relevance[i], -i))
    picked = [first]
    remaining = [i for i in range(n) if i != first]
    max_sim = [0.0] * n
    while len(picked) < count:
        last = picked[-1]
        for i in remaining:
            max_sim[i] = max(max_sim[i], jaccard(token_sets[i], token_sets[last]))
        best = max(remaining, key=lambda i: (lam * rel[i] - (1.0 - lam) * max_sim[i], -i))
        picked.append(best)
        remaining.remove(best)
    return picked


# ---------------------------------------------------------------------------------------------------------
# Citations and the injection budget
# ---------------------------------------------------------------------------------------------------------


def format_citation(path: str, start_line: int, end_line: int) -> str:
    """`path#L5-L7`, or `path#L5` for a single line."""
    if end_line <= start_line:
        return f"{path}#L{start_line}"
    return f"{path}#L{start_line}-L{end_line}"


def citation_suffix(citation: str) -> str:
    return f"\n\nSource: {citation}"


def citations_enabled(mode: str, session_key: str | None) -> bool:
    """on/off as said; auto: on in direct chats and when there is no session, off in groups and channels."""
    if mode == "on":
        return True
    if mode == "off":
        return False
    if not session_key:
        return True
    parts = {part for part in session_key.lower().split(":") if part}
    return not ({"group", "channel"} & parts)


MIN_TAIL_CHARS = 64  # a tail result trimmed below this says nothing: it is dropped instead


def clamp_to_budget(bodies: Sequence[str], suffixes: Sequence[str], budget: int) -> list[str]:
    """Snippets (body + suffix) whose total length fits `budget`, best first.

    The tail is trimmed (its body, so the citation survives) or dropped when little room is left. The first
    result is always returned, trimmed when it alone is over budget (its citation too, if even that is).
    """
    out: list[str] = []
    used = 0
    for i, (body, suffix) in enumerate(zip(bodies, suffixes, strict=True)):
        room = budget - used
        if len(body) + len(suffix) <= room:
            out.append(body + suffix)
            used += len(body) + len(suffix)
            continue
        body_room = room - len(suffix)
        if i == 0:
            out.append((body[: max(0, body_room)] + suffix)[:budget])  # the budget is a hard cap
        elif body_room >= MIN_TAIL_CHARS:
            out.append(body[:body_room].rstrip() + suffix)
        break
    return out
