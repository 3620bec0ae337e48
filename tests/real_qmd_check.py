"""Integration test against the real qmd from npm (`make test-qmd` installs it under .qmd-real/ and runs this).

Not collected by `make test` (its file name does not start with test_): it needs node >= 22 and
`@tobilu/qmd`, which take about two minutes to install. qmd's `search` (BM25) mode answers here;
`vsearch`, `query` and `embed` need a GGUF model from Hugging Face, which cannot be fetched offline (qmd
then waits on the download until the embed timeout): one check shows mdrecall says so once and the builtin
index answers.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdrecall.agents.tools import MemoryTools
from mdrecall.backends import open_backend
from mdrecall.config.settings import parse_config, resolve_settings

DEFAULT_BIN = Path(__file__).resolve().parent.parent / ".qmd-real" / "node_modules" / ".bin"
REAL_BIN = Path(os.environ.get("MDRECALL_REAL_QMD_BIN", DEFAULT_BIN))


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def real_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    if not (REAL_BIN / "qmd").exists():
        pytest.fail(f"real qmd not installed at {REAL_BIN}: run `make test-qmd`")
    root = tmp_path_factory.mktemp("realqmd")
    ws = root / "ws"
    _write(ws, "MEMORY.md", "# Memory\n\nWe chose Postgres for the billing service.\n")
    _write(ws, "memory/2026-01-31.md", "# Jan 31\n\nStandup notes.\nDeployed the flamingo release to staging.\n")
    _write(root / "docs", "guide.md", "# Guide\n\nline 3\nThe flamingo runbook lives here.\nline 5\n")
    _write(root / "docs", "Team Notes_v2.md", "# Team\n\nThe ostrich budget is 40k.\n")
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{REAL_BIN}{os.pathsep}{old_path}"
    yield {"root": root, "ws": ws}
    os.environ["PATH"] = old_path


def _backend(env: dict[str, Path], **qmd: Any) -> Any:
    section = {
        "paths": [{"name": "docs", "path": str(env["root"] / "docs")}],
        "update": {"embedInterval": "0"},
        **qmd,
    }
    config = parse_config({"backend": "qmd", "provider": "none", "qmd": section})
    return open_backend(resolve_settings(workspace=env["ws"], state_dir=env["root"] / "state", config=config))


def test_real_qmd_indexes_searches_and_reports(real_env: dict[str, Path]) -> None:
    started = time.monotonic()
    with _backend(real_env) as backend:
        backend.sync()
        home = real_env["root"] / "state/agents/main/qmd"
        assert (home / "xdg-cache/qmd/index.sqlite").exists()  # qmd's own index, inside mdrecall's qmd home
        status = backend.status()["qmd"]
        assert re.match(r"\d+\.\d+", status["version"]) and status["available"]
        assert status["documents"] == 4
        assert {c["name"]: c["documents"] for c in status["collections"]} == {
            "memory-root": 1,
            "memory-dir": 1,
            "docs": 2,
        }
        assert status["lastUpdate"]["ok"]

        tools = MemoryTools(backend)
        result = tools.call("memory_search", {"query": "flamingo"})
        assert result["backend"] == "qmd", result
        by_path = {r["path"]: r for r in result["results"]}
        assert set(by_path) == {"memory/2026-01-31.md", "qmd/docs/guide.md"}
        guide = by_path["qmd/docs/guide.md"]
        assert guide["startLine"] <= 4 <= guide["endLine"]
        got = tools.call("memory_get", {"path": "qmd/docs/guide.md", "from": 4, "lines": 1})
        assert got["text"] == "The flamingo runbook lives here."

        dashed = tools.call("memory_search", {"query": "--full flamingo"})
        assert dashed["backend"] == "qmd" and dashed["results"]  # `--` keeps it a query for qmd

        (odd,) = tools.call("memory_search", {"query": "ostrich"})["results"]
        assert odd["path"] == "qmd/docs/Team Notes_v2.md"
        assert "40k" in tools.call("memory_get", {"path": odd["path"]})["text"]
    print(f"\nreal qmd: index + status + searches in {time.monotonic() - started:.1f}s")


def test_real_qmd_sees_edits_after_a_sync(real_env: dict[str, Path]) -> None:
    with _backend(real_env) as backend:
        _write(real_env["ws"], "memory/2026-02-01.md", "# Feb 1\n\nThe pelican migration starts Monday.\n")
        backend.sync()
        response = backend.search("pelican")
        assert response.backend == "qmd" and [r.path for r in response.results] == ["memory/2026-02-01.md"]


def test_real_qmd_timeout_falls_back_to_the_builtin_index(real_env: dict[str, Path]) -> None:
    with _backend(real_env, limits={"timeoutMs": 1}) as backend:
        backend.sync()
        result = MemoryTools(backend).call("memory_search", {"query": "Postgres"})
        assert result["backend"] == "builtin" and "timed out" in result["backendFallback"]["reason"]
        assert [r["path"] for r in result["results"]] == ["MEMORY.md"]


def test_real_qmd_searches_exported_sessions(real_env: dict[str, Path]) -> None:
    sessions = real_env["root"] / "state/agents/main/sessions"
    line = {"type": "message", "message": {"role": "user", "content": "remember the toucan password=hunter2hunter2"}}
    _write(sessions, "s1.jsonl", json.dumps(line) + "\n")
    with _backend(real_env, sessions={"enabled": True}) as backend:
        backend.sync()
        (hit,) = [r for r in backend.search("toucan").results if r.source == "sessions"]
        assert hit.path == "qmd/sessions/s1-jsonl.md" and "hunter2" not in hit.snippet


def test_real_qmd_finds_nothing_and_the_builtin_index_answers(real_env: dict[str, Path]) -> None:
    """qmd `search` needs every word: a question worded unlike the note gets nothing from qmd."""
    with _backend(real_env) as backend:
        backend.sync()
        assert backend.primary.search("which service uses Postgres").results == []  # qmd alone
        result = MemoryTools(backend).call("memory_search", {"query": "which service uses Postgres"})
        assert result["backend"] == "builtin" and result["backendFallback"]["reason"] == "qmd found nothing"
        assert result["results"][0]["path"] == "MEMORY.md"


def test_real_qmd_search_mode_runs_no_embed(real_env: dict[str, Path]) -> None:
    with _backend(real_env, update={"embedInterval": "60m", "embedTimeoutMs": 300_000}) as backend:
        started = time.monotonic()
        backend.sync()
        status = backend.status()["qmd"]
        assert status["lastUpdate"]["ok"] and "lastEmbed" not in status
        assert not backend.primary.models_dir.exists() or not any(backend.primary.models_dir.glob("*.gguf"))
    print(f"\nreal qmd: mdrecall index (search mode, embedInterval 60m) in {time.monotonic() - started:.1f}s")


def test_real_qmd_vsearch_without_a_model_offline(real_env: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    with _backend(real_env, searchMode="vsearch", update={"embedInterval": "60m", "embedTimeoutMs": 8000}) as backend:
        started = time.monotonic()
        backend.sync()  # vsearch needs vectors: mdrecall index waits for qmd embed, which cannot get a model
        waited = time.monotonic() - started
        first = backend.search("flamingo")
        second = backend.search("Postgres")
        backend.sync()  # not retried before embedInterval
        assert first.backend == second.backend == "builtin" and first.results and second.results
        reason = first.backend_fallback["reason"]
        assert "no embedding model" in reason, reason
        said = [r.getMessage() for r in caplog.records if "no embedding model" in r.getMessage()]
        assert len(said) == 1
    print(f"\nreal qmd vsearch offline: embed gave up after {waited:.1f}s; said: {said[0]}")
