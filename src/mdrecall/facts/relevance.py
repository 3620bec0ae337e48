"""How relevant a stored fact is to a prompt: one score per embedding model, calibrated per model.

Small embedding models are anisotropic: with multilingual-e5-small every text sits at cosine 0.75-0.9 from
every other, unrelated prompts reach 0.86 against some fact and a paraphrased question can score 0.75
against its own answer; some facts (short ones, non-English ones) are near everything ("hubs"). A raw
cosine threshold cannot tell them apart, and a keyword share weighted half (the earlier 0.5 / 0.5 hybrid)
lets one stray shared word ("use", "my") outrank the fact that answers the question.

The score here is CSLS (cross-domain similarity local scaling) with mean neighbourhoods:

    relevance(q, f) = 2 cos(q, f) - cos(q, mean_fact) - cos(f, mean_prompt) + keyword_weight * keyword(q, f)

`mean_fact` and `mean_prompt` are the mean vectors of background texts embedded by the same model: the
memorable statements and the everyday prompts (questions, requests, chatter) of the capture dev sets in
`bench/quality/` (not the recall set). The first term is the similarity; the second removes what a prompt
shares with any fact (a vague or chatty prompt), the third what a fact shares with any prompt (a hub). The
keyword share (stop words aside) only breaks near-ties. Both mean vectors are shipped per model in
`recall_<model>.npz`, written by `bench/quality/recall_eval.py --calibrate`.

Thresholds are measured per model on the dev half of `bench/quality/recall_set.jsonl` (45 facts, 62
paraphrased questions, 125 unrelated prompts in 9 languages) and never carried over from another model:
the lowest threshold that injects something for at most 5 % of the dev half's unrelated prompts. Models
without a calibration (remote providers, models added later) keep the earlier score: rescaled cosine and
keyword share weighted by `query.hybrid`, threshold `facts.recallMinScore` or 0.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RecallCalibration:
    model: str
    file: str  # the mean vectors, next to this module
    min_score: float  # auto-recall and memory_recall keep facts scoring at least this
    keyword_weight: float
    # forget by query deletes the top fact only when it scores at least forget_min and forget_margin ahead
    forget_min: float
    forget_margin: float


# The one place where per-model recall thresholds live. Measured by `bench/quality/recall_eval.py
# --calibrate` on the dev half of recall_set.jsonl (31 questions, 63 unrelated prompts):
# - min_score: the lowest threshold that injects something for at most 5 % of the dev unrelated prompts;
# - keyword_weight: the smallest non-zero weight within one dev question of the best weight, both for "right
#   fact injected" and "right fact ranked first" (a larger one lets a stray shared word such as "use"
#   outrank the fact that answers: "which indentation do I use");
# - forget_min = min_score; forget_margin = the median gap between the right fact and the runner-up on the
#   dev questions it answers first.
# Dev figures at keyword weight 0 / 0.025 / 0.05 / 0.1 / 0.2 (threshold; right fact injected; ranked first):
#   multilingual-e5-small      .099-.102; .710/.742/.742/.742/.774; .774 at every weight; gap(.025) .118
#   all-MiniLM-L6-v2           .594;      .710 at every weight;     .710/.742/.742/.742/.742; gap .579
#   wordllama-l2-supercat-256  .585-.623; .548/.548/.548/.581/.581; .677/.677/.677/.677/.710; gap .507
# The held-out half's figures are in docs/facts.md.
CALIBRATIONS: dict[str, RecallCalibration] = {
    "multilingual-e5-small": RecallCalibration("multilingual-e5-small", "recall_e5.npz", 0.099, 0.025, 0.099, 0.118),
    "all-MiniLM-L6-v2": RecallCalibration("all-MiniLM-L6-v2", "recall_minilm.npz", 0.594, 0.025, 0.594, 0.579),
    "wordllama-l2-supercat-256": RecallCalibration(
        "wordllama-l2-supercat-256", "recall_wordllama.npz", 0.592, 0.025, 0.592, 0.507
    ),
}


@dataclass(frozen=True)
class Background:
    mean_fact: np.ndarray
    mean_prompt: np.ndarray


def model_of(provider: Any) -> str | None:
    """The model answering now (a fallback wrapper's active one)."""
    if provider is None:
        return None
    return getattr(getattr(provider, "active", provider), "model", None)


def calibration_for(provider: Any) -> RecallCalibration | None:
    """The calibration of the provider's model, when it was measured and its background file is shipped."""
    calibration = CALIBRATIONS.get(model_of(provider) or "")
    if calibration is None or background(calibration.file) is None:
        return None
    return calibration


@lru_cache(maxsize=8)
def background(name: str) -> Background | None:
    path = HERE / name
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        return Background(np.asarray(data["mean_fact"], np.float32), np.asarray(data["mean_prompt"], np.float32))


def csls_scores(query: np.ndarray, facts: np.ndarray, bg: Background) -> np.ndarray:
    """2 cos(q, f) - mean cos(q, background facts) - mean cos(f, background prompts) (one fact per row)."""
    q = _unit(np.asarray(query, np.float32).reshape(-1))
    f = np.asarray(facts, np.float32)
    f = f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)
    return 2.0 * (f @ q) - float(q @ bg.mean_fact) - f @ bg.mean_prompt


def _unit(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 1e-12 else v
