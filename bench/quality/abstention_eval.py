"""Calibrated scores and abstention: LoCoMo dev asked its own and foreign questions; a team's notes asked
off-topic questions and questions with the dates people say.

    python bench/quality/abstention_eval.py /path/to/locomo-dev [--cache-dir DIR] [--fit]

1. **Abstention on LoCoMo dev** (the built workspaces of `../shared/eval/locomo-dev/build.py`): every
   conversation's memory is asked its own questions and the other four conversations' questions (which it
   cannot answer). Every search runs through the real pipeline with every default (`run_search`); the
   calibrated top candidates and their features are recorded. Printed: the share of foreign questions that
   come back empty, own hit@5 / hit@1 and the share of own questions that come back empty, and the AUC of
   the best result's score between own and foreign questions; for the fused score (no abstention), the
   shipped calibration, and leave-one-conversation-out (weights fitted and the answer floor picked on the
   other four conversations: their own and foreign questions, a foreign question weighted 1/4 so both kinds
   count alike; the floor is the largest that leaves at most 1.5 % of their own questions empty).
   `--fit` also prints the weights fitted on all five (the table in `retrieval/calibration.py`).
2. **The LoCoMo table** (10 results, scored as the builder's README says) for the default as shipped, the
   leave-one-out simulation and Okapi BM25 over the same chunks.
3. **A team's notes** (`team_memory.py`, written for this repo): on-topic questions answered with the right
   note in the top 3, off-topic questions ("how do I knit a scarf") empty; and the relative-date set (right
   log in the top 3), asked on the team's today and long after (an archive: dates read against the newest
   log); then the same questions asked in German, Spanish, Portuguese, French, Japanese, Chinese and Korean
   (`team_memory.PHRASINGS`), per language beside English.

Prints the tables and writes bench/results/abstention.json. Figures on a busy machine are exact (no
timings), but the LoCoMo index is built once into the cache dir.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

import locomo_eval as le  # noqa: E402
import team_memory  # noqa: E402

from mdrecall.retrieval import calibration as cal  # noqa: E402
from mdrecall.retrieval import search as search_module  # noqa: E402

FOREIGN_WEIGHT = 0.25  # four foreign questions per own one: weighted so both kinds count alike
OWN_EMPTY_BUDGET = 0.015
FLOORS = [round(x, 4) for x in np.arange(0.0, 0.1001, 0.0025)]


# -- recording the calibrated candidates of each search ------------------------------------------------------


class Recorder:
    """Wraps search's calibration step: for each search, the calibrated candidates (fused order) with their
    features, in the order calibrate_hits scored them (a result in another language than the question: its
    `cross_features`, marked "cross")."""

    def __init__(self) -> None:
        self.features: list[dict[str, float]] = []
        self.last: list[tuple[tuple[str, int, int], dict[str, float]]] = []
        self.fused_top = 0.0
        self._features = search_module.features
        self._cross_features = search_module.cross_features
        self._calibrate = search_module.calibrate_hits

    def install(self) -> None:
        def features(*args: Any, **kwargs: Any) -> dict[str, float]:
            out = self._features(*args, **kwargs)
            self.features.append(out)
            return out

        def calibrate(*args: Any, **kwargs: Any) -> Any:
            # a search may score its candidates in two calls (the shown ones, then the rest when none of them
            # reaches the answer floor): both are kept, until `take`
            self.features = []
            hits = self._calibrate(*args, **kwargs)
            self.last += [
                ((h.row.path, h.row.start_line, h.row.end_line), f) for h, f in zip(hits, self.features, strict=True)
            ]
            fused = max((h.fused for h in hits if h.fused is not None), default=0.0)
            self.fused_top = max(self.fused_top, fused) if len(self.last) > len(hits) else fused
            return hits

        def cross_features(*args: Any, **kwargs: Any) -> dict[str, float]:  # a result in another language
            out = self._cross_features(*args, **kwargs)
            self.features.append({**out, "cross": 1.0})
            return out

        search_module.features = features  # type: ignore[assignment]
        search_module.cross_features = cross_features  # type: ignore[assignment]
        search_module.calibrate_hits = calibrate  # type: ignore[assignment]

    def take(self) -> list[tuple[tuple[str, int, int], dict[str, float]]]:
        out, self.last = self.last, []
        return out


def vector_of(f: dict[str, float]) -> list[float]:
    return [f[name] for name in cal.FEATURES]


def probabilities(beta: list[float], rows: list[dict[str, float]]) -> np.ndarray:
    if not rows:
        return np.zeros(0)
    x = np.array([vector_of(f) for f in rows])
    return 1.0 / (1.0 + np.exp(-(beta[0] + x @ np.array(beta[1:]))))


def auc(pos: list[float], neg: list[float]) -> float:
    values = np.array(pos + neg)
    ranks = values.argsort().argsort() + 1.0
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


# -- LoCoMo -------------------------------------------------------------------------------------------------


def collect(indexes: dict, questions: list, recorder: Recorder) -> list[dict[str, Any]]:
    """Every workspace asked every question with every default: the shipped answer and the candidates."""
    out = []
    started = time.perf_counter()
    for w, index in indexes.items():
        for qi, q in enumerate(questions):
            response = index.search(q.text, max_results=le.K)
            cands = recorder.take()
            hits = [(r.path, r.start_line, r.end_line) for r in response.results]
            out.append(
                {
                    "ws": w,
                    "qi": qi,
                    "own": q.workspace == w,
                    "hits": hits,
                    "top": max((r.score for r in response.results), default=0.0),
                    "fused_top": recorder.fused_top,
                    "cands": [c for c, _ in cands],
                    "feats": [f for _, f in cands],
                    "labels": [float(q.workspace == w and any(le.covers(c, e) for e in q.evidence)) for c, _ in cands],
                }
            )
        print(f"  asked {w} every question ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return out


def answer(record: dict[str, Any], p: np.ndarray, floor: float) -> list[tuple[str, int, int]]:
    """The results the pipeline would give with these probabilities: nothing when the best is below the
    floor, else the candidates in fused order, overlapping ones merged, 10 of them."""
    if not len(p) or float(p.max()) < floor:
        return []
    return le.merge_ranges(record["cands"], le.K)


def table_row(records: list[dict], questions: list, answers: list[list], tops: list[float]) -> dict[str, float]:
    own = [(r, a) for r, a in zip(records, answers, strict=True) if r["own"]]
    foreign = [a for r, a in zip(records, answers, strict=True) if not r["own"]]
    scores = [le.score_question(a, questions[r["qi"]]) for r, a in own]
    own_tops = [t for r, t in zip(records, tops, strict=True) if r["own"]]
    foreign_tops = [t for r, t in zip(records, tops, strict=True) if not r["own"]]
    return {
        "foreign_empty": round(sum(1 for a in foreign if not a) / len(foreign), 4),
        "own_hit@1": round(sum(s["hit@1"] for s in scores) / len(scores), 4),
        "own_hit@5": round(sum(s["hit@5"] for s in scores) / len(scores), 4),
        "own_empty": round(sum(1 for _, a in own if not a) / len(own), 4),
        "auc": round(auc(own_tops, foreign_tops), 4),
    }


def fit(records: list[dict]) -> list[float]:
    rows, labels, weights = [], [], []
    for r in records:
        for f, y in zip(r["feats"], r["labels"], strict=True):
            if f.get("cross"):
                continue  # scored by the cross-language model (crosslang_eval.py fits it)
            rows.append(vector_of(f))
            labels.append(y)
            weights.append(1.0 if r["own"] else FOREIGN_WEIGHT)
    return cal.logit_fit(rows, labels, weights)


def pick_floor(records: list[dict], probs: list[np.ndarray]) -> float:
    """The largest floor leaving at most OWN_EMPTY_BUDGET of the own questions empty."""
    own = [p for r, p in zip(records, probs, strict=True) if r["own"]]
    best = 0.0
    for floor in FLOORS:
        empty = sum(1 for p in own if not len(p) or float(p.max()) < floor) / len(own)
        if empty <= OWN_EMPTY_BUDGET:
            best = floor
    return best


def reliability(records: list[dict], probs: list[np.ndarray]) -> list[dict[str, float]]:
    """Per band of predicted chance: how many candidates, and the share that hold the answer (a foreign
    question's candidates weighted FOREIGN_WEIGHT, as in the fit)."""
    out = []
    edges = [0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        n = w = y = 0.0
        for r, p in zip(records, probs, strict=True):
            weight = 1.0 if r["own"] else FOREIGN_WEIGHT
            for value, label in zip(p, r["labels"], strict=True):
                if lo <= value < hi:
                    n += 1
                    w += weight
                    y += weight * label
        if n:
            out.append({"band": f"{lo:.2f}-{min(hi, 1):.2f}", "candidates": int(n), "right": round(y / w, 3)})
    return out


def leave_one_out(records: list[dict], questions: list) -> tuple[list[list], list[float], dict[str, Any]]:
    names = sorted({r["ws"] for r in records})
    answers: list[list] = [[] for _ in records]
    tops = [0.0] * len(records)
    probs: list[np.ndarray] = [np.zeros(0) for _ in records]
    folds: dict[str, Any] = {}
    for name in names:
        train = [r for r in records if r["ws"] != name and questions[r["qi"]].workspace != name]
        beta = fit(train)
        floor = pick_floor(train, [probabilities(beta, r["feats"]) for r in train])
        folds[name] = {"weights": [round(b, 3) for b in beta], "floor": floor}
        for i, r in enumerate(records):
            if r["ws"] == name:
                p = probabilities(beta, r["feats"])
                probs[i] = p
                answers[i] = answer(r, p, floor)
                tops[i] = float(p.max()) if len(p) else 0.0
    folds["reliability"] = reliability(records, probs)
    return answers, tops, folds


def locomo(args: argparse.Namespace, recorder: Recorder) -> dict[str, Any]:
    questions = le.load_questions(args.workspaces)
    names = sorted({q.workspace for q in questions})
    indexes = le.open_indexes(args.workspaces, names, {}, args.cache_dir)
    le.memoize_candidates()
    records = collect(indexes, questions, recorder)
    out: dict[str, Any] = {}

    shipped = cal.CALIBRATIONS["multilingual-e5-small"]
    beta = [shipped.intercept] + [shipped.weights[name] for name in cal.FEATURES]
    calibrated_tops = [float(probabilities(beta, r["feats"]).max()) if r["feats"] else 0.0 for r in records]
    never = [le.merge_ranges(r["cands"], le.K) for r in records]
    # the fused score with no floor (the code before calibration), its best score for the AUC
    out["fused"] = table_row(records, questions, never, [r["fused_top"] for r in records])
    out["no_abstention"] = table_row(records, questions, never, calibrated_tops)
    shipped_answers = [r["hits"] for r in records]
    out["shipped"] = table_row(records, questions, shipped_answers, calibrated_tops)
    loo_answers, loo_tops, folds = leave_one_out(records, questions)
    out["leave_one_out"] = table_row(records, questions, loo_answers, loo_tops)
    out["folds"] = folds
    if args.fit:
        beta = fit(records)
        probs = [probabilities(beta, r["feats"]) for r in records]
        out["fit_all"] = {"weights": dict(zip(["intercept", *cal.FEATURES], beta, strict=True))}
        out["fit_all"]["floor"] = pick_floor(records, probs)

    print("\nAbstention on LoCoMo dev: each conversation asked its own and the other four's questions")
    print(f"{'system':48}{'foreign empty':>14}{'own hit@5':>10}{'own hit@1':>10}{'own empty':>10}{'AUC':>8}")
    labels = {
        "fused": "fused scores (before), no floor",
        "no_abstention": "calibrated scores, no answer floor",
        "shipped": "shipped (every default; in-sample weights)",
        "leave_one_out": "leave-one-conversation-out (weights + floor)",
    }
    for key, label in labels.items():
        row = out[key]
        print(
            f"{label:48}{row['foreign_empty']:>14.3f}{row['own_hit@5']:>10.3f}{row['own_hit@1']:>10.3f}"
            f"{row['own_empty']:>10.3f}{row['auc']:>8.3f}"
        )
    print("  folds:", json.dumps({k: v for k, v in folds.items() if k != "reliability"}))
    print("  held-out chance vs share right (band: candidates, share right):")
    for band in folds["reliability"]:
        print(f"    {band['band']}: {band['candidates']:6d}  {band['right']:.3f}")
    if args.fit:
        print("  fitted on all five:", json.dumps(out["fit_all"]))

    # the LoCoMo table: own questions only
    own_idx = [i for i, r in enumerate(records) if r["own"]]
    table = {}
    for label, answers in (("mdrecall default (as shipped)", shipped_answers), ("leave-one-out", loo_answers)):
        per_q = {records[i]["qi"]: answers[i] for i in own_idx}
        table[label] = le.aggregate([le.score_question(per_q[qi], q) for qi, q in enumerate(questions)], questions)
    bm25 = le.bm25_system({})
    table["Okapi BM25 (same chunks)"] = le.aggregate(
        [le.score_question(bm25(indexes[q.workspace], q), q) for q in questions], questions
    )
    le.print_table(table, len(questions))
    out["locomo"] = table
    for index in indexes.values():
        index.close()
    return out


# -- the team's notes ---------------------------------------------------------------------------------------


def team(cache: Path) -> dict[str, Any]:
    """On-topic / off-topic and relative-date questions on the team workspace, with every default."""

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mdrecall-team-") as tmp:
        index, logs = team_memory.open_index(cache, Path(tmp) / "state")
        ask = functools.partial(team_memory.ask, index)

        answered, right3 = 0, 0
        for question, path in team_memory.ONTOPIC:
            response = ask(question, team_memory.NOW)
            answered += bool(response.results)
            if response.results and (path is None or any(r.path == path for r in response.results[:3])):
                right3 += 1
        empty = 0
        for question in team_memory.OFFTOPIC:
            empty += not ask(question, team_memory.NOW).results
        out["team"] = {
            "ontopic": len(team_memory.ONTOPIC),
            "ontopic_answered": answered,
            "ontopic_right_in_top3": right3,
            "offtopic": len(team_memory.OFFTOPIC),
            "offtopic_empty": empty,
        }
        print("\nA team's notes (125 logs + MEMORY.md), every default")
        print(f"  on-topic answered {answered}/{len(team_memory.ONTOPIC)}, right note in top 3 {right3}")
        print(f"  off-topic empty {empty}/{len(team_memory.OFFTOPIC)}")

        dated = team_memory.dated_questions(logs)
        rows: dict[str, Any] = {}
        for label, today in (
            ("own notes (today)", team_memory.NOW),
            ("archive (asked later)", team_memory.ARCHIVE_NOW),
        ):
            per_phrase: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            misses = []
            for q in dated:
                response = ask(q["question"], today)
                ok = any(r.path in q["paths"] for r in response.results[:3])
                per_phrase[q["phrase"]][0] += ok
                per_phrase[q["phrase"]][1] += 1
                if not ok:
                    misses.append(q["question"])
            total = sum(v[0] for v in per_phrase.values())
            rows[label] = {"top3": round(total / len(dated), 4), "per_phrase": dict(per_phrase), "misses": misses}
        out["dated"] = rows
        print(f"\nRelative dates: {len(dated)} questions, right log in the top 3")
        phrases = list(dict.fromkeys(q["phrase"] for q in dated))
        print(f"{'phrase':26}" + "".join(f"{label:>26}" for label in rows))
        for phrase in phrases:
            counts = [rows[label]["per_phrase"][phrase] for label in rows]
            cells = "".join(f"{f'{ok}/{n}':>26}" for ok, n in counts)
            print(f"{phrase:26}{cells}")
        print(f"{'all':26}" + "".join(f"{rows[label]['top3']:>26.3f}" for label in rows))
        for label in rows:
            for miss in rows[label]["misses"]:
                print(f"  missed ({label}): {miss}")

        # the same questions in the other languages dates are read in (team_memory.PHRASINGS)
        labels = {"own notes (today)": team_memory.NOW, "archive (asked later)": team_memory.ARCHIVE_NOW}
        english_right = {label: sum(v[0] for v in rows[label]["per_phrase"].values()) for label in labels}
        by_language: dict[str, Any] = {
            "en": {label: {"right": english_right[label], "of": len(dated)} for label in labels}
        }
        for language in team_memory.PHRASINGS:
            questions = team_memory.dated_questions(logs, language=language)
            by_label: dict[str, Any] = {}
            for label, today in labels.items():
                misses = [
                    q["question"]
                    for q in questions
                    if not any(r.path in q["paths"] for r in ask(q["question"], today).results[:3])
                ]
                by_label[label] = {"right": len(questions) - len(misses), "of": len(questions), "misses": misses}
            by_language[language] = by_label
        print("\nRelative dates by language: the same questions, right log in the top 3")
        print(f"{'language':10}" + "".join(f"{label:>26}" for label in labels))
        for language, counts in by_language.items():
            cells = ["{right}/{of}".format(**c) for c in counts.values()]
            print(f"{language:10}" + "".join(f"{cell:>26}" for cell in cells))
        for language, counts in by_language.items():
            for label, c in counts.items():
                for miss in c.get("misses", []):
                    print(f"  missed ({language}, {label}): {miss}")
        out["dated_languages"] = by_language
        index.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", type=Path, nargs="?", help="built LoCoMo workspaces (questions.jsonl + conv-*/)")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/mdrecall-locomo-cache"))
    parser.add_argument("--fit", action="store_true", help="also fit the weights on all five conversations")
    parser.add_argument("--skip-team", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "abstention.json")
    args = parser.parse_args(argv)
    recorder = Recorder()
    recorder.install()
    payload: dict[str, Any] = {}
    if args.workspaces:
        payload["locomo"] = locomo(args, recorder)
    if not args.skip_team:
        payload.update(team(args.cache_dir / "team"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
