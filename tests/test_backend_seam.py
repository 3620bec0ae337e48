"""The backend seam: config picks the backend, callers see only the protocol, new backends plug in by name."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from mdrecall.agents.tools import MemoryTools
from mdrecall.backends import BACKENDS, MemoryBackend, open_backend
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.backends.fallback import FallbackBackend
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.errors import ConfigError

from .conftest import write

SRC = Path(__file__).resolve().parent.parent / "src" / "mdrecall"


def _settings(tmp_path: Path, **config):
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n\nThe kestrel project ships in March.\n")
    config = parse_config({"provider": "none", **config})
    return resolve_settings(workspace=ws, state_dir=tmp_path / "state", config=config)


def test_builtin_is_the_default_backend(tmp_path: Path) -> None:
    with open_backend(_settings(tmp_path)) as backend:
        assert isinstance(backend, MemoryIndex) and isinstance(backend, MemoryBackend)
        result = MemoryTools(backend).call("memory_search", {"query": "kestrel"})
        assert result["backend"] == "builtin" and result["results"][0]["path"] == "MEMORY.md"
        assert backend.status()["backend"] == "builtin"


def test_qmd_backend_speaks_the_same_protocol(tmp_path: Path) -> None:
    with open_backend(_settings(tmp_path, backend="qmd", qmd={"command": "qmd-not-here"})) as backend:
        assert isinstance(backend, FallbackBackend) and isinstance(backend, MemoryBackend)


def test_the_mcp_server_opens_the_configured_backend(tmp_path: Path) -> None:
    from mdrecall.mcp_server import _open_tools

    index, tools = _open_tools(_settings(tmp_path, backend="qmd", qmd={"command": "qmd-not-here"}))
    try:
        assert isinstance(index, FallbackBackend)
        result = tools.call("memory_search", {"query": "kestrel"})
        assert result["backend"] == "builtin" and "not on PATH" in result["backendFallback"]["reason"]
    finally:
        index.close()


def test_a_new_backend_registers_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """How the Postgres backend plugs in: one BACKENDS entry, no caller changes."""
    monkeypatch.setitem(BACKENDS, "builtin", "mdrecall.backends.builtin:open_builtin")
    monkeypatch.setitem(BACKENDS, "team", "tests.test_backend_seam:_open_team")
    settings = _settings(tmp_path)
    config = settings.config.model_copy(update={"backend": "team"})
    settings = type(settings)(**{**settings.__dict__, "config": config})
    backend = open_backend(settings)
    assert isinstance(backend, MemoryIndex) and backend.opened_as == "team"
    backend.close()


def _open_team(settings, provider_result=None):
    index = MemoryIndex(settings, provider_result)
    index.opened_as = "team"  # type: ignore[attr-defined]
    return index


def test_an_unknown_backend_is_a_config_error(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    settings = type(settings)(**{**settings.__dict__, "config": settings.config.model_copy(update={"backend": "x"})})
    with pytest.raises(ConfigError, match="unknown memory backend 'x'"):
        open_backend(settings)


def test_callers_do_not_construct_the_builtin_index(tmp_path: Path) -> None:
    """The CLI and the MCP server open backends through the factory only."""
    for name in ("cli/app.py", "mcp_server.py"):
        tree = ast.parse((SRC / name).read_text())
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert "MemoryIndex" not in called and "open_backend" in called, name


def _module_imports(path: Path) -> set[str]:
    """Modules imported at module level (TYPE_CHECKING blocks excluded)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_batch_api_and_remote_no_longer_import_each_other_in_a_cycle() -> None:
    emb = SRC / "embeddings"
    assert "mdrecall.embeddings.remote" not in _module_imports(emb / "batch_api.py")
    assert not {"mdrecall.embeddings.remote", "mdrecall.embeddings.batch_api"} & _module_imports(emb / "http.py")
    for module in ("batch_api", "remote", "http"):  # each imports cleanly first, in a fresh interpreter
        subprocess.run([sys.executable, "-c", f"import mdrecall.embeddings.{module}"], check=True)


def _protocol_members(protocol: type) -> set[str]:
    names = set()
    for klass in protocol.__mro__:
        if klass in (object,) or klass.__name__ in ("Protocol", "Generic"):
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")} | set(getattr(klass, "__annotations__", {}))
    return names


def test_both_stores_implement_the_whole_storage_protocol(tmp_path: Path) -> None:
    """Sync and search are typed against IndexStore and never probe a store: every member is on both."""
    from mdrecall.storage.base import IndexStore
    from mdrecall.storage.postgres.store import PgStore
    from mdrecall.storage.sqlite import Store

    members = _protocol_members(IndexStore)
    assert {"keyword_search", "vector_search", "session_mtimes", "tidy_fts", "set_vector_identity"} <= members
    store = Store(tmp_path / "index.sqlite")
    try:
        missing = sorted(m for m in members if not hasattr(store, m))
        assert missing == [] and isinstance(store, IndexStore)
    finally:
        store.close()
    pg_attributes = {"fts", "vector", "path", "keep_deleted_vectors"}  # set in PgStore.__init__
    assert sorted(m for m in members - pg_attributes if not hasattr(PgStore, m)) == []


def test_no_caller_probes_a_store_or_runs_sql_on_its_connection() -> None:
    for package in ("indexing", "retrieval", "backends", "agents", "cli"):
        for path in (SRC / package).rglob("*.py"):
            text = path.read_text()
            assert "hasattr(store" not in text and "store.conn" not in text, path


def test_every_backend_implements_the_whole_backend_protocol() -> None:
    """The CLI, tools and MCP server call these without probing: builtin, Postgres and qmd+fallback have them."""
    from mdrecall.backends.postgres import PostgresIndex

    members = _protocol_members(MemoryBackend) - {"settings", "config", "on_synced", "db_path"}
    for backend in (MemoryIndex, PostgresIndex, FallbackBackend):
        assert sorted(m for m in members if not hasattr(backend, m)) == [], backend.__name__
