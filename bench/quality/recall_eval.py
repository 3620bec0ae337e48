"""Which memories auto-recall injects: unrelated prompts that get something, questions that get the right fact.

    python bench/quality/recall_eval.py [--models e5-small,minilm,wordllama] [--uncalibrated] [--out FILE]
    python bench/quality/recall_eval.py --calibrate      # background vectors + proposed thresholds per model
    python bench/quality/recall_eval.py --cv             # leave one tuning split out, per model
    python bench/quality/recall_eval.py --models e5-small --extra NEW.jsonl   # also score a set written later

`bench/quality/recall_set.jsonl` holds 45 stored facts, 62 paraphrased questions about them (each names its
fact) and 125 prompts unrelated to every fact (coding requests, general questions, chat), in 9 languages,
each prompt marked `dev` or `test`. Five held-out sets ask about the same facts, each written before the
next change of the method or the thresholds and measured once before it joined the tuning data:
`recall_heldout.jsonl` (split `heldout`: 67 questions, 29 in another language than the fact, 82 unrelated
prompts), `recall_heldout2.jsonl` (`heldout2`: 47 questions, 22 cross-language, 72 unrelated),
`recall_heldout3.jsonl` (`heldout3`: 45 questions, 18 cross-language, 67 unrelated) and
`recall_heldout4.jsonl` (`heldout4`: 50 questions, 27 cross-language, 86 unrelated) and
`recall_heldout5.jsonl` (`heldout5`: 78 questions, 33 cross-language, 100 unrelated).
The tuning splits (dev, test, heldout .. heldout5) choose the method, the weights and the thresholds.
`--extra FILE` (repeatable) adds a set written later, in the same format (questions name a fact of
`recall_set.jsonl`; any split name, e.g. `heldout6`): it is scored and reported per split, never tuned on.

The measurement runs the real thing: a FactStore (LanceDB, the real embedding model) holding the 45 facts,
`auto_recall(store, prompt)` for the injection (the UserPromptSubmit hook's call) and `store.recall(q)` for
memory_recall's ranking. Per model and split it prints: unrelated prompts with something injected, questions
whose right fact is injected, questions whose right fact memory_recall ranks first. `--uncalibrated` runs the
earlier score (rescaled cosine + keyword share, `query.hybrid` weights, threshold 0.2) for comparison.

`--calibrate` embeds the background texts (the capture dev sets' memorable statements as passages, and as
queries for models with query/passage prefixes; their everyday prompts as queries; never the recall sets),
finds the directions along which one language's texts differ from the others', writes them, the mean
vectors and the background vectors (the chat penalty's neighbours) to `src/mdrecall/facts/recall_<model>.npz`,
scores the tuning splits and prints, per chat and keyword weight, the lowest threshold that injects something
for at most 3.5 % of their unrelated prompts, to be copied
into `CALIBRATIONS` in `src/mdrecall/facts/relevance.py`.
Figures are quality, not speed; timings are not taken.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mdrecall.config.settings import LocalConfig, parse_config, resolve_settings  # noqa: E402
from mdrecall.embeddings.factory import ProviderResult  # noqa: E402
from mdrecall.embeddings.local import create_local_provider  # noqa: E402
from mdrecall.facts import relevance  # noqa: E402
from mdrecall.facts.store import FILE_HEADER, Fact, FactStore, auto_recall, keyword_score  # noqa: E402

QUALITY = ROOT / "bench" / "quality"
RECALL_SET = QUALITY / "recall_set.jsonl"
# Each held-out set was written before the next change, measured once, then added to the tuning data;
# sets given with --extra are only measured.
HELDOUT_SETS = [QUALITY / f"recall_heldout{n}.jsonl" for n in ("", "2", "3", "4", "5")]
TUNING_SPLITS = ("dev", "test", "heldout", "heldout2", "heldout3", "heldout4", "heldout5")
SPLITS = TUNING_SPLITS
BACKGROUND_SETS = ["capture_set.jsonl", "capture_heldout.jsonl", "capture_heldout2.jsonl", "capture_dev3.jsonl"]
MODELS = {"e5-small": "e5-small", "minilm": "minilm", "wordllama": "wordllama"}
# 3.5 % (4 % before the question weight): a threshold chosen at 5 % on the tuning prompts injected for 6 % of a
# later fresh set's; e5 leave one split out at 3 / 3.5 / 4 %: 3.4 % / 92.0 %, 3.4 % / 92.3 %, 3.9 % / 92.8 %
MAX_UNRELATED = 0.035
CHAT_WEIGHTS = (1.0, 2.0)  # chat penalty weights printed by --calibrate and --cv (facts/relevance.py)
DEFAULT_OUT = ROOT / "bench" / "results" / "recall_injection.json"


def load_set(extra: list[Path] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = []
    for path in (RECALL_SET, *HELDOUT_SETS, *(extra or [])):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["kind"] == "fact"], [r for r in rows if r["kind"] != "fact"]


def provider_result(model: str) -> ProviderResult:
    provider = create_local_provider(LocalConfig(), model=model)
    return ProviderResult(provider, "local")


def measure(model: str, facts: list[dict[str, Any]], prompts: list[dict[str, Any]]) -> dict[str, Any]:
    """Store the facts in a real FactStore and run auto-recall and recall on every prompt."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        (workspace / "memory").mkdir(parents=True)
        lines = [Fact(f["id"].replace("f", "fact"), f["text"], "fact", 0.7, 0).line() for f in facts]
        (workspace / "memory" / "facts.md").write_text(FILE_HEADER + "\n\n" + "\n".join(lines) + "\n", "utf-8")
        settings = resolve_settings(workspace=workspace, state_dir=Path(tmp) / "state", config=parse_config({}))
        with FactStore(settings, provider_result(model)) as store:
            store.rebuild()
            calibration = store.calibration()
            counts: dict[str, dict[str, list[int]]] = {}
            misses: list[dict[str, Any]] = []
            for prompt in prompts:
                split = counts.setdefault(prompt["split"], {"unrelated": [0, 0], "right": [0, 0], "first": [0, 0]})
                block = auto_recall(store, prompt["text"])
                if prompt["kind"] == "unrelated":
                    split["unrelated"][0] += bool(block)
                    split["unrelated"][1] += 1
                    if block:
                        misses.append({"kind": "injected", "text": prompt["text"], "block": block.splitlines()[2:-1]})
                    continue
                wanted = next(f["text"] for f in facts if f["id"] == prompt["fact"])
                injected = wanted in block
                hits = store.recall(prompt["text"], limit=5, min_score=-1.0)
                first = bool(hits) and hits[0].fact.text == wanted
                split["right"][0] += injected
                split["right"][1] += 1
                split["first"][0] += first
                split["first"][1] += 1
                if not injected:
                    misses.append({"kind": "missed", "text": prompt["text"], "fact": wanted})
    table = {}
    for name in counts:
        c = counts[name]
        table[name] = {k: round(v[0] / v[1], 3) for k, v in c.items()} | {
            "n_unrelated": c["unrelated"][1],
            "n_questions": c["right"][1],
        }
    both = {k: [sum(counts[s][k][i] for s in TUNING_SPLITS) for i in (0, 1)] for k in counts["dev"]}
    table["tuning"] = {k: round(v[0] / v[1], 3) for k, v in both.items()}
    return {
        "model": model,
        "score": "calibrated" if calibration else "weighted (uncalibrated)",
        "minScore": calibration.min_score if calibration else 0.2,
        **table,
        "misses": misses,
    }


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def language_directions(vectors: np.ndarray, langs: list[str]) -> np.ndarray:
    """Directions along which one language's texts differ from the others': each language's mean vector
    minus the overall mean, orthonormalised (one row per language of the background)."""
    mean = vectors.mean(0)
    deviations = [vectors[[i for i, x in enumerate(langs) if x == lang]].mean(0) - mean for lang in sorted(set(langs))]
    _, singular, basis = np.linalg.svd(np.stack(deviations), full_matrices=False)
    return basis[: int((singular > 1e-6 * singular[0]).sum())].astype(np.float32)


