"""Bounded inputs: a query is cut before it is embedded or turned into a keyword query; memory_get reads
regular files only (a FIFO named *.md never blocks the MCP server) and at most MAX_GET_BYTES; text that is
not valid UTF-8 (a lone surrogate in an MCP argument, undecodable bytes on the command line) gets one line;
a NUL byte in a memory file is held as U+FFFD. The Postgres side of these is test_postgres_trust.py.

Costs are measured in bench/bench_bounds.py; here the tests check what reaches the expensive parts."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import HashingProvider, write
from mdrecall.agents.hooks import HookRunner
from mdrecall.agents.tools import MemoryTools
from mdrecall.cli import app as cli_app
from mdrecall.config.settings import resolve_settings
from mdrecall.documents.workspace import MAX_GET_BYTES, bounded_text, read_regular_bytes
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.errors import MdrecallError, PathRefusedError
from mdrecall.storage.sqlite import Store
from mdrecall.text.bounds import MAX_QUERY_CHARS, MAX_QUERY_WORDS, bound_query

LONG_QUERY = "deploy fix a828e60 " + " ".join(f"filler{i}" for i in range(20_000))


class RecordingProvider(HashingProvider):
    """The hashing provider, remembering every query text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        self.queries.append(text)
        return super().embed_query(text)


def test_bound_query_cuts_words_characters_and_nul() -> None:
    assert bound_query("  deploy   fix\n") == "deploy fix"
    cut = bound_query(LONG_QUERY)
    assert cut.startswith("deploy fix a828e60 filler0") and len(cut.split()) <= MAX_QUERY_WORDS
    assert len(cut) <= MAX_QUERY_CHARS and not cut.endswith(" ")
    assert len(bound_query(" ".join(["ab"] * 500)).split()) == MAX_QUERY_WORDS
    cjk = bound_query("我们决定使用数据库" * 5000)  # no spaces: one "word" of 45,000 characters
    assert 0 < len(cjk) <= MAX_QUERY_CHARS
    assert len(bound_query("x" * 100 + " " + "y" * 1000)) <= MAX_QUERY_CHARS
    assert bound_query("a\x00b") == "a b"


def test_a_long_query_is_cut_before_embedding_and_the_keyword_query(make_index, workspace, monkeypatch) -> None:
    provider = RecordingProvider()
    index = make_index(workspace, provider)
    index.sync()
    keyword_queries: list[str] = []
    original = Store.keyword_search

    def spy(self, fts_query, *args, **kwargs):  # type: ignore[no-untyped-def]
        keyword_queries.append(fts_query)
        return original(self, fts_query, *args, **kwargs)

    monkeypatch.setattr(Store, "keyword_search", spy)
    response = index.search(LONG_QUERY, min_score=0.0)
    assert response.results and response.results[0].path == "MEMORY.md"  # its first words still find it
    assert "cut" in (response.notice or "")
    assert provider.queries and all(len(q.split()) <= MAX_QUERY_WORDS for q in provider.queries)
    assert all(len(q) <= MAX_QUERY_CHARS for q in provider.queries)
    assert keyword_queries and max(len(q) for q in keyword_queries) < 20 * MAX_QUERY_CHARS


def test_a_40kb_prompt_reaches_the_fact_recall_cut(tmp_path: Path) -> None:
    pytest.importorskip("lancedb")
    (tmp_path / "ws").mkdir()
    settings = resolve_settings(workspace=tmp_path / "ws", state_dir=tmp_path / "state")
    provider = RecordingProvider()
    runner = HookRunner(settings, ProviderResult(provider, requested="test"))
    assert runner.store.store("The deploy fix landed in a828e60 on Friday.").stored
    prompt = ("what was the deploy fix commit " + "and some pasted log output " * 1500)[:40_000]
    assert len(prompt.encode()) >= 39_000
    provider.queries.clear()
    result = runner.run("UserPromptSubmit", {"prompt": prompt, "session_id": "s1", "cwd": str(settings.workspace)})
    runner.close()
    assert result.actions and result.actions[0] in ("recalled", "nothing relevant")
    assert provider.queries and all(len(q.split()) <= MAX_QUERY_WORDS for q in provider.queries)


