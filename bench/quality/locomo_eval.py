"""Retrieval quality on LoCoMo-style conversational memory: mdrecall's modes side by side with Okapi BM25.

    python bench/quality/locomo_eval.py /work/locomo-dev [--set query.hybrid.vectorWeight=0.6] [--loco]

The workspaces dir holds `questions.jsonl` and one workspace per conversation (`conv-*/memory/*.md`), as
written by the LoCoMo builder (its README fixes the scoring used here). The data is never copied: each
workspace is indexed in place through mdrecall's real index (`MemoryIndex.sync()`), into a cache dir keyed
by the index-relevant config, so a re-run skips embedding. Every question asks for 10 results.

- covers: same path and startLine <= line <= endLine; hit@k: one of the first k covers an evidence line;
  evidence recall@10: share of evidence lines covered by the first 10; zero: no result at all; lines: mean
  length of a result in lines (merged results are longer: the figure says by how much); read@k: one of the
  first k results' snippets (the text `memory_search` returns, what an agent reads without opening the file)
  holds an evidence line (its words after the speaker, up to 80 characters). BM25's snippet is the first
  700 characters of its chunk (OpenClaw's snippet).
- Per category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
- Baseline: Okapi BM25 (k1 1.2, b 0.75, lower-cased \\w+ tokens, no stop list) over the very chunk rows
  the index holds.
- `--loco`: leave-one-conversation-out for each tuned parameter (the weight of the fusion and the min
  score): the value is picked on four conversations and scored on the fifth.
- `--min-score-curve`: hit@5 and zero rate of the default search against minScore.
- `--rerank-url URL`: also runs "hybrid, minScore 0" with the `query.rerank` stage at that baseUrl
  (`--rerank-provider cohere|voyage|jina`, `--rerank-model`, `--rerank-weight` (repeatable; default 0.5
  and 1), `--rerank-candidates`; the key from COHERE_API_KEY / VOYAGE_API_KEY / JINA_API_KEY). Each
  question's documents are reranked once for all weights; faults (which fall back to the fused order) are
  counted and reported, so a down reranker cannot pass for "no change". See docs/rerank.md.

Prints tables and writes bench/results/locomo_dev.json (or --out).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.backends.builtin import MemoryIndex  # noqa: E402
from mdrecall.config.settings import parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult, create_provider  # noqa: E402
from mdrecall.retrieval import rerank as rerank_module  # noqa: E402
from mdrecall.retrieval import search as search_module  # noqa: E402
from mdrecall.retrieval.search import run_search  # noqa: E402

K = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
NO_BUDGET = {"maxInjectedChars": 10**9}
Hit = tuple  # path, startLine, endLine[, snippet]


@dataclass
class Question:
    workspace: str
    text: str
    category: int
    evidence: list[tuple[str, int]]
    # each evidence line's words after its speaker ("Nate: I love them" -> "I love them"), up to 80 chars
    evidence_text: list[str] = field(default_factory=list)


def evidence_words(line: str) -> str:
    return line.split(": ", 1)[-1].strip()[:80]


def load_questions(root: Path) -> list[Question]:
    out = []
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        evidence = [(e["path"], int(e["line"])) for e in item.get("evidence", [])]
        texts = [evidence_words(file_lines(root / item["workspace"] / path)[line - 1]) for path, line in evidence]
        out.append(Question(item["workspace"], item["question"], int(item["category"]), evidence, texts))
    return out


@functools.cache
def file_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# -- scoring -----------------------------------------------------------------------------------------------


def covers(hit: Hit, evidence: tuple[str, int]) -> bool:
    return hit[0] == evidence[0] and hit[1] <= evidence[1] <= hit[2]


def score_question(hits: Sequence[Hit], q: Question) -> dict[str, float]:
    """hit@1/5/10, evidence recall@10 and zero for one question (no evidence: counted as a miss)."""
    first = next((i for i, h in enumerate(hits[:K]) if any(covers(h, e) for e in q.evidence)), None)
    covered = sum(1 for e in q.evidence if any(covers(h, e) for h in hits[:K]))
    read = next(
        (i for i, h in enumerate(hits[:K]) if len(h) > 3 and any(t and t in h[3] for t in q.evidence_text)), None
    )
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "hit@10": float(first is not None),
        "ev@10": covered / len(q.evidence) if q.evidence else 0.0,
        # nan for a system whose results carry no snippet (the table prints "-", the JSON null: not a misleading 0)
        "read@1": float(read is not None and read < 1) if not hits or len(hits[0]) > 3 else math.nan,
        "read@5": float(read is not None and read < 5) if not hits or len(hits[0]) > 3 else math.nan,
        "zero": float(not hits),
        "lines": sum(h[2] - h[1] + 1 for h in hits[:K]) / len(hits[:K]) if hits else 0.0,
    }


def aggregate(per_question: Sequence[dict[str, float]], questions: Sequence[Question]) -> dict[str, Any]:
    """Means over all questions and per category."""

    def mean(rows: list[dict[str, float]]) -> dict[str, float | None]:
        out = {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]} if rows else {}
        return {k: None if v != v else v for k, v in out.items()}  # nan (no snippets): null in the JSON

    out: dict[str, Any] = {"all": mean(list(per_question))}
    for cat, name in CATEGORIES.items():
        out[name] = mean([s for s, q in zip(per_question, questions, strict=True) if q.category == cat])
    return out


# -- Okapi BM25 over the index's own chunk rows ------------------------------------------------------------

_TOKEN = re.compile(r"\w+")


class OkapiBM25:
    """Plain Okapi BM25 (k1 1.2, b 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))), lower-cased \\w+ tokens."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.tfs = [Counter(_TOKEN.findall(d.lower())) for d in docs]
        self.lengths = np.array([sum(tf.values()) for tf in self.tfs], dtype=np.float64)
        self.avg = float(self.lengths.mean()) if len(docs) else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tfs))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (self.avg or 1.0))
        for term in _TOKEN.findall(query.lower()):
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([d.get(term, 0) for d in self.tfs], dtype=np.float64)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: str, k: int) -> list[int]:
        s = self.scores(query)
        order = np.argsort(-s, kind="stable")[:k]
        return [int(i) for i in order if s[i] > 0]


