"""How many statements per session the capture method finds: the measurement behind the per-session cap.

    python bench/quality/capture_cap.py [/work/shared/eval/locomo-dev/locomo-dev.json] [--model e5-small]

Runs the capture decision the hooks make (`extract_rules` with the model's classifier, no cap) on every
session of the LoCoMo dev conversations, once per speaker (each in turn plays the user), and prints the
distribution of candidates per session-speaker and how many a given cap would drop. LoCoMo's long personal
chats are rich in facts about the speakers, so they bound from above what a working session with an agent
produces; figures are counts, not timings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.config.settings import LocalConfig  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402
from mdrecall.facts.classifier import scorer_for  # noqa: E402
from mdrecall.facts.rules import extract_rules  # noqa: E402

DEFAULT = Path("/work/shared/eval/locomo-dev/locomo-dev.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, nargs="?", default=DEFAULT)
    parser.add_argument("--model", default="e5-small")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "capture_cap.json")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"no LoCoMo file at {args.data}", file=sys.stderr)
        return 1
    scorer = scorer_for(create_local_provider(LocalConfig(), model=args.model))
    counts: list[int] = []
    for sample in json.loads(args.data.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        sessions = [k for k in conversation if k.startswith("session_") and not k.endswith("date_time")]
        for key in sessions:
            turns = conversation[key]
            for speaker in {t["speaker"] for t in turns}:
                texts = [t["text"] for t in turns if t["speaker"] == speaker]
                counts.append(len(extract_rules(texts, None, scorer=scorer)))
    arr = np.array(counts)
    result = {
        "sessionSpeakers": len(counts),
        "mean": round(float(arr.mean()), 2),
        "percentiles": {str(p): float(np.percentile(arr, p)) for p in (50, 75, 90, 95)},
        "max": int(arr.max()),
        "droppedShareByCap": {
            str(cap): round(float(np.maximum(arr - cap, 0).sum() / max(arr.sum(), 1)), 3) for cap in (3, 5, 8, 10)
        },
        "sessionsOverCap": {str(cap): round(float((arr > cap).mean()), 3) for cap in (3, 5, 8, 10)},
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
