"""OpenClaw 2026.9 configs: `memory.search`, keyed `agents.entries`, keys from `models.providers`, the
workspace default under the state dir, and `mdrecall install openclaw` (MCP server + memory slot)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.agents.hooks import install_openclaw, merge_openclaw_config
from mdrecall.cli.app import app
from mdrecall.config.openclaw import (
    agent_workspace,
    default_agent_id,
    load_openclaw_config,
    memory_config_from_openclaw,
    resolve_openclaw_settings,
)
from mdrecall.errors import MdrecallError

FIXTURE = Path(__file__).parent / "fixtures" / "openclaw" / "openclaw-2026.9.json5"


@pytest.fixture
def raw(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    monkeypatch.setenv("OC_TEST_HOME", str(tmp_path))
    monkeypatch.setenv("OC_TEST_KEY", "sk-openai-from-config")
    monkeypatch.setenv("OC_TEST_GEMINI", "gm-from-secretref")
    for name in ("OPENAI_API_KEY", "OPENCLAW_WORKSPACE_DIR"):
        monkeypatch.delenv(name, raising=False)
    return load_openclaw_config(FIXTURE)


def test_memory_search_and_provider_key(raw: dict) -> None:
    config, warnings = memory_config_from_openclaw(raw, "main")
    assert config.provider == "openai" and config.model == "text-embedding-3-small"
    assert (config.query.max_results, config.query.min_score) == (6, 0.35)
    assert config.extra_paths == ["../team-docs"] and config.citations == "auto"
    assert config.openai.api_key == "sk-openai-from-config"  # models.providers.openai.apiKey (${VAR})
    assert config.gemini.api_key == "gm-from-secretref"  # models.providers.google.apiKey as an env SecretRef
    assert any("rememberAcrossConversations" in w for w in warnings)  # an OpenClaw-only knob: named, dropped
    assert not any("memory.search" in w and "not supported" in w for w in warnings)


def test_new_name_wins_over_the_old_one() -> None:
    raw = {
        "memorySearch": {"chunking": {"tokens": 200}},
        "agents": {"defaults": {"memorySearch": {"provider": "none", "query": {"maxResults": 9, "minScore": 0.1}}}},
        "memory": {"search": {"query": {"maxResults": 4}}},
    }
    config, _ = memory_config_from_openclaw(raw, "main")
    assert config.query.max_results == 4  # memory.search wins
    assert config.query.min_score == 0.1 and config.provider == "none"  # older keys fill the rest
    assert config.chunking.tokens == 200  # even the oldest top-level memorySearch is read


def test_agent_entries_override_and_custom_providers(raw: dict) -> None:
    assert default_agent_id(raw) == "main"
    work, _ = memory_config_from_openclaw(raw, "work")
    assert work.query.max_results == 3 and work.query.min_score == 0.35  # override + inherited
    # a custom Ollama provider: its OpenAI-compatible endpoint, its placeholder key, the configured model
    assert work.provider == "openai" and work.model == "qwen3-embedding:0.6b"
    assert work.openai.base_url == "http://gpu-box.local:11435/v1" and work.openai.api_key == "ollama-local"

    research, warnings = memory_config_from_openclaw(raw, "research")
    assert research.provider == "openai" and research.openai.base_url == "https://embeddings.example.com/v1"
    assert research.openai.api_key is None  # the profile is not read, and OpenAI's own key never goes elsewhere
    profile = [w for w in warnings if "auth profile" in w]
    assert len(profile) == 1 and "'my-embeddings:default'" in profile[0]
    assert "models.providers.my-embeddings.apiKey" in profile[0]


def test_unknown_agent_and_unsupported_things_warn_once(raw: dict) -> None:
    _, warnings = memory_config_from_openclaw(raw, "ghost")
    assert any("'ghost' is not in agents.entries" in w for w in warnings)
    odd = {
        "memory": {"search": {"provider": "bedrock", "remote": {"apiKey": {"source": "file", "id": "/k"}}}},
        "models": {"providers": {"openai": {"apiKey": {"source": "exec", "id": "op read"}}}},
    }
    config, warnings = memory_config_from_openclaw(odd, "main")
    assert config.provider == "auto" and config.remote.api_key is None and config.openai.api_key is None
    assert sum("'bedrock' is not supported" in w for w in warnings) == 1
    assert sum("'file' secret reference" in w for w in warnings) == 1
    assert sum("'exec' secret reference" in w for w in warnings) == 1


def test_workspaces_as_openclaw_resolves_them(raw: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    assert agent_workspace(raw, "work", state) == (tmp_path / "work-notes").resolve()
    assert agent_workspace(raw, "helper", state) == (tmp_path / "workspace" / "helper").resolve()
    assert agent_workspace(raw, "main", state) == (tmp_path / "workspace").resolve()
    bare = {"agents": {"entries": {"main": {}, "helper": {}}}}
    assert agent_workspace(bare, "main", state) == state / "workspace"  # was ~/.openclaw/workspace
    assert agent_workspace(bare, "helper", state) == state / "workspace-helper"
    monkeypatch.setenv("OPENCLAW_WORKSPACE_DIR", str(tmp_path / "elsewhere"))
    assert agent_workspace(bare, "main", state) == (tmp_path / "elsewhere").resolve()


def test_transcripts_in_sqlite_are_named_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    monkeypatch.delenv("OPENCLAW_WORKSPACE_DIR", raising=False)
    state = tmp_path / "state"
    (state / "workspace").mkdir(parents=True)
    (state / "agents" / "main" / "agent").mkdir(parents=True)
    (state / "agents" / "main" / "agent" / "openclaw-agent.sqlite").write_bytes(b"")
    search = {"sources": ["memory", "sessions"], "experimental": {"sessionMemory": True}, "provider": "none"}
    (state / "openclaw.json").write_text(json.dumps({"memory": {"search": search}}), encoding="utf-8")
    settings, warnings = resolve_openclaw_settings(state_dir=state)
    assert settings.workspace == (state / "workspace").resolve()
    assert any("openclaw-agent.sqlite" in w and "does not read" in w for w in warnings)


# -- mdrecall install openclaw ------------------------------------------------------------------------------


def test_merge_keeps_everything_else(raw: dict) -> None:
    merged, notes = merge_openclaw_config(raw, ["/usr/bin/python3", "-m", "mdrecall.cli", "--openclaw"])
    assert merged["plugins"]["slots"]["memory"] == "none"
    assert merged["mcp"]["servers"]["mdrecall"] == {
        "command": "/usr/bin/python3",
        "args": ["-m", "mdrecall.cli", "--openclaw", "mcp"],
    }
    assert merged["mcp"]["servers"]["docs"] == raw["mcp"]["servers"]["docs"]
    assert merged["models"] == raw["models"] and merged["agents"] == raw["agents"]
    assert notes == []
    again, notes = merge_openclaw_config({**merged, "plugins": {"slots": {"memory": "memory-lancedb"}}}, ["x"])
    assert again["mcp"]["servers"]["mdrecall"] == {"command": "x", "args": ["mcp"]}
    assert any("memory-lancedb" in n for n in notes) and any("replaced" in n for n in notes)


def test_install_backs_up_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "openclaw.json"
    shutil.copy(FIXTURE, target)
    os.chmod(target, 0o640)
    before = target.read_bytes()
    written = install_openclaw(target, ["/bin/mdrecall", "--openclaw"], {"MDRECALL_STATE_DIR": "/x"})
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    (backup,) = (Path(b) for b in written["backups"])
    assert backup.read_bytes() == before and stat.S_IMODE(backup.stat().st_mode) == 0o640
    assert any("JSON5" in n for n in written["notes"])
    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["mcp"]["servers"]["mdrecall"]["env"] == {"MDRECALL_STATE_DIR": "/x"}
    fresh = tmp_path / "new" / "openclaw.json"
    install_openclaw(fresh, ["/bin/mdrecall"])
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600 and not list(fresh.parent.glob("*.bak-*"))


def test_install_refuses_a_broken_file(tmp_path: Path) -> None:
    target = tmp_path / "openclaw.json"
    target.write_text("{agents: ", encoding="utf-8")
    with pytest.raises(MdrecallError, match="nothing changed"):
        install_openclaw(target, ["/bin/mdrecall"])
    assert target.read_text(encoding="utf-8") == "{agents: " and not list(tmp_path.glob("*.bak-*"))


def test_cli_install_writes_every_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "oc-state"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    monkeypatch.delenv("MDRECALL_STATE_DIR", raising=False)
    result = CliRunner().invoke(app, ["--agent", "work", "install", "openclaw"])
    assert result.exit_code == 0, result.output
    data = json.loads((state / "openclaw.json").read_text(encoding="utf-8"))
    server = data["mcp"]["servers"]["mdrecall"]
    # OpenClaw passes MCP servers only HOME/PATH/SHELL/TERM: the locations must be arguments
    assert server["command"] == sys.executable and "env" not in server
    args = server["args"]
    assert args[:3] == ["-m", "mdrecall.cli", "--openclaw"] and args[-1] == "mcp"
    assert args[args.index("--state-dir") + 1] == str(state.resolve())
    assert args[args.index("--config") + 1] == str((state / "openclaw.json").resolve())
    assert args[args.index("--agent") + 1] == "work"
    assert data["plugins"]["slots"]["memory"] == "none"
    assert "mdrecall__memory_search" in result.stdout

    broken = tmp_path / "broken.json"
    broken.write_text("[1]", encoding="utf-8")
    result = CliRunner().invoke(app, ["install", "openclaw", "--openclaw-config", str(broken)])
    assert result.exit_code == 1 and "nothing changed" in result.stderr and "Traceback" not in result.output


def test_keep_memory_plugin_denies_only_its_two_tools(raw: dict) -> None:
    existing = {**raw, "tools": {"deny": ["browser", "MEMORY_GET"]}}
    merged, _ = merge_openclaw_config(existing, ["x"], keep_memory_plugin=True)
    assert merged["tools"]["deny"] == ["browser", "MEMORY_GET", "memory_search"]  # deny is case-insensitive
    assert merged["plugins"] == raw["plugins"] and merged["mcp"]["servers"]["mdrecall"]["args"] == ["mcp"]
    untouched, _ = merge_openclaw_config({}, ["x"], keep_memory_plugin=True)
    assert "plugins" not in untouched and untouched["tools"]["deny"] == ["memory_search", "memory_get"]


def test_unset_variables_of_chat_providers_stay_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OC_UNSET_CHAT_KEY", raising=False)
    raw = {"models": {"providers": {"anthropic": {"apiKey": "${OC_UNSET_CHAT_KEY}"}}}, "memory": {"search": {}}}
    _, warnings = memory_config_from_openclaw(raw, "main")
    assert not any("OC_UNSET_CHAT_KEY" in w for w in warnings)  # not an embedding provider: never read


def _store(path: Path, table: str, key_column: str, key: str, profiles: dict) -> None:
    """A credential store with the schema OpenClaw 2026.9 writes (`openclaw models auth paste-api-key`)."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    value_column = "value_json" if table == "config_machine_state" else "store_json"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE {table} ({key_column} TEXT PRIMARY KEY, {value_column} TEXT, updated INTEGER)")
        conn.execute(f"INSERT INTO {table} VALUES (?, ?, 1)", (key, json.dumps({"version": 1, "profiles": profiles})))
    conn.close()


