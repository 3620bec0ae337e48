"""The tail floor: results far below the best one are not listed.

With calibrated scores (calibration.py) a result's score is its estimated chance of holding the answer. A
search asking for 6 or 10 results fills the list with whatever comes next, and on a small memory that is
often a note with a chance of 0.002 listed under one of 0.68: noise an agent reads as memory. The tail floor
drops the results (below the first) whose chance is under `share` x the best result's chance.

Measured on LoCoMo dev with the default model, 10 results asked (bench/quality/top1_eval.py): a share of
0.01 costs no evidence line and no hit (evidence recall@10 .919, hit@5 .937, hit@10 .958 with and without
it), with 9.5 results per question instead of 9.9; 0.02 already drops evidence (.917), an absolute floor
of 0.002 too (.918). Leaving one conversation out picks 0.01 on four of five folds. It is relative to the
best result, not absolute, because a right answer's chance can itself be small (1 % of the results holding
an evidence line score below 0.006).
"""

from __future__ import annotations

from collections.abc import Sequence

from mdrecall.config.settings import QueryConfig
from mdrecall.retrieval.calibration import Calibration
from mdrecall.retrieval.results import Hit


def drop_tail(hits: Sequence[Hit], share: float) -> list[Hit]:
    """The hits in their order, without those (after the first) scoring below `share` x the best score.

    share 0 keeps every hit. The first hit always stays: the answer floor, not this rule, decides whether a
    search answers at all."""
    if share <= 0 or len(hits) < 2:
        return list(hits)
    floor = share * max(h.score for h in hits)
    return [h for i, h in enumerate(hits) if i == 0 or h.score >= floor]


def tail_share(query_cfg: QueryConfig, calibration: Calibration) -> float:
    """`query.relativeFloor` when set, else the calibration's own."""
    share = query_cfg.relative_floor
    return calibration.relative_floor if share is None else share
