"""Shared fixtures of the fact-store tests: one real offline embedding model for the whole session."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdrecall.config.settings import MemoryConfig, parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult, create_provider

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hooks"


@pytest.fixture(scope="session")
def local_provider() -> ProviderResult:
    """The bundled all-MiniLM-L6-v2 (numpy): loaded once, shared by every fact test that needs meaning."""
    result = create_provider(MemoryConfig())
    assert result.provider is not None and result.provider.id == "local"
    return result


@pytest.fixture
def hashing_provider() -> ProviderResult:
    """A cheap deterministic bag-of-words provider, for tests about storage rather than meaning."""
    from conftest import HashingProvider

    return ProviderResult(HashingProvider(), "test-hash")


def make_settings(workspace: Path, state: Path, config: dict | None = None):  # type: ignore[no-untyped-def]
    workspace.mkdir(parents=True, exist_ok=True)
    cfg = parse_config(config or {}) if config is not None else None
    return resolve_settings(workspace=workspace, state_dir=state, config=cfg)
