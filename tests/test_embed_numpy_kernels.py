"""bert_numpy's fast layer functions give what the straightforward formulas give.

The forward pass computes GELU through a tanh fit in cache-sized tiles, LayerNorm in place, attention on
strided views of the fused QKV projection and softmax without its max-subtraction when the scores allow.
Each is checked against the textbook formula (float64 where it matters), and a whole small random BERT
against a plain reference forward pass, for trailing padding, masks with holes and an all-padding row.
Speed is measured in bench/bench_embed.py, not here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mdrecall.embeddings.bert_numpy import (
    BertConfig,
    BertEncoder,
    KeyMask,
    _softmax_numerators,
    gelu,
    layer_norm,
    layer_norm_,
)
from mdrecall.embeddings.parallel import token_budget_batches

_ERF = np.vectorize(math.erf)


def _gelu_exact(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)))


def _layer_norm_exact(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def test_gelu_matches_the_erf_formula_across_tiles_and_with_bias() -> None:
    rng = np.random.default_rng(1)
    # 300 x 1000 spans several tiles (the last one partial); values cover the clamp at |x| = sqrt(32)
    x = (rng.standard_normal((300, 1000)) * 4).astype(np.float32)
    x[0, :7] = [0.0, -0.0, 40.0, -40.0, 5.65, -5.66, 1e-30]
    bias = rng.standard_normal(1000).astype(np.float32)
    expected = _gelu_exact(x.astype(np.float64) + bias)
    got = gelu(x, bias)
    assert got is x  # in place
    assert float(np.abs(got - expected).max()) < 2e-6 * max(1.0, float(np.abs(expected).max()) / 8)
    assert float(np.abs(got - expected).max()) < 1e-5


def test_gelu_of_a_non_contiguous_or_one_dimensional_array() -> None:
    xs = np.linspace(-12, 12, 20001, dtype=np.float32)
    assert float(np.abs(gelu(xs.copy()) - _gelu_exact(xs)).max()) < 2e-6
    grid = np.linspace(-6, 6, 64 * 48, dtype=np.float32).reshape(64, 48)
    view = grid.T  # not C-contiguous: computed on a copy, the input left alone
    before = grid.copy()
    assert float(np.abs(gelu(view) - _gelu_exact(before.T)).max()) < 2e-6
    assert np.array_equal(grid, before)


def test_layer_norm_in_place_matches_the_formula_and_the_copying_one_does_not_mutate() -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((50, 384)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(384).astype(np.float32)
    b = rng.standard_normal(384).astype(np.float32)
    expected = _layer_norm_exact(x, w, b, 1e-12)
    kept = x.copy()
    copied = layer_norm(x, w, b, 1e-12)
    assert np.array_equal(x, kept)
    inplace = layer_norm_(x, w, b, 1e-12)
    assert inplace is x
    assert float(np.abs(copied - expected).max()) < 5e-5
    assert float(np.abs(inplace - expected).max()) < 5e-5


def _softmax_exact(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    s = scores.astype(np.float64) + np.where(mask[:, None, None, :] > 0, 0.0, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("scale", [1.0, 40.0])  # 40: scores beyond the safe range take the guarded path
def test_softmax_numerators_with_trailing_padding(scale: float) -> None:
    rng = np.random.default_rng(3)
    scores = (rng.standard_normal((3, 2, 5, 5)) * scale).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
    keys = KeyMask.of(mask)
    assert keys.bias is None and keys.tails == ((1, 3), (2, 1))
    expected = _softmax_exact(scores, mask)
    weights = scores * np.float32(math.log2(math.e))  # the function takes base-2 scores
    sums = _softmax_numerators(weights, keys)
    assert np.allclose(weights / sums, expected, atol=1e-6)
    assert np.all(weights[1, :, :, 3:] == 0) and np.all(weights[2, :, :, 1:] == 0)


def test_key_masks_that_are_not_trailing_padding_become_a_bias() -> None:
    holes = KeyMask.of(np.array([[1, 0, 1, 1], [1, 1, 1, 1]]))
    empty = KeyMask.of(np.array([[0, 0, 0, 0], [1, 1, 0, 0]]))
    assert holes.bias is not None and holes.tails == ()
    assert empty.bias is not None  # a row of padding only: the guarded path keeps its weights finite
    rng = np.random.default_rng(4)
    scores = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    weights = scores * np.float32(math.log2(math.e))
    sums = _softmax_numerators(weights, holes)
    assert np.allclose(weights / sums, _softmax_exact(scores, np.array([[1, 0, 1, 1], [1, 1, 1, 1]])), atol=1e-6)


# --- a whole small BERT against a plain reference forward pass ---------------------------------------------

_CFG = BertConfig(hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128, max_position_embeddings=40)


def _random_weights(cfg: BertConfig, vocab: int = 50) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    h, f = cfg.hidden_size, cfg.intermediate_size

    def w(*shape: int, scale: float = 0.15) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {
        "embeddings.word_embeddings.weight": w(vocab, h, scale=1.0),
        "embeddings.position_embeddings.weight": w(cfg.max_position_embeddings, h),
        "embeddings.token_type_embeddings.weight": w(2, h),
        "embeddings.LayerNorm.weight": 1 + w(h),
        "embeddings.LayerNorm.bias": w(h),
    }
    shapes = {
        "attention.self.query": (h, h),
        "attention.self.key": (h, h),
        "attention.self.value": (h, h),
        "attention.output.dense": (h, h),
        "intermediate.dense": (f, h),
        "output.dense": (h, f),
    }
    for i in range(cfg.num_layers):
        p = f"encoder.layer.{i}."
        for name, (out, inp) in shapes.items():
            t[f"{p}{name}.weight"] = w(out, inp)
            t[f"{p}{name}.bias"] = w(out)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[f"{p}{ln}.weight"] = 1 + w(h)
            t[f"{p}{ln}.bias"] = w(h)
    return t


def _reference_forward(t: dict[str, np.ndarray], cfg: BertConfig, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The textbook post-LayerNorm BERT in float64: erf GELU, softmax with a -inf mask (uniform weights
    for a row with no key, as a huge negative bias gives)."""
    eps = cfg.layer_norm_eps
    batch, seq = ids.shape
    heads, d = cfg.num_heads, cfg.hidden_size // cfg.num_heads
    t64 = {k: v.astype(np.float64) for k, v in t.items()}
    x = (
        t64["embeddings.word_embeddings.weight"][ids]
        + t64["embeddings.position_embeddings.weight"][:seq]
        + t64["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm_exact(x, t64["embeddings.LayerNorm.weight"], t64["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg.num_layers):
        p = f"encoder.layer.{i}."

        def lin(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return v @ t64[f"{p}{name}.weight"].T + t64[f"{p}{name}.bias"]

        q, k, v = (lin(x, f"attention.self.{n}").reshape(batch, seq, heads, d) for n in ("query", "key", "value"))
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
        weights = np.empty_like(scores)
        for row in range(batch):
            real = mask[row] > 0
            if not real.any():
                weights[row] = 1.0 / seq
                continue
            s = np.where(real, scores[row], -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            weights[row] = e / e.sum(axis=-1, keepdims=True)
        context = np.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, -1)
        ln = "attention.output.LayerNorm"
        x = _layer_norm_exact(
            lin(context, "attention.output.dense") + x, t64[p + ln + ".weight"], t64[p + ln + ".bias"], eps
        )
        inter = _gelu_exact(lin(x, "intermediate.dense"))
        ln = "output.LayerNorm"
        x = _layer_norm_exact(lin(inter, "output.dense") + x, t64[p + ln + ".weight"], t64[p + ln + ".bias"], eps)
    return x


@pytest.mark.parametrize(
    "mask",
    [
        [[1] * 9, [1] * 6 + [0] * 3, [1] * 2 + [0] * 7],  # trailing padding: the fast softmax
        [[1] * 9, [1, 1, 0, 1, 1, 1, 0, 1, 1], [1] * 9],  # holes: the bias path
        [[1] * 9, [0] * 9, [1] * 4 + [0] * 5],  # a row of padding only
    ],
)
def test_forward_matches_a_plain_reference_bert(mask: list[list[int]]) -> None:
    tensors = _random_weights(_CFG)
    encoder = BertEncoder(_CFG, tensors)
    ids = np.random.default_rng(6).integers(0, 50, size=(3, 9))
    m = np.asarray(mask)
    got = encoder.forward(ids, m)
    expected = _reference_forward(tensors, _CFG, ids, m)
    assert got.dtype == np.float32
    assert float(np.abs(got - expected).max()) < 2e-4


def test_a_padded_batch_gives_each_sequence_its_own_vector() -> None:
    encoder = BertEncoder(_CFG, _random_weights(_CFG))
    rng = np.random.default_rng(7)
    seqs = [rng.integers(0, 50, size=n) for n in (9, 4, 7, 1)]
    ids = np.zeros((len(seqs), 9), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, s in enumerate(seqs):
        ids[row, : len(s)] = s
        mask[row, : len(s)] = 1
    batched = encoder.embed(ids, mask)
    alone = np.stack([encoder.embed(s[None, :], np.ones((1, len(s)), dtype=np.int64))[0] for s in seqs])
    assert float(np.abs(batched - alone).max()) < 1e-5


def test_token_budget_batches_come_longest_first() -> None:
    lengths = [5, 300, 12, 12, 80, 1, 512, 40, 40, 40, 7, 90, 3]
    batches = token_budget_batches(lengths, max_items=3, max_tokens=200)
    widths = [max(lengths[i] for i in batch) for batch in batches]
    assert widths == sorted(widths, reverse=True)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
