"""The BERT encoder layers on ONNX Runtime (optional extra `onnx`): the same float32 weights, fused kernels.

Why: bert_numpy's forward pass spends much of its time outside the matmuls (softmax, GELU, LayerNorm as
separate numpy passes with their temporaries). ONNX Runtime's CPU contrib ops run each layer as five fused
kernels: `Attention` (QKV projection, masked softmax, context), `SkipLayerNormalization` (bias + residual +
LayerNorm), `BiasGelu` (exact erf GELU) and two MatMuls. Measured on multilingual-e5-small, 3-line chat
windows (bench/bench_embed.py): ~1.6x less CPU than the numpy pass, cosine to it >= 0.99999.

The graph is built in memory with `onnx.helper` from the weights the numpy encoder already holds (e5's
dequantised 4-bit weights, MiniLM's safetensors), so no model file is downloaded or written. The embeddings
(word rows, positions, LayerNorm) stay in numpy: e5's 250k-row word table stays 4-bit and only the rows a
batch uses are dequantised. Each session runs on one intra-op thread without spinning; parallel.py runs
one mini-batch per core in Python threads (session.run releases the GIL), as for the numpy pass, which
keeps a busy machine from collapsing the throughput.

Without onnxruntime and onnx installed, `onnx_encoder` returns None and the numpy pass is used.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from mdrecall.embeddings.bert_numpy import BertEncoder, embedding_rows, mean_pool

# Below this ONNX Runtime lacks some of the contrib ops' inputs used here.
MIN_ORT = "1.16"


def onnx_available() -> bool:
    """onnxruntime and onnx are importable (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


class OnnxBertEncoder:
    """`embed(ids, mask)` like BertEncoder's, the layers on an ONNX Runtime session. Thread-safe."""

    def __init__(self, bert: BertEncoder) -> None:
        import onnxruntime as ort

        self.config = bert.config
        # the embedding step's tensors only: the layer weights live in the session (the numpy copies go)
        self._token_embeddings = bert._token_embeddings
        self.position, self.token_type = bert.position, bert.token_type
        self.emb_ln_w, self.emb_ln_b = bert.emb_ln_w, bert.emb_ln_b
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(_layers_model(bert), options, providers=["CPUExecutionProvider"])

    def embed(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Mean-pooled (not normalised) sentence vectors for a padded batch, shape (batch, hidden)."""
        ids = np.asarray(input_ids, dtype=np.int64)
        mask = np.asarray(attention_mask, dtype=np.int64)
        hidden = self.session.run(["hidden"], {"x": self._embeddings(ids), "mask": mask.astype(np.int32)})[0]
        return mean_pool(hidden, mask)

    def _embeddings(self, ids: np.ndarray) -> np.ndarray:
        """BertEncoder.forward's first step (bert_numpy.embedding_rows), shaped (batch, seq, hidden)."""
        batch, seq = ids.shape
        return np.ascontiguousarray(embedding_rows(self, ids).reshape(batch, seq, -1), dtype=np.float32)


def _layers_model(bert: BertEncoder) -> bytes:
    """The encoder layers as a serialised ONNX model: inputs x (batch, seq, hidden) and mask (batch, seq)
    int32, output hidden (batch, seq, hidden)."""
    from onnx import TensorProto, helper, numpy_helper

    cfg = bert.config
    eps = float(cfg.layer_norm_eps)
    nodes: list[Any] = []
    weights: list[Any] = []

    def weight(name: str, value: np.ndarray) -> str:
        weights.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), name))
        return name

    x = "x"
    last = len(bert.layers) - 1
    for i, layer in enumerate(bert.layers):
        p = f"l{i}."
        qkv = [x, weight(p + "qkv.w", layer.qkv_w), weight(p + "qkv.b", layer.qkv_b), "mask"]
        ln1 = [p + "ao", x, weight(p + "aln.w", layer.attn_ln_w), weight(p + "aln.b", layer.attn_ln_b)]
        ln2 = [p + "fo", p + "x1", weight(p + "oln.w", layer.out_ln_w), weight(p + "oln.b", layer.out_ln_b)]
        out = "hidden" if i == last else p + "x2"
        nodes += [
            helper.make_node("Attention", qkv, [p + "att"], domain="com.microsoft", num_heads=cfg.num_heads),
            helper.make_node("MatMul", [p + "att", weight(p + "ao.w", layer.attn_out_w)], [p + "ao"]),
            helper.make_node(
                "SkipLayerNormalization",
                [*ln1, weight(p + "ao.b", layer.attn_out_b)],
                [p + "x1"],
                domain="com.microsoft",
                epsilon=eps,
            ),
            helper.make_node("MatMul", [p + "x1", weight(p + "fi.w", layer.inter_w)], [p + "fi"]),
            helper.make_node(
                "BiasGelu", [p + "fi", weight(p + "fi.b", layer.inter_b)], [p + "g"], domain="com.microsoft"
            ),
            helper.make_node("MatMul", [p + "g", weight(p + "fo.w", layer.out_w)], [p + "fo"]),
            helper.make_node(
                "SkipLayerNormalization",
                [*ln2, weight(p + "fo.b", layer.out_b)],
                [out],
                domain="com.microsoft",
                epsilon=eps,
            ),
        ]
        x = out
    width = cfg.hidden_size
    graph = helper.make_graph(
        nodes,
        "bert_layers",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", width]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", width])],
        initializer=weights,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    return model.SerializeToString()


def onnx_encoder(bert: BertEncoder) -> OnnxBertEncoder | None:
    """The ONNX Runtime encoder for these weights, or None when the extra is not installed."""
    if not onnx_available():
        return None
    return OnnxBertEncoder(bert)
