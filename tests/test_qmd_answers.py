"""The qmd backend answers questions: an empty qmd `search` lets the builtin index answer, `mdrecall index` never
waits for `qmd embed` when the search mode needs no vectors, and each trouble (no embedding model offline, no
binary) is said once."""
# ruff: noqa: F811  (pytest fixtures imported from qmd_helpers are redefined as parameters)

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.agents.tools import MemoryTools
from mdrecall.cli.app import app

from .conftest import trust_config
from .qmd_helpers import FakeQmd, fake_qmd, make_qmd, qmd_workspace, write  # noqa: F401

QUESTION = "which service uses Postgres"  # "which" and "uses" are not in MEMORY.md: qmd search finds nothing


def _said(caplog: pytest.LogCaptureFixture, needle: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and needle in r.getMessage()]


def test_an_empty_qmd_search_lets_the_builtin_index_answer(fake_qmd: FakeQmd, make_qmd) -> None:
    tools = MemoryTools(make_qmd())
    result = tools.call("memory_search", {"query": QUESTION})
    assert fake_qmd.calls("search")  # qmd was asked first, and found nothing
    assert result["backend"] == "builtin" and result["results"][0]["path"] == "MEMORY.md"
    assert result["backendFallback"] == {"from": "qmd", "reason": "qmd found nothing"}
    status = tools.call("memory_status", {})
    assert status["servedBy"] == "builtin" and "backendFallback" not in status  # qmd itself is fine
    hit = tools.call("memory_search", {"query": "flamingo release"})
    assert hit["backend"] == "qmd" and "backendFallback" not in hit  # qmd answers what it finds


def test_fallback_on_empty_can_be_turned_off(fake_qmd: FakeQmd, make_qmd) -> None:
    result = MemoryTools(make_qmd({"fallbackOnEmpty": False})).call("memory_search", {"query": QUESTION})
    assert result["backend"] == "qmd" and result["results"] == []


def test_scope_denial_stays_final(fake_qmd: FakeQmd, make_qmd) -> None:
    """An empty answer because the chat may not see qmd results is not a miss to fill from elsewhere."""
    scope = {"default": "deny", "rules": []}
    response = make_qmd({"scope": scope}).search("Postgres", session_key="agent:main:telegram:group:1")
    assert response.backend == "qmd" and response.results == [] and "not allowed" in (response.notice or "")


def test_search_mode_never_runs_qmd_embed(fake_qmd: FakeQmd, make_qmd, qmd_workspace: Path, tmp_path: Path) -> None:
    fake_qmd.set(embed="hang")  # were it run, `mdrecall index` would wait embedTimeoutMs
    backend = make_qmd()
    backend.sync()
    backend.search("flamingo")
    assert fake_qmd.calls("update") and not fake_qmd.calls("embed")
    write(
        qmd_workspace,
        "mdrecall.toml",
        f'backend = "qmd"\nprovider = "none"\n[qmd]\n[qmd.update]\nembedTimeoutMs = 60000\n'
        f'[[qmd.paths]]\nname = "docs"\npath = "{tmp_path / "docs"}"\n',
    )
    done = CliRunner().invoke(app, ["-w", str(qmd_workspace), "--state-dir", str(tmp_path / "cli"), "index"])
    assert done.exit_code == 0, done.output
    assert not fake_qmd.calls("embed") and "timed out" not in done.output


def test_vector_modes_still_wait_for_embed_in_mdrecall_index(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd({"searchMode": "vsearch"})
    backend.sync()
    assert len(fake_qmd.calls("embed")) == 1 and backend.primary.status()["lastEmbed"]["ok"]
    assert backend.search("flamingo").backend == "qmd"


def test_no_embedding_model_offline_is_said_once(fake_qmd: FakeQmd, make_qmd, caplog: pytest.LogCaptureFixture) -> None:
    fake_qmd.set(embed="fail")  # what a download with no network ends in
    backend = make_qmd({"searchMode": "query"})
    backend.sync()
    backend.sync()  # not retried before embedInterval: it could only fail (and wait) again
    first = backend.search("flamingo")
    second = backend.search("pelican")
    assert len(fake_qmd.calls("embed")) == 1
    assert first.backend == second.backend == "builtin" and first.results and second.results
    reason = first.backend_fallback["reason"]
    assert "no embedding model in" in reason and str(backend.primary.models_dir) in reason
    assert len(_said(caplog, "no embedding model")) == 1


def test_a_model_in_the_cache_is_not_reported_missing(
    fake_qmd: FakeQmd, make_qmd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_qmd.set(embed="fail")
    backend = make_qmd({"searchMode": "vsearch"})
    assert not backend.primary.has_embed_model()
    backend.primary.models_dir.mkdir(parents=True)
    (backend.primary.models_dir / "embeddinggemma-300M-Q8_0.gguf").write_bytes(b"GGUF")
    assert backend.primary.has_embed_model()
    backend.sync()
    error = backend.primary.status()["lastEmbed"]["error"]
    assert "exploded" in error and "no embedding model" not in error
    named = tmp_path / "my-model.gguf"
    monkeypatch.setenv("QMD_EMBED_MODEL", str(named))
    assert not backend.primary.has_embed_model()
    named.write_bytes(b"GGUF")
    assert backend.primary.has_embed_model()


def test_a_missing_binary_is_one_line(make_qmd, caplog: pytest.LogCaptureFixture) -> None:
    backend = make_qmd({"command": "qmd-is-not-installed-here"})
    backend.sync()
    backend.ensure_fresh()
    answers = [backend.search("flamingo"), backend.search("Postgres")]
    backend.status()
    assert all(a.backend == "builtin" and a.results for a in answers)
    assert len(_said(caplog, "qmd-is-not-installed-here")) == 1
    assert all(a.fallback_logged for a in answers)  # so the CLI does not repeat it


def test_cli_index_with_a_missing_binary_says_so_once(qmd_workspace: Path, tmp_path: Path) -> None:
    """In a real process the warning goes to stderr: one line for `index`, one for `search`."""
    import subprocess
    import sys

    write(qmd_workspace, "mdrecall.toml", 'backend = "qmd"\nprovider = "none"\n[qmd]\ncommand = "qmd-nowhere"\n')
    trust_config(qmd_workspace, tmp_path / "s")  # a folder's qmd.command runs only once the folder is trusted
    env = {**os.environ, "HOME": str(tmp_path)}
    for command in (["index"], ["search", "Postgres"]):
        done = subprocess.run(
            [sys.executable, "-m", "mdrecall.cli", "-w", str(qmd_workspace), "--state-dir", str(tmp_path / "s")]
            + command,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        lines = [line for line in (done.stdout + done.stderr).splitlines() if "qmd-nowhere" in line]
        assert lines == ["qmd not found: 'qmd-nowhere' is not installed or not on PATH; the builtin index answers"]
