"""The MCP server, driven by the SDK's own client: over stdio (a subprocess) and over HTTP with a token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2  # installed with mcp
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mdrecall.agents.tools import MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import resolve_settings
from mdrecall.mcp_server import BearerTokenMiddleware, build_server

from .conftest import write

TOKEN = "test-token-6d1f"


def _server_args(workspace: Path, state: Path) -> list[str]:
    return ["-m", "mdrecall.mcp_server", "--workspace", str(workspace), "--state-dir", str(state)]


def _payload(result: Any, error: bool = False) -> dict[str, Any]:
    """The tool result as JSON: structured content, checked against the text content and the error flag."""
    assert result.is_error is error
    text = json.loads(result.content[0].text)
    assert text == result.structured_content
    return text


async def _round_trip(client: Client) -> None:
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert {"memory_search", "memory_get", "memory_status"} <= set(tools)  # + fact tools when facts are on
    assert tools["memory_get"].input_schema["required"] == ["path"]
    assert set(tools["memory_get"].input_schema["properties"]) == {"path", "from", "lines"}

    found = _payload(await client.call_tool("memory_search", {"query": "a828e60"}))
    assert found["provider"] == "none"
    top = found["results"][0]
    assert top["path"] == "MEMORY.md" and "a828e60" in top["snippet"]

    got = _payload(
        await client.call_tool("memory_get", {"path": top["path"], "from": top["startLine"] + 3, "lines": 1})
    )
    assert got == {"path": "MEMORY.md", "text": "The deploy fix landed in a828e60."}

    refused = _payload(await client.call_tool("memory_get", {"path": "../secrets.md"}), error=True)
    assert refused["text"] == "" and "refused" in refused["error"]

    status = _payload(await client.call_tool("memory_status", {}))
    assert status["files"] == 3


@pytest.fixture
def keyword_workspace(workspace: Path) -> Path:
    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    return workspace


def test_stdio_round_trip(keyword_workspace: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=_server_args(keyword_workspace, tmp_path / "state"))

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=30) as client:
            assert client.instructions and "## Memory Recall" in client.instructions
            await _round_trip(client)

    anyio.run(scenario)


def test_in_process_server_matches_tool_definitions(keyword_workspace: Path, tmp_path: Path) -> None:
    with MemoryIndex(resolve_settings(workspace=keyword_workspace, state_dir=tmp_path / "state")) as index:
        tools = MemoryTools(index, include_status=True)

        async def scenario() -> None:
            async with Client(build_server(tools)) as client:
                listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
                assert listed == {d["name"]: d["parameters"] for d in tools.definitions(style="plain")}
                unknown = await client.call_tool("memory_forget", {})
                assert unknown.is_error

        anyio.run(scenario)


# -- HTTP -------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One HTTP server for the module (starting one takes a second or two)."""
    tmp_path = tmp_path_factory.mktemp("http")
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", 'provider = "none"\n')
    write(ws, "MEMORY.md", "# Long-term memory\n\nDana prefers metric units.\nThe deploy fix landed in a828e60.\n")
    write(ws, "memory/2026-11-02.md", "# 2026-11-02\n\n- Decided to keep hybrid weights at 0.7/0.3.\n")
    write(ws, "memory/topics/infra.md", "# Infra\n\nThe gateway runs on the Mac Studio.\n")
    port = _free_port()
    args = [*_server_args(ws, tmp_path / "state"), "--http", "--port", str(port)]
    log = tmp_path / "server.log"
    env = {**os.environ, "MDRECALL_MCP_TOKEN": TOKEN}  # never on the command line (ps shows it)
    with open(log, "wb") as stderr:
        process = subprocess.Popen([sys.executable, *args], stderr=stderr, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"MCP HTTP server did not start: {log.read_text()!r}") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}])
def test_http_rejects_missing_or_wrong_token(http_server: str, headers: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(http_server, json=body, headers=headers, timeout=5)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_round_trip_with_token(http_server: str) -> None:
    async def scenario() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
            Client(streamable_http_client(http_server, http_client=http)) as client,
        ):
            await _round_trip(client)

    anyio.run(scenario)


def test_bearer_middleware_requires_a_token() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover - never reached
        raise AssertionError

    with pytest.raises(ValueError):
        BearerTokenMiddleware(app, "")
