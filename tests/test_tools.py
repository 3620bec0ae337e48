"""memory_search / memory_get tool shapes, and the promise that they never raise."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mdrecall.agents.tools import (
    CITATIONS_OFF_LINE,
    MEMORY_GET,
    MEMORY_SEARCH,
    MEMORY_STATUS,
    MemoryTools,
    memory_prompt_section,
)
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import resolve_settings
from mdrecall.retrieval.ranking import format_citation

from .conftest import write

RESULT_KEYS = {"path", "startLine", "endLine", "score", "snippet", "source"}


@pytest.fixture
def open_tools(tmp_path: Path) -> Iterator[Callable[..., MemoryTools]]:
    """MemoryTools over a keyword-only index of a workspace (`extra_toml` is added to mdrecall.toml)."""
    opened: list[MemoryIndex] = []

    def factory(ws: Path, extra_toml: str = "", **kwargs: Any) -> MemoryTools:
        write(ws, "mdrecall.toml", 'provider = "none"\n' + extra_toml)
        index = MemoryIndex(resolve_settings(workspace=ws, state_dir=tmp_path / "state"))
        opened.append(index)
        return MemoryTools(index, **kwargs)

    yield factory
    for index in opened:
        index.close()


# -- definitions and prompt -------------------------------------------------------------------------------


def test_definitions_in_each_style(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace)
    openai = tools.definitions()
    assert [d["function"]["name"] for d in openai] == [MEMORY_SEARCH, MEMORY_GET]
    assert all(d["type"] == "function" for d in openai)
    search_schema = openai[0]["function"]["parameters"]
    assert search_schema["required"] == ["query"]
    assert set(search_schema["properties"]) == {"query", "maxResults", "minScore"}
    get_schema = openai[1]["function"]["parameters"]
    assert get_schema["required"] == ["path"]
    assert set(get_schema["properties"]) == {"path", "from", "lines"}

    anthropic = tools.definitions(style="anthropic")
    assert [set(d) for d in anthropic] == [{"name", "description", "input_schema"}] * 2
    plain = tools.definitions(style="plain")
    assert plain[0]["parameters"] is search_schema
    json.dumps(openai)  # serialisable as given to a model API


def test_status_tool_is_opt_in(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace, include_status=True)
    assert tools.names == [MEMORY_SEARCH, MEMORY_GET, MEMORY_STATUS]
    status = tools.call(MEMORY_STATUS, {})
    assert status["files"] == 3 and status["provider"] == "none"
    assert "error" in tools.call(MEMORY_STATUS, {"deep": "yes"})


def test_prompt_section_only_with_memory_tools() -> None:
    assert memory_prompt_section([]) == ""
    assert memory_prompt_section(["web_search", "exec"]) == ""
    assert memory_prompt_section([MEMORY_SEARCH], minimal=True) == ""
    section = memory_prompt_section([MEMORY_GET])
    assert section.startswith("## Memory Recall\n")
    assert "run memory_search on MEMORY.md + memory/*.md" in section
    assert "If low confidence after search, say you checked." in section
    assert "Source:" in section
    off = memory_prompt_section([MEMORY_SEARCH, MEMORY_GET], citations="off")
    assert CITATIONS_OFF_LINE in off and "Source:" not in off


def test_disabled_config_offers_no_tools(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace, "enabled = false\n")
    assert tools.definitions() == [] and tools.prompt_section() == ""
    result = tools.call(MEMORY_SEARCH, {"query": "a828e60"})
    assert result["results"] == [] and result["disabled"] is True and result["action"]
    got = tools.call(MEMORY_GET, {"path": "MEMORY.md"})
    assert got["text"] == "" and got["disabled"] is True


# -- memory_search ----------------------------------------------------------------------------------------


def test_search_shape_and_citations(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace)
    result = tools.call(MEMORY_SEARCH, {"query": "a828e60"})
    assert {"results", "provider", "model"} <= set(result)
    assert result["provider"] == "none"
    assert "error" not in result and "disabled" not in result
    top = result["results"][0]
    assert set(top) >= RESULT_KEYS
    assert top["path"] == "MEMORY.md" and top["source"] == "memory"
    assert isinstance(top["startLine"], int) and top["startLine"] <= top["endLine"]
    assert top["citation"] == format_citation("MEMORY.md", top["startLine"], top["endLine"])
    assert top["snippet"].endswith(f"Source: {top['citation']}")
    assert "a828e60" in top["snippet"]
    json.dumps(result)


def test_citations_off_and_group_chats(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    for tools in (open_tools(workspace, 'citations = "off"\n'), open_tools(workspace, chat_type="group")):
        top = tools.call(MEMORY_SEARCH, {"query": "a828e60"})["results"][0]
        assert "citation" not in top and "Source:" not in top["snippet"]
    forced = open_tools(workspace, 'citations = "on"\n', chat_type="group")
    assert "citation" in forced.call(MEMORY_SEARCH, {"query": "a828e60"})["results"][0]


def test_search_syncs_a_dirty_index(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    """The spec: search never waits for indexing. A stale index answers at once, says it is catching up, and a
    background sync brings the edit in for the next search."""
    tools = open_tools(workspace)
    assert tools.call(MEMORY_SEARCH, {"query": "zeppelin"})["results"] == []
    write(workspace, "memory/2026-11-03.md", "# 2026-11-03\n\nBooked the zeppelin tour for Dana.\n")
    first = tools.call(MEMORY_SEARCH, {"query": "zeppelin"})
    assert first.get("catchingUp") is True and "catching up" in first["notice"]
    assert tools.index.wait_idle(30)
    paths = [r["path"] for r in tools.call(MEMORY_SEARCH, {"query": "zeppelin"})["results"]]
    assert paths == ["memory/2026-11-03.md"]


def test_openai_style_json_string_arguments(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace)
    result = tools.call(MEMORY_SEARCH, '{"query": "Mac Studio", "maxResults": "1", "minScore": 0}')
    assert len(result["results"]) == 1 and result["results"][0]["path"] == "memory/topics/infra.md"
    assert json.loads(tools.call_json(MEMORY_GET, '{"path": "MEMORY.md", "from": 3, "lines": 1}')) == {
        "path": "MEMORY.md",
        "text": "Dana prefers metric units.",
    }


@pytest.mark.parametrize(
    "arguments",
    [
        None,
        {},
        {"query": ""},
        {"query": "   "},
        {"query": 42},
        {"query": "x", "maxResults": 0},
        {"query": "x", "maxResults": "many"},
        {"query": "x", "maxResults": True},
        {"query": "x", "maxResults": 2.5},
        {"query": "x", "minScore": 2},
        {"query": "x", "minScore": "high"},
        {"query": "x", "minScore": float("nan")},
        "{not json",
        "[1, 2]",
        ["query"],
    ],
)
def test_search_bad_arguments_come_back_as_errors(
    workspace: Path, open_tools: Callable[..., MemoryTools], arguments: Any
) -> None:
    result = open_tools(workspace).call(MEMORY_SEARCH, arguments)
    assert result["results"] == []
    assert result["error"] and "memory_search" in result["action"]


def test_unknown_tool(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    result = open_tools(workspace).call("memory_delete", {"path": "MEMORY.md"})
    assert "unknown tool" in result["error"] and "memory_search" in result["action"]


def test_injection_budget_is_not_applied_by_the_builtin_backend(
    workspace: Path, open_tools: Callable[..., MemoryTools]
) -> None:
    # the spec applies maxInjectedChars to the QMD backend only (search.apply_injection_budget)
    tools = open_tools(workspace, "[query]\nmaxInjectedChars = 20\nminScore = 0\n")
    results = tools.call(MEMORY_SEARCH, {"query": "Dana"})["results"]
    assert results and len(results[0]["snippet"]) > 20


# -- memory_get -------------------------------------------------------------------------------------------


def test_get_lines_and_whole_file(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace)
    whole = tools.call(MEMORY_GET, {"path": "memory/topics/infra.md"})
    assert whole == {"path": "memory/topics/infra.md", "text": (workspace / "memory/topics/infra.md").read_text()}
    part = tools.call(MEMORY_GET, {"path": "MEMORY.md", "from": 3, "lines": 2})
    assert part["text"] == "Dana prefers metric units.\nThe deploy fix landed in a828e60."


def test_get_missing_file_gives_empty_text(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    result = open_tools(workspace).call(MEMORY_GET, {"path": "memory/2020-01-01.md"})
    assert result == {"path": "memory/2020-01-01.md", "text": ""}


@pytest.mark.parametrize(
    "path", ["../outside.md", "/etc/passwd", "README.md", "memory/notes.txt", "memory/../../x.md", "~/MEMORY.md"]
)
def test_get_refused_paths_say_what_is_allowed(
    workspace: Path, open_tools: Callable[..., MemoryTools], path: str
) -> None:
    write(workspace, "README.md", "not memory\n")
    result = open_tools(workspace).call(MEMORY_GET, {"path": path})
    assert result["text"] == "" and result["path"] == path
    assert "refused" in result["error"]
    assert "MEMORY.md" in result["action"] and "memory/**/*.md" in result["action"]


@pytest.mark.parametrize(
    "arguments", [{}, {"path": ""}, {"path": 7}, {"path": "MEMORY.md", "from": 0}, {"path": "MEMORY.md", "lines": -2}]
)
def test_get_bad_arguments(workspace: Path, open_tools: Callable[..., MemoryTools], arguments: Any) -> None:
    result = open_tools(workspace).call(MEMORY_GET, arguments)
    assert result["text"] == "" and result["error"] and "memory_get" in result["action"]


# -- broken and closed indexes ----------------------------------------------------------------------------


def test_closed_index_still_answers(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace)
    assert tools.call(MEMORY_SEARCH, {"query": "a828e60"})["results"]
    tools.index.close()
    assert tools.call(MEMORY_SEARCH, {"query": "a828e60"})["results"]


def test_unusable_database_is_reported_as_unavailable(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    tools = open_tools(workspace)
    tools.index.settings.db_path.mkdir(parents=True)  # a folder where the index file should be
    result = tools.call(MEMORY_SEARCH, {"query": "a828e60"})
    assert result["results"] == []
    assert result["disabled"] is True and result["unavailable"] is True
    assert result["error"] and result["warning"] and result["action"]
    assert tools.call(MEMORY_GET, {"path": "MEMORY.md", "lines": 1})["text"] == "# Long-term memory"


class _BrokenIndex:
    """An index whose every operation fails, as with a dead provider or a vanished database."""

    background_sync = False

    def __init__(self, workspace: Path, message: str, refresh_ok: bool = False) -> None:
        self.settings = resolve_settings(workspace=workspace, state_dir=workspace / ".state")
        self.config = self.settings.config
        self.message = message
        self.refresh_ok = refresh_ok

    def ensure_fresh(self) -> None:
        if not self.refresh_ok:
            raise RuntimeError(self.message)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(self.message)

    def read_file(self, *args: Any, **kwargs: Any) -> dict[str, str]:
        raise OSError(self.message)

    def status(self, deep: bool = False) -> dict[str, Any]:
        raise RuntimeError(self.message)


@pytest.mark.parametrize(
    ("message", "hint"),
    [
        ("429 insufficient_quota: You exceeded your current quota", "quota"),
        ("database disk image is malformed", "index"),
        ("connection reset by peer", "provider"),
        ("", "provider"),
    ],
)
def test_failures_never_raise(workspace: Path, message: str, hint: str) -> None:
    tools = MemoryTools(_BrokenIndex(workspace, message), include_status=True)  # type: ignore[arg-type]
    result = tools.call(MEMORY_SEARCH, {"query": "anything"})
    assert result["results"] == [] and result["unavailable"] is True
    assert hint in result["warning"].lower() or hint in result["action"].lower()
    assert "memory_search" in result["action"]
    got = tools.call(MEMORY_GET, {"path": "MEMORY.md"})
    assert got["text"] == "" and got["unavailable"] is True and "memory_get" in got["action"]
    assert tools.call(MEMORY_STATUS)["unavailable"] is True


def test_refresh_failure_is_a_warning(workspace: Path, open_tools: Callable[..., MemoryTools]) -> None:
    real = open_tools(workspace).index

    class FlakyRefresh:
        settings, config = real.settings, real.config
        background_sync = False

        def ensure_fresh(self) -> None:
            raise RuntimeError("embedding provider timed out")

        def search(self, *args: Any, **kwargs: Any) -> Any:
            real.sync()
            return real.search(*args, **kwargs)

    result = MemoryTools(FlakyRefresh()).call(MEMORY_SEARCH, {"query": "a828e60"})  # type: ignore[arg-type]
    assert result["results"] and "stale" in result["warning"]
