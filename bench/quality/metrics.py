"""Retrieval metrics over ranked document ids and graded judgments (TREC conventions)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def dcg(gains: Sequence[float]) -> float:
    return sum((2.0**g - 1.0) / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with exponential gain; 0 when the query has no relevant document."""
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([qrels.get(doc, 0) for doc in ranked[:k]]) / ideal


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def novelty_ndcg_at_k(ranked: Sequence[str], facts: Mapping[str, str], grades: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k where a document earns its fact's grade only the first time that fact appears (α-nDCG, α=1).

    Used to score MMR: near-duplicate notes of one fact add nothing after the first.
    """
    seen: set[str] = set()
    gains = []
    for doc in ranked[:k]:
        fact = facts.get(doc)
        if fact is None or fact in seen:
            gains.append(0)
            continue
        seen.add(fact)
        gains.append(grades.get(fact, 0))
    ideal = dcg(sorted((g for g in grades.values() if g > 0), reverse=True)[:k])
    return dcg(gains) / ideal if ideal else 0.0


def fact_recall_at_k(ranked: Sequence[str], facts: Mapping[str, str], grades: Mapping[str, int], k: int) -> float:
    relevant = {f for f, g in grades.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & {facts[d] for d in ranked[:k] if d in facts}) / len(relevant)
