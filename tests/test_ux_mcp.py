"""MCP as an agent meets it, through the SDK's own client: `mdrecall mcp` over stdio, errors flagged with isError,
declared output schemas, a token that never sits on the command line, a bearer scheme in any case, and a
memory_search that answers a stale index at once while only a missing index is built first (with progress)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mdrecall.agents.tools import MEMORY_SEARCH, OUTPUT_SCHEMAS, MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import resolve_settings
from mdrecall.mcp_server import bearer_matches, read_token

from .conftest import write

CLI = "import sys; from mdrecall.cli.app import main; sys.argv[0] = 'mdrecall'; main()"


@pytest.fixture
def kw(workspace: Path) -> Path:
    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    return workspace


def test_mdrecall_mcp_over_stdio_flags_errors_and_declares_output_schemas(kw: Path, tmp_path: Path) -> None:
    args = ["-c", CLI, "--workspace", str(kw), "--state-dir", str(tmp_path / "s"), "mcp"]
    params = StdioServerParameters(command=sys.executable, args=args)

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name, schema in OUTPUT_SCHEMAS.items():
                assert tools[name].output_schema == schema
            found = await client.call_tool("memory_search", {"query": "a828e60"})
            assert found.is_error is False and found.structured_content["results"][0]["path"] == "MEMORY.md"
            bad = await client.call_tool("memory_search", {"query": ""})
            assert bad.is_error is True and "query" in bad.structured_content["error"]
            refused = await client.call_tool("memory_get", {"path": "/etc/passwd"})
            assert refused.is_error is True and refused.structured_content["text"] == ""
            missing = await client.call_tool("memory_get", {"path": "memory/none.md"})
            assert missing.is_error is False and missing.structured_content == {"path": "memory/none.md", "text": ""}
            status = await client.call_tool("memory_status", {})
            assert status.is_error is False and status.structured_content["files"] == 3

    anyio.run(scenario)


def test_module_entry_point_fails_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`python -m mdrecall.mcp_server` runs `main()`: a user mistake is one line and exit code 1."""
    from mdrecall.mcp_server import main

    assert main(["--workspace", str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err.strip() == f"error: workspace not found: {tmp_path / 'missing'}"


def test_without_the_sdk_the_server_says_so_in_one_line(
    kw: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A broken install (the SDK failed to import) gives one line, from both entry points."""
    import mdrecall.mcp_server as server
    from mdrecall.cli.app import main as cli_main

    monkeypatch.setattr(server, "_IMPORT_ERROR", ImportError("No module named 'mcp'"))
    assert server.main(["--workspace", str(kw)]) == 1
    stderr = capsys.readouterr().err
    assert "MCP SDK" in stderr and len(stderr.strip().splitlines()) == 1
    monkeypatch.setattr(sys, "argv", ["mdrecall", "--workspace", str(kw), "mcp"])
    with pytest.raises(SystemExit) as exit_info:
        cli_main()
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    assert "MCP SDK" in stderr and len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr


def test_a_missing_sdk_is_caught_at_import(kw: Path) -> None:
    """The import guard itself: with `mcp` unimportable the module still imports and main() says why."""
    code = (
        "import sys; sys.modules['mcp'] = None; from mdrecall.mcp_server import main; "
        "sys.exit(main(['--workspace', sys.argv[1]]))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(kw)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "MCP SDK" in proc.stderr


# -- HTTP token ---------------------------------------------------------------------------------------------


def test_bearer_scheme_is_case_insensitive() -> None:
    assert bearer_matches(b"Bearer abc", b"abc")
    assert bearer_matches(b"bearer abc", b"abc")
    assert bearer_matches(b"BEARER  abc ", b"abc")
    assert not bearer_matches(b"Basic abc", b"abc")
    assert not bearer_matches(b"abc", b"abc")
    assert not bearer_matches(b"Bearer abcd", b"abc")


def test_token_from_file_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mdrecall.errors import ConfigError

    monkeypatch.delenv("MDRECALL_MCP_TOKEN", raising=False)
    assert read_token(None) is None
    monkeypatch.setenv("MDRECALL_MCP_TOKEN", "from-env")
    assert read_token(None) == "from-env"
    token_file = write(tmp_path, "token", "from-file\n")
    assert read_token(token_file) == "from-file"
    with pytest.raises(ConfigError, match="empty"):
        read_token(write(tmp_path, "empty", "\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        read_token(tmp_path / "absent")


def test_no_token_option_on_the_command_line() -> None:
    from typer.testing import CliRunner

    from mdrecall.cli.app import app

    result = CliRunner().invoke(app, ["mcp", "--help"])
    assert "--token-file" in result.stdout and "--token " not in result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_with_a_token_file_and_a_lowercase_scheme(kw: Path, tmp_path: Path) -> None:
    token = "file-token-81f2"
    token_file = write(tmp_path, "token.txt", token + "\n")
    port = _free_port()
    args = ["-c", CLI, "--workspace", str(kw), "--state-dir", str(tmp_path / "s")]
    args += ["mcp", "--http", "--port", str(port), "--token-file", str(token_file)]
    env = {k: v for k, v in os.environ.items() if k != "MDRECALL_MCP_TOKEN"}
    process = subprocess.Popen([sys.executable, *args], stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.05)
        assert token not in " ".join(args)  # what `ps` would show

        async def scenario() -> None:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"bearer {token}"}, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                result = await client.call_tool("memory_search", {"query": "a828e60"})
                assert result.structured_content["results"][0]["path"] == "MEMORY.md"

        anyio.run(scenario)
        wrong = httpx.post(url, json={}, headers={"Authorization": "bearer nope"}, timeout=5)
        assert wrong.status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=10)


# -- memory_search never waits, except to build a missing index -----------------------------------------------


def test_missing_index_is_built_first_with_progress(kw: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    with MemoryIndex(resolve_settings(workspace=kw, state_dir=tmp_path / "s")) as index:
        tools = MemoryTools(index, progress=lambda done, total, label: seen.append((done, total, label)))
        result = tools.call(MEMORY_SEARCH, {"query": "a828e60"})
        assert result["results"][0]["path"] == "MEMORY.md" and "catchingUp" not in result
        assert seen and seen[-1][0] == seen[-1][1] == 3


def test_a_stale_index_answers_at_once_and_catches_up_in_the_background(kw: Path, tmp_path: Path) -> None:
    with MemoryIndex(resolve_settings(workspace=kw, state_dir=tmp_path / "s")) as index:
        index.sync()
        tools = MemoryTools(index)
        calls: list[str] = []
        original = index.sync

        def slow_sync(*args: Any, **kwargs: Any) -> Any:
            calls.append(kwargs.get("reason", ""))
            time.sleep(0.5)
            return original(*args, **kwargs)

        index.sync = slow_sync  # type: ignore[method-assign]
        write(kw, "memory/2026-11-03.md", "Booked the zeppelin tour.\n")
        started = time.monotonic()
        first = tools.call(MEMORY_SEARCH, {"query": "zeppelin"})
        assert time.monotonic() - started < 0.5  # did not wait for the (slow) sync
        assert first["results"] == [] and first["catchingUp"] is True
        assert "1 changed file" in first["notice"]
        assert index.wait_idle(30) and calls
        second = tools.call(MEMORY_SEARCH, {"query": "zeppelin"})
        assert [r["path"] for r in second["results"]] == ["memory/2026-11-03.md"]
        assert "catchingUp" not in second
        assert json.dumps(second)  # still JSON-serialisable


def test_http_on_a_busy_or_impossible_port_is_one_line_before_any_work(kw: Path, tmp_path: Path) -> None:
    """`mdrecall mcp --http` on a port another program holds (or one that cannot exist): one line, exit 1, and
    no 'server on …' line claiming it serves; the index is not built for a server that cannot start."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    state = tmp_path / "s"
    base = [sys.executable, "-c", CLI, "--workspace", str(kw), "--state-dir", str(state), "mcp", "--http"]
    try:
        taken = subprocess.run([*base, "--port", str(port)], capture_output=True, text=True, timeout=60)
    finally:
        busy.close()
    assert taken.returncode == 1
    lines = [line for line in taken.stderr.splitlines() if not line.startswith("mdrecall MCP token:")]
    assert lines == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert not list((state / "memory").glob("*.sqlite")) if (state / "memory").exists() else True
    ui = [*base[:-2], "ui"]
    for command, bad in ((base, "99999"), (base, "-1"), (ui, "99999"), (ui, "-5")):
        result = subprocess.run([*command, "--port", bad], capture_output=True, text=True, timeout=60)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "--port" in result.stderr
