"""Fallback users can see: whenever qmd cannot answer, the builtin index does, and every answer says who served."""
# ruff: noqa: F811  (pytest fixtures imported from qmd_helpers are redefined as parameters)

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.agents.tools import MemoryTools
from mdrecall.cli.app import app

from .conftest import trust_config
from .qmd_helpers import FakeQmd, fake_qmd, make_qmd, qmd_workspace, write  # noqa: F401

FAILURES = [
    ({"search": "fail"}, {}, "failed (exit 1): Error: search exploded"),
    ({"search": "hang"}, {"limits": {"timeoutMs": 400}}, "timed out after 400 ms"),
    ({"search": "garbage"}, {}, "unparsable JSON"),
    ({"search": "notalist"}, {}, "not a list of results"),
    ({"update": "fail"}, {}, "qmd index not built"),
]


@pytest.mark.parametrize(("behaviour", "qmd_cfg", "reason"), FAILURES)
def test_the_builtin_index_answers_when_qmd_fails(
    fake_qmd: FakeQmd, make_qmd, behaviour: dict, qmd_cfg: dict, reason: str
) -> None:
    fake_qmd.set(**behaviour)
    tools = MemoryTools(make_qmd(qmd_cfg))
    started = time.monotonic()
    result = tools.call("memory_search", {"query": "flamingo"})
    assert time.monotonic() - started < 5
    assert result["backend"] == "builtin"
    assert result["backendFallback"]["from"] == "qmd" and reason in result["backendFallback"]["reason"]
    found = {r["path"] for r in result["results"]}
    assert found == {"memory/2026-01-31.md", "../docs/guide.md"}  # never empty because qmd failed
    status = tools.call("memory_status", {})
    assert status["backend"] == "qmd" and status["servedBy"] == "builtin"
    assert reason in status["backendFallback"]["reason"]


def test_a_missing_qmd_binary_falls_back(make_qmd) -> None:
    tools = MemoryTools(make_qmd({"command": "qmd-is-not-installed-here"}))
    result = tools.call("memory_search", {"query": "Postgres"})
    assert result["backend"] == "builtin" and result["results"][0]["path"] == "MEMORY.md"
    assert "not installed or not on PATH" in result["backendFallback"]["reason"]
    status = tools.call("memory_status", {})
    assert status["qmd"]["available"] is False and status["qmd"]["version"] is None