# -- mdrecall indexes --------------------------------------------------------------------------------------


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for key in keys[:-1]:
        data = data.setdefault(key, {})
    data[keys[-1]] = value


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """`a.b.c=value` pairs (value read as JSON when it parses, else as a string) into a config dict."""
    data: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        set_path(data, key.strip(), value)
    return data


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def index_key(config: dict[str, Any]) -> str:
    """Cache key: everything in the config but the query section (which never changes the index)."""
    payload = {k: v for k, v in config.items() if k != "query"}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


class MemoProvider:
    """Wraps a provider so each query is embedded once across all modes of a run."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._memo:
            self._memo[text] = self._inner.embed_query(text)
        return self._memo[text]


def open_indexes(root: Path, names: Sequence[str], config: dict[str, Any], cache: Path) -> dict[str, MemoryIndex]:
    parsed = parse_config(config)
    result = create_provider(parsed)
    provider = MemoProvider(result.provider) if result.provider is not None else None
    key_dir = cache / index_key(config)
    key_dir.mkdir(parents=True, exist_ok=True)
    (key_dir / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    out: dict[str, MemoryIndex] = {}
    for name in names:
        settings = resolve_settings(
            workspace=root / name, state_dir=key_dir / "state", config=parsed, db_path=key_dir / f"{name}.sqlite"
        )
        index = MemoryIndex(settings, ProviderResult(provider, requested=result.requested))  # type: ignore[arg-type]
        started = time.perf_counter()
        report = index.sync()
        if report.files_indexed:
            print(
                f"indexed {name}: {report.chunks_indexed} chunks, {report.texts_embedded} embedded "
                f"in {time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )
        out[name] = index
    return out


def chunk_rows(index: MemoryIndex) -> list[tuple[str, int, int, str]]:
    rows = index.store.conn.execute(
        "SELECT path, start_line, end_line, chunk_text(text) FROM chunks ORDER BY path, start_line"
    )
    return [(str(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]


# -- systems -----------------------------------------------------------------------------------------------

System = Callable[[MemoryIndex, Question], list[Hit]]


def mdrecall_system(mode: str, query: dict[str, Any], min_score: float | None = 0.0) -> System:
    """run_search on the index with the config's query section plus `query` overrides, 10 results.

    min_score None = the index's min score in force (explicit > config > model default)."""

    def go(index: MemoryIndex, q: Question) -> list[Hit]:
        cfg = parse_config({"query": merged(index.config.query.model_dump(by_alias=True), query)}).query
        threshold = index.effective_min_score()[0] if min_score is None else min_score
        response = run_search(
            index.store,
            index.provider if mode != "keyword" else None,
            index.store.read_meta()["model"],  # type: ignore[index]
            cfg,
            q.text,
            index.config.sources,
            K,
            threshold,
            "hybrid" if mode == "keyword" else mode,  # type: ignore[arg-type]
        )
        return [(r.path, r.start_line, r.end_line, r.snippet) for r in response.results]

    return go


