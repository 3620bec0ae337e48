"""Fault injection through the CLI, as a user meets faults: after each one, every earlier note is still found.

Faults: disk full (a file-size limit, RLIMIT_FSIZE, on a real `mdrecall` process), a read-only state
directory, permission denied on one note, and an embedding provider that goes down and comes back (the
fake provider server; also with a fallback provider configured). Each fault ends in one line on stderr
and exit 1, or in a working search with a notice, never a traceback, never a lost note.

Running as root, permission bits do not bind; those processes run with CAP_DAC_OVERRIDE dropped
(`setpriv`, util-linux) so that they meet the permissions an ordinary user would.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from typer.testing import CliRunner

from fake_embedding_server import FakeEmbeddingServer
from mdrecall.agents.tools import MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import resolve_settings
from mdrecall.embeddings import remote

from .conftest import trust_config, write

runner = CliRunner()
NOTES = {
    "MEMORY.md": ("# Memory\n\nThe aardvark project ships in March.\n", "aardvark"),
    "memory/2026-01-05.md": ("# 2026-01-05\n\n- Met the bonobo team about billing.\n", "bonobo"),
    "memory/topics/infra.md": ("# Infra\n\nThe caracal cluster runs in Frankfurt.\n", "caracal"),
}
ROOT = os.geteuid() == 0
DROP_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, (text, _) in NOTES.items():
        write(root, rel, text)
    (root / "mdrecall.toml").write_text('provider = "none"\n')
    return root


def cli(ws: Path, state: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), *args])


def run_process(ws: Path, state: Path, *args: str, fsize: int | None = None, as_user: bool = False):
    """A real `mdrecall` process, optionally under a file-size limit or without root's permission override."""

    def limit() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    prefix = DROP_DAC if (as_user and ROOT) else []
    cmd = [*prefix, sys.executable, "-m", "mdrecall.cli", "--workspace", str(ws), "--state-dir", str(state), *args]
    return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit, timeout=120)


def db_of(ws: Path, state: Path) -> Path:
    """The default index file of this workspace (keyed by agent and workspace)."""
    return resolve_settings(workspace=ws, state_dir=state).db_path


def one_line_failure(proc) -> str:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def assert_all_found(ws: Path, state: Path, extra: dict[str, str] | None = None) -> None:
    """Every note written so far is found by its word (the index lost nothing)."""
    expected = {rel: word for rel, (_, word) in NOTES.items()} | (extra or {})
    for rel, word in expected.items():
        result = cli(ws, state, "search", word, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)[0]["path"] == rel, (word, result.stdout)


