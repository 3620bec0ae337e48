"""Train the capture classifier (logistic regression on the model's sentence vectors) on the dev sets.

    python bench/quality/train_capture.py [--model e5-small] [--target-precision 0.974] [--cache vectors.npz] [--show]

Embeds every statement of the dev sets with the model (passage vectors, as the store computes them), appends
the text features named in FEATURES (`rules.text_features`), fits an L2-regularised logistic regression by
Newton's method (numpy), and picks the decision threshold from out-of-set probabilities, combined with the
rules exactly as capture does (the rules' rejects first, then rule hit OR probability >= threshold, the latter
not on what `rules.passing` marks: a temporary state, a verdict on the work at hand, a counted request):

- leave-one-set-out: each dev set is scored by a model trained on the others. Each set was written at a
  different time for different weak spots, so this is the closest stand-in for a set written later by
  someone else (a new held-out set lands a few points below 5-fold cross-validation);
- 5-fold cross-validation, printed beside it.

The threshold is the lowest (on a 0.025 grid) whose pooled leave-one-set-out precision reaches the target
(0.974: a margin over the aim of 0.95, since a set written later has landed a few points below on one side).
Prints the figures per left-out set and per language; `--show` lists
the leave-one-set-out misses and false captures. Writes `src/mdrecall/facts/capture_<model>.npz` with the
figures.

The held-out sets named in HELDOUT are never read here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.config.settings import LocalConfig  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402
from mdrecall.facts.classifier import HERE, WEIGHT_FILES  # noqa: E402
from mdrecall.facts.rules import passing, reject_reason, rule_candidate, text_features  # noqa: E402

QUALITY = ROOT / "bench" / "quality"
# capture_heldout*.jsonl were each held out for an earlier method and measured once; now they are dev sets.
DEV_SETS = [
    "capture_set.jsonl",
    "capture_heldout.jsonl",
    "capture_heldout2.jsonl",
    "capture_dev3.jsonl",
    "capture_heldout3.jsonl",
    "capture_dev4.jsonl",
    "capture_dev5.jsonl",
    "capture_dev6.jsonl",
    "capture_dev7.jsonl",
    "capture_heldout4.jsonl",
    "capture_heldout5.jsonl",
    "capture_dev8.jsonl",
]
HELDOUT: list[str] = []  # a set written after the method is frozen goes here; evaluated only by capture_eval.py
# Pooled leave-one-set-out, the first threshold reaching precision 0.955 (precision / recall) by variant:
# vector alone l2 0.1 .961/.827, l2 0.03 .958/.852; + deixis, habit, task l2 0.1 .957/.870, l2 0.03 .958/.874;
# + people l2 0.1 .966/.859, l2 0.03 .966/.870; + people, style l2 0.1 .960/.892, l2 0.03 .957/.889;
# + people, style, hedge l2 0.1 .959/.906, l2 0.03 .962/.904 (chosen then, on the first seven sets).
# On all ten sets (capture_dev6 and capture_dev7 hold general knowledge, status lines, one-off requests and
# "don't forget ... in this PR" in eight languages), threshold / precision / recall:
# those six features l2 0.03: 0.75 .942/.867, 0.8 .956/.842; + knowledge, once, status, prefer, address, role, plan,
# public l2 0.03: 0.775 .950/.891, 0.8 .953/.877; l2 0.1: 0.725 .951/.891, 0.75 .957/.879 (chosen);
# l2 0.3: 0.7 .953/.853. Without the two new sets (before `public` and dev7), the same features reached .983/.883.
# On all twelve sets (+ capture_heldout4, capture_heldout5 and capture_dev8: explicit "note for later" and address
# forms, short style rules, someone's own setup, people, decisions, "this time only" in eight languages):
# those fourteen features l2 0.1: 0.7 .956/.897; + the rules for remember and address forms in eight languages,
# `setup`, wider `once`/`style`/`role`: 0.725 .964/.904; + `public` no longer firing on own products, plans and
# setups: 0.675 .971/.931, 0.7 .975/.924 (chosen: a margin on both sides), 0.75 .980/.899; l2 0.03: 0.7 .966/.932,
# 0.75 .970/.921; l2 0.3: 0.675 .972/.903. A feature for short style rules (`terse`) changed nothing (.966/.894).
L2 = 0.1
FEATURES = (
    "deixis",
    "habit",
    "task",
    "people",
    "style",
    "hedge",
    "knowledge",
    "once",
    "status",
    "prefer",
    "address",
    "role",
    "plan",
    "public",
    "setup",
)
FOLDS = 5
CATEGORIES = ("preference", "decision", "entity", "fact")


def load(names: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in names:
        for line in (QUALITY / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append({**json.loads(line), "set": name})
    return rows


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 30) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method (the bias is not penalised)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + penalty * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def embed(provider: Any, texts: list[str], cache: Path | None) -> np.ndarray:
    """Passage vectors for the texts, reusing (and extending) a cache file when one is named."""
    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.is_file():
        with np.load(cache, allow_pickle=False) as data:
            known = dict(zip((str(t) for t in data["texts"]), data["vectors"], strict=True))
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        known.update(zip(missing, np.asarray(provider.embed_batch(missing), dtype=np.float64), strict=True))
        if cache is not None:
            np.savez(cache, texts=np.array(list(known)), vectors=np.stack(list(known.values())))
    return np.stack([known[t] for t in texts]).astype(np.float64)


def scores(decided: np.ndarray, y: np.ndarray) -> dict[str, float]:
    tp = int((decided & y).sum())
    fp = int((decided & ~y).sum())
    fn = int((~decided & y).sum())
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(precision, 3), "recall": round(recall, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small")
    parser.add_argument("--target-precision", type=float, default=0.974)
    parser.add_argument("--l2", type=float, default=L2)
    parser.add_argument("--features", default=",".join(FEATURES), help="comma-separated text features")
    parser.add_argument("--show", action="store_true", help="print the leave-one-set-out errors")
    parser.add_argument("--cache", type=Path, help="an .npz file keeping the vectors between runs (by text)")
    args = parser.parse_args()
    features = tuple(f for f in args.features.split(",") if f)
    rows = load(DEV_SETS)
    provider = create_local_provider(LocalConfig(), model=args.model)
    if provider.model not in WEIGHT_FILES:
        print(f"no weight file name for {provider.model}; add it to classifier.WEIGHT_FILES", file=sys.stderr)
        return 1
    texts = [r["text"] for r in rows]
    vectors = embed(provider, texts, args.cache)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    x = np.hstack([vectors, np.array([text_features(t, features) for t in texts], dtype=np.float64)])
    y = np.array([bool(r["capture"]) for r in rows])
    sets = np.array([r["set"] for r in rows])
    rejected = np.array([reject_reason(t) is not None for t in texts])
    rule_hit = np.array([rule_candidate(t) is not None for t in texts])
    # what the classifier alone may not keep (a temporary state, a verdict, a counted request, public knowledge)
    rejected_alone = np.array([passing(t) for t in texts])
    rng = np.random.default_rng(7)
    fold = rng.permutation(len(rows)) % FOLDS
    oof = np.zeros(len(rows))
    for k in range(FOLDS):
        w, b = fit(x[fold != k], y[fold != k].astype(float), args.l2)
        oof[fold == k] = 1.0 / (1.0 + np.exp(-(x[fold == k] @ w + b)))
    loso = np.zeros(len(rows))
    for name in DEV_SETS:
        held = sets == name
        w, b = fit(x[~held], y[~held].astype(float), args.l2)
        loso[held] = 1.0 / (1.0 + np.exp(-(x[held] @ w + b)))
    print(
        f"{len(rows)} dev statements ({int(y.sum())} to capture) in {len(DEV_SETS)} sets, features "
        f"{','.join(features)}, l2={args.l2}"
    )
    print("rules alone:", scores(rule_hit & ~rejected, y))
    chosen = None
    for t in np.round(np.arange(0.30, 0.96, 0.025), 3):
        by_set = scores(~rejected & (rule_hit | ((loso >= t) & ~rejected_alone)), y)
        cv = scores(~rejected & (rule_hit | ((oof >= t) & ~rejected_alone)), y)
        print(
            f"  threshold {t:.3f}: leave-one-set-out P {by_set['precision']:.3f} R {by_set['recall']:.3f}"
            f" | {FOLDS}-fold P {cv['precision']:.3f} R {cv['recall']:.3f}"
        )
        exact = by_set["tp"] / max(1, by_set["tp"] + by_set["fp"])  # unrounded: no threshold just under the target
        if chosen is None and exact >= args.target_precision:
            chosen = (float(t), by_set, cv)
    if chosen is None:
        print("no threshold reaches the target precision", file=sys.stderr)
        return 1
    threshold, by_set, cv = chosen
    per_set = {}
    for name in DEV_SETS:
        held = sets == name
        per_set[name] = scores(
            ~rejected[held] & (rule_hit[held] | ((loso[held] >= threshold) & ~rejected_alone[held])), y[held]
        )
        print(f"  left out {name}: {per_set[name]}")
    if args.show:
        decided = ~rejected & (rule_hit | ((loso >= threshold) & ~rejected_alone))
        for i in np.where(decided != y)[0]:
            kind = "false capture" if decided[i] else "miss"
            print(f"    {kind} ({loso[i]:.2f}, {sets[i]}): {texts[i]}")
    langs = np.array([r.get("lang", "?") for r in rows])
    for lang in sorted(set(langs)):
        mine = langs == lang
        alone = (loso[mine] >= threshold) & ~rejected_alone[mine]
        print(f"  language {lang}: {scores(~rejected[mine] & (rule_hit[mine] | alone), y[mine])}")
    w, b = fit(x, y.astype(float), args.l2)
    x = vectors  # the category heads read the vector alone
    # category heads, one-vs-rest on the statements to capture; accuracy by the same folds
    positives = np.where(y)[0]
    labels = np.array([rows[i]["category"] for i in positives])
    oof_category = np.empty(len(positives), dtype=object)
    for k in range(FOLDS):
        train, test = fold[positives] != k, fold[positives] == k
        heads = [fit(x[positives][train], (labels[train] == c).astype(float), args.l2) for c in CATEGORIES]
        logits = np.stack([x[positives][test] @ hw + hb for hw, hb in heads], axis=1)
        oof_category[test] = [CATEGORIES[i] for i in logits.argmax(1)]
    category_cv = round(float((oof_category == labels).mean()), 3)
    heads = [fit(x[positives], (labels == c).astype(float), args.l2) for c in CATEGORIES]
    print(f"category heads: cross-validated accuracy {category_cv} on {len(positives)} statements to capture")
    out = HERE / WEIGHT_FILES[provider.model]
    np.savez_compressed(
        out,
        model=np.array(provider.model),
        weights=w.astype(np.float32),
        bias=np.float32(b),
        threshold=np.float32(threshold),
        l2=np.float32(args.l2),
        trained_on=np.array(",".join(DEV_SETS)),
        cv=np.array(json.dumps(cv)),
        leave_one_set_out=np.array(json.dumps({"pooled": by_set, "sets": per_set})),
        features=np.array(",".join(features)),
        categories=np.array(",".join(CATEGORIES)),
        category_weights=np.stack([hw for hw, _ in heads]).astype(np.float32),
        category_bias=np.array([hb for _, hb in heads], dtype=np.float32),
        category_cv=np.float32(category_cv),
    )
    print(f"threshold {threshold} (leave-one-set-out {by_set}, {FOLDS}-fold {cv})")
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