# -- memory_get ---------------------------------------------------------------------------------------------


@pytest.fixture
def keyword_workspace(workspace: Path) -> Path:
    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    return workspace


def _server(workspace: Path, state: Path) -> StdioServerParameters:
    args = ["-m", "mdrecall.mcp_server", "--workspace", str(workspace), "--state-dir", str(state)]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))  # this test's mdrecall


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_memory_get_on_a_fifo_is_refused_and_the_server_keeps_answering(keyword_workspace: Path, tmp_path) -> None:
    os.mkfifo(keyword_workspace / "memory" / "pipe.md")

    async def scenario() -> None:
        async with Client(_server(keyword_workspace, tmp_path / "state"), read_timeout_seconds=30) as client:
            with anyio.fail_after(20):  # a server stuck on the FIFO fails the test, and the client kills it
                got = await client.call_tool("memory_get", {"path": "memory/pipe.md"})
                assert got.is_error and "not a regular file" in got.structured_content["error"]
                found = await client.call_tool("memory_search", {"query": "a828e60"})
                assert not found.is_error and found.structured_content["results"]

    anyio.run(scenario)


def test_memory_get_reads_at_most_max_get_bytes(make_index, workspace: Path) -> None:
    huge = workspace / "memory" / "huge.md"
    with open(huge, "wb") as handle:  # 200 MB: three lines, then one sparse line of NULs (no disk used)
        handle.write(b"# Huge\nsecond line\nthird line\n")
        handle.truncate(200_000_000)
    tools = MemoryTools(make_index(workspace))
    tracemalloc.start()
    whole = tools.get({"path": "memory/huge.md"})
    ranged = tools.get({"path": "memory/huge.md", "from": 2, "lines": 2})
    tail = tools.get({"path": "memory/huge.md", "from": 4, "lines": 1})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20_000_000, f"memory_get held {peak / 1e6:.0f} MB"
    assert whole["truncated"] is True and whole["text"] == "# Huge\nsecond line\nthird line"
    assert whole["nextFrom"] == 4 and "from=4" in whole["notice"]
    assert ranged["text"] == "second line\nthird line" and "truncated" not in ranged
    assert tail["truncated"] is True and len(tail["text"].encode()) <= MAX_GET_BYTES
    assert set(tail["text"]) == {"\ufffd"}  # the NULs, as U+FFFD


def test_memory_get_of_a_long_file_counts_lines_as_the_index_does(make_index, workspace: Path) -> None:
    lines = [f"line {n} of the log" for n in range(1, 120_001)]
    (workspace / "memory" / "long.md").write_text("\r\n".join(lines[:10]) + "\r\n" + "\n".join(lines[10:]) + "\n")
    assert (workspace / "memory" / "long.md").stat().st_size > MAX_GET_BYTES
    tools = MemoryTools(make_index(workspace))
    assert tools.get({"path": "memory/long.md", "from": 9, "lines": 3})["text"] == "\n".join(lines[8:11])
    assert tools.get({"path": "memory/long.md", "from": 100_000, "lines": 2})["text"] == "\n".join(
        lines[99_999:100_001]
    )
    assert tools.get({"path": "memory/long.md", "from": 200_000})["text"] == ""


def test_a_nul_byte_in_a_memory_file_is_held_as_u_fffd(make_index, workspace: Path) -> None:
    body = b"# Notes\n\n" + b"x" * 9000 + b"\nThe vault\x00code is kept offline.\n"  # past the binary sniff
    (workspace / "memory" / "nul.md").write_bytes(body)
    index = make_index(workspace)
    index.sync()
    query = "SELECT chunk_text(text) FROM chunks WHERE path = 'memory/nul.md'"
    texts = [row[0] for row in index.store.conn.execute(query)]
    assert texts and all("\x00" not in t for t in texts) and any("vault\ufffdcode" in t for t in texts)
    got = MemoryTools(index).get({"path": "memory/nul.md", "from": 4, "lines": 1})
    assert got["text"] == "The vault\ufffdcode is kept offline."


# -- text that is not UTF-8 -----------------------------------------------------------------------------------


