"""The interface every embedding provider implements, and the vector hygiene they share.

A provider turns text into L2-normalised float32 vectors. The index never cares where they come from:
it asks for `embed_query` at search time and `embed_batch` at index time, and keys its embedding cache by
(`id`, `model`, `provider_key`, text hash).

Two shapes, one declaration each:
- `CoreProvider`: the six members anyone's provider object must have (a protocol: no base class needed).
- `EmbeddingProvider`: the base class of every provider in mdrecall. It declares the core as abstract and every
  optional member (calibration, status, lifecycle) once, with its default, so callers read them directly and
  never probe. `as_provider` is the one door for an object from outside: it returns an `EmbeddingProvider`
  as it is, and wraps a bare `CoreProvider` into one that lends the object's own optional members or the defaults.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class CoreProvider(Protocol):
    """What any provider object must offer (a third party's own class needs nothing else).

    - `id`: provider family ("local", "openai", "gemini", "voyage", ...), stored in the index meta.
    - `model`: model name as stored in chunk rows and meta; changing it forces a full reindex.
    - `dims`: vector width, or None until the first embedding is produced (remote providers).
    - `provider_key`: fingerprint of everything that changes the vectors besides id/model (base URL,
      non-auth header names, local weights path). Never contains secrets.
    - `embed_query(text)`: one query vector, shape (dims,).
    - `embed_batch(texts)`: any number of document vectors, shape (len(texts), dims). The provider is
      responsible for splitting the work into requests (token-bounded batches, concurrency, retries).
    """

    id: str
    model: str

    @property
    def dims(self) -> int | None: ...

    @property
    def provider_key(self) -> str: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_batch(self, texts: list[str]) -> np.ndarray: ...


class EmbeddingProvider(ABC):
    """The core (`CoreProvider`, abstract here) plus every optional member with its default.

    A provider overrides only what it knows; everything else reads the default below.
    """

    id: str
    model: str

    # -- the model's calibration (measured per model; see embeddings/local.py) ----------------------------
    recommended_min_score: float | None = None
    """The search's minimum score for this model when the config sets none (None: the config's default)."""
    recommended_centering: float = 0.0
    """Share of the empty-text direction taken out of query vectors (centering.py; 0 = none)."""
    similarity_floor: float = 0.0
    """The cosine of unrelated texts; raw-cosine thresholds (the fact store) are rescaled from it."""
    max_seq_length: int | None = None
    """Tokens the model reads at once; sizes the windows a chunk is cut into (None: 256 for local models)."""

    # -- a fallback wrapper's switch (factory.FallbackProvider) ------------------------------------------
    fallback_from: str | None = None
    """The provider that failed and was replaced at first use, for status (None: no switch)."""
    fallback_reason: str | None = None
    """Why it was replaced (None: no switch)."""

    @property
    def active(self) -> EmbeddingProvider:
        """The provider answering now: a fallback wrapper's current model, else the provider itself."""
        return self

    # -- status and lifecycle ----------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        """HTTP requests made so far (0 for providers that make none)."""
        return 0

    def batch_status(self) -> dict[str, Any] | None:
        """The batch API's state for status (None: the provider has no batch API)."""
        return None

    def probe(self, *, retries: bool = False) -> dict[str, Any] | None:
        """A cheap check of key, endpoint and model, {"ok", "error", "dims"}; never raises. None: no cheaper
        check than embedding a short text, which the caller then does."""
        return None

    def close(self) -> None:  # noqa: B027 - an optional member: doing nothing is the default
        """Release connections and threads (nothing to release by default)."""

    # -- the core ----------------------------------------------------------------------------------------
    @property
    @abstractmethod
    def dims(self) -> int | None: ...

    @property
    @abstractmethod
    def provider_key(self) -> str: ...

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray: ...

    @abstractmethod
    def embed_batch(self, texts: list[str]) -> np.ndarray: ...


OPTIONAL_MEMBERS: tuple[str, ...] = (
    "recommended_min_score",
    "recommended_centering",
    "similarity_floor",
    "max_seq_length",
    "fallback_from",
    "fallback_reason",
    "active",
    "request_count",
    "batch_status",
    "probe",
    "close",
)
"""Every member `EmbeddingProvider` adds to the core, each with a default there (tests check both lists)."""
CORE_MEMBERS: tuple[str, ...] = ("id", "model", "dims", "provider_key", "embed_query", "embed_batch")


class _Lent:
    """An optional member of a foreign provider: the object's own when it has one, else the default."""

    def __init__(self, default: Any) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: ForeignProvider | None, owner: type) -> Any:
        if obj is None:
            return self.default
        return getattr(obj.inner, self.name, self.default)


