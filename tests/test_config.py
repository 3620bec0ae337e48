"""Config file loading, defaults, validation messages, and path resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdrecall.config.settings import MemoryConfig, load_config_file, parse_config, resolve_settings, workspace_key
from mdrecall.errors import ConfigError, WorkspaceError


def test_defaults_match_the_spec() -> None:
    cfg = MemoryConfig()
    assert (cfg.chunking.tokens, cfg.chunking.overlap) == (400, 80)
    assert (cfg.query.max_results, cfg.query.min_score) == (6, 0.35)
    # Departure measured on LoCoMo (bench/quality/README.md): min-max fusion 0.5/0.5 with the OR keyword side;
    # the spec's fusion stays one config block away.
    assert cfg.query.hybrid.normalized_weights() == (0.5, 0.5)
    assert (cfg.query.hybrid.mode, cfg.query.hybrid.keyword_query) == ("minmax", "or")
    spec = parse_config(
        {"query": {"hybrid": {"mode": "weighted", "vectorWeight": 0.7, "textWeight": 0.3, "keywordQuery": "and"}}}
    )
    assert spec.query.hybrid.normalized_weights() == (0.7, 0.3) and spec.query.hybrid.mode == "weighted"
    assert cfg.query.hybrid.candidate_multiplier == 4
    assert cfg.query.snippet_max_chars == 700
    assert cfg.sync.watch_debounce_ms == 1500
    assert (cfg.sync.sessions.delta_bytes, cfg.sync.sessions.delta_messages) == (100_000, 50)
    assert cfg.sources == ["memory"] and cfg.provider == "auto" and cfg.cache.enabled


def test_toml_file_with_camel_case_keys(tmp_path: Path) -> None:
    path = tmp_path / "mdrecall.toml"
    path.write_text(
        'provider = "none"\nextraPaths = ["../team"]\n[query]\nmaxResults = 3\n'
        "[query.hybrid]\nvectorWeight = 2\ntextWeight = 2\n[chunking]\ntokens = 200\noverlap = 40\n"
    )
    cfg = load_config_file(path)
    assert cfg.provider == "none" and cfg.extra_paths == ["../team"]
    assert cfg.query.max_results == 3
    assert cfg.query.hybrid.normalized_weights() == (0.5, 0.5)
    assert (cfg.chunking.tokens, cfg.chunking.overlap) == (200, 40)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"query": {"maxResult": 3}}, "query.maxResult: unknown key"),
        ({"query": {"minScore": "high"}}, "query.minScore"),
        ({"query": {"minScore": 2}}, "query.minScore"),
        ({"chunking": {"tokens": -5}}, "chunking.tokens"),
        ({"chunking": {"tokens": 100, "overlap": 100}}, "overlap (100) must be smaller than chunking.tokens"),
        ({"provider": "cohere"}, "provider"),
        ({"query": {"hybrid": {"vectorWeight": 0, "textWeight": 0}}}, "cannot both be 0"),
        ({"sources": []}, "sources"),
        ({"sources": ["web"]}, "sources.0"),
    ],
)
def test_validation_errors_name_the_key(data: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data, "test.toml")
    assert needle in str(excinfo.value)
    assert str(excinfo.value).startswith("invalid config test.toml:")


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ("[query]\nmaxResults = true\n", "query.maxResults: expected an integer, got true (a boolean)"),
        ('enabled = "yes"\n', 'enabled: expected true or false, got "yes" (a string)'),
        ("[sync]\nwatch = 1\n", "sync.watch: expected true or false, got 1 (an integer)"),
        ("[query]\nmaxResults = 2.5\n", "query.maxResults: expected an integer, got 2.5 (a number with a fraction)"),
        ('[query]\nminScore = "0.5"\n', 'query.minScore: expected a number, got "0.5" (a string)'),
        ('[chunking]\ntokens = "400"\n', 'chunking.tokens: expected an integer, got "400" (a string)'),
        ('extraPaths = "../team"\n', 'extraPaths: expected a list, got "../team" (a string)'),
        ("query = 5\n", "query: expected a table, got 5 (an integer)"),
        ("[qmd.update]\ninterval = true\n", "qmd.update.interval: expected a string or an integer, got true"),
        ("[query.mmr]\nlambda = false\n", "query.mmr.lambda: expected a number, got false (a boolean)"),
        ("provider = 3\n", "provider: Input should be 'auto', 'local', 'openai', 'gemini', 'voyage' or 'none', got 3"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_in_one_line(tmp_path: Path, toml: str, line: str) -> None:
    """TOML is typed: a wrong type is a mistake to report (key, value, expected type), never a silent coercion."""
    path = tmp_path / "mdrecall.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as excinfo:
        load_config_file(path)
    message = str(excinfo.value)
    assert message == f"invalid config {path}: {line}" or message.startswith(f"invalid config {path}: {line} (")
    assert "\n" not in message


def test_a_secret_of_the_wrong_type_is_not_repeated_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "mdrecall.toml"
    path.write_text("[remote]\napiKey = 918273645\nheaders = { Authorization = 55501234 }\n")
    with pytest.raises(ConfigError) as excinfo:
        load_config_file(path)
    message = str(excinfo.value)
    assert "remote.apiKey: expected a string, got an integer" in message
    assert "remote.headers.Authorization: expected a string, got an integer" in message
    assert "918273645" not in message and "55501234" not in message


def test_leniencies_that_change_no_meaning_are_kept(tmp_path: Path) -> None:
    """An integer where a number is expected, a whole-number float where an integer is, a tuple for a list."""
    path = tmp_path / "mdrecall.toml"
    path.write_text("[query]\nminScore = 0\nmaxResults = 6.0\n[query.hybrid]\nvectorWeight = 1\n")
    cfg = load_config_file(path)
    assert cfg.query.min_score == 0 and isinstance(cfg.query.min_score, float)
    assert cfg.query.max_results == 6 and type(cfg.query.max_results) is int
    assert cfg.query.hybrid.vector_weight == 1.0
    settings = resolve_settings(workspace=tmp_path, state_dir=tmp_path / "s", config={"extraPaths": ("../team",)})
    assert settings.config.extra_paths == ["../team"]
    with pytest.raises(ConfigError, match=r"sync\.watch: expected true or false, got 1 \(an integer\)"):
        resolve_settings(workspace=tmp_path, state_dir=tmp_path / "s", config={"sync": {"watch": 1}})


def test_bad_toml_and_missing_file_are_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("provider = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config_file(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_config_file(tmp_path / "nope.toml")


def test_state_dir_and_db_path_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("MDRECALL_STATE_DIR", str(tmp_path / "env-state"))
    key = workspace_key(ws)
    assert key.startswith("ws-") and len(key) == len("ws-") + 8
    assert resolve_settings(workspace=ws).db_path == tmp_path / "env-state" / "memory" / f"main-{key}.sqlite"
    explicit = resolve_settings(workspace=ws, state_dir=tmp_path / "s", agent_id="ops")
    assert explicit.db_path == tmp_path / "s" / "memory" / f"ops-{key}.sqlite"
    assert resolve_settings(workspace=ws, db_path=tmp_path / "x.db").db_path == tmp_path / "x.db"
    templated = resolve_settings(
        workspace=ws,
        state_dir=tmp_path / "s",
        agent_id="ops",
        config=parse_config({"store": {"path": "idx/{agentId}.db"}}),
    )
    assert templated.db_path == tmp_path / "s" / "idx" / "ops.db"
    monkeypatch.delenv("MDRECALL_STATE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_settings(workspace=ws).state_dir == tmp_path / "home" / ".mdrecall"


def test_workspace_config_file_is_picked_up(tmp_path: Path) -> None:
    (tmp_path / "mdrecall.toml").write_text('provider = "none"\n')
    settings = resolve_settings(workspace=tmp_path, state_dir=tmp_path / "s")
    assert settings.config.provider == "none" and settings.config_path == tmp_path / "mdrecall.toml"


def test_missing_workspace_and_bad_agent(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="workspace not found"):
        resolve_settings(workspace=tmp_path / "missing")
    with pytest.raises(ConfigError, match="agent id"):
        resolve_settings(workspace=tmp_path, agent_id="../evil")


def test_library_config_argument_takes_a_dict_and_refuses_a_file_name_in_one_line(tmp_path: Path) -> None:
    """`resolve_settings(config=...)` as an agent builder guesses it: a dict of keys works, a file name is
    refused with a line pointing to config_path (not an AttributeError from deep inside)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = resolve_settings(workspace=ws, state_dir=tmp_path / "s", config={"query": {"maxResults": 3}})
    assert settings.config.query.max_results == 3
    with pytest.raises(ConfigError, match="query.maxResults"):
        resolve_settings(workspace=ws, state_dir=tmp_path / "s", config={"query": {"maxResults": 0}})
    (ws / "mine.toml").write_text('provider = "none"\n')
    with pytest.raises(ConfigError, match="config_path"):
        resolve_settings(workspace=ws, state_dir=tmp_path / "s", config=str(ws / "mine.toml"))  # type: ignore[arg-type]
