"""Discovery (what counts as memory) and safe path resolution for read_file / memory_get."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdrecall.documents.workspace import list_memory_files, resolve_memory_path
from mdrecall.errors import PathRefusedError

from .conftest import write


def paths(ws: Path, extra: list[str] | None = None) -> list[str]:
    return [f.path for f in list_memory_files(ws, extra)]


def test_default_layout(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "a")
    write(tmp_path, "memory.md", "b")
    write(tmp_path, "memory/2026-01-01.md", "c")
    write(tmp_path, "memory/deep/er/topic.md", "d")
    write(tmp_path, "memory/notes.txt", "not markdown")
    write(tmp_path, "README.md", "not memory")
    write(tmp_path, "other/x.md", "not memory")
    assert paths(tmp_path) == ["MEMORY.md", "memory.md", "memory/2026-01-01.md", "memory/deep/er/topic.md"]


def test_entries_carry_mtime_and_size(tmp_path: Path) -> None:
    target = write(tmp_path, "MEMORY.md", "12345")
    os.utime(target, ns=(1_700_000_000_123_000_000, 1_700_000_000_123_000_000))
    [entry] = list_memory_files(tmp_path)
    assert entry.size == 5
    assert entry.mtime_ms == 1_700_000_000_123
    assert entry.abs_path == tmp_path / "MEMORY.md"


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.md", "secret")
    ws = tmp_path / "ws"
    write(ws, "memory/real.md", "real")
    (ws / "memory" / "link.md").symlink_to(outside / "secret.md")
    (ws / "memory" / "linkdir").symlink_to(outside, target_is_directory=True)
    (ws / "MEMORY.md").symlink_to(outside / "secret.md")
    assert paths(ws) == ["memory/real.md"]


def test_symlinked_memory_dir_is_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.md", "secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory").symlink_to(outside, target_is_directory=True)
    assert paths(ws) == []


def test_extra_paths_files_and_dirs_relative_and_absolute(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "a")
    write(ws, "docs/guide.md", "g")
    write(ws, "docs/skip.txt", "t")
    write(tmp_path, "team/overview.md", "o")
    write(tmp_path, "single.md", "s")
    extra = ["docs", str(tmp_path / "team"), "../single.md", "missing-dir"]
    assert paths(ws, extra) == ["../single.md", "../team/overview.md", "MEMORY.md", "docs/guide.md"]


def test_realpath_dedup_when_extra_path_overlaps_memory_dir(tmp_path: Path) -> None:
    write(tmp_path, "memory/a.md", "a")
    assert paths(tmp_path, ["memory", "memory/a.md", "./memory"]) == ["memory/a.md"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "m")
    write(ws, "memory/2026-01-01.md", "d")
    write(ws, "memory/data.json", "{}")
    write(ws, "notes/x.md", "not memory")
    write(tmp_path, "secret.md", "secret")
    return ws


def test_accepts_memory_paths(ws: Path) -> None:
    assert resolve_memory_path(ws, "MEMORY.md") == ws / "MEMORY.md"
    assert resolve_memory_path(ws, "memory/2026-01-01.md") == ws / "memory" / "2026-01-01.md"
    assert resolve_memory_path(ws, "./memory//2026-01-01.md") == ws / "memory" / "2026-01-01.md"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "../secret.md",
        "memory/../../secret.md",
        "/etc/passwd",
        str(Path("/") / "tmp" / "x.md"),
        "~/x.md",
        "C:/x.md",
        "memory\\2026-01-01.md",
        "memory/a\0.md",
        "memory/data.json",
        "notes/x.md",
        "memory",
    ],
)
def test_refuses_everything_else(ws: Path, bad: str) -> None:
    with pytest.raises(PathRefusedError):
        resolve_memory_path(ws, bad)


def test_percent_and_backslash_are_literal_name_characters(ws: Path) -> None:
    """Never decoded and never separators: `%2e%2e` is a directory literally named so, inside memory/."""
    assert resolve_memory_path(ws, "memory/%2e%2e/secret.md") == ws / "memory" / "%2e%2e" / "secret.md"
    assert resolve_memory_path(ws, "memory/a\\b.md") == ws / "memory" / "a\\b.md"


def test_refuses_symlinked_file_and_dir(ws: Path, tmp_path: Path) -> None:
    (ws / "memory" / "link.md").symlink_to(tmp_path / "secret.md")
    (ws / "memory" / "sub").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(PathRefusedError, match="symlink"):
        resolve_memory_path(ws, "memory/link.md")
    with pytest.raises(PathRefusedError, match="symlink"):
        resolve_memory_path(ws, "memory/sub/secret.md")


def test_extra_paths_outside_workspace_are_readable_by_their_result_path(ws: Path, tmp_path: Path) -> None:
    write(tmp_path, "team/overview.md", "o")
    assert resolve_memory_path(ws, "../team/overview.md", ["../team"]) == tmp_path / "team" / "overview.md"
    with pytest.raises(PathRefusedError):
        resolve_memory_path(ws, "../secret.md", ["../team"])
