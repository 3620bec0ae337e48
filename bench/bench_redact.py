"""Secret redaction speed: MB/s of `redact` before (a git ref's text/redact.py) and after (this checkout).

Redaction runs on every memory file and transcript before chunking, so its cost is paid per indexed MB.
Four texts of about `--mb` MB each, cut into documents of about 3 KB (sync redacts one file at a time, and
most rules only run when a cheap test says the file could hold their secret): generated markdown notes (the
bench_index workspace generator), a chat transcript's text (`User: …` / `Assistant: …`), notes in other
languages, and notes dense with the secret corpus (tests/data/secrets_corpus.jsonl). Each text is redacted
`--runs` times; the best run is reported.

    python bench/bench_redact.py [--before main] [--mb 1] [--runs 5] [--out bench/results/redact.json]

CPU-bound and single-threaded: on a busy machine take the figures as relative (before vs after).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_index import generate_workspace  # noqa: E402
from mdrecall.text import redact as after  # noqa: E402

FOREIGN = [
    "Reunião na terça sobre o plano de migração; a senha do servidor fica no cofre da equipe.",
    "Mañana revisamos el despliegue y la contraseña se cambia cada 90 días según la política.",
    "Das Team hat beschlossen, das Passwort-Handbuch im Wiki zu pflegen; Termine am Donnerstag.",
    "Le mot de passe est trop court selon la politique ; réunion vendredi avec l'équipe infra.",
    "我们决定下个月迁移到新的服务器，密码策略要求至少十二个字符。",
    "来週の会議でデプロイ計画を確認します。パスワードは定期的に変更してください。",
    "다음 주에 배포 계획을 검토합니다. 비밀번호 정책은 12자 이상입니다.",
    "Встреча в среду: обсуждаем миграцию, пароль меняем каждые девяносто дней.",
]


def load_before(ref: str) -> ModuleType:
    """The redaction module as it was at `ref` (text/redact.py, or the flat redact.py of older trees)."""
    for path in ("src/mdrecall/text/redact.py", "src/mdrecall/redact.py"):
        shown = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"no redact module at {ref}")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(shown.stdout)
    spec = importlib.util.spec_from_file_location("redact_before", handle.name)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _until(parts: list[str], size: int, rng: random.Random) -> str:
    out: list[str] = []
    total = 0
    while total < size:
        piece = rng.choice(parts)
        out.append(piece)
        total += len(piece.encode("utf-8")) + 1
    return "\n".join(out)


def texts(mb: float) -> dict[str, str]:
    size = int(mb * 1_000_000)
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        generate_workspace(Path(tmp), 400)
        notes = [p.read_text() for p in sorted(Path(tmp).rglob("*.md"))]
    note_lines = [line for note in notes for line in note.splitlines() if line]
    corpus = [json.loads(line) for line in (ROOT / "tests/data/secrets_corpus.jsonl").read_text().splitlines()]
    secret_lines = [row["text"] for row in corpus]
    turns = [f"{rng.choice(['User', 'Assistant'])}: {' '.join(rng.sample(note_lines, 3))}" for _ in range(400)]
    return {
        "notes": _until(note_lines, size, rng),
        "transcript": _until(turns, size, rng),
        "other-languages": _until(FOREIGN + note_lines[:50], size, rng),
        "secret-dense": _until(secret_lines + note_lines[:200], size, rng),
    }


def documents(text: str, size: int = 3000) -> list[str]:
    """The text cut at line ends into documents of about `size` characters."""
    docs, current, length = [], [], 0
    for line in text.split("\n"):
        current.append(line)
        length += len(line) + 1
        if length >= size:
            docs.append("\n".join(current))
            current, length = [], 0
    if current:
        docs.append("\n".join(current))
    return docs


# Inputs built to make a careless pattern backtrack: each is timed at two sizes; linear cost gives a ratio
# near the size ratio (4), a quadratic one near 16.
ADVERSARIAL = {
    "password is": "password is ",
    "senha": "senha ",
    "pin digits": "pin 12 ",
    "digit groups": "1234 ",
    "seed words": "abandon ",
    "numbered words": "1. zoo\n",
    "table rows": "| password | x |\n|---|---|\n",
    "colons": "a:1:b:c:",
    "name value": "name: password value ",
    "spaced token": "token is ab1 ",
    "quotes": '"',
    "ssn": "SSN 12 ",
    "docker login": "login -p ",
    "mixed base64": "aB3/",
    "cjk password": "密码是",
}


def adversarial(fn: Any, runs: int) -> list[dict[str, Any]]:
    rows = []
    for name, unit in ADVERSARIAL.items():
        small, large = unit * (20_000 // len(unit)), unit * (80_000 // len(unit))
        t_small, t_large = best_seconds(fn, [small], runs), best_seconds(fn, [large], runs)
        rows.append({"input": name, "ms_20kb": round(t_small * 1000, 1), "ms_80kb": round(t_large * 1000, 1),
                     "ratio": round(t_large / t_small, 1)})  # fmt: skip
    return rows


def best_seconds(fn: Any, docs: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for doc in docs:
            fn(doc)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref of the 'before' redaction (default: main)")
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    before = load_before(args.before)
    rows = []
    for name, text in texts(args.mb).items():
        mb = len(text.encode("utf-8")) / 1_000_000
        docs = documents(text)
        old = best_seconds(before.redact, docs, args.runs)
        new = best_seconds(after.redact, docs, args.runs)
        rows.append(
            {
                "text": name,
                "mb": round(mb, 2),
                "before_ms_per_mb": round(old * 1000 / mb, 1),
                "after_ms_per_mb": round(new * 1000 / mb, 1),
                "before_mb_s": round(mb / old, 2),
                "after_mb_s": round(mb / new, 2),
                "slowdown": round(new / old, 2),
            }
        )
    print(f"{'text':16s} {'before ms/MB':>12s} {'after ms/MB':>12s} {'after/before':>13s}")
    for row in rows:
        print(
            f"{row['text']:16s} {row['before_ms_per_mb']:12.1f} {row['after_ms_per_mb']:12.1f} {row['slowdown']:12.2f}x"
        )
    worst = adversarial(after.redact, args.runs)
    print(f"{'adversarial input':18s} {'20 KB ms':>9s} {'80 KB ms':>9s} {'ratio':>6s}")
    for row in worst:
        print(f"{row['input']:18s} {row['ms_20kb']:9.1f} {row['ms_80kb']:9.1f} {row['ratio']:6.1f}")
    result = {"before": args.before, "runs": args.runs, "results": rows, "adversarial": worst}
    print(json.dumps(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