class ForeignProvider(EmbeddingProvider):
    """A provider object from outside mdrecall (only the core is required), seen as an `EmbeddingProvider`.

    Reads go to the object every time (a caller may change its model). Its own optional members are used
    when it has them; `active` is always this wrapper (the object's `active`, if any, means something else).
    """

    recommended_min_score = _Lent(None)
    recommended_centering = _Lent(0.0)
    similarity_floor = _Lent(0.0)
    max_seq_length = _Lent(None)
    fallback_from = _Lent(None)
    fallback_reason = _Lent(None)
    request_count = _Lent(0)

    def __init__(self, inner: CoreProvider) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"ForeignProvider({self.inner!r})"

    @property
    def id(self) -> str:  # type: ignore[override]
        return self.inner.id

    @property
    def model(self) -> str:  # type: ignore[override]
        return self.inner.model

    @property
    def dims(self) -> int | None:
        return self.inner.dims

    @property
    def provider_key(self) -> str:
        return self.inner.provider_key

    def embed_query(self, text: str) -> np.ndarray:
        return self._checked(self.inner.embed_query(text), None)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._checked(self.inner.embed_batch(texts), len(texts))

    def _checked(self, vectors: Any, rows: int | None) -> np.ndarray:
        """The object's vectors as float32, or an EmbeddingError naming its mistake (the sync then keeps the
        keyword index and reports it; a search answers by keyword with a notice), never garbage stored."""
        import numpy as np

        from mdrecall.errors import EmbeddingError

        name = f"embedding model {self.id}/{self.model}"
        try:
            arr = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError) as err:
            raise EmbeddingError(f"{name} returned something that is not a vector of numbers ({err})") from None
        if rows is None and arr.ndim == 2 and arr.shape[0] == 1:
            arr = arr[0]  # one query vector as a one-row matrix
        if rows == 0 and arr.size == 0:
            return np.zeros((0, self.dims or 0), dtype=np.float32)
        want = 1 if rows is None else 2
        if arr.ndim != want or (rows is not None and arr.shape[0] != rows):
            shape = "one vector" if rows is None else f"{rows} vectors"
            raise EmbeddingError(f"{name} returned an array of shape {arr.shape} where {shape} were expected")
        width = arr.shape[-1]
        if self.dims is not None and arr.size and width != self.dims:
            raise EmbeddingError(f"{name} returned vectors of {width} numbers, not its dims ({self.dims})")
        if not np.isfinite(arr).all():
            raise EmbeddingError(f"{name} returned values that are not finite numbers (NaN or infinity)")
        return arr

    def batch_status(self) -> dict[str, Any] | None:
        status = getattr(self.inner, "batch_status", None)
        return status() if callable(status) else None

    def probe(self, *, retries: bool = False) -> dict[str, Any] | None:
        probe = getattr(self.inner, "probe", None)
        if not callable(probe):
            return None
        return probe(retries=True) if retries else probe()

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def check_core_members(obj: object) -> None:
    """A ConfigError naming the core members a caller's model object lacks (instead of an AttributeError later)."""
    from mdrecall.errors import ConfigError

    missing = [name for name in CORE_MEMBERS if not hasattr(obj, name)]
    if missing:
        raise ConfigError(
            f"the embedding model object {type(obj).__name__} has no {', '.join(missing)}: it needs "
            f"{', '.join(CORE_MEMBERS)}"
        )


def as_provider(obj: EmbeddingProvider | CoreProvider | None) -> EmbeddingProvider | None:
    """The one door for a provider from outside: an `EmbeddingProvider` as it is, a bare object wrapped."""
    if obj is None or isinstance(obj, EmbeddingProvider):
        return obj
    return ForeignProvider(obj)


def sanitize_and_normalize(vectors: np.ndarray | list) -> np.ndarray:
    """Replace non-finite values by 0 and L2-normalise each row (rows with ~0 norm are left as they are).

    Works on one vector (1-D) or a matrix (2-D); always returns float32.
    """
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    arr = np.where(np.isfinite(arr), arr, 0.0).astype(np.float32)
    if arr.ndim == 1:
        norm = float(np.linalg.norm(arr))
        return arr if norm < 1e-10 else (arr / norm).astype(np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    safe = np.where(norms < 1e-10, 1.0, norms)
    return (arr / safe).astype(np.float32)


def fingerprint(payload: dict) -> str:
    """SHA-256 of a canonical JSON rendering: stable across runs and dict orderings."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
