"""`mdrecall install claude-code|codex`: the files each agent reads, merged and backed up, with the workspace,
agent and state dir in every hook command and in the server's arguments. A temporary HOME throughout."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

from mdrecall.cli.app import app

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("MDRECALL_STATE_DIR", raising=False)
    return home


def _install(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def _flags(args: list[str]) -> dict[str, str]:
    return {flag: args[args.index(flag) + 1] for flag in ("--workspace", "--agent", "--state-dir")}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_claude_code_server_goes_to_claude_json_and_hooks_to_settings(home: Path, tmp_path: Path) -> None:
    ws, state = tmp_path / "notes", tmp_path / "state"
    ws.mkdir()
    claude_json = home / ".claude.json"
    original = {
        "numStartups": 7,
        "projects": {"/some/repo": {"allowedTools": [], "mcpServers": {}}},
        "mcpServers": {"other": {"type": "stdio", "command": "other-mcp", "args": []}},
    }
    claude_json.write_text(json.dumps(original))
    os.chmod(claude_json, 0o600)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    old_settings = {
        "model": "opus",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
        # where an earlier mdrecall wrongly put its server: removed, since Claude Code never read it there
        "mcpServers": {"mdrecall": {"command": sys.executable, "args": ["-m", "mdrecall.cli.app", "mcp"]}},
    }
    settings.write_text(json.dumps(old_settings))
    os.chmod(settings, 0o640)

    for _ in range(2):  # idempotent
        code, out, err = _install(
            ["--workspace", str(ws), "--agent", "coder", "--state-dir", str(state), "install", "claude-code"]
        )
        assert code == 0, err
    assert f"workspace: {ws.resolve()} (--workspace)" in out

    merged = json.loads(claude_json.read_text())
    assert {k: v for k, v in merged.items() if k != "mcpServers"} == {
        k: v for k, v in original.items() if k != "mcpServers"
    }
    assert merged["mcpServers"]["other"] == original["mcpServers"]["other"]
    server = merged["mcpServers"]["mdrecall"]
    assert server["type"] == "stdio" and server["command"] == sys.executable and server["args"][-1] == "mcp"
    assert _flags(server["args"]) == {
        "--workspace": str(ws.resolve()),
        "--agent": "coder",
        "--state-dir": str(state.resolve()),
    }
    assert _mode(claude_json) == 0o600

    hooks_file = json.loads(settings.read_text())
    assert hooks_file["model"] == "opus" and "mcpServers" not in hooks_file
    stop = [h["command"] for g in hooks_file["hooks"]["Stop"] for h in g["hooks"]]
    assert "notify-send done" in stop
    for event in EVENTS:
        ours = [h for g in hooks_file["hooks"][event] for h in g["hooks"] if "mdrecall" in h["command"]]
        assert len(ours) == 1, event
        words = ours[0]["command"].split()
        assert words[-2:] == ["hook", event]
        assert _flags(words) == {
            "--workspace": str(ws.resolve()),
            "--agent": "coder",
            "--state-dir": str(state.resolve()),
        }
    assert _mode(settings) == 0o640

    backups = sorted(home.glob(".claude.json.bak-*"))
    assert backups and json.loads(backups[0].read_text()) == original and _mode(backups[0]) == 0o600
    settings_backups = sorted(settings.parent.glob("settings.json.bak-*"))
    assert json.loads(settings_backups[0].read_text()) == old_settings and _mode(settings_backups[0]) == 0o640


def test_project_scope_writes_mcp_json_and_leaves_claude_json_alone(home: Path, tmp_path: Path) -> None:
    ws, project = tmp_path / "notes", tmp_path / "repo"
    ws.mkdir()
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"type": "http", "url": "http://x"}}}))
    code, _, err = _install(
        [
            "--workspace",
            str(ws),
            "--state-dir",
            str(tmp_path / "st"),
            "install",
            "claude-code",
            "--project",
            str(project),
        ]
    )
    assert code == 0, err
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["db"] == {"type": "http", "url": "http://x"} and servers["mdrecall"]["args"][-1] == "mcp"
    assert not (home / ".claude.json").exists()
    assert (home / ".claude" / "settings.json").exists()  # hooks stay user-level


def test_without_a_workspace_install_records_the_default_memory_home(home: Path, tmp_path: Path) -> None:
    state = tmp_path / "st"
    code, out, err = _install(["--state-dir", str(state), "install", "claude-code"])
    assert code == 0, err
    memory_home = state.resolve() / "workspace"
    assert memory_home.is_dir() and _mode(memory_home) == 0o700
    assert f"workspace: {memory_home} (default memory home" in out
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["mdrecall"]
    assert _flags(server["args"])["--workspace"] == str(memory_home)
    assert _flags(server["args"])["--agent"] == "main"


def test_unreadable_files_are_left_alone(home: Path, tmp_path: Path) -> None:
    (home / ".claude.json").write_text("{oops")
    code, _, err = _install(["--state-dir", str(tmp_path / "st"), "install", "claude-code"])
    assert code == 1 and err.startswith("error: cannot read") and len(err.strip().splitlines()) == 1
    assert (home / ".claude.json").read_text() == "{oops" and not (home / ".claude").exists()

    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text("model = [unclosed\n")
    code, _, err = _install(["--state-dir", str(tmp_path / "st"), "install", "codex"])
    assert code == 1 and "as TOML" in err and len(err.strip().splitlines()) == 1
    assert (home / ".codex" / "config.toml").read_text() == "model = [unclosed\n"
    assert not (home / ".codex" / "hooks.json").exists()


CODEX_CONFIG = """# my Codex settings
model = "gpt-5-codex"

