"""Fixtures for the qmd backend tests: the fake `qmd` on PATH, a workspace with an extra collection, backends."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mdrecall.backends import open_backend
from mdrecall.config.settings import Settings, parse_config, resolve_settings

FAKE_QMD = Path(__file__).resolve().parent / "fake_qmd.py"


class FakeQmd:
    """Controls and inspects the fake qmd: `set(search="hang")`, `calls("update")`."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.log = root / "qmd-calls.jsonl"
        self.control = root / "qmd-control.json"
        self.bin.mkdir(parents=True)
        script = self.bin / "qmd"
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_QMD}" "$@"\n', encoding="utf-8")
        script.chmod(0o755)

    def set(self, **behaviour: str) -> None:
        self.control.write_text(json.dumps(behaviour), encoding="utf-8")

    def all_calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line]

    def calls(self, command: str) -> list[dict[str, Any]]:
        return [c for c in self.all_calls() if c["args"] and c["args"][0] == command]


@pytest.fixture
def fake_qmd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeQmd:
    fake = FakeQmd(tmp_path / "fakeqmd")
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_QMD_LOG", str(fake.log))
    monkeypatch.setenv("FAKE_QMD_CONTROL", str(fake.control))
    monkeypatch.setenv("QMD_CONFIG_DIR", str(tmp_path / "must-not-be-used"))
    return fake


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def qmd_workspace(tmp_path: Path) -> Path:
    """MEMORY.md + a daily log in the workspace, and a docs folder outside it (the extra collection)."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nWe chose Postgres for the billing service.\nDana prefers metric units.\n")
    write(
        ws,
        "memory/2026-01-31.md",
        "# Jan 31\n\nStandup notes.\nDeployed the flamingo release to staging.\nRollback plan: blue-green.\n",
    )
    docs = tmp_path / "docs"
    write(docs, "guide.md", "# Guide\n\nline 3\nThe flamingo runbook lives here.\nline 5\nline 6\n")
    write(docs, "sub/deep.md", "# Deep\n\nPelican migration checklist.\n")
    write(docs, "notes.txt", "flamingo in a text file that is not indexed\n")
    write(tmp_path, "secret.md", "flamingo secret outside every collection\n")
    return ws


QmdFactory = Callable[..., Any]


@pytest.fixture
def make_qmd(tmp_path: Path, qmd_workspace: Path) -> Iterator[QmdFactory]:
    """open_backend(backend = "qmd") with keyword-only builtin fallback; `qmd` overrides merge into [qmd]."""
    opened: list[Any] = []

    def factory(qmd: dict[str, Any] | None = None, **top: Any) -> Any:
        section: dict[str, Any] = {"paths": [{"name": "docs", "path": str(tmp_path / "docs")}]}
        section.update(qmd or {})
        data = {"backend": "qmd", "provider": "none", "qmd": section, **top}
        settings: Settings = resolve_settings(
            workspace=qmd_workspace, state_dir=tmp_path / "state", config=parse_config(data)
        )
        backend = open_backend(settings)
        opened.append(backend)
        return backend

    yield factory
    for backend in opened:
        backend.close()