def calibrate(model: str, facts: list[dict[str, Any]], prompts: list[dict[str, Any]]) -> None:
    """Write the background file; print thresholds chosen on the tuning splits (never a set given with --extra)."""
    provider = create_local_provider(LocalConfig(), model=model)
    rows = []
    for name in BACKGROUND_SETS:
        rows += [json.loads(line) for line in (QUALITY / name).read_text(encoding="utf-8").splitlines() if line]
    statements = [r for r in rows if r["capture"]]
    everyday = [r for r in rows if not r["capture"]]

    def as_queries(texts: list[str]) -> np.ndarray:
        return unit(np.stack([np.asarray(provider.embed_query(t), np.float32) for t in texts]))

    probe = "query or passage"
    query_view = not np.allclose(provider.embed_query(probe), np.asarray(provider.embed_batch([probe]))[0])
    fact_vectors = unit(np.asarray(provider.embed_batch([r["text"] for r in statements]), np.float32))
    prompt_vectors = as_queries([r["text"] for r in everyday])
    pooled = [fact_vectors, prompt_vectors]
    langs = [r["lang"] for r in statements] + [r["lang"] for r in everyday]
    fact_query_vectors = None
    if query_view:
        fact_query_vectors = as_queries([r["text"] for r in statements])
        pooled.append(fact_query_vectors)
        langs += [r["lang"] for r in statements]
    language = language_directions(np.concatenate(pooled), langs)
    arrays = {
        "model": np.array(provider.model),
        "language": language,
        "mean_fact": relevance.language_free(fact_vectors, language).mean(0).astype(np.float32),
        "mean_prompt": relevance.language_free(prompt_vectors, language).mean(0).astype(np.float32),
        "background": np.array(",".join(BACKGROUND_SETS)),
    }
    if fact_query_vectors is not None:
        arrays["mean_fact_query"] = relevance.language_free(fact_query_vectors, language).mean(0).astype(np.float32)
    # the chat penalty's neighbours, stored at half precision (a cosine moves by less than 0.001)
    arrays["everyday"] = relevance.language_free(prompt_vectors, language).astype(np.float16)
    statement_view = fact_query_vectors if fact_query_vectors is not None else fact_vectors
    arrays["statements"] = relevance.language_free(statement_view, language).astype(np.float16)
    target = relevance.HERE / f"recall_{model.replace('e5-small', 'e5')}.npz"
    np.savez_compressed(target, **arrays)
    bg = relevance.background.__wrapped__(target.name)
    tune = [p for p in prompts if p["split"] in TUNING_SPLITS]
    fact_matrix = np.asarray(provider.embed_batch([f["text"] for f in facts]), np.float32)
    fact_queries = as_queries([f["text"] for f in facts]) if query_view else None
    ids = [f["id"] for f in facts]
    query_vectors = [provider.embed_query(p["text"]) for p in tune]
    kw = np.array([[keyword_score(p["text"], f["text"]) for f in facts] for p in tune])
    print(
        f"{provider.model}: wrote {target.relative_to(ROOT)} ({len(language)} language directions, "
        f"query view {query_view})"
    )
    calibration = relevance.CALIBRATIONS.get(provider.model)
    question_weight = calibration.question_weight if calibration else 0.0
    asking = np.array([relevance.asks(p["text"]) for p in tune])
    for chat_weight in (0.0, *CHAT_WEIGHTS):
        vec = np.stack(
            [relevance.relevance_scores(v, fact_matrix, bg, fact_queries, chat_weight) for v in query_vectors]
        )
        vec = vec + question_weight * asking[:, None]
        print(f"  chat weight {chat_weight}, question weight {question_weight}:")
        for weight in (0.0, 0.025, 0.05):
            print_threshold(vec + weight * kw, weight, tune, ids)


