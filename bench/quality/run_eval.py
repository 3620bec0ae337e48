"""Retrieval quality of mdrecall's real index on a test collection: keyword-only, vector-only, weighted
hybrid and RRF hybrid, each hybrid with the spec's AND keyword query and with the expanded OR query.

    python bench/quality/run_eval.py                      # Python-docs collection (apt-get install python3.11-doc)
    python bench/quality/run_eval.py --beir DIR           # any BEIR folder (corpus.jsonl, queries.jsonl, qrels/)

Documents are written as memory/<id>.md into a workspace, indexed by `MemoryIndex.sync()` with the default
local model (all-MiniLM-L6-v2), and searched through `search.run_search`. Results are chunks; a document's
rank is that of its best chunk (MaxP). Prints a table and writes bench/results/quality.json (or --out).
The index is kept in --work-dir, so a second run only embeds the queries.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection import Collection, load_beir, load_pydocs  # noqa: E402
from metrics import ndcg_at_k, recall_at_k  # noqa: E402

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult, create_provider  # noqa: E402
from mdrecall.retrieval.search import build_fts_query, run_search  # noqa: E402

CHUNK_RESULTS = 40  # chunks asked for per query: enough to fill 10 distinct documents
EVAL_QUERY_CFG = {"maxInjectedChars": 10**9, "snippetMaxChars": 64}


def doc_file_name(doc_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", doc_id) + ".md"


def write_workspace(collection: Collection, ws: Path) -> dict[str, str]:
    """One markdown file per document (unchanged files are left alone so sync stays incremental)."""
    mapping: dict[str, str] = {}
    folder = ws / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, (title, text) in collection.docs.items():
        name = doc_file_name(doc_id)
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != body:
            path.write_text(body, encoding="utf-8")
        mapping[f"memory/{name}"] = doc_id
    return mapping


def ranked_docs(paths: list[str], mapping: dict[str, str]) -> list[str]:
    """Document ids in order of their best chunk."""
    return list(dict.fromkeys(mapping[p] for p in paths if p in mapping))


def build_index(
    collection: Collection, work: Path, provider_name: str, local_model: str | None = None, encoding: str | None = None
) -> tuple[MemoryIndex, dict[str, str]]:
    ws = work / "ws"
    mapping = write_workspace(collection, ws)
    config = parse_config(
        {
            "provider": provider_name,
            "query": EVAL_QUERY_CFG,
            "local": {"model": local_model},
            "store": {"vector": {"encoding": encoding}} if encoding else {},
        }
    )
    result = create_provider(config)
    if result.provider is None:
        raise SystemExit(f"no embedding provider: {result.unavailable_reason}")
    settings = resolve_settings(workspace=ws, state_dir=work / "state", config=config, db_path=work / "index.sqlite")
    index = MemoryIndex(settings, ProviderResult(result.provider, requested=provider_name))
    started = time.perf_counter()
    report = index.sync(progress=None)
    print(f"indexed {len(mapping)} documents in {time.perf_counter() - started:.1f}s ({report})", file=sys.stderr)
    return index, mapping


def systems(index: MemoryIndex) -> dict[str, Callable[[str], list[str]]]:
    """Each system: query -> chunk paths, best first."""
    store, provider = index.store, index.provider
    assert provider is not None
    model = provider.model
    sources = ["memory"]

    def cfg(mode: str) -> Any:
        return parse_config({"query": {**EVAL_QUERY_CFG, "hybrid": {"mode": mode}}}).query

    weighted, rrf, minmax = cfg("weighted"), cfg("rrf"), cfg("minmax")

    def run(query_cfg: Any, prov: Any, mode: str, kw: str | None = None) -> Callable[[str], list[str]]:
        def go(q: str) -> list[str]:
            response = run_search(
                store, prov, model, query_cfg, q, sources, CHUNK_RESULTS, 0.0, mode, hybrid_keyword_query=kw
            )  # type: ignore[arg-type]
            return [r.path for r in response.results]

        return go

    def defaults(q: str) -> list[str]:
        """As `MemoryIndex.search` with no minScore: the model's floor, or the calibrated answer floor."""
        floor = index.effective_min_score()[0]
        response = run_search(
            store, provider, model, minmax, q, sources, CHUNK_RESULTS, None, "hybrid", default_min_score=floor
        )
        return [r.path for r in response.results]

    def keyword_and(q: str) -> list[str]:
        fts = build_fts_query(q)
        return [r.path for r in store.keyword_search(fts, model, sources, CHUNK_RESULTS)] if fts else []

    return {
        "keyword (spec AND)": keyword_and,
        "keyword-only (expanded OR)": run(weighted, None, "keyword"),
        "vector-only": run(weighted, provider, "vector"),
        "hybrid min-max (OR, default)": run(minmax, provider, "hybrid", "or"),
        "hybrid min-max (AND)": run(minmax, provider, "hybrid", "and"),
        "hybrid weighted (AND)": run(weighted, provider, "hybrid", "and"),
        "hybrid weighted (OR)": run(weighted, provider, "hybrid", "or"),
        "hybrid RRF (AND)": run(rrf, provider, "hybrid", "and"),
        "hybrid RRF (OR)": run(rrf, provider, "hybrid", "or"),
        "hybrid, every default (floor)": defaults,
    }