def default_system(index: MemoryIndex, q: Question) -> list[Hit]:
    """Exactly what a user gets: MemoryIndex.search with every default, asking for 10 results."""
    return [(r.path, r.start_line, r.end_line, r.snippet) for r in index.search(q.text, max_results=K).results]


SPEC_SNIPPET = 700  # snippetMaxChars: OpenClaw's snippet is the chunk's first 700 characters


def bm25_system(cache: dict[str, tuple[OkapiBM25, list[tuple[str, int, int, str]]]], merge: bool = False) -> System:
    """Okapi BM25's top 10; with `merge`, overlapping chunks of one file joined as mdrecall joins them."""

    def go(index: MemoryIndex, q: Question) -> list[Hit]:
        key = str(index.settings.db_path)
        if key not in cache:
            rows = chunk_rows(index)
            cache[key] = (OkapiBM25([r[3] for r in rows]), rows)
        bm25, rows = cache[key]
        top = bm25.top(q.text, 5 * K if merge else K)
        if merge:
            return merge_ranges([rows[i][:3] for i in top], K)
        return [(*rows[i][:3], rows[i][3][:SPEC_SNIPPET]) for i in top]

    return go


def merge_ranges(ranked: Sequence[Hit], k: int) -> list[Hit]:
    """Up to k results where a range overlapping a better one of the same file widens it instead."""
    out: list[Hit] = []
    for path, start, end in ranked:
        for i, (p, s, e) in enumerate(out):
            if p == path and start <= e and s <= end:
                out[i] = (p, min(s, start), max(e, end))
                break
        else:
            if len(out) >= k:
                break
            out.append((path, start, end))
    return out


def modes(extra: dict[str, dict[str, Any]]) -> dict[str, System]:
    """The systems compared in one run (name -> system)."""
    out: dict[str, System] = {
        "mdrecall default (as shipped)": default_system,
        "hybrid, minScore 0": mdrecall_system("hybrid", NO_BUDGET),
        "hybrid min-max, AND keyword side": mdrecall_system("hybrid", {**NO_BUDGET, "hybrid": {"keywordQuery": "and"}}),
        "hybrid weighted (raw scores)": mdrecall_system("hybrid", {**NO_BUDGET, "hybrid": {"mode": "weighted"}}),
        "hybrid RRF": mdrecall_system("hybrid", {**NO_BUDGET, "hybrid": {"mode": "rrf"}}),
        "keyword-only": mdrecall_system("keyword", NO_BUDGET),
        "vector-only": mdrecall_system("vector", NO_BUDGET),
        "hybrid + temporal decay": mdrecall_system("hybrid", {**NO_BUDGET, "temporalDecay": {"enabled": True}}),
    }
    for name, query in extra.items():
        out[name] = mdrecall_system("hybrid", {**NO_BUDGET, **query})
    out["spec results (mergeOverlapping off)"] = mdrecall_system("hybrid", {**NO_BUDGET, "mergeOverlapping": False})
    bm25_cache: dict[str, Any] = {}
    out["Okapi BM25 (same chunks)"] = bm25_system(bm25_cache)
    out["Okapi BM25, overlapping chunks merged"] = bm25_system(bm25_cache, merge=True)
    return out


