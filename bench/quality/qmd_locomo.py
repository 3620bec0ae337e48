"""The qmd backend on LoCoMo (dev half), scored exactly as locomo_eval.py scores mdrecall's own modes.

    PATH=.qmd-real/node_modules/.bin:$PATH nice -n 10 python bench/quality/qmd_locomo.py /tmp/locomo-dev \\
        [--cache-dir /tmp/mdrecall-locomo-cache] [--out bench/results/qmd_locomo.json]

The workspaces dir is what shared/eval/locomo-dev/build.py writes. Every conversation is indexed twice: by the
real `qmd` (its own home under the cache dir, `qmd update`) and by mdrecall's builtin index with every default
(the same cache as locomo_eval.py, so the model runs once). Each question asks for 10 results through:

- `qmd search, empty answer final`: what the qmd backend returned before (and returns with
  `qmd.fallbackOnEmpty = false`): qmd's BM25, which needs every word of the question in one note;
- `qmd backend (default)`: `FallbackBackend.search` as shipped: qmd first, the builtin index when qmd finds
  nothing or fails; the share of questions each engine served is reported;
- `qmd vsearch` / `qmd query`: run only when qmd has an embedding model (a GGUF under its model cache or
  $QMD_EMBED_MODEL); offline there is none, and the script says so instead of scoring the builtin index twice;
- `builtin default`: mdrecall's own default, for reference.

Figures depend on the machine only through the timings (per-query milliseconds, qmd spawns node for every
search); on a shared box they need a quiet re-run. Writes bench/results/qmd_locomo.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_eval import Hit, K, Question, aggregate, load_questions, open_indexes, score_question  # noqa: E402

from mdrecall.backends.fallback import FallbackBackend  # noqa: E402
from mdrecall.backends.qmd import QmdBackend  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402

QMD_LIMITS = {"maxResults": K, "maxInjectedChars": 10**9, "maxSnippetChars": 10**6, "timeoutMs": 60_000}


def qmd_backend(workspace: Path, state: Path, mode: str) -> QmdBackend:
    config = parse_config(
        {
            "backend": "qmd",
            "qmd": {"searchMode": mode, "limits": QMD_LIMITS, "update": {"embedInterval": "0"}},
        }
    )
    return QmdBackend(resolve_settings(workspace=workspace, state_dir=state, config=config))


def hits_of(response: Any) -> list[Hit]:
    return [(r.path, r.start_line, r.end_line) for r in response.results]


def summarize(name: str, scores: list[dict[str, float]], questions: list[Question], ms: list[float]) -> dict:
    out = aggregate(scores, questions)
    ordered = sorted(ms)
    out["ms"] = {"median": round(ordered[len(ordered) // 2], 1), "p95": round(ordered[int(len(ordered) * 0.95)], 1)}
    row = out["all"]
    print(
        f"{name:44s} hit@1 {row['hit@1']:.3f}  hit@5 {row['hit@5']:.3f}  hit@10 {row['hit@10']:.3f}  "
        f"ev@10 {row['ev@10']:.3f}  zero {row['zero']:.3f}  median {out['ms']['median']:.0f} ms"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/mdrecall-locomo-cache"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "qmd_locomo.json")
    parser.add_argument("--limit", type=int, default=0, help="first N questions only (a quick look)")
    args = parser.parse_args(argv)
    if shutil.which("qmd") is None:
        print("qmd is not on PATH (make test-qmd installs it under .qmd-real/node_modules/.bin)", file=sys.stderr)
        return 1
    questions = load_questions(args.workspaces)
    if args.limit:
        questions = questions[: args.limit]
    names = sorted({q.workspace for q in questions})
    builtin = open_indexes(args.workspaces, names, {}, args.cache_dir)
    qmd_state = args.cache_dir / "qmd-state"
    primaries: dict[str, QmdBackend] = {}
    for name in names:
        primary = qmd_backend(args.workspaces / name, qmd_state / name, "search")
        started = time.perf_counter()
        primary.refresh(force=True)
        status = primary.status()
        print(f"qmd update {name}: {status.get('documents')} documents in {time.perf_counter() - started:.1f}s")
        primaries[name] = primary
    version = next(iter(primaries.values())).version()

    results: dict[str, Any] = {}
    qmd_only: list[dict[str, float]] = []
    shipped: list[dict[str, float]] = []
    reference: list[dict[str, float]] = []
    ms_qmd: list[float] = []
    ms_ref: list[float] = []
    served = {"qmd": 0, "builtin (qmd found nothing)": 0, "builtin (qmd failed)": 0}
    for n, q in enumerate(questions, 1):
        backend = FallbackBackend(primaries[q.workspace], builtin[q.workspace])
        started = time.perf_counter()
        response = backend.search(q.text, max_results=K)
        ms_qmd.append((time.perf_counter() - started) * 1000)
        reason = (response.backend_fallback or {}).get("reason")
        if response.backend == "qmd":
            served["qmd"] += 1
            qmd_hits = hits_of(response)
        else:
            served["builtin (qmd found nothing)" if reason == "qmd found nothing" else "builtin (qmd failed)"] += 1
            qmd_hits = []  # qmd alone answered nothing (or failed): the empty answer that used to be final
        qmd_only.append(score_question(qmd_hits, q))
        shipped.append(score_question(hits_of(response), q))
        started = time.perf_counter()
        reference.append(score_question(hits_of(builtin[q.workspace].search(q.text, max_results=K)), q))
        ms_ref.append((time.perf_counter() - started) * 1000)
        if n % 100 == 0:
            print(f"  {n}/{len(questions)} questions", file=sys.stderr)

    print(f"\nqmd {version}, {len(questions)} questions, 10 results each")
    ms_qmd_only = ms_qmd  # one qmd call per question serves both qmd rows
    results["qmd search, empty answer final"] = summarize(
        "qmd search, empty answer final", qmd_only, questions, ms_qmd_only
    )
    results["qmd backend (default)"] = summarize("qmd backend (default: builtin on empty)", shipped, questions, ms_qmd)
    results["qmd backend (default)"]["served"] = served
    results["builtin default"] = summarize("builtin default (reference)", reference, questions, ms_ref)
    print(f"qmd backend served: {served}")

    probe = qmd_backend(args.workspaces / names[0], qmd_state / names[0], "vsearch")
    if probe.has_embed_model():
        results["vector modes"] = "a model is present: run qmd embed and extend this script to score them"
    else:
        note = (
            f"not run: qmd has no embedding model in {probe.models_dir} and cannot fetch one offline; "
            "the qmd backend in vsearch/query mode is then answered by the builtin index for every question"
        )
        results["vector modes"] = note
        print(f"qmd vsearch / query: {note}")

    payload = {"qmd": version, "questions": len(questions), "k": K, "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
