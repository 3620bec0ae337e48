"""WordLlama (static 256-d vectors from the wordllama wheel), selectable as `local.model = "wordllama"`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings import local, wordllama
from mdrecall.embeddings.local import create_local_provider
from mdrecall.embeddings.wordllama import WORDLLAMA_DIMS, WORDLLAMA_MODEL_NAME, WordLlamaProvider
from mdrecall.errors import EmbeddingError

from .conftest import write


@pytest.fixture(scope="module")
def provider() -> WordLlamaProvider:
    made = create_local_provider(LocalConfig(model="wordllama"))
    assert isinstance(made, WordLlamaProvider)
    return made


def test_selected_by_name_and_described(provider: WordLlamaProvider) -> None:
    assert provider.id == "local" and provider.model == WORDLLAMA_MODEL_NAME and provider.dims == WORDLLAMA_DIMS
    assert provider.recommended_min_score == local.RECOMMENDED_MIN_SCORES[WORDLLAMA_MODEL_NAME]
    assert create_local_provider(LocalConfig(model=WORDLLAMA_MODEL_NAME)).model == WORDLLAMA_MODEL_NAME


def test_batched_pooling_equals_the_mean_of_token_rows(provider: WordLlamaProvider) -> None:
    texts = ["Dana prefers metric units.", "", "服务迁移到了 PostgreSQL", "a", "The gateway runs on the Mac Studio."]
    got = provider.embed_batch(texts)
    table, tokenizer = provider._load()
    for text, vector in zip(texts, got, strict=True):
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if not ids:
            assert not vector.any()  # nothing to average: a zero vector (the search treats it as no meaning)
            continue
        mean = table[ids].mean(axis=0)
        np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(provider.embed_query(texts[0]), got[0], rtol=1e-6)


def test_vectors_carry_meaning(provider: WordLlamaProvider) -> None:
    question, answer, other = provider.embed_batch(
        [
            "which database does the orders service use",
            "The orders service keeps its data in PostgreSQL 16.",
            "We had pizza for lunch on Friday.",
        ]
    )
    assert float(question @ answer) > float(question @ other) + 0.1


def test_missing_package_gives_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "wordllama_files", lambda: None)
    with pytest.raises(EmbeddingError, match=r"wordllama is not installed; run: pip install 'mdrecall\[wordllama\]'"):
        create_local_provider(LocalConfig(model="wordllama"))
    monkeypatch.setattr(wordllama, "wordllama_files", lambda: None)
    with pytest.raises(EmbeddingError, match="not installed"):
        WordLlamaProvider()


def test_search_with_wordllama_finds_the_note(tmp_path: Path, make_index, provider: WordLlamaProvider) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/2026-01-05.md", "Standup: nothing new, waiting on review.\n")
    write(ws, "memory/2026-01-06.md", "The orders service database moved from MySQL to PostgreSQL 16.\n")
    write(ws, "memory/2026-01-07.md", "Lunch: pizza with the design team.\n")
    index = make_index(ws, provider)
    index.sync()
    response = index.search("where does the orders backend keep its records", mode="vector", min_score=0.0)
    assert response.results[0].path == "memory/2026-01-06.md"