def memoize_candidates() -> None:
    """Each question's keyword and vector candidate rows are fetched once per index and reused by every mode
    (they do not depend on the fusion, weights, min score or decay), which makes a many-mode run affordable
    on a busy machine. The rows are never mutated downstream."""
    memo: dict[tuple, Any] = {}
    keyword_rows, vector_rows = search_module._keyword_rows, search_module._vector_rows

    def cached_keyword(
        store: Any, query: str, model: str, sources: Any, limit: int, expanded: bool, forms: bool = False
    ) -> Any:
        key = ("k", str(store.path), query, model, tuple(sources), limit, expanded, forms)
        if key not in memo:
            memo[key] = keyword_rows(store, query, model, sources, limit, expanded, forms)
        return memo[key]

    def cached_vector(store: Any, vector: Any, model: str, sources: Any, limit: int) -> Any:
        if vector is None:
            return []
        key = ("v", str(store.path), vector.tobytes(), model, tuple(sources), limit)
        if key not in memo:
            memo[key] = vector_rows(store, vector, model, sources, limit)
        return memo[key]

    def cached_start(store: Any, vector: Any, model: str, sources: Any, limit: int, mode: str) -> Any:
        rows = cached_vector(store, vector, model, sources, limit)  # the same rows as a search begun beside
        return lambda: rows

    search_module._keyword_rows = cached_keyword  # type: ignore[assignment]
    search_module._vector_rows = cached_vector  # type: ignore[assignment]
    search_module._start_vector_rows = cached_start  # type: ignore[assignment]


