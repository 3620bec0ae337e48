"""e5 and MiniLM side by side (`local.model = "e5+minilm"`): one cosine is the weighted sum of both models'."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings import local
from mdrecall.embeddings.centering import center_query
from mdrecall.embeddings.local import create_local_provider
from mdrecall.embeddings.paired import PairedProvider
from mdrecall.errors import EmbeddingError

from .conftest import write

TEXTS = [
    "The gateway runs on the Mac Studio.",
    "Nightly backups go to the S3 bucket at 02:00.",
    "服务迁移到了 PostgreSQL",
]


@pytest.fixture(scope="module")
def pair() -> PairedProvider:
    made = create_local_provider(LocalConfig(model="e5+minilm"))
    assert isinstance(made, PairedProvider)
    return made


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_selected_by_name_and_described(pair: PairedProvider) -> None:
    assert pair.id == "local" and pair.model == local.PAIRED_MODEL_NAME and pair.dims == 384 + 384
    assert pair.max_seq_length == 256  # MiniLM's: every window fits both models
    assert pair.recommended_centering == 0.0 and pair.recommended_min_score == 0.1
    with pytest.raises(EmbeddingError, match="unset local.runtime"):
        create_local_provider(LocalConfig(model="e5+minilm", runtime="numpy"))


def test_a_cosine_is_the_weighted_sum_of_both_models(pair: PairedProvider) -> None:
    w = local.PAIRED_E5_WEIGHT
    both = pair.embed_batch(TEXTS)
    e5, minilm = _unit(pair.first.embed_batch(TEXTS)), _unit(pair.second.embed_batch(TEXTS))
    assert np.allclose(np.linalg.norm(both, axis=1), 1.0, atol=1e-5)
    assert np.allclose(both @ both.T, w * (e5 @ e5.T) + (1 - w) * (minilm @ minilm.T), atol=1e-5)
    assert np.allclose(both[:, :384], math.sqrt(w) * e5, atol=1e-6)


def test_only_the_e5_part_of_a_query_is_centred(pair: PairedProvider) -> None:
    query = "where does the gateway run"
    e5 = _unit(pair.first.embed_query(query))
    centred = center_query(pair.first, e5, local.RECOMMENDED_CENTERING[local.E5_MODEL_NAME])
    assert not np.allclose(centred, e5, atol=1e-3)  # the centring moved it
    got = pair.embed_query(query)
    assert np.allclose(got[:384], math.sqrt(local.PAIRED_E5_WEIGHT) * centred, atol=1e-5)
    assert np.allclose(
        got[384:], math.sqrt(1 - local.PAIRED_E5_WEIGHT) * _unit(pair.second.embed_query(query)), atol=1e-5
    )


def test_an_index_with_the_pair_finds_a_paraphrase(tmp_path: Path, make_index, pair: PairedProvider) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/2026-01-02.md", "# Infra\n\n- The gateway runs on the Mac Studio in the office.\n")
    write(ws, "memory/2026-01-03.md", "# Home\n\n- Bought a red bicycle for the commute.\n")
    index = make_index(ws, pair)
    index.sync()
    assert index.store.vector.dims == 768
    hits = index.search("which computer hosts the gateway", mode="vector").results
    assert hits[0].path == "memory/2026-01-02.md"
