"""Precision and recall of the auto-capture rules on a labelled set of user statements.

    python bench/quality/capture_eval.py [--set bench/quality/capture_set.jsonl] [--out bench/results/capture.json]

Each line of the set is `{"text", "lang", "capture": true|false, "category"}`: `capture` says whether an
assistant should keep the statement as a memory (a preference, decision, fact about a person, contact, or
an explicit "remember ..."); `category` the expected one for positives. A statement counts as captured
when `extract_rules([text], scorer=...)` returns a candidate (the same call the hooks make: the rules, plus
the capture classifier on the model's vectors when one is shipped for `--model`; `--model rules` = the rules
alone). Prints a table per language and overall, the misses and false captures, and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.config.settings import LocalConfig  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402
from mdrecall.facts.classifier import scorer_for  # noqa: E402
from mdrecall.facts.rules import extract_rules  # noqa: E402

DEFAULT_SET = ROOT / "bench" / "quality" / "capture_set.jsonl"
DEFAULT_OUT = ROOT / "bench" / "results" / "capture.json"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _scores(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
    }


def evaluate(rows: list[dict[str, Any]], scorer: Any = None) -> dict[str, Any]:
    """Run the rules on each statement; count per language, overall, and category agreement."""
    counts: dict[str, list[int]] = {}
    misses, false_captures, wrong_category = [], [], []
    category_hits = 0
    for row in rows:
        found = extract_rules([row["text"]], limit=1, scorer=scorer)
        captured = bool(found)
        lang_counts = counts.setdefault(row["lang"], [0, 0, 0, 0])
        if row["capture"] and captured:
            lang_counts[0] += 1
            expected = "entity" if row["category"] == "entity" else row["category"]
            if found[0].category == expected:
                category_hits += 1
            else:
                wrong_category.append({"text": row["text"], "expected": expected, "got": found[0].category})
        elif captured:
            lang_counts[1] += 1
            false_captures.append({"text": row["text"][:120], "lang": row["lang"], "as": found[0].category})
        elif row["capture"]:
            lang_counts[2] += 1
            misses.append({"text": row["text"], "lang": row["lang"], "category": row["category"]})
        else:
            lang_counts[3] += 1
    total = [sum(c[i] for c in counts.values()) for i in range(4)]
    return {
        "overall": _scores(*total),
        "byLanguage": {lang: _scores(*c) for lang, c in sorted(counts.items())},
        "categoryAccuracy": round(category_hits / total[0], 3) if total[0] else None,
        "statements": len(rows),
        "positives": sum(1 for r in rows if r["capture"]),
        "negatives": sum(1 for r in rows if not r["capture"]),
        "misses": misses,
        "falseCaptures": false_captures,
        "wrongCategory": wrong_category,
    }


def table(result: dict[str, Any]) -> str:
    lines = ["| language | statements | precision | recall | F1 |", "| --- | ---: | ---: | ---: | ---: |"]
    for lang, s in [*result["byLanguage"].items(), ("**all**", result["overall"])]:
        n = s["tp"] + s["fp"] + s["fn"] + s["tn"]
        lines.append(f"| {lang} | {n} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} |")
    return "\n".join(lines)


# (file, role): the dev sets the rules and the classifier were built on, and the held-out set written after
# the method was frozen (capture_heldout.jsonl to capture_heldout5.jsonl were each held out for an earlier
# method and measured once; the classifier was trained on them, so they are dev sets now; capture_heldout6 was
# held out until the rules for roles, procedures, standing orders, plans and setups were written on its misses,
# so it is a dev set now too; capture_heldout7 was written blind and measured once before and once after those
# rules, 0.947 / 0.783 both times, then its misses were worked on: the rules for health facts, dated changes,
# casual approval chains and procedures, contingencies and one-off scopes were written on its misses, with
# capture_dev10 beside them; capture_heldout8 was written blind and only measured, once per version: 0.915 /
# 0.815, 0.917 / 0.837, 0.953 / 0.880). A set that is not there yet is left out.
SUMMARY_SETS = [
    ("capture_set.jsonl", "dev"),
    ("capture_heldout.jsonl", "dev"),
    ("capture_heldout2.jsonl", "dev"),
    ("capture_dev3.jsonl", "dev"),
    ("capture_heldout3.jsonl", "dev"),
    ("capture_dev4.jsonl", "dev"),
    ("capture_dev5.jsonl", "dev"),
    ("capture_heldout4.jsonl", "dev"),
    ("capture_dev6.jsonl", "dev"),
    ("capture_dev7.jsonl", "dev"),
    ("capture_heldout5.jsonl", "dev"),
    ("capture_dev8.jsonl", "dev"),
    ("capture_conditional.jsonl", "dev"),
    ("capture_conditional2.jsonl", "dev"),
    ("capture_heldout6.jsonl", "dev"),
    ("capture_dev9.jsonl", "dev"),
    ("capture_heldout7.jsonl", "dev"),
    ("capture_dev10.jsonl", "dev"),
    ("capture_heldout8.jsonl", "held-out"),
]


def summary(scorer: Any, label: str) -> list[dict[str, Any]]:
    """Every set, rules alone and rules + classifier: one table."""
    out = []
    print(f"| set | role | statements | rules P | rules R | {label} P | {label} R | F1 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, role in SUMMARY_SETS:
        if not (ROOT / "bench" / "quality" / name).is_file():
            continue
        rows = load(ROOT / "bench" / "quality" / name)
        rules, both = evaluate(rows)["overall"], evaluate(rows, scorer)["overall"]
        print(
            f"| `{name}` | {role} | {len(rows)} | {rules['precision']:.3f} | {rules['recall']:.3f} | "
            f"{both['precision']:.3f} | {both['recall']:.3f} | {both['f1']:.3f} |"
        )
        out.append({"set": name, "role": role, "statements": len(rows), "rules": rules, "withClassifier": both})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true", help="one table over every dev and held-out set")
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--model", default="e5-small", help="local model whose classifier joins the rules; 'rules' = none"
    )
    args = parser.parse_args()
    rows = load(args.set)
    scorer = None if args.model == "rules" else scorer_for(create_local_provider(LocalConfig(), model=args.model))
    if args.summary:
        result = summary(scorer, "with classifier")
        out = args.out if args.out != DEFAULT_OUT else DEFAULT_OUT.with_name("capture_summary.json")
        out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {out}")
        return 0
    started = time.perf_counter()
    result = evaluate(rows, scorer)
    result["method"] = "rules" if scorer is None else f"rules + classifier ({args.model})"
    result["seconds"] = round(time.perf_counter() - started, 3)
    result["python"] = platform.python_version()
    print(table(result))
    print(f"\ncategory accuracy on captured positives: {result['categoryAccuracy']}")
    for title, items in (("missed", result["misses"]), ("false captures", result["falseCaptures"])):
        print(f"\n{title} ({len(items)}):")
        for item in items:
            print(f"  [{item['lang']}] {item['text'][:100]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