def test_an_unexpected_error_in_the_qmd_path_falls_back_too(
    fake_qmd: FakeQmd, make_qmd, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = make_qmd()

    def broken(*args: object, **kwargs: object) -> None:
        raise PermissionError("collection root unreadable")

    monkeypatch.setattr(backend.primary, "search", broken)
    monkeypatch.setattr(backend.primary, "status", broken)
    result = MemoryTools(backend).call("memory_search", {"query": "flamingo"})
    assert result["backend"] == "builtin" and result["results"]
    assert "PermissionError: collection root unreadable" in result["backendFallback"]["reason"]
    assert backend.status()["qmd"]["available"] is False


def test_the_fallback_builds_a_builtin_index_never_built_before(make_qmd) -> None:
    response = make_qmd({"command": "qmd-is-not-installed-here"}).search("flamingo")  # no sync, no tools
    assert response.backend == "builtin" and response.results


def test_the_fallback_also_knows_the_qmd_paths(fake_qmd: FakeQmd, make_qmd) -> None:
    fake_qmd.set(search="fail")
    tools = MemoryTools(make_qmd())
    result = tools.call("memory_search", {"query": "runbook"})
    assert result["backend"] == "builtin" and [r["path"] for r in result["results"]] == ["../docs/guide.md"]
    assert "runbook" in tools.call("memory_get", {"path": "../docs/guide.md"})["text"]


def test_qmd_serves_again_once_it_recovers(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    tools = MemoryTools(backend)
    assert tools.call("memory_search", {"query": "flamingo"})["backend"] == "qmd"
    fake_qmd.set(search="garbage")
    broken = tools.call("memory_search", {"query": "flamingo"})
    assert broken["backend"] == "builtin" and broken["results"]
    fake_qmd.set()
    healed = tools.call("memory_search", {"query": "flamingo"})
    assert healed["backend"] == "qmd" and "backendFallback" not in healed
    assert {r["path"] for r in healed["results"]} == {"memory/2026-01-31.md", "qmd/docs/guide.md"}
    status = backend.status()
    assert status["servedBy"] == "qmd" and "backendFallback" not in status


def test_an_update_failure_after_a_good_one_keeps_qmd_serving(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    backend.sync()
    fake_qmd.set(update="fail")
    backend.sync()
    assert backend.search("flamingo").backend == "qmd"  # the last good qmd index still answers
    assert backend.primary.status()["lastUpdate"]["ok"] is False


# -- status ----------------------------------------------------------------------------------------------


def test_status_shows_version_collections_documents_update_and_embed(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    backend.sync()
    status = backend.status()
    assert status["servedBy"] == "qmd" and "backendFallback" not in status  # no search yet: who would answer
    qmd = status["qmd"]
    assert qmd["version"] == "9.9.9-fake" and qmd["available"] is True
    assert qmd["documents"] == 4 and qmd["vectors"] == 0  # `search` mode is BM25: no qmd embed
    assert {c["name"]: c["documents"] for c in qmd["collections"]} == {"memory-root": 1, "memory-dir": 1, "docs": 2}
    assert qmd["lastUpdate"]["ok"] and "lastEmbed" not in qmd
    assert qmd["searchMode"] == "search"
    vectors = make_qmd({"searchMode": "vsearch"})
    vectors.sync()
    embedded = vectors.status()["qmd"]
    assert embedded["vectors"] == 4 and embedded["lastEmbed"]["ok"]


def _cli(tmp_path: Path, workspace: Path, *args: str) -> object:
    return CliRunner().invoke(
        app, ["--workspace", str(workspace), "--state-dir", str(tmp_path / "state"), *args], catch_exceptions=False
    )


def _config(workspace: Path, tmp_path: Path, command: str = "qmd") -> None:
    write(
        workspace,
        "mdrecall.toml",
        f'backend = "qmd"\nprovider = "none"\n\n[qmd]\ncommand = "{command}"\n\n'
        f'[[qmd.paths]]\nname = "docs"\npath = "{tmp_path / "docs"}"\n',
    )
    trust_config(workspace, tmp_path / "state")  # its command and paths outside the folder: the user's choice


def test_cli_status_and_search_with_qmd(fake_qmd: FakeQmd, qmd_workspace: Path, tmp_path: Path) -> None:
    _config(qmd_workspace, tmp_path)
    assert _cli(tmp_path, qmd_workspace, "index").exit_code == 0
    shown = _cli(tmp_path, qmd_workspace, "status")
    assert shown.exit_code == 0
    for expected in ("qmd", "9.9.9-fake", "memory-dir (1)", "docs (2)", "qmd update", "qmd embed"):
        assert expected in shown.output
    data = json.loads(_cli(tmp_path, qmd_workspace, "status", "--json").output)
    assert data["backend"] == "qmd" and data["qmd"]["documents"] == 4
    found = _cli(tmp_path, qmd_workspace, "search", "runbook")
    assert "qmd/docs/guide.md" in found.output and "qmd-search" in found.output
    got = _cli(tmp_path, qmd_workspace, "get", "qmd/docs/guide.md")
    assert got.exit_code == 0 and "runbook" in got.output


def test_cli_says_when_the_builtin_index_answered(
    qmd_workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _config(qmd_workspace, tmp_path, command="qmd-is-not-installed-here")
    found = _cli(tmp_path, qmd_workspace, "search", "flamingo")
    assert found.exit_code == 0 and "memory/2026-01-31.md" in found.output
    # one line says it (a warning on stderr), not the update, the search and the CLI each in turn
    lines = [r.getMessage() for r in caplog.records] + found.output.splitlines()
    said = [line for line in lines if "qmd-is-not-installed-here" in line]
    assert len(said) == 1 and "the builtin index answers" in said[0]
    shown = _cli(tmp_path, qmd_workspace, "status")
    assert "not available" in shown.output and "qmd fallback" in shown.output
    assert json.loads(_cli(tmp_path, qmd_workspace, "status", "--json").output)["servedBy"] == "builtin"


def test_request_sync_never_blocks_and_reaches_qmd(qmd_workspace: Path, fake_qmd: FakeQmd, make_qmd) -> None:
    """The protocol's request_sync queues the builtin's background sync; qmd hears of it when it ends."""
    backend = make_qmd({"update": {"debounceMs": 0}})
    backend.sync()
    updates = len(fake_qmd.calls("update"))
    (qmd_workspace / "memory" / "2026-02-01.md").write_text("# 2026-02-01\n\nThe heron nests by the dam.\n")
    backend.request_sync("search")
    assert backend.wait_idle(30)
    assert backend.dirty_files() == []
    assert len(fake_qmd.calls("update")) > updates
