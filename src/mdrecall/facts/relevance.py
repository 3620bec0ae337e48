"""How relevant a stored fact is to a prompt: one score per embedding model, calibrated per model.

Small embedding models are anisotropic: with multilingual-e5-small every text sits at cosine 0.75-0.9 from
every other, unrelated prompts reach 0.86 against some fact and a paraphrased question can score 0.75
against its own answer; some facts (short ones, non-English ones) are near everything ("hubs"). A raw
cosine threshold cannot tell them apart, and a keyword share weighted half (the earlier 0.5 / 0.5 hybrid)
lets one stray shared word ("use", "my") outrank the fact that answers the question.

The score here is CSLS (cross-domain similarity local scaling) with mean neighbourhoods, computed after
taking the language out of the vectors:

    relevance(q, f) = 2 cos(q, f) - cos(q, mean_fact) - cos(f, mean_prompt) + keyword_weight * keyword(q, f)

The first term is the similarity; the second removes what a prompt shares with any fact (a vague or chatty
prompt), the third what a fact shares with any prompt (a hub).
`mean_fact` and `mean_prompt` are the mean vectors of background texts embedded by the same model: the
memorable statements and the everyday prompts (questions, requests, chatter) of the capture dev sets in
`bench/quality/` (never the recall sets).

Language: a small model puts two texts of the same language closer than their meaning alone would (a
French question lands on the Portuguese fact, a Korean chat line on the Chinese one). The directions along
which one language's background texts differ from the others' (one per background language, 7-8 of 384)
are projected out of every vector before the cosines.

Query view (models with query/passage prefixes, such as e5): a fact is also embedded as a query, stored in
the table beside its passage vector, and the score is the mean of the CSLS against both; a question is
often closer to a fact phrased the same way than to the fact as a passage.

The keyword share (stop words aside) only breaks near-ties. The language directions and the mean vectors
are shipped per model in `recall_<model>.npz`, written by `bench/quality/recall_eval.py --calibrate`.

Thresholds are measured per model on `bench/quality/recall_set.jsonl` (45 facts, 62 paraphrased questions,
125 unrelated prompts in 9 languages), `recall_heldout.jsonl` and `recall_heldout2.jsonl` (114 questions,
154 unrelated prompts), never carried over from another model: the lowest threshold that injects something
for at most 5 % of their unrelated prompts. `bench/quality/recall_heldout3.jsonl` is only measured. Models
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
    # also score against the facts embedded as queries (models with query/passage prefixes, such as e5)
    query_view: bool = False


# The one place where per-model recall thresholds live. Measured by `bench/quality/recall_eval.py
# --calibrate` on the tuning splits (dev, test, heldout, heldout2: 176 questions, 279 unrelated prompts):
# - min_score: the lowest threshold that injects something for at most 5 % of those unrelated prompts;
# - keyword_weight: 0.025 for every model, the smallest non-zero weight tried: a larger one gains at most one
#   of the 176 questions and lets a stray shared word outrank the fact that answers (e5 at 0.05: "which
#   indentation do I use" -> "I use Neovim for everything." above "I prefer tabs over spaces.");
# - forget_min = min_score; forget_margin = the median gap between the right fact and the runner-up on the
#   questions it answers first.
# Figures at keyword weight 0 / 0.025 / 0.05 (right fact injected; ranked first):
#   multilingual-e5-small      .812/.830/.835; .909/.920/.915; threshold(.025) .0774, gap .105
#   all-MiniLM-L6-v2           .653 each;      .744 each;      threshold(.025) .5802, gap .558
#   wordllama-l2-supercat-256  .580 each;      .716 each;      threshold(.025) .5448, gap .484
# Weighting the two mean similarities 1.5 instead of 1 gained e5 a few questions on dev, test and heldout
# (.860 against .814 at 0.025) but put "I use Neovim" above "I prefer tabs" for "which indentation do I
# use" at any keyword weight, and missed "which hosting provider do we deploy to" without one: not taken.
# The figures of the set kept out of the tuning (heldout3) are in docs/facts.md.
CALIBRATIONS: dict[str, RecallCalibration] = {
    "multilingual-e5-small": RecallCalibration(
        "multilingual-e5-small", "recall_e5.npz", 0.0774, 0.025, 0.0774, 0.105, query_view=True
    ),
    "all-MiniLM-L6-v2": RecallCalibration("all-MiniLM-L6-v2", "recall_minilm.npz", 0.5802, 0.025, 0.5802, 0.558),
    "wordllama-l2-supercat-256": RecallCalibration(
        "wordllama-l2-supercat-256", "recall_wordllama.npz", 0.5448, 0.025, 0.5448, 0.484
    ),
}


@dataclass(frozen=True)
class Background:
    mean_fact: np.ndarray  # mean of typical memorable statements (passages), in the language-free space
    mean_prompt: np.ndarray  # mean of typical everyday prompts (queries), in the language-free space
    language: np.ndarray  # rows: directions along which texts of one language differ from the others (k x dims)
    mean_fact_query: np.ndarray | None = None  # the statements embedded as queries (query view models only)


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
        dims = data["mean_fact"].shape[0]
        language = np.asarray(data["language"], np.float32) if "language" in data else np.zeros((0, dims), np.float32)
        fact_query = np.asarray(data["mean_fact_query"], np.float32) if "mean_fact_query" in data else None
        return Background(
            np.asarray(data["mean_fact"], np.float32), np.asarray(data["mean_prompt"], np.float32), language, fact_query
        )


def language_free(vectors: np.ndarray, language: np.ndarray) -> np.ndarray:
    """Unit vectors with their part along the language directions taken out (one vector per row)."""
    v = np.atleast_2d(np.asarray(vectors, np.float32))
    if len(language):
        v = v - (v @ language.T) @ language
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def relevance_scores(
    query: np.ndarray, facts: np.ndarray, bg: Background, fact_queries: np.ndarray | None = None
) -> np.ndarray:
    """CSLS of the prompt against each fact (one per row) in the language-free space; with `fact_queries`
    (the facts embedded as queries) the mean of the passage view and the query view."""
    q = language_free(query, bg.language)[0]
    f = language_free(facts, bg.language)
    scores = 2.0 * (f @ q) - float(q @ bg.mean_fact) - f @ bg.mean_prompt
    if fact_queries is not None and bg.mean_fact_query is not None:
        fq = language_free(fact_queries, bg.language)
        scores = (scores + 2.0 * (fq @ q) - float(q @ bg.mean_fact_query) - fq @ bg.mean_prompt) / 2.0
    return scores
