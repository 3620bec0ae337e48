"""docs/getting-started.md, executed step by step: every `sh` block in order, in a fresh home with no API keys.

`pip install mdrecall` is checked against this environment (the package is installed: its console script
must be on PATH and answer `--version`); `claude mcp add NAME -- COMMAND...` is done the way Claude Code does
it: the command is started as a stdio MCP server and driven with the MCP SDK's client.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

DOC = Path(__file__).resolve().parent.parent / "docs" / "getting-started.md"
API_KEYS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VOYAGE_API_KEY")


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in API_KEYS and not k.startswith("MDRECALL_")}
    bin_dir = str(Path(sys.executable).parent)
    return {**env, "HOME": str(home), "PATH": bin_dir + os.pathsep + env.get("PATH", "")}


def _bash(block: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    assert result.returncode == 0, f"step failed:\n{block}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


def _claude_mcp_add(line: str, env: dict[str, str]) -> None:
    """`claude mcp add NAME -- CMD ARGS`: start CMD ARGS as Claude Code would and use the memory through it."""
    words = shlex.split(line)
    assert words[:3] == ["claude", "mcp", "add"] and "--" in words
    command = [env["HOME"] + w[1:] if w.startswith("~") else w for w in words]
    command = command[command.index("--") + 1 :]
    executable = shutil.which(command[0], path=env["PATH"])
    assert executable, f"{command[0]} is not on PATH"
    params = StdioServerParameters(command=executable, args=command[1:], env=env)

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            assert client.instructions and "memory_search" in client.instructions
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"memory_search", "memory_get", "memory_status"} <= names
            found = await client.call_tool("memory_search", {"query": "what time does the nightly backup run now?"})
            assert found.is_error is False
            top = found.structured_content["results"][0]
            assert top["path"] == "memory/2026-11-20.md" and "02:30" in top["snippet"]
            lines = await client.call_tool("memory_get", {"path": top["path"], "from": top["startLine"], "lines": 5})
            assert "02:30" in lines.structured_content["text"]

    anyio.run(scenario)


def test_getting_started_runs_step_by_step(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _env(home)
    blocks = sh_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 5, "the walk-through has five steps"
    install, notes, index, search, mcp = blocks

    # 1. install: this environment has the package; its console script answers
    assert install.splitlines()[0] == "pip install mdrecall"
    version = _bash("\n".join(install.splitlines()[1:]), env, home)
    assert version.stdout.startswith("mdrecall ")

    # 2. notes
    _bash(notes, env, home)
    assert (home / "notes" / "memory" / "2026-11-20.md").is_file()

    # 3. index: one index for this folder, named after it
    indexed = _bash(index, env, home)
    assert "2 files" in indexed.stdout
    assert [p.name.startswith("main-notes-") for p in (home / ".mdrecall" / "memory").glob("*.sqlite")] == [True]

    # 4. search by meaning, by identifier (JSON), then status
    searched = _bash(search, env, home)
    out = searched.stdout
    first = out.index("1. ")
    assert out[first:].startswith("1. memory/2026-11-20.md") and "02:30" in out
    payload = out[out.index("[\n") : out.index("\n]\n") + 2]
    assert json.loads(payload)[0]["path"] == "MEMORY.md"
    assert "picked because" in out and "dirty" in out

    # 5. MCP in Claude Code
    (line,) = [x for x in mcp.splitlines() if x.strip()]
    _claude_mcp_add(line, env)
