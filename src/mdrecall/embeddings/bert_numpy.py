"""A BERT encoder forward pass in plain numpy, so the default local model runs without torch.

Only inference is needed, so this is a handful of matrix products: embeddings, N post-LayerNorm encoder
layers (self-attention + GELU feed-forward), then mean pooling over the attention mask. Everything stays
float32, like the reference PyTorch model on CPU, so vectors agree with sentence-transformers to ~1e-6.
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
# Tokens run through the encoder at once (see `_blocks`).
_BLOCK_TOKENS = 1024

# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7 over the whole real line.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


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


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, as BERT's `hidden_act = "gelu"`; the tanh variant would drift from the reference.

    Works in place on `x` where it can: the FFN activations are the biggest arrays of the forward pass.
    """
    x = np.asarray(x, dtype=np.float32)
    ax = np.abs(x)
    ax *= np.float32(1.0 / math.sqrt(2.0))
    y = _erf_abs(ax)
    np.copysign(y, x, out=y)
    y += np.float32(1.0)
    y *= x
    y *= np.float32(0.5)
    return y


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis (biased variance, like torch)."""
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=-1, keepdims=True)
    return centered / np.sqrt(var + np.float32(eps)) * weight + bias


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
    return layer_norm(x.reshape(batch * seq, -1), bert.emb_ln_w, bert.emb_ln_b, bert.config.layer_norm_eps)


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
        bias = ((1.0 - np.asarray(attention_mask, dtype=np.float32)) * _MASK_BIAS)[:, None, None, :]
        for layer in self.layers:
            x = self._layer(x, layer, bias, batch, seq)
        return x.reshape(batch, seq, -1)

    def _layer(self, x: np.ndarray, layer: _Layer, bias: np.ndarray, batch: int, seq: int) -> np.ndarray:
        """One encoder layer on (batch * seq, hidden) rows: 2-D matmuls are the fastest BLAS path."""
        eps = self.config.layer_norm_eps
        attn = self._attention(x, layer, bias, batch, seq) @ layer.attn_out_w
        attn += layer.attn_out_b
        attn += x
        x = layer_norm(attn, layer.attn_ln_w, layer.attn_ln_b, eps)
        inter = x @ layer.inter_w
        inter += layer.inter_b
        out = gelu(inter) @ layer.out_w
        out += layer.out_b
        out += x
        return layer_norm(out, layer.out_ln_w, layer.out_ln_b, eps)

    def _attention(self, x: np.ndarray, layer: _Layer, bias: np.ndarray, batch: int, seq: int) -> np.ndarray:
        """Multi-head self-attention context (before the output projection), as (batch * seq, hidden)."""
        heads = self.config.num_heads
        head_dim = self.config.hidden_size // heads
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        # (batch, seq, 3, heads, head_dim) -> (3, batch, heads, seq, head_dim), contiguous for batched BLAS.
        qkv = np.ascontiguousarray(qkv.reshape(batch, seq, 3, heads, head_dim).transpose(2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        q *= np.float32(1.0 / math.sqrt(head_dim))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += bias
        # softmax with its division moved after the product: a pass over (seq, head_dim) instead of (seq, seq)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        context = scores @ v  # (batch, heads, seq, head_dim)
        context /= scores.sum(axis=-1, keepdims=True)
        return context.transpose(0, 2, 1, 3).reshape(batch * seq, heads * head_dim)


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
