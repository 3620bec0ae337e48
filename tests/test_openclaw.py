"""Reading an OpenClaw config (JSON5): defaults + per-agent overrides, layout, dropped keys, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mdrecall.agents.flush import flush_settings_from_openclaw
from mdrecall.agents.tools import MEMORY_SEARCH, MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.openclaw import (
    deep_merge,
    default_agent_id,
    load_openclaw_config,
    memory_config_from_openclaw,
    openclaw_state_dir,
    resolve_openclaw_settings,
)
from mdrecall.errors import ConfigError

from .conftest import write

FIXTURE = Path(__file__).parent / "fixtures" / "openclaw" / "openclaw.json"


@pytest.fixture
def openclaw_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home with ~/.openclaw/openclaw.json (the fixture) and the workspaces it names."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    shutil.copy(FIXTURE, state / "openclaw.json")
    for folder in ("workspace", "work-notes"):
        (home / folder).mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OC_TEST_HOME", str(home))
    monkeypatch.setenv("OC_TEST_KEY", "sk-test-123")
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_defaults_for_the_default_agent(openclaw_home: Path) -> None:
    settings, warnings = resolve_openclaw_settings()
    state = openclaw_home / ".openclaw"
    assert settings.agent_id == "main"
    assert settings.workspace == (openclaw_home / "workspace").resolve()
    assert settings.state_dir == state.resolve()
    # mdrecall's index for an OpenClaw agent lives in mdrecall's state dir, never OpenClaw's
    assert settings.db_path.parent == (openclaw_home / ".mdrecall" / "openclaw").resolve()
    assert settings.db_path.name.startswith("main-workspace-")
    assert settings.sessions_dir == state.resolve() / "agents" / "main" / "sessions"
    assert settings.config_path == state / "openclaw.json"

    cfg = settings.config
    assert cfg.provider == "none" and cfg.extra_paths == ["../team-docs"]
    assert (cfg.chunking.tokens, cfg.chunking.overlap) == (300, 60)
    assert (cfg.query.max_results, cfg.query.min_score) == (8, 0.3)
    assert cfg.query.hybrid.normalized_weights() == pytest.approx((0.6, 0.4))
    assert cfg.query.mmr.enabled and cfg.query.mmr.lambda_ == 0.5
    assert cfg.query.temporal_decay.enabled and cfg.query.temporal_decay.half_life_days == 14
    assert cfg.store.vector.enabled is False
    assert cfg.sync.watch is False and cfg.sync.sessions.delta_bytes == 50_000
    assert cfg.sync.sessions.delta_messages == 50  # untouched default
    assert cfg.remote.api_key == "sk-test-123" and cfg.remote.batch.concurrency == 3
    assert cfg.citations == "off" and cfg.backend == "builtin"
    assert cfg.local.model_path is None  # the GGUF path was dropped

    assert any("memorySearch.futureKnob" in w for w in warnings)
    assert any("memorySearch.local.modelPath" in w and "GGUF" in w for w in warnings)
    assert not any(w.startswith("memory.qmd") for w in warnings)  # memory.qmd is read (the qmd backend)
    assert cfg.qmd.include_default_memory is True
    assert not any("query.hybrid" in w for w in warnings)  # moved, not dropped


def test_per_agent_override_deep_merges(openclaw_home: Path) -> None:
    settings, _ = resolve_openclaw_settings(agent_id="WORK")
    assert settings.agent_id == "work"
    assert settings.workspace == (openclaw_home / "work-notes").resolve()
    assert settings.db_path.name.startswith("work-work-notes-")
    cfg = settings.config
    assert cfg.query.max_results == 3 and cfg.query.min_score == 0.3  # override + inherited
    assert cfg.query.hybrid.vector_weight == 0.6 and cfg.query.hybrid.text_weight == 0.5
    assert cfg.query.mmr.enabled  # the default's nested section survives the merge
    assert cfg.extra_paths == [] and cfg.sources == ["memory", "sessions"]
    assert cfg.experimental.session_memory is True and cfg.chunking.tokens == 300


def test_other_agents_default_to_their_own_workspace(openclaw_home: Path) -> None:
    # OpenClaw 2026.9: under agents.defaults.workspace when that is set, else <state>/workspace-<id>
    (openclaw_home / "workspace" / "helper").mkdir()
    settings, _ = resolve_openclaw_settings(agent_id="helper")
    assert settings.workspace == (openclaw_home / "workspace" / "helper").resolve()
    state = (openclaw_home / ".openclaw").resolve()
    (state / "workspace-helper").mkdir()
    without_default = state / "bare.json"
    without_default.write_text("{agents: {entries: {main: {}, helper: {}}}}", encoding="utf-8")
    bare, _ = resolve_openclaw_settings(agent_id="helper", config_path=without_default)
    assert bare.workspace == state / "workspace-helper"
    explicit, _ = resolve_openclaw_settings(
        agent_id="helper", workspace=openclaw_home / "workspace", db_path=openclaw_home / "x.sqlite"
    )
    assert explicit.workspace == (openclaw_home / "workspace").resolve()
    assert explicit.db_path == (openclaw_home / "x.sqlite").resolve()


def test_unlisted_agent_uses_defaults_with_a_warning(openclaw_home: Path) -> None:
    raw = load_openclaw_config(FIXTURE)
    config, warnings = memory_config_from_openclaw(raw, "ghost")
    assert config.query.max_results == 8
    assert any("'ghost' is not in agents.list" in w for w in warnings)


def test_env_vars_choose_state_and_config(openclaw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "elsewhere"
    state.mkdir()
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    assert openclaw_state_dir() == state.resolve()
    config = write(tmp_path, "custom.json5", "{agents: {defaults: {memorySearch: {provider: 'none'}}},}")
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(config))
    ws = tmp_path / "ws"
    ws.mkdir()
    settings, warnings = resolve_openclaw_settings(workspace=ws)
    assert settings.config_path == config and not settings.db_path.is_relative_to(state.resolve())
    assert settings.config.query.max_results == 6 and warnings == []


def test_missing_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    settings, warnings = resolve_openclaw_settings(workspace=ws, state_dir=tmp_path / "state")
    assert settings.config_path is None and settings.config.provider == "auto"
    assert any("no OpenClaw config" in w for w in warnings)
    with pytest.raises(ConfigError, match="not found"):
        resolve_openclaw_settings(workspace=ws, config_path=tmp_path / "nope.json")


def test_invalid_files_and_values(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.json", "{agents: {defaults: ")
    with pytest.raises(ConfigError, match="not valid JSON5"):
        load_openclaw_config(broken)
    with pytest.raises(ConfigError, match="top level"):
        load_openclaw_config(write(tmp_path, "list.json", "[1, 2]"))
    bad = {"agents": {"defaults": {"memorySearch": {"query": {"maxResults": "many"}, "chunking": {"tokens": 0}}}}}
    with pytest.raises(ConfigError) as info:
        memory_config_from_openclaw(bad, "main", "openclaw.json")
    assert "query.maxResults" in str(info.value) and "chunking.tokens" in str(info.value)
    assert "agents.defaults.memorySearch" in str(info.value)
    with pytest.raises(ConfigError, match="citations"):
        memory_config_from_openclaw({"memory": {"citations": "sometimes"}}, "main")


def test_openclaw_json_numbers_and_typed_values(tmp_path: Path) -> None:
    """JSON has one number type: 0 for a number and 6.0 for an integer are taken; a string for a bool is not."""
    raw = json.loads('{"memory": {"search": {"query": {"minScore": 0, "maxResults": 6.0}, "sync": {"watch": false}}}}')
    config, _ = memory_config_from_openclaw(raw, "main")
    assert (config.query.min_score, config.query.max_results, config.sync.watch) == (0.0, 6, False)
    assert type(config.query.max_results) is int
    bad = {"memory": {"search": {"enabled": "yes", "query": {"maxResults": True}}}}
    with pytest.raises(ConfigError) as info:
        memory_config_from_openclaw(bad, "main", "openclaw.json")
    assert 'enabled: expected true or false, got "yes" (a string)' in str(info.value)
    assert "query.maxResults: expected an integer, got true (a boolean)" in str(info.value)


def test_default_agent_id() -> None:
    assert default_agent_id({}) == "main"
    assert default_agent_id({"agents": {"list": [{"id": "A"}, {"id": "b"}]}}) == "a"
    assert default_agent_id({"agents": {"list": [{"id": "a"}, {"id": "b", "default": True}]}}) == "b"


def test_deep_merge_does_not_mutate() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    merged = deep_merge(base, {"a": {"c": [3]}, "e": {"f": 2}})
    assert merged == {"a": {"b": 1, "c": [3]}, "d": 1, "e": {"f": 2}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


def test_flush_settings(openclaw_home: Path) -> None:
    settings = flush_settings_from_openclaw(load_openclaw_config(FIXTURE))
    assert (settings.reserve_tokens_floor, settings.soft_threshold_tokens) == (30_000, 2_000)
    assert settings.system_prompt.startswith("Session nearing compaction.") and "NO_REPLY" in settings.system_prompt
    assert flush_settings_from_openclaw({}).reserve_tokens_floor == 20_000


def test_search_through_openclaw_settings(openclaw_home: Path) -> None:
    write(openclaw_home / "workspace", "MEMORY.md", "# Memory\n\nThe deploy fix landed in a828e60.\n")
    settings, _ = resolve_openclaw_settings()
    with MemoryIndex(settings) as index:
        result = MemoryTools(index).call(MEMORY_SEARCH, {"query": "a828e60"})
    top = result["results"][0]
    assert top["path"] == "MEMORY.md" and "citation" not in top  # memory.citations = "off"
    assert settings.db_path.is_file()


def test_cli_searches_an_openclaw_install(openclaw_home: Path) -> None:
    from typer.testing import CliRunner

    from mdrecall.cli.app import app

    write(openclaw_home / "workspace", "MEMORY.md", "The staging gateway answers on port 18789.\n")
    result = CliRunner().invoke(app, ["--openclaw", "search", "18789", "--json"])
    assert result.exit_code == 0, result.output
    assert [hit["path"] for hit in json.loads(result.stdout)] == ["MEMORY.md"]
    assert "futureKnob" in result.stderr  # dropped keys are reported, not fatal
    assert not (openclaw_home / ".openclaw" / "indexes").exists()  # OpenClaw's files are never written
    assert list((openclaw_home / ".mdrecall" / "openclaw").glob("main-*.sqlite"))