[mcp_servers.mdrecall]
command = "/old/python"
args = ["-m", "mdrecall.cli.app", "mcp"]

[mcp_servers.mdrecall.env]
OLD = "1"

[mcp_servers.other]  # keep me
command = "other-mcp"

[profiles.fast]
model = "gpt-5-mini"
"""


def test_codex_config_toml_and_hooks_json(home: Path, tmp_path: Path) -> None:
    ws, state = tmp_path / "notes", tmp_path / "st"
    ws.mkdir()
    codex = home / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(CODEX_CONFIG)
    os.chmod(codex / "config.toml", 0o600)
    (codex / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}]}})
    )
    for _ in range(2):
        code, out, err = _install(["--workspace", str(ws), "--state-dir", str(state), "install", "codex"])
        assert code == 0, err
    text = (codex / "config.toml").read_text()
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5-codex" and parsed["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    assert parsed["mcp_servers"]["other"] == {"command": "other-mcp"}
    server = parsed["mcp_servers"]["mdrecall"]
    assert server["command"] == sys.executable and server["args"][-1] == "mcp" and "env" not in server
    assert _flags(server["args"]) == {
        "--workspace": str(ws.resolve()),
        "--agent": "main",
        "--state-dir": str(state.resolve()),
    }
    assert text.startswith("# my Codex settings\n") and "[mcp_servers.other]  # keep me\n" in text
    assert text.count("[mcp_servers.mdrecall]") == 1 and _mode(codex / "config.toml") == 0o600

    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop"}
    stop = [h["command"] for g in hooks["Stop"] for h in g["hooks"]]
    assert "say done" in stop and sum("mdrecall" in c for c in stop) == 1
    for event, groups in hooks.items():
        ours = [h for g in groups for h in g["hooks"] if "mdrecall" in h["command"]]
        assert len(ours) == 1 and ours[0]["command"].endswith(f"hook {event}")
        assert _flags(ours[0]["command"].split())["--workspace"] == str(ws.resolve())
    assert sorted(codex.glob("config.toml.bak-*"))


def test_codex_home_env_is_honoured(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    code, _, err = _install(["--state-dir", str(tmp_path / "st"), "install", "codex"])
    assert code == 0, err
    assert "mdrecall" in tomllib.loads((elsewhere / "config.toml").read_text())["mcp_servers"]
    assert not (home / ".codex").exists()


def test_install_says_in_one_line_what_is_missing_without_the_facts_extra(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)  # `import lancedb` raises ImportError
    code, out, err = _install(["--state-dir", str(tmp_path / "st"), "install", "claude-code"])
    assert code == 0, err
    notes = [line for line in out.splitlines() if "LanceDB" in line]
    assert notes == [
        "note: hooks will not recall or capture memories until LanceDB is installed: "
        "the fact store needs LanceDB: pip install 'mdrecall[facts]'"
    ]
