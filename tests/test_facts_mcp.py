"""The fact tools over MCP, driven by the SDK's own client against `python -m mdrecall.mcp_server` (stdio)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mdrecall.agents.fact_tools import FactTools
from mdrecall.facts.store import FactStore

from .conftest import write


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error
    data = json.loads(result.content[0].text)
    assert data == result.structured_content
    return data


def test_fact_tools_over_stdio(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", 'provider = "none"\n')
    write(ws, "MEMORY.md", "# Long-term memory\n\nNothing yet.\n")
    args = ["-m", "mdrecall.mcp_server", "--workspace", str(ws), "--state-dir", str(tmp_path / "state")]

    async def scenario() -> None:
        async with Client(StdioServerParameters(command=sys.executable, args=args), read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"memory_search", "memory_store", "memory_recall", "memory_forget"} <= set(tools)
            assert tools["memory_store"].input_schema["properties"]["category"]["enum"][0] == "preference"
            assert client.instructions and "memory_store" in client.instructions

            stored = _payload(await client.call_tool("memory_store", {"text": "Priya prefers Slack over email."}))
            assert stored["stored"] and stored["fact"]["category"] == "preference"
            dup = _payload(await client.call_tool("memory_store", {"text": "Priya prefers Slack over email"}))
            assert dup["stored"] is False and "near-identical" in dup["message"]
            _payload(
                await client.call_tool("memory_store", {"text": "Priya leads the billing team.", "category": "entity"})
            )

            recalled = _payload(await client.call_tool("memory_recall", {"query": "Priya Slack", "limit": 3}))
            top = recalled["results"][0]
            assert top["text"] == "Priya prefers Slack over email." and top["category"] == "preference"
            assert recalled["context"].startswith("<relevant-memories>") and recalled["search"] == "keyword-only"

            ambiguous = _payload(await client.call_tool("memory_forget", {"query": "Priya"}))
            assert ambiguous["deleted"] == [] and len(ambiguous["candidates"]) == 2
            gone = _payload(await client.call_tool("memory_forget", {"id": top["id"]}))
            assert gone["deleted"][0]["id"] == top["id"]

            bad = await client.call_tool("memory_store", {"text": "Priya likes tea", "category": "gossip"})
            assert bad.is_error and "category must be one of" in bad.structured_content["error"]

            found = _payload(await client.call_tool("memory_search", {"query": "billing team"}))
            assert any(r["path"] == "memory/facts.md" for r in found["results"])

            unknown = await client.call_tool("memory_remember", {"text": "x"})  # the agent guessed a name
            assert unknown.is_error and "unknown tool" in unknown.structured_content["error"]
            for name in tools:  # the names it is told to use are every tool it was given, fact tools too
                assert name in unknown.structured_content["action"]

    anyio.run(scenario)
    facts = (ws / "memory" / "facts.md").read_text()
    assert "Priya leads the billing team." in facts and "Slack" not in facts


def test_fact_tools_never_raise(tmp_path: Path) -> None:
    from facts_fixtures import make_settings

    settings = make_settings(tmp_path / "ws", tmp_path / "state", {"provider": "none"})
    tools = FactTools(FactStore(settings))
    assert "error" in tools.call("memory_recall", {"query": ""})
    assert "error" in tools.call("memory_recall", "{not json")
    assert "error" in tools.call("memory_forget", {})
    assert "error" in tools.call("memory_store", {"text": "hello there", "importance": "high"})
    assert "unknown tool" in tools.call("memory_nope", {})["error"]
    assert [d["function"]["name"] for d in tools.definitions("openai")] == [
        "memory_store",
        "memory_recall",
        "memory_forget",
    ]