def evaluate(collection: Collection, index: MemoryIndex, mapping: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tiers = sorted(set(collection.tiers.values()))
    for name, system in systems(index).items():
        per_query: dict[str, dict[str, float]] = {}
        started = time.perf_counter()
        for qid, text in collection.queries.items():
            ranked = ranked_docs(system(text), mapping)
            judged = collection.qrels.get(qid, {})
            per_query[qid] = {
                "ndcg@10": ndcg_at_k(ranked, judged, 10),
                "recall@5": recall_at_k(ranked, judged, 5),
                "recall@10": recall_at_k(ranked, judged, 10),
            }
        elapsed = time.perf_counter() - started
        summary: dict[str, Any] = {"all": _mean(per_query.values())}
        for tier in tiers:
            summary[tier] = _mean(v for q, v in per_query.items() if collection.tiers.get(q) == tier)
        summary["ms_per_query"] = round(1000 * elapsed / max(1, len(per_query)), 1)
        out[name] = summary
    return out


def _mean(rows: Any) -> dict[str, float]:
    rows = list(rows)
    if not rows:
        return {}
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}


def print_table(results: dict[str, Any], tiers: list[str]) -> None:
    header = f"{'system':28} {'nDCG@10':>8} {'R@5':>6} {'R@10':>6}" + "".join(f" {t[:10] + ' nDCG':>16}" for t in tiers)
    print(header)
    print("-" * len(header))
    for name, summary in results.items():
        a = summary["all"]
        line = f"{name:28} {a['ndcg@10']:8.3f} {a['recall@5']:6.3f} {a['recall@10']:6.3f}"
        line += "".join(f" {summary[t]['ndcg@10']:16.3f}" for t in tiers)
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, help="a BEIR-format folder instead of the Python-docs collection")
    parser.add_argument("--docs-dir", type=Path, help="the _sources/library folder of python3.11-doc, if elsewhere")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-docs", type=int, default=None, help="sample a BEIR corpus down (judged docs kept)")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--local-model", default=None, help="local.model: e5-small, e5-small-enpt, minilm, wordllama")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/mdrecall-quality"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "quality.json")
    parser.add_argument(
        "--encoding",
        choices=["float32", "float16", "int8"],
        help="store.vector.encoding (default: the config's; a change rebuilds the kept index from its cache)",
    )
    args = parser.parse_args(argv)

    collection = load_beir(args.beir, args.split, args.max_docs) if args.beir else load_pydocs(args.docs_dir)
    work = args.work_dir / collection.name
    index, mapping = build_index(collection, work, args.provider, args.local_model, args.encoding)
    try:
        chunks = index.status()["chunks"]
        results = evaluate(collection, index, mapping)
    finally:
        index.close()
    tiers = sorted(set(collection.tiers.values()))
    print(f"\n{collection.name}: {len(collection.docs)} documents, {chunks} chunks, {len(collection.queries)} queries")
    print_table(results, tiers)
    payload = {
        "collection": collection.name,
        "documents": len(collection.docs),
        "chunks": chunks,
        "queries": len(collection.queries),
        "queries_per_tier": {t: sum(1 for v in collection.tiers.values() if v == t) for t in tiers},
        "provider": args.provider,
        "local_model": index.provider.model if index.provider is not None else None,
        "vector_encoding": index.config.store.vector.encoding,
        "chunk_results_per_query": CHUNK_RESULTS,
        "machine": platform.platform(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