def rerank_modes(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """`--rerank-*` options -> extra modes: "hybrid, minScore 0" plus the rerank stage, one per weight."""
    if not args.rerank_url:
        return {}
    stage = {"enabled": True, "provider": args.rerank_provider, "baseUrl": args.rerank_url}
    stage["candidates"] = args.rerank_candidates
    if args.rerank_model:
        stage["model"] = args.rerank_model
    weights = args.rerank_weight or [0.5, 1.0]
    return {f"hybrid + rerank {args.rerank_provider} w={w:g}": {"rerank": {**stage, "weight": w}} for w in weights}


def instrument_rerank(stats: Counter) -> None:
    """Rerank each question's documents once for every weight (the scores do not depend on it), and count
    calls and faults: a fault keeps the fused order, which must not be read as "the reranker changed nothing"."""
    memo: dict[tuple, list[float]] = {}
    scores, stage = rerank_module.RerankClient.scores, search_module.rerank_hits

    def cached_scores(client: Any, query: str, documents: Sequence[str]) -> list[float]:
        key = (client.url, client.model, query, tuple(documents))
        if key not in memo:
            stats["calls"] += 1
            memo[key] = scores(client, query, documents)
        return memo[key]

    def counted_stage(cfg: Any, query: str, hits: Any, identifiers: Sequence[str] = (), **kwargs: Any) -> Any:
        ranked, notice = stage(cfg, query, hits, identifiers, **kwargs)
        if notice:
            stats["faults"] += 1
            stats[f"fault: {notice[:160]}"] += 1
        return ranked, notice

    rerank_module.RerankClient.scores = cached_scores  # type: ignore[method-assign]
    search_module.rerank_hits = counted_stage  # type: ignore[assignment]


def run_system(system: System, indexes: dict[str, MemoryIndex], questions: Sequence[Question]) -> list[dict]:
    return [score_question(system(indexes[q.workspace], q), q) for q in questions]


# -- leave-one-conversation-out ----------------------------------------------------------------------------


def loco(
    grid: dict[Any, list[dict[str, float]]], questions: Sequence[Question], metric: str = "hit@5"
) -> dict[str, Any]:
    """For each conversation, the grid value best on the other conversations, scored on that one."""
    names = sorted({q.workspace for q in questions})
    picked: dict[str, Any] = {}
    held: list[dict[str, float]] = [{}] * len(questions)
    for name in names:
        train = [i for i, q in enumerate(questions) if q.workspace != name]

        def train_score(value: Any, train: list[int] = train) -> tuple[float, float]:
            rows = grid[value]
            return (
                sum(rows[i][metric] for i in train) / len(train),
                sum(rows[i]["hit@1"] for i in train) / len(train),
            )

        best = max(grid, key=train_score)
        picked[name] = best
        for i, q in enumerate(questions):
            if q.workspace == name:
                held[i] = grid[best][i]
    in_sample = max(grid, key=lambda v: sum(r[metric] for r in grid[v]))
    return {
        "picked": picked,
        "held_out": aggregate(held, questions)["all"],
        "best_in_sample": {"value": in_sample, **aggregate(grid[in_sample], questions)["all"]},
        "grid": {str(v): aggregate(rows, questions)["all"] for v, rows in grid.items()},
    }


# -- output ------------------------------------------------------------------------------------------------

COLUMNS = ["hit@1", "hit@5", "hit@10", "ev@10", "read@1", "read@5", "zero", "lines"]


def print_table(results: dict[str, dict[str, Any]], count: int) -> None:
    print(f"\nLoCoMo: {count} questions, 10 results each")
    print(f"{'system':44}" + "".join(f"{c:>8}" for c in COLUMNS))
    for name, res in results.items():
        print(
            f"{name:44}"
            + "".join(f"{res['all'][c]:>8.3f}" if res["all"][c] is not None else f"{'-':>8}" for c in COLUMNS)
        )
    print("\nhit@5 per category (hit@1 in parentheses)")
    print(f"{'system':44}" + "".join(f"{n:>16}" for n in CATEGORIES.values()))
    for name, res in results.items():
        cells = "".join(f"{res[n]['hit@5']:>9.3f} ({res[n]['hit@1']:.2f})" for n in CATEGORIES.values())
        print(f"{name:44}" + cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", type=Path, help="built LoCoMo workspaces (questions.jsonl + conv-*/)")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/mdrecall-locomo-cache"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument(
        "--mode", action="append", default=[], metavar="NAME=JSON", help="extra hybrid mode: query overrides"
    )
    parser.add_argument("--only", action="append", default=[], help="run only systems whose name contains this")
    parser.add_argument("--loco", action="store_true", help="leave-one-conversation-out for tuned parameters")
    parser.add_argument("--min-score-curve", action="store_true", help="hit@5 and zero rate against minScore")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "locomo_dev.json")
    parser.add_argument("--rerank-url", metavar="URL", help="also run hybrid + a rerank API at this baseUrl")
    parser.add_argument("--rerank-provider", choices=sorted(rerank_module.WIRE_FORMATS), default="cohere")
    parser.add_argument("--rerank-model", default=None, help="default: the provider's (docs/rerank.md)")
    parser.add_argument("--rerank-weight", type=float, action="append", default=[], help="blend weight (repeat)")
    parser.add_argument("--rerank-candidates", type=int, default=20, help="fused results sent to the reranker")
    args = parser.parse_args(argv)

    questions = load_questions(args.workspaces)
    names = sorted({q.workspace for q in questions})
    config = parse_overrides(args.set)
    started = time.perf_counter()
    indexes = open_indexes(args.workspaces, names, config, args.cache_dir)
    index_seconds = time.perf_counter() - started
    extra = {}
    for item in args.mode:
        name, _, raw = item.partition("=")
        extra[name] = json.loads(raw)
    extra.update(rerank_modes(args))
    systems = modes(extra)
    memoize_candidates()
    rerank_stats: Counter = Counter()
    if args.rerank_url:
        instrument_rerank(rerank_stats)
    if args.only:
        systems = {n: s for n, s in systems.items() if any(o in n for o in args.only)}

    results: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for name, system in systems.items():
        t0 = time.perf_counter()
        results[name] = aggregate(run_system(system, indexes, questions), questions)
        seconds[name] = round(time.perf_counter() - t0, 2)
    print_table(results, len(questions))

    payload: dict[str, Any] = {
        "workspaces": str(args.workspaces),
        "questions": len(questions),
        "config": config,
        "model": next(iter(indexes.values())).store.read_meta(),
        "chunks": sum(len(chunk_rows(i)) for i in indexes.values()),
        "index_seconds": round(index_seconds, 1),
        "results": results,
        "seconds": seconds,
    }
    if args.rerank_url:
        messages = {k.removeprefix("fault: "): v for k, v in rerank_stats.items() if k.startswith("fault: ")}
        payload["rerank"] = {"url": args.rerank_url, "provider": args.rerank_provider, "model": args.rerank_model}
        payload["rerank"].update(calls=rerank_stats["calls"], faults=rerank_stats["faults"], messages=messages)
        print(f"rerank: {rerank_stats['calls']} calls, {rerank_stats['faults']} faults (fused order kept)")
    if args.loco:
        payload["loco"] = run_loco(indexes, questions)
    if args.min_score_curve:
        payload["min_score_curve"] = run_curve(indexes, questions)
    for index in indexes.values():
        index.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


LOCO_WEIGHTS = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
CURVE = [0.0, 0.05, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]


LOCO_WINDOW_WEIGHTS = [0.0, 0.2, 0.3, 0.4, 0.5]
LOCO_CENTERING = [0.0, 0.15, 0.3, 0.4, 0.45, 0.6]


def run_loco(indexes: dict[str, MemoryIndex], questions: Sequence[Question]) -> dict[str, Any]:
    """LOCO of the fusion's vector weight (text weight = 1 - it), the best-window weight and the query
    centering share."""
    grids: dict[str, dict[float, dict[str, Any]]] = {"vectorWeight": {}, "windowWeight": {}, "centering": {}}
    for w in LOCO_WEIGHTS:
        grids["vectorWeight"][w] = {"hybrid": {"vectorWeight": w, "textWeight": round(1 - w, 3)}}
    for w in LOCO_WINDOW_WEIGHTS:
        grids["windowWeight"][w] = {"hybrid": {"windowWeight": w}}
    for w in LOCO_CENTERING:
        grids["centering"][w] = {"centering": w}
    out = {}
    for name, grid in grids.items():
        rows = {
            value: run_system(mdrecall_system("hybrid", {**NO_BUDGET, **query}), indexes, questions)
            for value, query in grid.items()
        }
        out[name] = loco(rows, questions)
        print(f"\nleave-one-conversation-out, {name}:", json.dumps(out[name]["picked"]))
        print("  held out:", out[name]["held_out"], " best in sample:", out[name]["best_in_sample"])
    return out


def run_curve(indexes: dict[str, MemoryIndex], questions: Sequence[Question]) -> dict[str, Any]:
    """hit@5, evidence recall@10 and zero rate of the default hybrid search as minScore rises (never-empty
    rule included)."""
    curve = {}
    print("\nminScore curve (default hybrid): minScore hit@5 ev@10 zero")
    for t in CURVE:
        rows = run_system(mdrecall_system("hybrid", NO_BUDGET, min_score=t), indexes, questions)
        agg = aggregate(rows, questions)["all"]
        curve[str(t)] = {"hit@5": agg["hit@5"], "ev@10": agg["ev@10"], "zero": agg["zero"]}
        print(f"  {t:5.2f} {agg['hit@5']:.3f} {agg['ev@10']:.3f} {agg['zero']:.3f}")
    return curve


if __name__ == "__main__":
    raise SystemExit(main())
