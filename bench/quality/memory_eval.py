"""Temporal decay and MMR on the synthetic dated-memory set (bench/quality/dated_memory.py).

    python bench/quality/memory_eval.py [--provider local] [--out bench/results/quality_memory.json]

Builds the workspace in --work-dir, indexes it with mdrecall (default local model), and runs each query
through `search.run_search` with `now` fixed at 2025-07-01, for hybrid and keyword-only search, with and
without decay and MMR. Metrics are over facts (near-duplicate notes share one): novelty nDCG@10 and fact
Recall@5/10, per tier.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dated_memory import NOW, DatedMemory, build  # noqa: E402
from metrics import fact_recall_at_k, novelty_ndcg_at_k  # noqa: E402

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult, create_provider  # noqa: E402
from mdrecall.retrieval.search import run_search  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "decay": {"temporalDecay": {"enabled": True}},
    "mmr": {"mmr": {"enabled": True}},
    "decay+mmr": {"temporalDecay": {"enabled": True}, "mmr": {"enabled": True}},
}


def write_workspace(mem: DatedMemory, ws: Path) -> None:
    if ws.exists():
        shutil.rmtree(ws)
    for rel, text in mem.files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def evaluate(
    mem: DatedMemory, index: MemoryIndex, provider: Any, mode: str, variant: dict[str, Any], keyword_query: str
) -> dict:
    query_cfg = parse_config({"query": {"maxInjectedChars": 10**9, **variant}}).query
    model = index.provider.model if index.provider else "fts-only"
    rows: dict[str, list[dict[str, float]]] = {}
    for q in mem.queries:
        response = run_search(
            index.store,
            provider,
            model,
            query_cfg,
            q.text,
            ["memory"],
            10,
            0.0,
            mode,
            now=NOW,
            hybrid_keyword_query=keyword_query,  # type: ignore[arg-type]
        )
        ranked = list(dict.fromkeys(r.path for r in response.results))
        metrics = {
            "ndcg@10": novelty_ndcg_at_k(ranked, mem.facts, q.grades, 10),
            "recall@5": fact_recall_at_k(ranked, mem.facts, q.grades, 5),
            "recall@10": fact_recall_at_k(ranked, mem.facts, q.grades, 10),
        }
        rows.setdefault("all", []).append(metrics)
        rows.setdefault(q.tier, []).append(metrics)
    return {tier: {k: round(sum(m[k] for m in ms) / len(ms), 4) for k in ms[0]} for tier, ms in rows.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/mdrecall-quality/dated-memory"))
    parser.add_argument("--local-model", default=None, help="local.model (default: the default offline model)")
    parser.add_argument("--hybrid-keyword", choices=["and", "or"], default=None, help="hybrid keyword query")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "quality_memory.json")
    args = parser.parse_args(argv)

    mem = build()
    write_workspace(mem, args.work_dir / "ws")
    raw: dict[str, Any] = {"provider": args.provider}
    if args.local_model:
        raw["local"] = {"model": args.local_model}
    config = parse_config(raw)
    provider = create_provider(config).provider
    settings = resolve_settings(
        workspace=args.work_dir / "ws", state_dir=args.work_dir / "state", config=config, db_path=args.work_dir / "i.db"
    )
    index = MemoryIndex(settings, ProviderResult(provider, requested=args.provider))
    index.sync()
    results: dict[str, Any] = {}
    try:
        for search_mode, prov in (("hybrid", provider), ("keyword", None)):
            if search_mode == "hybrid" and provider is None:
                continue
            for name, variant in VARIANTS.items():
                results[f"{search_mode} {name}"] = evaluate(mem, index, prov, search_mode, variant, args.hybrid_keyword)
    finally:
        index.close()
    tiers = ["all", "exact", "paraphrase", "multi-hop", "near-duplicate"]
    print(f"dated memory: {len(mem.files)} notes, {len(mem.queries)} queries, now = {NOW.date()}")
    print("novelty nDCG@10 (fact Recall@5) per tier")
    print(f"{'system':20}" + "".join(f"{t:>20}" for t in tiers))
    for name, res in results.items():
        print(f"{name:20}" + "".join(f"{res[t]['ndcg@10']:>12.3f} ({res[t]['recall@5']:.2f})" for t in tiers))
    payload = {
        "hybrid_keyword_query": args.hybrid_keyword or "default",
        "notes": len(mem.files),
        "queries": len(mem.queries),
        "now": NOW.isoformat(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
