"""WordLlama (l2_supercat, 256-d): a static embedding model, selectable as `local.model = "wordllama"`.

A text's vector is the mean of its tokens' rows in one 32000 x 256 table (LLaMA 2's tokenizer), so it embeds
thousands of texts a second on one core and has no input window. It reads word overlap more than meaning:
on the evals it stays well behind multilingual-e5-small (bench/quality/README.md), which is why it is an
option (the `wordllama` extra) and not the default.

Only the data files of the `wordllama` wheel are read (found with find_spec, never imported: importing it
configures logging at INFO and its loader fetches the tokenizer from the Hugging Face hub, because the wheel
keeps the file in a folder its loader does not look in). The pooling below is WordLlama's own: token rows,
no special tokens, no truncation, average, L2-normalise.
"""

from __future__ import annotations

import importlib.util
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from mdrecall.embeddings.base import EmbeddingProvider, fingerprint, sanitize_and_normalize
from mdrecall.errors import EmbeddingError

WORDLLAMA_MODEL_NAME = "wordllama-l2-supercat-256"
WORDLLAMA_INSTALL_HINT = "pip install 'mdrecall[wordllama]'"
WORDLLAMA_DIMS = 256
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")


def wordllama_files() -> tuple[Path, Path] | None:
    """(weights, tokenizer) of the installed wordllama wheel, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    root = Path(spec.origin).parent
    weights, tokenizer = root.joinpath(*_WEIGHTS), root.joinpath(*_TOKENIZER)
    return (weights, tokenizer) if weights.is_file() and tokenizer.is_file() else None


class WordLlamaProvider(EmbeddingProvider):
    """The local provider for WordLlama's static 256-d vectors."""

    id = "local"
    runtime = "wordllama"
    model = WORDLLAMA_MODEL_NAME
    # no input window; the value only sizes the windows a chunk is cut into (sync.window_plan)
    max_seq_length = 512

    def __init__(self, recommended_min_score: float | None = None, centering: float = 0.0) -> None:
        files = wordllama_files()
        if files is None:
            raise EmbeddingError(f"the local model wordllama is not installed; run: {WORDLLAMA_INSTALL_HINT}")
        self.weights, self.tokenizer_file = files
        self.recommended_min_score = recommended_min_score
        self.recommended_centering = centering
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def dims(self) -> int:
        return WORDLLAMA_DIMS

    @cached_property
    def provider_key(self) -> str:
        """The weight file's size stands for its identity (a new wheel with other weights changes it)."""
        return fingerprint({"runtime": self.runtime, "weights": self.weights.name, "size": self.weights.stat().st_size})

    def _load(self) -> tuple[np.ndarray, Any]:
        with self._lock:
            if self._table is None:
                from safetensors.numpy import load_file
                from tokenizers import Tokenizer

                table = load_file(str(self.weights)).get("embedding.weight")
                if table is None or table.ndim != 2 or table.shape[1] != WORDLLAMA_DIMS:
                    raise EmbeddingError(f"unexpected wordllama weights in {self.weights}")
                self._tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
                self._table = np.ascontiguousarray(table.astype(np.float32))
            return self._table, self._tokenizer

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, WORDLLAMA_DIMS), dtype=np.float32)
        table, tokenizer = self._load()
        encoded = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        lengths = np.array([len(e.ids) for e in encoded], dtype=np.int64)
        ids = np.fromiter((i for e in encoded for i in e.ids), dtype=np.int64, count=int(lengths.sum()))
        np.clip(ids, 0, table.shape[0] - 1, out=ids)
        out = np.zeros((len(texts), WORDLLAMA_DIMS), dtype=np.float32)
        filled = lengths > 0
        if ids.size:
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[filled]
            sums = np.add.reduceat(table[ids], starts, axis=0)
            out[filled] = sums / lengths[filled, None]
        return sanitize_and_normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]