def print_threshold(scores: np.ndarray, weight: float, tune: list[dict[str, Any]], ids: list[str]) -> None:
    """Print the lowest threshold with at most MAX_UNRELATED of the tuning unrelated prompts at or above it."""
    unrelated = np.array([p["kind"] == "unrelated" for p in tune])
    top = np.sort(scores[unrelated].max(1))
    allowed = int(np.floor(MAX_UNRELATED * len(top)))
    threshold = float(top[len(top) - allowed - 1]) + 1e-4
    right, first, gaps = 0, 0, []
    for i in np.where(~unrelated)[0]:
        order = np.argsort(-scores[i])[:3]
        j = ids.index(tune[i]["fact"])
        right += j in order and scores[i, j] >= threshold
        first += order[0] == j
        if order[0] == j:
            gaps.append(float(scores[i, order[0]] - scores[i, order[1]]))
    n = int((~unrelated).sum())
    print(
        f"    keyword weight {weight}: threshold {threshold:.4f}, "
        f"questions right fact {right / n:.3f}, first {first / n:.3f}, median top-1 gap {np.median(gaps):.3f}"
    )


def threshold_at(scores: np.ndarray, unrelated: np.ndarray) -> float:
    """The lowest threshold with at most MAX_UNRELATED of the unrelated prompts' top scores at or above it."""
    top = np.sort(scores[unrelated].max(1))
    allowed = int(np.floor(MAX_UNRELATED * len(top)))
    return float(top[len(top) - allowed - 1]) + 1e-4


def injected_counts(scores: np.ndarray, rows: list[dict[str, Any]], ids: list[str], threshold: float) -> list[int]:
    """[unrelated prompts with something injected, unrelated prompts, questions with the right fact injected
    (among the top 3 and at or above the threshold), questions]."""
    out = [0, 0, 0, 0]
    for i, row in enumerate(rows):
        if row["kind"] == "unrelated":
            out[0] += bool(scores[i].max() >= threshold)
            out[1] += 1
            continue
        j = ids.index(row["fact"])
        out[2] += bool(j in np.argsort(-scores[i])[:3] and scores[i, j] >= threshold)
        out[3] += 1
    return out


