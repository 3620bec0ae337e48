"""The qmd backend against a fake `qmd` on PATH: home, collections, updates, search, paths, limits, scope."""
# ruff: noqa: F811  (pytest fixtures imported from qmd_helpers are redefined as parameters)

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from mdrecall.agents.tools import MemoryTools
from mdrecall.backends.fallback import FallbackBackend
from mdrecall.backends.qmd import handelize, scope_allows
from mdrecall.config.settings import QmdScopeConfig, parse_config, parse_duration_ms
from mdrecall.errors import ConfigError, MdrecallError, PathRefusedError

from .qmd_helpers import FakeQmd, fake_qmd, make_qmd, qmd_workspace, write  # noqa: F401

# -- the self-contained home and the collections ---------------------------------------------------------


def test_every_call_runs_in_the_agents_own_qmd_home(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    backend = make_qmd({"searchMode": "vsearch"})
    backend.sync()
    backend.search("flamingo")
    home = tmp_path / "state" / "agents" / "main" / "qmd"
    calls = fake_qmd.all_calls()
    assert {c["args"][0] for c in calls} >= {"update", "embed", "vsearch"}
    for call in calls:
        assert call["xdgConfig"] == str(home / "xdg-config")
        assert call["xdgCache"] == str(home / "xdg-cache")
        assert call["cwd"] == str(home)  # never inside the workspace, so no project-local .qmd/ is adopted
    assert (home / "xdg-cache" / "qmd" / "fake-index.json").exists()
    assert not (tmp_path / "must-not-be-used").exists()


def test_collections_are_the_default_memory_files_plus_configured_paths(
    fake_qmd: FakeQmd, make_qmd, qmd_workspace: Path, tmp_path: Path
) -> None:
    backend = make_qmd({"paths": [{"name": "Team Docs", "path": str(tmp_path / "docs"), "pattern": "sub/*.md"}]})
    backend.sync()
    index_yml = tmp_path / "state/agents/main/qmd/xdg-config/qmd/index.yml"
    collections = json.loads(index_yml.read_text())["collections"]
    assert collections["memory-root"] == {"path": str(qmd_workspace), "pattern": "MEMORY.md"}
    assert collections["memory-dir"] == {"path": str(qmd_workspace / "memory"), "pattern": "**/*.md"}
    assert collections["team-docs"] == {"path": str(tmp_path / "docs"), "pattern": "sub/*.md"}


def test_include_default_memory_false_leaves_only_the_configured_paths(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd({"includeDefaultMemory": False})
    assert [c.name for c in backend.primary.collections()] == ["docs"]


# -- updates: boot, debounce, interval, timeouts -------------------------------------------------------------


def test_update_and_embed_on_boot_then_debounced(fake_qmd: FakeQmd, make_qmd, qmd_workspace: Path) -> None:
    backend = make_qmd({"searchMode": "query", "update": {"debounceMs": 60_000, "interval": "5m"}})
    backend.ensure_fresh()  # boot: builtin sync + qmd update + embed (in the background)
    assert backend.wait_idle(5)
    assert len(fake_qmd.calls("update")) == 1 and len(fake_qmd.calls("embed")) == 1
    backend.ensure_fresh()
    write(qmd_workspace, "memory/2026-02-01.md", "# Feb 1\n\nNew pelican note.\n")
    backend.ensure_fresh()  # changed, but within debounceMs of the last update
    assert len(fake_qmd.calls("update")) == 1
    backend.sync()  # an explicit sync (mdrecall index) is not debounced
    assert len(fake_qmd.calls("update")) == 2
    assert len(fake_qmd.calls("embed")) == 1  # embedInterval (60m) has not passed


def test_changes_after_the_debounce_update_qmd(fake_qmd: FakeQmd, make_qmd, qmd_workspace: Path) -> None:
    backend = make_qmd({"update": {"debounceMs": 100}})
    backend.ensure_fresh()
    time.sleep(0.15)
    write(qmd_workspace, "memory/2026-02-01.md", "# Feb 1\n\nNew heron note.\n")
    backend.ensure_fresh()
    assert len(fake_qmd.calls("update")) == 2
    assert [r.path for r in backend.search("heron").results] == ["memory/2026-02-01.md"]


def test_update_runs_every_interval_in_the_background(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd({"update": {"interval": "200ms", "debounceMs": 0}}, sync={"watch": False})
    backend.start_background()
    time.sleep(0.9)
    backend.stop_background()
    assert len(fake_qmd.calls("update")) >= 3


def test_a_hanging_update_is_killed_at_the_update_timeout(fake_qmd: FakeQmd, make_qmd) -> None:
    fake_qmd.set(update="hang")
    backend = make_qmd({"update": {"updateTimeoutMs": 400}})
    started = time.monotonic()
    backend.sync()
    assert time.monotonic() - started < 5
    status = backend.primary.status()
    assert status["lastUpdate"]["ok"] is False and "timed out after 400 ms" in status["lastUpdate"]["error"]
    (pid,) = [c["pid"] for c in fake_qmd.calls("update")]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_hanging_embed_does_not_block_a_search(fake_qmd: FakeQmd, make_qmd) -> None:
    fake_qmd.set(embed="hang")
    backend = make_qmd({"searchMode": "vsearch", "update": {"embedTimeoutMs": 30_000}})
    started = time.monotonic()
    response = backend.search("flamingo")  # first search builds the index; embed runs in the background
    assert time.monotonic() - started < 5
    assert response.backend == "builtin" and response.results  # no vectors yet: the builtin index answers
    deadline = time.monotonic() + 5
    while not fake_qmd.calls("embed") and time.monotonic() < deadline:
        time.sleep(0.05)
    backend.close()  # stops the background embed instead of orphaning it
    (pid,) = [c["pid"] for c in fake_qmd.calls("embed")]
    time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("mode", ["vsearch", "query"])
def test_vector_modes_without_embeddings_fall_back_instead_of_answering_empty(
    fake_qmd: FakeQmd, make_qmd, mode: str
) -> None:
    fake_qmd.set(embed="fail")
    backend = make_qmd({"searchMode": mode})
    backend.sync()
    result = MemoryTools(backend).call("memory_search", {"query": "flamingo"})
    assert result["backend"] == "builtin" and result["results"]
    assert "qmd embed failed" in result["backendFallback"]["reason"]
    assert not fake_qmd.calls(mode)


def test_one_update_at_a_time_across_processes(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    import fcntl

    backend = make_qmd({"update": {"updateTimeoutMs": 300}})
    lock_path = tmp_path / "state/agents/main/qmd/update.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as other_process:
        fcntl.flock(other_process.fileno(), fcntl.LOCK_EX)
        assert backend.primary.refresh() is False  # boot update skipped: someone else is updating
        assert backend.primary.refresh(force=True) is False  # waited updateTimeoutMs, then gave up
        fcntl.flock(other_process.fileno(), fcntl.LOCK_UN)
    assert not fake_qmd.calls("update")
    assert backend.primary.refresh(force=True) is True and len(fake_qmd.calls("update")) == 1


def test_embed_interval_zero_never_embeds(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd({"update": {"embedInterval": "0"}})
    backend.sync()
    assert fake_qmd.calls("update") and not fake_qmd.calls("embed")


# -- search ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["search", "vsearch", "query"])
def test_search_runs_the_configured_mode_with_json(fake_qmd: FakeQmd, make_qmd, mode: str) -> None:
    backend = make_qmd({"searchMode": mode})
    backend.sync()  # vsearch/query need embeddings: sync waits for qmd embed
    response = backend.search("flamingo", max_results=3)
    (call,) = fake_qmd.calls(mode)
    assert call["args"] == [mode, "--json", "-n", "3", "--", "flamingo"]
    assert response.backend == "qmd" and response.mode == f"qmd-{mode}"


def test_a_query_that_looks_like_an_option_stays_a_query(fake_qmd: FakeQmd, make_qmd) -> None:
    response = make_qmd().search("--release flamingo")
    assert response.backend == "qmd" and response.results
    assert fake_qmd.calls("search")[-1]["args"][-2:] == ["--", "--release flamingo"]


def test_results_map_to_workspace_paths_and_qmd_collection_paths(fake_qmd: FakeQmd, make_qmd) -> None:
    response = make_qmd().search("flamingo")
    by_path = {r.path: r for r in response.results}
    assert set(by_path) == {"memory/2026-01-31.md", "qmd/docs/guide.md"}
    daily = by_path["memory/2026-01-31.md"]
    assert (daily.start_line, daily.end_line) == (3, 5)
    assert daily.snippet.startswith("Standup notes.") and "@@" not in daily.snippet
    assert by_path["qmd/docs/guide.md"].source == "memory"


def test_limits_clamp_results_snippets_and_the_injection_budget(fake_qmd: FakeQmd, make_qmd, qmd_workspace) -> None:
    for day in range(1, 10):
        write(qmd_workspace, f"memory/2026-03-0{day}.md", f"# {day}\n\nflamingo {'x' * 500} day {day}\n")
    backend = make_qmd({"limits": {"maxResults": 4, "maxSnippetChars": 120, "maxInjectedChars": 300}})
    response = backend.search("flamingo", max_results=50)
    assert fake_qmd.calls("search")[-1]["args"][1:4] == ["--json", "-n", "4"]
    assert 1 <= len(response.results) <= 4
    assert all(len(r.snippet) <= 120 for r in response.results)
    assert sum(len(r.snippet) for r in response.results) <= 300


def test_citations_follow_the_citations_mode(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    cited = backend.search("pelican", citations="on")
    assert cited.results[0].snippet.endswith("Source: qmd/docs/sub/deep.md#L3")
    plain = backend.search("pelican", citations="off")
    assert "Source:" not in plain.results[0].snippet


def test_qmd_normalised_paths_map_back_to_the_file_on_disk(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    write(tmp_path / "docs", "Team Notes_v2.md", "# Team\n\nOstrich budget.\n")
    backend = make_qmd()
    backend.sync()
    assert handelize("Team Notes_v2.md") == "Team-Notes-v2.md"
    assert backend.primary._real_path(backend.primary.collection("docs"), "team-notes-v2.md") == "Team Notes_v2.md"
    (result,) = backend.search("ostrich").results
    assert result.path == "qmd/docs/Team Notes_v2.md"
    assert "Ostrich" in backend.read_file(result.path)["text"]


# -- memory_get on qmd paths -------------------------------------------------------------------------------


def test_read_file_serves_qmd_paths_from_the_collection_root(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    assert backend.read_file("qmd/docs/guide.md", from_line=4, lines=1) == {
        "path": "qmd/docs/guide.md",
        "text": "The flamingo runbook lives here.",
    }
    assert "Pelican" in backend.read_file("qmd/docs/sub/deep.md")["text"]
    assert "Postgres" in backend.read_file("MEMORY.md")["text"]  # workspace paths: the builtin rules


@pytest.mark.parametrize(
    "path",
    [
        "qmd/docs/../secret.md",
        "qmd/docs/./guide.md",
        "qmd/nope/guide.md",
        "qmd/docs/notes.txt",
        "qmd/docs/",
        "qmd/docs//etc/passwd",
        "qmd/docs/guide.md%00",
        "qmd\\docs\\guide.md",
        "../secret.md",
    ],
)
def test_read_file_refuses_everything_else(fake_qmd: FakeQmd, make_qmd, path: str) -> None:
    with pytest.raises(PathRefusedError):
        make_qmd().read_file(path)


def test_read_file_refuses_a_symlink_out_of_the_collection(fake_qmd: FakeQmd, make_qmd, tmp_path: Path) -> None:
    (tmp_path / "docs" / "escape.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(PathRefusedError):
        make_qmd().read_file("qmd/docs/escape.md")


def test_read_file_needs_no_qmd_binary(make_qmd) -> None:
    backend = make_qmd({"command": "qmd-is-not-installed-here"})
    assert "runbook" in backend.read_file("qmd/docs/guide.md")["text"]
    with pytest.raises(MdrecallError, match="not found"):
        backend.read_file("qmd/docs/missing.md")


def test_memory_get_tool_reads_qmd_paths(fake_qmd: FakeQmd, make_qmd) -> None:
    tools = MemoryTools(make_qmd())
    hit = next(r for r in tools.call("memory_search", {"query": "runbook"})["results"])
    got = tools.call("memory_get", {"path": hit["path"], "from": hit["startLine"], "lines": 3})
    assert "runbook" in got["text"]
    refused = tools.call("memory_get", {"path": "qmd/docs/../secret.md"})
    assert refused["text"] == "" and "refused" in refused["error"]


# -- scope -----------------------------------------------------------------------------------------------


def test_scope_denies_groups_and_channels_by_default(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    direct = MemoryTools(backend, chat_type="direct").call("memory_search", {"query": "flamingo"})
    assert direct["results"] and direct["backend"] == "qmd"
    for chat in ("group", "channel"):
        denied = MemoryTools(backend, chat_type=chat).call("memory_search", {"query": "flamingo"})
        assert denied["results"] == [] and "scope" in denied["notice"]
        assert "backendFallback" not in denied  # a privacy rule, not a failure: the builtin index must not leak


def test_scope_rules_can_allow_groups(fake_qmd: FakeQmd, make_qmd) -> None:
    scope = {"default": "deny", "rules": [{"action": "allow", "match": {"chatType": "group"}}]}
    backend = make_qmd({"scope": scope})
    assert MemoryTools(backend, chat_type="group").call("memory_search", {"query": "flamingo"})["results"]
    assert MemoryTools(backend, chat_type="direct").call("memory_search", {"query": "flamingo"})["results"] == []


def test_scope_rule_matching() -> None:
    scope = QmdScopeConfig.model_validate(
        {
            "default": "allow",
            "rules": [
                {"action": "deny", "match": {"channel": "discord"}},
                {"action": "deny", "match": {"keyPrefix": "agent:ops:"}},
            ],
        }
    )
    assert scope_allows(scope, "agent:main:telegram:group:42")
    assert not scope_allows(scope, "agent:main:discord:direct:7")
    assert not scope_allows(scope, "agent:ops:slack:direct:1")
    assert scope_allows(QmdScopeConfig(), None)  # no session (CLI, library) counts as a direct chat
    assert not scope_allows(QmdScopeConfig(), "chat:group")


# -- config ----------------------------------------------------------------------------------------------


def test_the_documented_qmd_config_parses() -> None:
    import re

    import tomllib

    doc = (Path(__file__).resolve().parent.parent / "docs" / "backends.md").read_text()
    cfg = parse_config(tomllib.loads(re.search(r"```toml\n(.*?)```", doc, re.S).group(1)))
    assert cfg.backend == "qmd" and cfg.qmd.paths[0].name == "docs" and cfg.qmd.sessions.retention_days == 30


def test_qmd_config_keys_and_defaults() -> None:
    cfg = parse_config({"backend": "qmd"}).qmd
    assert (cfg.command, cfg.search_mode, cfg.include_default_memory) == ("qmd", "search", True)
    assert (cfg.update.interval_ms, cfg.update.debounce_ms, cfg.update.embed_interval_ms) == (
        300_000,
        15_000,
        3_600_000,
    )
    assert (cfg.update.command_timeout_ms, cfg.update.update_timeout_ms, cfg.update.embed_timeout_ms) == (
        30_000,
        120_000,
        120_000,
    )
    limits = cfg.limits
    assert (limits.max_results, limits.max_snippet_chars, limits.max_injected_chars, limits.timeout_ms) == (
        6,
        700,
        4000,
        4000,
    )
    assert cfg.scope.default == "deny" and cfg.scope.rules[0].match.chat_type == "direct"
    assert parse_duration_ms("1h") == 3_600_000 and parse_duration_ms("30s") == 30_000 and parse_duration_ms(250) == 250


@pytest.mark.parametrize(
    "bad",
    [{"searchMode": "fuzzy"}, {"update": {"interval": "soon"}}, {"limits": {"maxResults": 0}}, {"nope": 1}],
)
def test_bad_qmd_config_names_the_key(bad: dict) -> None:
    with pytest.raises(ConfigError, match="qmd"):
        parse_config({"backend": "qmd", "qmd": bad})


def test_the_qmd_backend_is_a_fallback_backend(fake_qmd: FakeQmd, make_qmd) -> None:
    backend = make_qmd()
    assert isinstance(backend, FallbackBackend)
    assert backend.status()["backend"] == "qmd"