class _RawMcp:
    """The real MCP server over stdio, spoken to in raw JSON-RPC lines: the SDK's client cannot even send a
    lone surrogate (it fails to encode it), an attacker's client can."""

    def __init__(self, workspace: Path, state: Path) -> None:
        args = ["-m", "mdrecall.mcp_server", "--workspace", str(workspace), "--state-dir", str(state)]
        self.process = subprocess.Popen(
            [sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode("ascii") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: str, timeout: float = 20.0) -> dict[str, Any]:
        self.next_id += 1
        self.send(f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"{method}","params":{params}}}')
        deadline = time.monotonic() + timeout
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == self.next_id:
                return message
        raise AssertionError(f"no reply to {method} {params} within {timeout:.0f} s")

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)


@pytest.mark.skipif(sys.platform == "win32", reason="select() on pipes is POSIX")
def test_a_lone_surrogate_in_an_mcp_argument_gets_an_error_reply(keyword_workspace: Path, tmp_path: Path) -> None:
    server = _RawMcp(keyword_workspace, tmp_path / "state")
    try:
        hello = '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}'
        assert "result" in server.request("initialize", hello)
        server.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for name, arguments in (
            ("memory_search", '{"query":"dep\\ud800loy"}'),
            ("memory_get", '{"path":"memory/\\udcff.md"}'),
            ("memory_store", '{"text":"remember \\ud83d this"}'),
            ("memory_search", '{"query":"deploy","\\ud800":1}'),
        ):
            reply = server.request("tools/call", f'{{"name":"{name}","arguments":{arguments}}}')
            result = reply.get("result") or {}
            assert result.get("isError") is True, reply
            assert "not valid UTF-8" in result["content"][0]["text"]
        ok = server.request("tools/call", '{"name":"memory_search","arguments":{"query":"a828e60"}}')
        assert ok["result"]["isError"] is False and "a828e60" in ok["result"]["content"][0]["text"]
    finally:
        server.close()


def _main(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "argv", ["mdrecall", *argv])
    with pytest.raises(SystemExit) as exited:
        cli_app.main()
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_invalid_bytes_on_the_command_line_give_one_line(monkeypatch, capsys, keyword_workspace, tmp_path) -> None:
    base = ["--workspace", str(keyword_workspace), "--state-dir", str(tmp_path / "state")]
    undecodable = os.fsdecode(b"caf\xe9")  # what Python makes of the bytes a shell passes
    for args in (["search", undecodable], ["facts", "store", undecodable], ["get", f"memory/{undecodable}.md"]):
        code, _, err = _main(monkeypatch, capsys, *base, *args)
        assert code == 1 and "Traceback" not in err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "not valid UTF-8" in lines[0] and "caf\\xe9" in lines[0], err

    odd = tmp_path / os.fsdecode(b"ws-\xff")  # a folder name may hold such bytes: path options take them
    odd.mkdir()
    write(odd, "MEMORY.md", "# Memory\n\nThe deploy fix landed in a828e60.\n")
    write(odd, "mdrecall.toml", 'provider = "none"\n')
    code, out, err = _main(
        monkeypatch, capsys, "--workspace", str(odd), "--state-dir", str(tmp_path / "s2"), "search", "a828e60"
    )
    assert code == 0 and "a828e60" in out, err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_whole_file_reads_refuse_fifos_and_oversize_files(tmp_path: Path) -> None:
    """What transcripts are read with (they are parsed whole): regular files up to maxFileBytes only."""
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(PathRefusedError, match="not a regular file"):
        read_regular_bytes(fifo, "sessions/s.jsonl", 1000)  # returns at once: never opened for reading
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(MdrecallError, match="larger than"):
        read_regular_bytes(big, "sessions/big.jsonl", 1000)
    assert read_regular_bytes(big, "sessions/big.jsonl", 2000) == b"x" * 1001
    cut = bounded_text("line one\n" * 300_000)  # 2.7 MB of text
    assert cut["truncated"] is True and len(cut["text"].encode()) <= MAX_GET_BYTES
    assert cut["text"].endswith("line one") and bounded_text("short") == {"text": "short"}
