"""`bench/quality/locomo_eval.py --rerank-url`: a user with a rerank API key can measure the stage on LoCoMo.

Runs the eval in a subprocess (it patches mdrecall's search module for its own speed-ups) on a tiny
LoCoMo-shaped set written here, keyword-only, against the fake rerank server: the reranker that knows the
answers must lift hit@1 over the same mode without it, and a reranker that is down must show up as faults.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fake_rerank_server import FakeRerankServer, refused_url

from .conftest import write

pytest_plugins = ["fake_rerank_server"]  # the `fake_rerank` fixture

ROOT = Path(__file__).resolve().parents[1]
# Each note mentions the question's words, but the evidence note (line 3 of each) says it least often.
NOTES = {
    "conv-a/memory/2023-05-08.md": "# 2023-05-08\n\nOtto: the otter adopted a green kayak.\n",
    "conv-a/memory/2023-05-09.md": "# 2023-05-09\n\nOtto: otter kayak otter kayak, talk talk.\n",
    "conv-a/memory/2023-05-10.md": "# 2023-05-10\n\nOtto: the heron fixed the red bicycle.\n",
    "conv-a/memory/2023-05-11.md": "# 2023-05-11\n\nOtto: heron bicycle heron bicycle, talk talk.\n",
}
QUESTIONS = [
    ("Which kayak did the otter adopt?", 1, "memory/2023-05-08.md"),
    ("When did the otter get a kayak?", 2, "memory/2023-05-08.md"),
    ("What bicycle did the heron fix?", 3, "memory/2023-05-10.md"),
    ("Which heron bicycle was fixed?", 4, "memory/2023-05-10.md"),
]


def _dataset(root: Path) -> Path:
    for rel, text in NOTES.items():
        write(root, rel, text)
    lines = [
        json.dumps({"workspace": "conv-a", "question": q, "category": c, "evidence": [{"path": p, "line": 3}]})
        for q, c, p in QUESTIONS
    ]
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _run(data: Path, tmp_path: Path, url: str) -> dict:
    out = tmp_path / "out.json"
    cmd = [sys.executable, str(ROOT / "bench" / "quality" / "locomo_eval.py"), str(data)]
    cmd += ["--cache-dir", str(tmp_path / "cache"), "--set", "provider=none", "--only", "minScore 0"]
    cmd += ["--only", "rerank", "--rerank-url", url, "--rerank-provider", "jina", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "rerank:" in done.stdout
    return json.loads(out.read_text())


def test_eval_measures_a_reranker_at_a_url(tmp_path: Path, fake_rerank: FakeRerankServer) -> None:
    fake_rerank.scorer = lambda _q, doc: 1.0 if ("green" in doc or "red" in doc) else 0.0
    payload = _run(_dataset(tmp_path / "data"), tmp_path, fake_rerank.jina_base)
    results = payload["results"]
    assert set(results) == {"hybrid, minScore 0", "hybrid + rerank jina w=0.5", "hybrid + rerank jina w=1"}
    assert results["hybrid, minScore 0"]["all"]["hit@1"] < 1.0
    assert results["hybrid + rerank jina w=1"]["all"]["hit@1"] == 1.0
    assert payload["rerank"]["calls"] == len(QUESTIONS)  # once per question, shared by both weights
    assert payload["rerank"]["faults"] == 0
    assert all(r.path == "/jina/v1/rerank" for r in fake_rerank.requests)


def test_eval_reports_a_down_reranker_as_faults(tmp_path: Path) -> None:
    payload = _run(_dataset(tmp_path / "data"), tmp_path, refused_url())
    results = payload["results"]
    assert results["hybrid + rerank jina w=1"]["all"] == results["hybrid, minScore 0"]["all"]
    assert payload["rerank"]["faults"] == 2 * len(QUESTIONS)
