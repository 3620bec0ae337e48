"""Remote providers through the real index: the embedding cache saves requests, secrets never reach the DB."""

from __future__ import annotations

from pathlib import Path

from fake_embedding_server import FakeEmbeddingServer
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import create_provider
from mdrecall.embeddings.http import RemoteOptions, RetryPolicy

pytest_plugins = ["fake_embedding_server"]

SECRET = "sk-test-SECRET-0123456789abcdef"


def _index(workspace: Path, state: Path, server: FakeEmbeddingServer, **extra) -> MemoryIndex:
    config = parse_config(
        {
            "provider": "openai",
            "remote": {"baseUrl": server.openai_base, "apiKey": SECRET, "headers": {"X-Org": "acme"}},
            **extra,
        }
    )
    options = RemoteOptions(query_timeout=5, batch_timeout=5, retry=RetryPolicy(base_delay=0.001, max_delay=0.01))
    settings = resolve_settings(workspace=workspace, state_dir=state, config=config)
    return MemoryIndex(settings, create_provider(config, options=options))


def test_cache_hits_make_zero_requests_and_force_reindex_reuses_them(
    workspace: Path, tmp_path: Path, fake_server: FakeEmbeddingServer
) -> None:
    index = _index(workspace, tmp_path / "s", fake_server)
    report = index.sync()
    assert report.texts_embedded == 3 and fake_server.count("embeddings") == 1
    assert index.sync(force=True).cache_hits == 3
    assert fake_server.count("embeddings") == 1, "a forced reindex is served from the copied cache"
    index.close()
    fresh_state = _index(workspace, tmp_path / "s", fake_server)
    for path in list(fresh_state.store.get_files("memory")):
        fresh_state.store.delete_file(path, "memory")  # rows gone, cache kept: like files that come back
    assert fresh_state.sync().files_indexed == 3
    assert fake_server.count("embeddings") == 1
    fresh_state.close()


def test_search_embeds_the_query_through_the_provider(
    workspace: Path, tmp_path: Path, fake_server: FakeEmbeddingServer
) -> None:
    index = _index(workspace, tmp_path / "s", fake_server)
    index.sync()
    response = index.search("a828e60")
    assert response.provider == "openai" and response.results[0].path == "MEMORY.md"
    assert fake_server.count("embeddings") == 2
    index.close()


def test_secrets_never_reach_the_index_file_or_status(
    workspace: Path, tmp_path: Path, fake_server: FakeEmbeddingServer
) -> None:
    index = _index(workspace, tmp_path / "s", fake_server)
    index.sync()
    status = index.status(deep=True)
    assert status["probe"]["embeddings"]["ok"] is True
    index.close()
    sent = fake_server.requests_for("embeddings")[0].headers
    assert sent["authorization"] == f"Bearer {SECRET}" and sent["x-org"] == "acme"
    for path in (tmp_path / "s" / "memory").iterdir():
        data = path.read_bytes()
        assert SECRET.encode() not in data and b"Bearer" not in data, path
    assert SECRET not in repr(status)


def test_provider_key_change_forces_full_reindex(
    workspace: Path, tmp_path: Path, fake_server: FakeEmbeddingServer
) -> None:
    _index(workspace, tmp_path / "s", fake_server).sync()
    other = _index(workspace, tmp_path / "s", fake_server, model="text-embedding-3-large")
    assert "model changed" in other.full_reindex_reason()
    other.close()