@pytest.fixture
def indexed(ws: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    state = tmp_path / "state"
    assert cli(ws, state, "index").exit_code == 0
    yield ws, state
    for path in (state / "memory", db_of(ws, state)):
        if path.exists():
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_disk_full_keeps_the_index_and_search_works(indexed: tuple[Path, Path]) -> None:
    ws, state = indexed
    db = db_of(ws, state)
    write(ws, "memory/big.md", "".join(f"dugong line {i} " + "filler words " * 20 + "\n" for i in range(1500)))
    limit = db.stat().st_size + 16_384
    line = one_line_failure(run_process(ws, state, "index", fsize=limit))
    assert "index not updated" in line and ("full" in line or "I/O error" in line), line
    line = one_line_failure(run_process(ws, state, "index", "--force", fsize=limit))
    assert "index not updated" in line
    searched = run_process(ws, state, "search", "aardvark", "--json", fsize=limit)  # a stale index still answers
    assert searched.returncode == 0 and "index not updated" in searched.stderr, searched.stderr
    assert json.loads(searched.stdout)[0]["path"] == "MEMORY.md"
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 3, "nothing indexed before was lost"
    conn.close()
    assert not list(db.parent.glob(f"{db.name}.tmp-*")), "the failed reindex's temp files are gone"
    assert_all_found(ws, state)
    assert cli(ws, state, "index").exit_code == 0  # space again: the big note is indexed too
    assert_all_found(ws, state, {"memory/big.md": "dugong"})


@pytest.mark.skipif(ROOT and shutil.which("setpriv") is None, reason="needs setpriv to drop root's override")
def test_read_only_state_directory_searches_read_only(indexed: tuple[Path, Path]) -> None:
    ws, state = indexed
    write(ws, "memory/new.md", "The echidna note arrived after the index.\n")
    memory_dir = state / "memory"
    listing = sorted(p.name for p in memory_dir.iterdir())
    db_of(ws, state).chmod(0o444)
    memory_dir.chmod(0o555)
    searched = run_process(ws, state, "search", "caracal", "--json", as_user=True)
    assert searched.returncode == 0, searched.stderr
    assert json.loads(searched.stdout)[0]["path"] == "memory/topics/infra.md"
    assert "read-only" in searched.stderr and "Traceback" not in searched.stderr
    status = run_process(ws, state, "status", "--json", as_user=True)
    assert status.returncode == 0 and json.loads(status.stdout)["files"] == 3, status.stderr
    line = one_line_failure(run_process(ws, state, "index", as_user=True))
    assert "read-only" in line
    assert sorted(p.name for p in memory_dir.iterdir()) == listing
    memory_dir.chmod(0o755)
    db_of(ws, state).chmod(0o644)
    assert_all_found(ws, state, {"memory/new.md": "echidna"})


@pytest.mark.skipif(ROOT and shutil.which("setpriv") is None, reason="needs setpriv to drop root's override")
def test_permission_denied_on_one_note_skips_it_and_indexes_the_rest(indexed: tuple[Path, Path]) -> None:
    ws, state = indexed
    locked = write(ws, "memory/locked.md", "The fossa secret plan.\n")
    write(ws, "memory/open.md", "The gecko plan is public.\n")
    locked.chmod(0o000)
    try:
        proc = run_process(ws, state, "index", as_user=True)
        assert proc.returncode == 0, proc.stderr
        assert "memory/locked.md" in proc.stderr and "ermission denied" in proc.stderr
        assert "Traceback" not in proc.stderr
    finally:
        locked.chmod(0o644)
    assert_all_found(ws, state, {"memory/open.md": "gecko"})
    assert cli(ws, state, "index").exit_code == 0
    assert_all_found(ws, state, {"memory/open.md": "gecko", "memory/locked.md": "fossa"})


# -- provider down and back --------------------------------------------------------------------------


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remote providers still retry (3 attempts) but without waiting between attempts."""
    real = remote.RemoteOptions
    monkeypatch.setattr(remote, "RemoteOptions", lambda: real(retry=remote.RetryPolicy(sleep=lambda _s: None)))


def _remote_config(
    ws: Path, state: Path, primary: FakeEmbeddingServer, fallback: FakeEmbeddingServer | None = None
) -> None:
    lines = ['provider = "openai"', 'model = "text-embedding-3-small"', "[remote]"]
    lines += [f'baseUrl = "{primary.openai_base}"', 'apiKey = "test-key"']
    if fallback is not None:
        lines = ['fallback = "gemini"', *lines, "[gemini]", f'baseUrl = "{fallback.gemini_base}"', 'apiKey = "g-key"']
    # the fake server's vectors carry no meaning: let the keyword side decide the order, keep vectors in play
    lines += ["[query]", "minScore = 0.0", "[query.hybrid]", "vectorWeight = 0.05", "textWeight = 0.95"]
    (ws / "mdrecall.toml").write_text("\n".join(lines) + "\n")
    trust_config(ws, state)  # the base URLs are the user's choice


def test_provider_down_keyword_only_then_vectors_filled_when_back(ws: Path, tmp_path: Path, fast_retries) -> None:
    state = tmp_path / "state"
    with FakeEmbeddingServer() as server:
        _remote_config(ws, state, server)
        assert cli(ws, state, "index").exit_code == 0
        assert_all_found(ws, state)
        server.outage = 503
        write(ws, "memory/down.md", "The hoopoe note was written while the provider was down.\n")
        result = cli(ws, state, "index")
        assert result.exit_code == 0, result.output
        assert "embedding provider unavailable" in result.stderr and "wait for vectors" in result.stderr
        searched = cli(ws, state, "search", "hoopoe", "--json")
        assert searched.exit_code == 0, searched.output
        assert json.loads(searched.stdout)[0]["path"] == "memory/down.md"
        assert "keyword results only" in searched.stderr
        status = cli(ws, state, "status", "--json")
        assert status.exit_code == 0 and json.loads(status.stdout)["vectorsPending"] >= 1
        assert_all_found(ws, state, {"memory/down.md": "hoopoe"})
        server.outage = None
        result = cli(ws, state, "index", "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["vectorsFilled"] >= 1 and report["vectorsPending"] == 0 and not report["fullReindex"]
        status = json.loads(cli(ws, state, "status", "--json").stdout)
        assert status["vectorsPending"] == 0 and status["provider"] == "openai"
        searched = cli(ws, state, "search", "hoopoe", "--json")
        assert "keyword results only" not in searched.stderr
        assert_all_found(ws, state, {"memory/down.md": "hoopoe"})


def test_fallback_provider_takes_over_and_hands_back(ws: Path, tmp_path: Path, fast_retries) -> None:
    state = tmp_path / "state"
    with FakeEmbeddingServer() as primary, FakeEmbeddingServer(dims=6) as fallback:
        _remote_config(ws, state, primary, fallback)
        assert cli(ws, state, "index").exit_code == 0
        primary.outage = 503
        write(ws, "memory/during.md", "The ibis note needs an embedding while the primary is down.\n")
        result = cli(ws, state, "index", "--force", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["fullReindex"] and fallback.count("gemini.batchEmbed") > 0
        status = json.loads(cli(ws, state, "status", "--index", "--json").stdout)  # syncs first: meets the outage
        assert status["provider"] == "gemini" and status["vectorsPending"] == 0, status
        searched = cli(ws, state, "search", "ibis", "--json")
        assert searched.exit_code == 0 and "keyword results only" not in searched.stderr, searched.output
        assert_all_found(ws, state, {"memory/during.md": "ibis"})
        primary.outage = None
        result = cli(ws, state, "index", "--json")
        assert result.exit_code == 0 and json.loads(result.stdout)["fullReindex"], result.output
        status = json.loads(cli(ws, state, "status", "--json").stdout)
        assert status["provider"] == "openai" and status["vectorsPending"] == 0
        assert_all_found(ws, state, {"memory/during.md": "ibis"})


def test_agent_tools_answer_through_an_outage(ws: Path, tmp_path: Path, fast_retries) -> None:
    """memory_search / memory_get as an agent calls them: keyword answers with a notice, never an error."""
    with FakeEmbeddingServer() as server:
        _remote_config(ws, tmp_path / "state", server)
        write(ws, "memory/keys.md", "The jackal deploy uses AKIAQX7TOOLS001ABCDE for uploads.\n")
        index = MemoryIndex(resolve_settings(workspace=ws, state_dir=tmp_path / "state"))
        try:
            tools = MemoryTools(index)
            assert tools.call("memory_search", {"query": "jackal deploy"})["results"]
            server.outage = 503
            answer = tools.call("memory_search", {"query": "jackal deploy"})
            assert "error" not in answer and "keyword results only" in answer["notice"]
            hit = answer["results"][0]
            assert hit["path"] == "memory/keys.md" and "[REDACTED:aws-key]" in hit["snippet"]
            got = tools.call("memory_get", {"path": hit["path"], "from": hit["startLine"], "lines": 1})
            assert "[REDACTED:aws-key]" in got["text"] and "AKIAQX7TOOLS001ABCDE" not in got["text"]
            server.outage = None
            assert "notice" not in tools.call("memory_search", {"query": "caracal cluster"})
        finally:
            index.close()
