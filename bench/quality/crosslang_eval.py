"""Questions asked in another language than the notes: answered when the memory holds the answer, empty when not.

    python bench/quality/crosslang_eval.py /path/to/locomo-dev [--cache-dir DIR] [--fit] [--features] [--skip-team]
        [--nordic]

The set (`crosslang_set.json`, written for this repo) holds the same questions in English, German, Spanish,
French and Portuguese, and (`--nordic`: asked too) Swedish, Danish and Norwegian; the notes are English:

1. **LoCoMo dev**: 40 questions (8 per conversation, single-hop and open-domain) asked of their own
   conversation's memory (answered: not empty; hit@5: an evidence line in the top 5) and of the other four
   conversations' memories, which cannot answer them (foreign empty).
2. **A team's notes** (`team_memory.py`): 12 on-topic questions (answered; right note in the top 5), 16 off-topic
   ones ("how do I knit a scarf", "when is the christmas party": must come back empty), and the relative-date
   questions of `team_memory.PHRASINGS` ("Was haben wir im Frühling zu budget beschlossen?": answered, right
   log in the top 3; not for the Nordic languages, which have no such phrasings).

Every search runs with every default (multilingual-e5-small, calibrated scores, abstention). `--features`
prints each question's best candidate's calibration features (cosine; coverage, or for a result in another
language `held`; name_missing). `--fit` fits the cross-language model (`calibration.E5_CROSS_CALIBRATION`) on
the translated LoCoMo questions, every top candidate scored, and prints it with leave-one-conversation-out
figures. Prints the table per language and writes bench/results/crosslang.json. No timings: figures are exact on a
busy machine; the LoCoMo indexes are built once into the cache dir (shared with locomo_eval.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

import abstention_eval as ae  # noqa: E402
import locomo_eval as le  # noqa: E402
import team_memory  # noqa: E402

from mdrecall.retrieval import calibration as cal  # noqa: E402
from mdrecall.retrieval import search as search_module  # noqa: E402

SET = HERE / "crosslang_set.json"
TOP = 5


def load_set() -> dict[str, Any]:
    return json.loads(SET.read_text(encoding="utf-8"))


def probability(f: dict[str, float]) -> float:
    shipped = cal.CALIBRATIONS["multilingual-e5-small"]
    model = shipped.cross if f.get("cross") and shipped.cross is not None else shipped
    return model.probability(f)


def best_features(cands: list) -> dict[str, float]:
    """The calibration features of the best-scored candidate of a search (empty when not calibrated)."""
    return max((f for _, f in cands), key=probability) if cands else {}


# -- fitting the cross-language model -------------------------------------------------------------------


def cross_rows(records: list[dict]) -> tuple[list[list[float]], list[float], list[float]]:
    rows, labels, weights = [], [], []
    for r in records:
        for f, y in zip(r["feats"], r["labels"], strict=True):
            if f.get("cross"):
                rows.append([f[name] for name in cal.CROSS_FEATURES])
                labels.append(y)
                weights.append(1.0 if r["own"] else ae.FOREIGN_WEIGHT)
    return rows, labels, weights


def cross_probabilities(beta: list[float], record: dict) -> list[float]:
    model = cal.Calibration(beta[0], dict(zip(cal.CROSS_FEATURES, beta[1:], strict=True)), 0.0)
    shipped = cal.CALIBRATIONS["multilingual-e5-small"]
    return [model.probability(f) if f.get("cross") else shipped.probability(f) for f in record["feats"]]


def fit_cross(records: list[dict], floor: float) -> dict[str, Any]:
    """The cross-language model fitted on every conversation's translated questions (own ones and the
    other conversations', weighted as abstention_eval weights them), and leave-one-conversation-out: own
    empty, foreign empty and the AUC of the best score at the shipped answer floor."""
    out: dict[str, Any] = {}
    beta = cal.logit_fit(*cross_rows(records))
    out["all"] = dict(zip(["intercept", *cal.CROSS_FEATURES], [round(b, 4) for b in beta], strict=True))
    names = sorted({r["ws"] for r in records})
    tops = [0.0] * len(records)
    for name in names:
        train = [r for r in records if r["ws"] != name and r["qws"] != name]
        fold = cal.logit_fit(*cross_rows(train))
        out[name] = [round(b, 3) for b in fold]
        for i, r in enumerate(records):
            if r["ws"] == name:
                tops[i] = max(cross_probabilities(fold, r), default=0.0)
    own = [t for r, t in zip(records, tops, strict=True) if r["own"]]
    foreign = [t for r, t in zip(records, tops, strict=True) if not r["own"]]
    out["leave_one_out"] = {
        "own_empty": round(sum(t < floor for t in own) / len(own), 4),
        "foreign_empty": round(sum(t < floor for t in foreign) / len(foreign), 4),
        "auc": round(ae.auc(own, foreign), 4),
    }
    return out


def locomo(root: Path, cache: Path, data: dict[str, Any], recorder: ae.Recorder, show: bool) -> dict[str, Any]:
    questions = le.load_questions(root)
    names = sorted({q.workspace for q in questions})
    indexes = le.open_indexes(root, names, {}, cache)
    out: dict[str, Any] = {}
    records: list[dict[str, Any]] = []  # every non-English search's candidates, for --fit
    for language in data["languages"]:
        own = answered = hit5 = foreign = foreign_empty = 0
        misses: list[str] = []
        for item in data["locomo"]:
            q = questions[item["line"]]
            text = item[language]
            for ws in names:
                response = indexes[ws].search(text, max_results=le.K)
                cands = recorder.take()
                if language != "en":
                    labels = [float(ws == q.workspace and any(le.covers(c, e) for e in q.evidence)) for c, _ in cands]
                    feats = [f for _, f in cands]
                    own_ws = ws == q.workspace
                    records.append({"ws": ws, "qws": q.workspace, "own": own_ws, "feats": feats, "labels": labels})
                if ws != q.workspace:
                    foreign += 1
                    foreign_empty += not response.results
                    continue
                hits = [(r.path, r.start_line, r.end_line) for r in response.results]
                own += 1
                answered += bool(hits)
                right = any(le.covers(h, e) for h in hits[:TOP] for e in q.evidence)
                hit5 += right
                if not right:
                    misses.append(text)
                if show:
                    verdict = "ok " if right else "MISS" if hits else "EMPTY"
                    print(f"  [{language}] {verdict} {_fmt(best_features(cands))} {text}")
        out[language] = {
            "own": own,
            "own_answered": answered,
            "own_hit@5": hit5,
            "foreign": foreign,
            "foreign_empty": foreign_empty,
            "misses": misses,
        }
    out["_records"] = records
    for index in indexes.values():
        index.close()
    return out


def _fmt(feats: dict[str, float]) -> str:
    if not feats:
        return "(fused)"
    if feats.get("cross"):
        return f"cos {feats['cosine']:.3f} held {feats['held']:.0f} name {feats['name_missing']:.0f}"
    return f"cos {feats['cosine']:.3f} cov {feats['coverage']:.2f} name {feats['name_missing']:.0f}"


def team(cache: Path, data: dict[str, Any], recorder: ae.Recorder, show: bool) -> dict[str, Any]:

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mdrecall-team-") as tmp:
        ws = cache / "workspace"  # a fixed place: the cached index belongs to it (shared by the team evals)
        index, logs = team_memory.open_index(cache, Path(tmp) / "state")

        def ask(question: str) -> Any:
            return team_memory.ask(index, question), best_features(recorder.take())

        def holds(result: Any, answer: str) -> bool:
            if result.path == answer:
                return True
            lines = (ws / result.path).read_text(encoding="utf-8").splitlines()
            return answer in "\n".join(lines[result.start_line - 1 : result.end_line])

        for language in data["languages"]:
            row: dict[str, Any] = defaultdict(int)
            misses: list[str] = []
            for item in data["team_ontopic"]:
                response, feats = ask(item[language])
                right = any(holds(r, item["answer"]) for r in response.results[:TOP])
                row["ontopic"] += 1
                row["ontopic_answered"] += bool(response.results)
                row["ontopic_right@5"] += right
                if not right:
                    misses.append(item[language])
                if show:
                    verdict = "ok " if right else "MISS" if response.results else "EMPTY"
                    print(f"  [{language}] {verdict} {_fmt(feats)} {item[language]}")
            for item in data["team_offtopic"]:
                response, feats = ask(item[language])
                row["offtopic"] += 1
                row["offtopic_empty"] += not response.results
                if response.results:
                    misses.append(item[language])
                if show:
                    verdict = "empty" if not response.results else "ANSWERED"
                    print(f"  [{language}] {verdict} {_fmt(feats)} {item[language]}")
            dated = team_memory.dated_questions(logs, language=language) if language in DATED else []
            for q in dated:
                response, feats = ask(q["question"])
                right = any(r.path in q["paths"] for r in response.results[:3])
                row["dated"] += 1
                row["dated_answered"] += bool(response.results)
                row["dated_right@3"] += right
                if not right:
                    misses.append(q["question"])
                if show and not response.results:
                    print(f"  [{language}] dated EMPTY {_fmt(feats)} {q['question']}")
            out[language] = {**row, "misses": misses}
        index.close()
    return out


DATED = {"en", *team_memory.PHRASINGS}  # the languages the relative-date questions are phrased in


def print_table(payload: dict[str, Any], languages: list[str]) -> None:
    print("\nQuestions in another language than the (English) notes, every default")
    head = f"{'language':9}"
    if "locomo" in payload:
        head += f"{'LoCoMo answered':>16}{'hit@5':>7}{'empty':>7}{'foreign empty':>14}"
    if "team" in payload:
        head += f"{'team answered':>14}{'right@5':>8}{'off-topic empty':>16}{'dated answered':>15}{'right@3':>8}"
    print(head)
    for language in languages:
        line = f"{language:9}"
        if "locomo" in payload:
            r = payload["locomo"][language]
            n = r["own"]
            line += f"{r['own_answered'] / n:>16.3f}{r['own_hit@5'] / n:>7.3f}{1 - r['own_answered'] / n:>7.3f}"
            line += f"{r['foreign_empty'] / r['foreign']:>14.3f}"
        if "team" in payload:
            t = payload["team"][language]
            line += f"{t['ontopic_answered']:>11}/{t['ontopic']:<2}{t['ontopic_right@5']:>6}/{t['ontopic']:<2}"
            if t.get("dated"):
                line += f"{t['offtopic_empty']:>13}/{t['offtopic']:<2}{t['dated_answered']:>12}/{t['dated']:<2}"
                line += f"{t['dated_right@3']:>6}/{t['dated']:<2}"
            else:
                line += f"{t['offtopic_empty']:>13}/{t['offtopic']:<2}{'-':>15}{'-':>8}"
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", type=Path, nargs="?", help="built LoCoMo workspaces (questions.jsonl + conv-*/)")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/mdrecall-locomo-cache"))
    parser.add_argument("--skip-team", action="store_true")
    parser.add_argument("--features", action="store_true", help="print each question's best candidate's features")
    parser.add_argument("--fit", action="store_true", help="fit the cross-language model on the LoCoMo questions")
    parser.add_argument("--nordic", action="store_true", help="also ask the Swedish, Danish and Norwegian questions")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "crosslang.json")
    args = parser.parse_args(argv)
    data = load_set()
    if args.nordic:
        data["languages"] = [*data["languages"], *data["more_languages"]]
    if args.fit:  # every top candidate scored (the results are the same): the fit sees them all
        search_module.shown_count = lambda *_args, **_kwargs: None  # type: ignore[assignment]
    recorder = ae.Recorder()
    recorder.install()
    payload: dict[str, Any] = {}
    if args.workspaces:
        payload["locomo"] = locomo(args.workspaces, args.cache_dir, data, recorder, args.features)
        records = payload["locomo"].pop("_records")
        if args.fit:
            floor = cal.CALIBRATIONS["multilingual-e5-small"].abstain_below
            payload["fit"] = fit_cross(records, floor)
            print("cross-language model:", json.dumps(payload["fit"]))
    if not args.skip_team:
        payload["team"] = team(args.cache_dir / "team", data, recorder, args.features)
    print_table(payload, data["languages"])
    if "fit" in payload:
        print("cross-language model:", json.dumps(payload["fit"]))
    for part in ("locomo", "team"):
        for language, row in payload.get(part, {}).items():
            for miss in row["misses"]:
                print(f"  not right ({part}, {language}): {miss}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