def test_keys_saved_as_auth_profiles_are_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    state = tmp_path / "state"
    shared = {
        "openai:manual": {"type": "api_key", "provider": "openai", "key": "sk-shared"},
        "openai:work": {"type": "api_key", "provider": "openai", "key": "sk-work"},
        "my-embeddings:default": {"type": "token", "provider": "my-embeddings", "token": "tok-embed"},
        "voyage:oauth": {"type": "oauth", "provider": "voyage", "access": "never-used"},
    }
    _store(state / "state" / "openclaw.sqlite", "config_machine_state", "state_key", "authProfiles.store", shared)
    raw = {"memory": {"search": {"provider": "openai"}}}
    config, warnings = memory_config_from_openclaw(raw, "main", state_dir=state)
    assert config.openai.api_key == "sk-shared" and warnings == []
    ordered = {**raw, "auth": {"order": {"openai": ["openai:work"]}}}
    assert memory_config_from_openclaw(ordered, "main", state_dir=state)[0].openai.api_key == "sk-work"
    agent_store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    mine = {"openai:manual": {"type": "api_key", "provider": "openai", "key": "sk-agent"}}
    _store(agent_store, "auth_profile_store", "store_key", "main", mine)
    assert memory_config_from_openclaw(raw, "main", state_dir=state)[0].openai.api_key == "sk-agent"  # agent wins
    custom = {
        "models": {"providers": {"my-embeddings": {"api": "openai-completions", "apiKey": "my-embeddings:default"}}},
        "memory": {"search": {"provider": "my-embeddings"}},
    }
    config, warnings = memory_config_from_openclaw(custom, "main", state_dir=state)
    assert config.openai.api_key == "tok-embed" and warnings == []
    voyage, _ = memory_config_from_openclaw({"memory": {"search": {"provider": "voyage"}}}, "main", state_dir=state)
    assert voyage.voyage.api_key is None  # OAuth profiles do not cover embeddings
    nothing, _ = memory_config_from_openclaw({"memory": {"search": {}}}, "main", state_dir=state)
    assert nothing.openai.api_key is None  # no remote provider chosen: the store is not read for it
