"""A BERT encoder forward pass in plain numpy, so the default local model runs without torch.

Only inference is needed, so this is a handful of matrix products: embeddings, N post-LayerNorm encoder
layers (self-attention + GELU feed-forward), then mean pooling over the attention mask. Everything stays
float32, like the reference PyTorch model on CPU, so vectors agree with sentence-transformers to ~1e-6.

The matmuls run at OpenBLAS's peak, so the rest is written to cost little beside them (bench/bench_embed.py):
GELU as a tanh fit of the exact erf form, attention on strided views of the fused QKV product (no transposed
copies), softmax without its row-max pass when the scores allow, and the element-wise steps in place, in
tiles that stay in the core's L2 cache. tests/test_embed_numpy_kernels.py checks each against its formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# Added to the attention scores of padding keys: exp() of it is exactly 0 in float32, and unlike
# finfo.min it cannot overflow to -inf when added to a negative score.
_MASK_BIAS = np.float32(-1e9)
# |attention score| (base 2) up to which 2**s needs no guard: 2**100 and 2**-100 are normal float32 numbers.
_EXP_SAFE = np.float32(100.0)
# Attention scores computed at once (a few sequences' worth): 128k float32 values, 512 KB, stay in L2.
_SCORES_PER_GROUP = 2000000
# Tokens run through the encoder at once (see `_blocks`).
_BLOCK_TOKENS = 1024

# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7 over the whole real line.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

# GELU(x) = x/2 (1 + tanh(x P(x^2))): P's coefficients (lowest first), a weighted minimax fit of
# atanh(erf(x/sqrt 2)) / x over x^2 <= 32 (beyond, tanh(x P) is 1.0 in float32: x^2 is clamped there).
_GELU_P = tuple(
    np.float32(c)
    for c in (
        0.7978718005373094,
        0.036367661624885944,
        -5.9236346260967056e-05,
        -4.690036977415285e-05,
        2.75882569945712e-06,
        -5.515650081770204e-08,
    )
)
_GELU_CLAMP = np.float32(32.0)
# Values per tile of the element-wise steps (GELU, add-and-norm): three float32 tiles fit in a 1 MB L2.
_GELU_TILE = 65536


@dataclass(frozen=True)
class BertConfig:
    """The few architecture numbers the forward pass needs (from a Hugging Face config.json)."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_position_embeddings: int
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any]) -> BertConfig:
        """Read a config.json dict; raises KeyError/ValueError when it is not a BERT-style config."""
        hidden = int(cfg["hidden_size"])
        heads = int(cfg["num_attention_heads"])
        if hidden % heads:
            raise ValueError(f"hidden_size {hidden} is not divisible by num_attention_heads {heads}")
        return cls(
            hidden_size=hidden,
            num_layers=int(cfg["num_hidden_layers"]),
            num_heads=heads,
            intermediate_size=int(cfg["intermediate_size"]),
            max_position_embeddings=int(cfg.get("max_position_embeddings", 512)),
            layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
            hidden_act=str(cfg.get("hidden_act", "gelu")),
        )


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised error function (numpy has none); max abs error 1.5e-7, float32 in and out."""
    x = np.asarray(x, dtype=np.float32)
    y = _erf_abs(np.abs(x))
    return np.copysign(y, x, out=y)


def _erf_abs(ax: np.ndarray) -> np.ndarray:
    """erf(|x|) by A&S 7.1.26, computed in place in `ax` (which it consumes) plus one scratch array.

    The exponent is capped at 80: beyond it erf is 1.0 in float32 anyway, and exp() would otherwise
    produce denormals, which are very slow to multiply on x86.
    """
    t = np.multiply(ax, np.float32(_AS_P))
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    a1, a2, a3, a4, a5 = (np.float32(a) for a in _AS_A)
    poly = np.multiply(t, a5)
    for coef in (a4, a3, a2, a1):
        poly += coef
        poly *= t
    np.multiply(ax, ax, out=ax)
    np.minimum(ax, np.float32(80.0), out=ax)
    np.negative(ax, out=ax)
    np.exp(ax, out=ax)
    poly *= ax
    np.subtract(np.float32(1.0), poly, out=poly)
    return poly


def gelu(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """Exact (erf) GELU of `x + bias`, as BERT's `hidden_act = "gelu"`, computed in place in `x` (returned).

    x/2 (1 + erf(x/sqrt 2)) is written x/2 (1 + tanh(x P(x^2))) with P a degree-5 fit of
    atanh(erf(x/sqrt 2)) / x (`_GELU_P`): |error| <= 1.2e-6 in float32 over the whole real line (the A&S
    erf route, `erf`, is as exact but needs exp and a division, ~2x slower). Unlike the usual tanh
    approximation (error 4e-4) this is the exact GELU to float32 precision, so vectors do not drift from
    the reference. The FFN activations are the biggest arrays of the forward pass: they are processed in
    tiles of ~64k values so the ~17 passes stay in the core's L2 cache.
    """
    x = np.asarray(x, dtype=np.float32)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    step = max(1, _GELU_TILE // max(1, rows.shape[1]))
    size = min(rows.shape[0], step) * rows.shape[1]
    square, poly = np.empty(size, dtype=np.float32), np.empty(size, dtype=np.float32)
    # numpy's minimum against a scalar is not vectorised (~6x a multiply); against an array it is
    clamp = np.full(size, _GELU_CLAMP, dtype=np.float32)
    for start in range(0, rows.shape[0], step):
        _gelu_tile(rows[start : start + step], bias, (square, poly, clamp))
    return x


def _gelu_tile(t: np.ndarray, bias: np.ndarray | None, buffers: tuple[np.ndarray, ...]) -> None:
    """`gelu` on one tile `t` (in place), with two scratch buffers and one of _GELU_CLAMP at least as large."""
    s, p, clamp = (b[: t.size].reshape(t.shape) for b in buffers)
    if bias is not None:
        t += bias
    np.multiply(t, t, out=s)
    np.minimum(s, clamp, out=s)  # beyond it tanh is 1.0 in float32, and P would turn
    np.multiply(s, _GELU_P[-1], out=p)
    for coef in _GELU_P[-2:0:-1]:
        p += coef
        p *= s
    p += _GELU_P[0]
    p *= t
    np.tanh(p, out=p)
    p *= np.float32(0.5)
    p += np.float32(0.5)
    t *= p


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis (biased variance, like torch); `x` is left unchanged."""
    return layer_norm_(np.array(x, dtype=np.float32), weight, bias, eps)