def cross_validate(model: str, facts: list[dict[str, Any]], prompts: list[dict[str, Any]]) -> dict[str, Any]:
    """Leave one tuning split out: the threshold chosen (at MAX_UNRELATED) on the other splits, measured on the
    one left out; summed over the splits. Uses the shipped background file and the model's calibrated weights."""
    provider = create_local_provider(LocalConfig(), model=model)
    calibration = relevance.CALIBRATIONS[provider.model]
    bg = relevance.background(calibration.file)
    tune = [p for p in prompts if p["split"] in TUNING_SPLITS]
    ids = [f["id"] for f in facts]
    fact_matrix = np.asarray(provider.embed_batch([f["text"] for f in facts]), np.float32)
    fact_queries = None
    if calibration.query_view:
        fact_queries = np.stack([np.asarray(provider.embed_query(f["text"]), np.float32) for f in facts])
    kw = np.array([[keyword_score(p["text"], f["text"]) for f in facts] for p in tune])
    vectors = [np.asarray(provider.embed_query(p["text"]), np.float32) for p in tune]
    unrelated = np.array([p["kind"] == "unrelated" for p in tune])
    splits = np.array([p["split"] for p in tune])
    result: dict[str, Any] = {"model": provider.model, "minScore": calibration.min_score}
    asking = np.array([relevance.asks(p["text"]) for p in tune])
    for chat_weight in sorted({calibration.chat_weight, *CHAT_WEIGHTS}):
        plain = np.stack([relevance.relevance_scores(v, fact_matrix, bg, fact_queries, chat_weight) for v in vectors])
        for question_weight in sorted({0.0, calibration.question_weight}):
            scores = plain + calibration.keyword_weight * kw + question_weight * asking[:, None]
            pool_threshold = threshold_at(scores, unrelated)
            pool = injected_counts(scores, tune, ids, pool_threshold)
            loso = [0, 0, 0, 0]
            for split in TUNING_SPLITS:
                train, test = splits != split, splits == split
                threshold = threshold_at(scores[train], unrelated[train])
                rows = [p for p, t in zip(tune, test, strict=True) if t]
                counts = injected_counts(scores[test], rows, ids, threshold)
                loso = [a + b for a, b in zip(loso, counts, strict=True)]
            key = f"chat{chat_weight}_question{question_weight}"
            result[key] = {"threshold": pool_threshold, "pool": pool, "leaveOneSplitOut": loso}
            shipped = calibration.chat_weight == chat_weight and calibration.question_weight == question_weight
            print(
                f"{provider.model} chat weight {chat_weight} question weight {question_weight}"
                f"{' (shipped)' if shipped else ''}: threshold {pool_threshold:.4f}; tuning pool unrelated "
                f"{pool[0]}/{pool[1]} ({pool[0] / pool[1]:.1%}), right fact {pool[2]}/{pool[3]} "
                f"({pool[2] / pool[3]:.1%}); leave one split out unrelated {loso[0]}/{loso[1]} "
                f"({loso[0] / loso[1]:.1%}), right fact {loso[2]}/{loso[3]} ({loso[2] / loso[3]:.1%})"
            )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--cv", action="store_true", help="leave one tuning split out (threshold chosen on the rest)")
    parser.add_argument(
        "--extra", type=Path, action="append", default=[], help="a set written later: scored, never tuned on"
    )
    parser.add_argument("--uncalibrated", action="store_true", help="the earlier weighted score, for comparison")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    for path in args.extra:
        if not path.is_file():
            print(f"error: no such set file: {path}", file=sys.stderr)
            return 2
    facts, prompts = load_set(args.extra)
    models = [MODELS[m.strip()] for m in args.models.split(",") if m.strip()]
    if args.calibrate:
        for model in models:
            calibrate(model, facts, prompts)
        return 0
    if args.cv:
        for model in models:
            cross_validate(model, facts, prompts)
        return 0
    if args.uncalibrated:
        relevance.CALIBRATIONS.clear()
    results = [measure(model, facts, prompts) for model in models]
    print(
        "| model | score | threshold | split | unrelated injected | questions: right fact injected | right fact first |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | ---: |")
    for r in results:
        for split in [k for k, v in r.items() if isinstance(v, dict)]:
            s = r[split]
            print(
                f"| {r['model']} | {r['score']} | {r['minScore']:.4g} | {split} | {s['unrelated']:.1%} | "
                f"{s['right']:.1%} | {s['first']:.1%} |"
            )
    if args.show_misses:
        for r in results:
            print(f"\n{r['model']}:")
            for miss in r["misses"]:
                print(f"  {miss['kind']}: {miss['text']} -> {miss.get('fact') or miss.get('block')}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