def layer_norm_(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """`layer_norm` computed in place in the float32 array `x` (returned): no temporaries of x's size."""
    scale = np.float32(1.0 / x.shape[-1])
    mean = np.einsum("...i->...", x)[..., None]  # einsum's row sums: 3x faster than x.mean(axis=-1)
    mean *= scale
    x -= mean
    var = np.einsum("...i,...i->...", x, x)[..., None]
    var *= scale
    var += np.float32(eps)
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)
    x *= var
    x *= weight
    x += bias
    return x


def residual_layer_norm_(
    y: np.ndarray, bias: np.ndarray, residual: np.ndarray, weight: np.ndarray, beta: np.ndarray, eps: float
) -> np.ndarray:
    """`layer_norm_(y + bias + residual)` in place in the float32 rows `y` (returned), a tile of rows at a
    time so its ~8 passes stay in the core's L2 cache (BERT's add-and-norm after each sub-layer)."""
    step = max(1, _GELU_TILE // max(1, y.shape[-1]))
    for start in range(0, y.shape[0], step):
        tile = y[start : start + step]
        tile += bias
        tile += residual[start : start + step]
        layer_norm_(tile, weight, beta, eps)
    return y


def softmax(x: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over the last axis, in place to spare a copy of the score block."""
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    return x


@dataclass(frozen=True)
class _Layer:
    """One encoder layer with linear weights pre-transposed (x @ W) and Q/K/V fused into one matrix."""

    qkv_w: np.ndarray
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    attn_ln_w: np.ndarray
    attn_ln_b: np.ndarray
    inter_w: np.ndarray
    inter_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    out_ln_w: np.ndarray
    out_ln_b: np.ndarray


def _strip_prefix(tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Accept both `BertModel` keys and `BertFor*` keys (which carry a leading `bert.`)."""
    out: dict[str, np.ndarray] = {}
    for key, value in tensors.items():
        out[key.removeprefix("bert.")] = value
    return out


def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _linear_t(w: np.ndarray) -> np.ndarray:
    """torch Linear stores (out, in); a contiguous (in, out) copy makes x @ W one BLAS call."""
    return _f32(np.asarray(w).T)


def _load_layer(t: Mapping[str, np.ndarray], i: int) -> _Layer:
    p = f"encoder.layer.{i}."
    q, k, v = (t[f"{p}attention.self.{n}.weight"] for n in ("query", "key", "value"))
    qb, kb, vb = (t[f"{p}attention.self.{n}.bias"] for n in ("query", "key", "value"))
    return _Layer(
        qkv_w=_linear_t(np.concatenate([q, k, v], axis=0)),
        qkv_b=_f32(np.concatenate([qb, kb, vb])),
        attn_out_w=_linear_t(t[f"{p}attention.output.dense.weight"]),
        attn_out_b=_f32(t[f"{p}attention.output.dense.bias"]),
        attn_ln_w=_f32(t[f"{p}attention.output.LayerNorm.weight"]),
        attn_ln_b=_f32(t[f"{p}attention.output.LayerNorm.bias"]),
        inter_w=_linear_t(t[f"{p}intermediate.dense.weight"]),
        inter_b=_f32(t[f"{p}intermediate.dense.bias"]),
        out_w=_linear_t(t[f"{p}output.dense.weight"]),
        out_b=_f32(t[f"{p}output.dense.bias"]),
        out_ln_w=_f32(t[f"{p}output.LayerNorm.weight"]),
        out_ln_b=_f32(t[f"{p}output.LayerNorm.bias"]),
    )


def embedding_rows(bert: Any, ids: np.ndarray) -> np.ndarray:
    """BertEncoder.forward's first step, as (batch * seq, hidden) rows: word + position + token type rows,
    then LayerNorm. `bert` is anything holding the embedding tensors (BertEncoder, or the ONNX encoder that
    keeps only these)."""
    batch, seq = ids.shape
    if seq > bert.position.shape[0]:
        raise ValueError(f"sequence length {seq} exceeds the {bert.position.shape[0]} position embeddings")
    x = bert._token_embeddings(ids.reshape(-1)).reshape(batch, seq, -1)
    x = x + bert.position[:seq][None, :, :] + bert.token_type[0][None, None, :]
    return layer_norm_(x.reshape(batch * seq, -1), bert.emb_ln_w, bert.emb_ln_b, bert.config.layer_norm_eps)


class BertEncoder:
    """BERT weights plus the forward pass; immutable after construction, so safe to share across threads."""

    def __init__(
        self,
        config: BertConfig,
        tensors: Mapping[str, np.ndarray],
        token_embeddings: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        """`token_embeddings(ids) -> (n, hidden)` replaces the word table when given (multilingual models keep
        theirs 4-bit: 250k rows would take 384 MB as float32)."""
        if config.hidden_act not in ("gelu", "gelu_python"):
            raise ValueError(f"unsupported hidden_act {config.hidden_act!r} (only exact 'gelu')")
        t = _strip_prefix(tensors)
        try:
            if token_embeddings is None:
                word = _f32(t["embeddings.word_embeddings.weight"])
                self.word_width = word.shape[1]
                self._token_embeddings: Callable[[np.ndarray], np.ndarray] = word.__getitem__
            else:
                self.word_width = config.hidden_size
                self._token_embeddings = token_embeddings
            self.position = _f32(t["embeddings.position_embeddings.weight"])
            self.token_type = _f32(t["embeddings.token_type_embeddings.weight"])
            self.emb_ln_w = _f32(t["embeddings.LayerNorm.weight"])
            self.emb_ln_b = _f32(t["embeddings.LayerNorm.bias"])
            self.layers = [_load_layer(t, i) for i in range(config.num_layers)]
        except KeyError as err:
            raise ValueError(f"weights are missing tensor {err.args[0]!r}") from None
        if self.word_width != config.hidden_size:
            raise ValueError(f"embedding width {self.word_width} != hidden_size {config.hidden_size}")
        self.config = config

    def embed(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Mean-pooled (not normalised) sentence vectors for a padded batch, shape (batch, hidden)."""
        ids = np.asarray(input_ids, dtype=np.int64)
        mask = np.asarray(attention_mask, dtype=np.int64)
        out = np.empty((ids.shape[0], self.config.hidden_size), dtype=np.float32)
        for rows in _blocks(ids.shape[0], ids.shape[1]):
            out[rows] = mean_pool(self.forward(ids[rows], mask[rows]), mask[rows])
        return out

    def forward(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Last hidden state (batch, seq, hidden) for token ids and a 0/1 mask of the same shape."""
        ids = np.asarray(input_ids, dtype=np.int64)
        batch, seq = ids.shape
        x = embedding_rows(self, ids)
        keys = KeyMask.of(attention_mask)
        for layer in self.layers:
            x = self._layer(x, layer, keys, batch, seq)
        return x.reshape(batch, seq, -1)

    def _layer(self, x: np.ndarray, layer: _Layer, keys: KeyMask, batch: int, seq: int) -> np.ndarray:
        """One encoder layer on (batch * seq, hidden) rows: 2-D matmuls are the fastest BLAS path; every
        other step works in place on the matmuls' outputs."""
        eps = self.config.layer_norm_eps
        attn = self._attention(x, layer, keys, batch, seq) @ layer.attn_out_w
        x = residual_layer_norm_(attn, layer.attn_out_b, x, layer.attn_ln_w, layer.attn_ln_b, eps)
        out = gelu(x @ layer.inter_w, layer.inter_b) @ layer.out_w
        return residual_layer_norm_(out, layer.out_b, x, layer.out_ln_w, layer.out_ln_b, eps)

    def _attention(self, x: np.ndarray, layer: _Layer, keys: KeyMask, batch: int, seq: int) -> np.ndarray:
        """Multi-head self-attention context (before the output projection), as (batch * seq, hidden).

        Q, K and V stay where the fused projection wrote them: per head they are (seq, head_dim) blocks with
        a row stride of 3 * hidden, which BLAS reads as they are (no transposed copies), and the context is
        written straight into (batch, seq, heads, head_dim) order, so it needs no copy either.
        """
        heads = self.config.num_heads
        head_dim = self.config.hidden_size // heads
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        parts = qkv.reshape(batch, seq, 3, heads, head_dim)
        q = parts[:, :, 0].transpose(0, 2, 1, 3)  # (batch, heads, seq, head_dim)
        k = parts[:, :, 1].transpose(0, 2, 3, 1)  # (batch, heads, head_dim, seq)
        v = parts[:, :, 2].transpose(0, 2, 1, 3)
        # log2(e) / sqrt(head_dim): scores come out in base-2 units, for exp2 (2.4x faster than exp in numpy)
        q *= np.float32(math.log2(math.e) / math.sqrt(head_dim))
        context = np.empty((batch, seq, heads, head_dim), dtype=np.float32)
        # a few sequences at a time: their scores stay in the core's L2 cache from product to product
        step = max(1, _SCORES_PER_GROUP // (heads * seq * seq))
        for start in range(0, batch, step):
            rows = slice(start, start + step)
            scores = q[rows] @ k[rows]
            # softmax with its division after the product: a pass over (seq, head_dim), not (seq, seq)
            sums = _softmax_numerators(scores, keys.rows(start, start + step))
            out = context[rows]
            np.matmul(scores, v[rows], out=out.transpose(0, 2, 1, 3))
            out /= sums.transpose(0, 2, 1, 3)
        return context.reshape(batch * seq, heads * head_dim)


def _softmax_numerators(scores: np.ndarray, keys: KeyMask) -> np.ndarray:
    """2**scores of the attention scores (batch, heads, queries, keys; in base-2 units, i.e. times log2 e)
    in place, masked keys exactly 0, and the row sums (batch, heads, queries, 1): softmax but its division.

    The usual guard, subtracting each row's max first, is a reduction over short rows that cost as much as
    the exponential itself. It is skipped when every score lies within +-_EXP_SAFE: 2**s can then neither
    overflow nor take a whole row to 0 (softmax is the same either way, up to rounding). Larger scores, and
    masks other than trailing padding, take the guarded way.
    """
    if keys.bias is None and scores.min() >= -_EXP_SAFE and scores.max() <= _EXP_SAFE:
        np.exp2(scores, out=scores)
        keys.zero_tails(scores)
    else:
        keys.apply(scores)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp2(scores, out=scores)
    return np.einsum("...i->...", scores)[..., None]


@dataclass(frozen=True)
class KeyMask:
    """The attention mask as the scores need it: padding at the end of rows (what tokenizers produce) marks
    only those score columns, a pass over the padding alone; any other mask becomes an additive bias."""

    tails: tuple[tuple[int, int], ...]  # (row, first padding position) of each row that ends in padding
    bias: np.ndarray | None  # (batch, 1, 1, seq), for masks that are not of that shape

    @classmethod
    def of(cls, attention_mask: np.ndarray) -> KeyMask:
        real = np.asarray(attention_mask) != 0
        lengths = real.sum(axis=1)
        prefix = np.array_equal(real, np.arange(real.shape[1])[None, :] < lengths[:, None])
        if prefix and (lengths > 0).all():
            return cls(tuple((row, int(n)) for row, n in enumerate(lengths) if n < real.shape[1]), None)
        return cls((), ((1.0 - real.astype(np.float32)) * _MASK_BIAS)[:, None, None, :])

    def rows(self, start: int, stop: int) -> KeyMask:
        """The mask of batch rows start:stop (scores computed a few sequences at a time)."""
        tails = tuple((row - start, first) for row, first in self.tails if start <= row < stop)
        return KeyMask(tails, None if self.bias is None else self.bias[start:stop])

    def apply(self, scores: np.ndarray) -> None:
        """Before softmax: give the masked keys' scores (batch, heads, queries, keys) a weight of 0."""
        if self.bias is not None:
            scores += self.bias
        for row, start in self.tails:
            scores[row, :, :, start:] = _MASK_BIAS

    def zero_tails(self, weights: np.ndarray) -> None:
        """After exp, for trailing padding: the padding keys' weights become 0."""
        for row, start in self.tails:
            weights[row, :, :, start:] = 0.0


def _blocks(batch: int, seq: int) -> list[slice]:
    """Split a batch into groups of sequences of about _BLOCK_TOKENS tokens.

    Small blocks keep every temporary (FFN activations, attention scores) to a few MB: they stay in cache
    and in malloc's free lists instead of being mmap'ed and page-faulted afresh for each operation, which
    made whole-batch processing several times slower. Matmuls with ~1000 rows still run at full BLAS speed.
    """
    step = max(1, _BLOCK_TOKENS // max(1, seq))
    return [slice(start, start + step) for start in range(0, batch, step)]


def mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors that the mask marks as real (sentence-transformers' mean pooling)."""
    mask = np.asarray(attention_mask, dtype=np.float32)[:, :, None]
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    return (summed / counts).astype(np.float32, copy=False)
