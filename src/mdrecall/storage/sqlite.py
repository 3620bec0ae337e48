"""The SQLite index: the spec's exact schema, sqlite-vec loading, FTS5, the embedding cache and its LRU.

One file per agent. apsw is used instead of the stdlib module because it can load extensions everywhere.
The store knows nothing about ranking or embeddings providers: it stores rows and answers raw queries.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import re
import time
import uuid
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import apsw

from mdrecall.documents.context import with_context
from mdrecall.files import make_private, make_private_dirs
from mdrecall.storage.base import ChunkRow, FileRow, FtsState, SearchRow, VectorState
from mdrecall.storage.identity import APPLICATION_ID, META_KEY, check_index_path, remove_own_db_files
from mdrecall.text.fts_query import quote_term
from mdrecall.text.tokens import index_text

VECTOR_GENERATION_KEY = "vector_generation"
# who embedded the hashed rows of chunk_vectors (JSON [provider, model, provider_key]): they serve as cache
# entries for that identity only
VECTOR_IDENTITY_KEY = "vector_identity"
# 2: vectors as float32 blobs in chunk_vectors (one row per chunk window), cache as float32 blobs, contentless
# FTS. A version-1 file still opens (same spec tables); its meta lacks the storage format, so the next sync
# rebuilds it in the new format (reusing its embedding cache).
# 3: each window vector stored once. chunk_vectors rows carry the window text's hash and are the cache entries
# of the text the index holds; embedding_cache keeps only vectors no chunk uses (a deleted file's, an old
# version's) and keys them by the 32-byte hash. A version-2 file gets the hash column on its first read-write
# open (an ALTER, no rewrite); its meta's storage format makes the next sync rebuild it, seeded with its cache.
SCHEMA_VERSION = 3
STORAGE_FORMAT = 3
EXPECTED_COLUMNS = {
    "meta": ("key", "value"),
    "files": ("path", "source", "hash", "mtime", "size"),
    "chunks": ("id", "path", "source", "start_line", "end_line", "hash", "model", "text", "embedding", "updated_at"),
    "embedding_cache": ("provider", "model", "provider_key", "hash", "embedding", "dims", "updated_at"),
    "chunk_vectors": ("chunk_rowid", "window", "embedding", "hash"),
}
# layouts of older versions that still open (and are migrated on a read-write open)
LEGACY_COLUMNS = {"chunk_vectors": ("chunk_rowid", "window", "embedding")}
VectorEngine = Literal["numpy", "sqlite-vec"]
# How vectors are stored on disk (store.vector.encoding). float32 is exact; float16, int10 (10-bit values
# packed four to five bytes, one float32 scale per vector) and int8 (one float32 scale per vector) are decoded
# to float32 when read, so search always runs on a float32 matrix.
VectorEncoding = Literal["float32", "float16", "int10", "int8"]
CACHE_LOOKUP_BATCH = 400
# chunk id -> rowid pairs a store remembers for the lookups that follow a search's reads (Store._rowids)
ROWID_MEMO_MAX = 50_000
NOT_INDEXED = -1  # an id Store._rowids looked up and did not find
_CACHE_INSERT = (
    "INSERT OR IGNORE INTO embedding_cache(provider, model, provider_key, hash, embedding, dims, updated_at) "
    "VALUES(?, ?, ?, ?, ?, ?, ?)"
)
VEC0_MAX_K = 4096  # sqlite-vec's limit on k
# Keyword search in large indexes: terms in more than COMMON_TERM_SHARE of the chunks (bm25 IDF ~ 0) are
# left out of the ranking (see Store._ranked_rowids); estimated from 3 windows of COMMON_TERM_SAMPLE rowids.
COMMON_TERM_MIN_ROWS = 8192
COMMON_TERM_SAMPLE = 512
COMMON_TERM_SHARE = 0.6
COMMON_ONLY_RANK = -1e-6
# A sync that leaves more FTS segments than this merges them into one (Store.tidy_fts).
FTS_MAX_SEGMENTS = 8
# quoted terms (a trailing * makes one a prefix query: search's AND query for the min-score rule uses them)
_PLAIN_QUERY = re.compile(r'^("(?:[^"]|"")+"\*?)((?: (?:AND|OR) "(?:[^"]|"")+"\*?)*)$')
_PLAIN_TERM = re.compile(r' (AND|OR) ("(?:[^"]|"")+"\*?)')

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY,
  source TEXT NOT NULL DEFAULT 'memory',
  hash TEXT NOT NULL,
  mtime INTEGER NOT NULL,
  size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
  id TEXT PRIMARY KEY,
  path TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'memory',
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  hash TEXT NOT NULL,
  model TEXT NOT NULL,
  text TEXT NOT NULL,
  embedding TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS embedding_cache (
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  provider_key TEXT NOT NULL,
  hash TEXT NOT NULL,
  embedding TEXT NOT NULL,
  dims INTEGER,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (provider, model, provider_key, hash)
);
-- Departure from the spec (measured, see README "Benchmarks"): vectors live here as blobs (float32 unless
-- store.vector.encoding says otherwise), one row per embedded window of a chunk (a chunk scores as its best
-- window), with the 32-byte hash of the window's text: these rows are also the embedding cache of the text
-- the index holds (embedding_cache keeps only vectors no chunk uses). chunks.embedding holds '' unless
-- store.vector.jsonEmbeddings asks for the spec's JSON copy. mdrecall never shares this file with OpenClaw.
CREATE TABLE IF NOT EXISTS chunk_vectors (
  chunk_rowid INTEGER NOT NULL,
  window INTEGER NOT NULL DEFAULT 0,
  embedding BLOB NOT NULL,
  hash BLOB
);
CREATE INDEX IF NOT EXISTS idx_chunk_vectors_chunk ON chunk_vectors(chunk_rowid);
CREATE INDEX IF NOT EXISTS idx_chunk_vectors_hash ON chunk_vectors(hash) WHERE hash IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS idx_chunks_source ON chunks(source);
CREATE INDEX IF NOT EXISTS idx_chunks_path_source ON chunks(path, source);
CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at ON embedding_cache(updated_at);
"""

# The spec's columns, but contentless: the text is stored once (in chunks), the FTS table keeps only its
# inverted index, keyed by the chunk's rowid. The indexed text may differ from the chunk text (segmented CJK,
# context prefixes); contentless_delete lets a row go by rowid without repeating that text.
FTS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  text,
  id UNINDEXED,
  path UNINDEXED,
  source UNINDEXED,
  model UNINDEXED,
  start_line UNINDEXED,
  end_line UNINDEXED,
  content='',
  contentless_delete=1
);
"""

if TYPE_CHECKING:
    import numpy as np

    from mdrecall.storage.vectors import VectorMatrix


class StoreCorruptError(Exception):
    """The index file cannot be used as it is (corrupt, truncated, foreign schema): rebuild it."""


def now_ms() -> int:
    return int(time.time() * 1000)


def _plain_terms(fts_query: str) -> tuple[str, list[str]] | None:
    """("AND" | "OR", quoted terms) for a query of quoted terms joined by one operator, else None."""
    match = _PLAIN_QUERY.match(fts_query.strip())
    if not match:
        return None
    pairs = _PLAIN_TERM.findall(match.group(2))
    ops = {op for op, _ in pairs}
    if len(ops) > 1:
        return None
    return (ops.pop() if ops else "AND"), [match.group(1)] + [term for _, term in pairs]


# Chunk text shorter than this stays plain: zlib saves nothing on a line or two.
COMPRESS_TEXT_MIN_BYTES = 200


def pack_text(text: str) -> str | bytes:
    """Chunk text as stored with store.compressText: zlib (a BLOB) when that is smaller, else the text."""
    raw = text.encode("utf-8")
    if len(raw) < COMPRESS_TEXT_MIN_BYTES:
        return text
    packed = zlib.compress(raw, 6)
    return packed if len(packed) < len(raw) else text


def stored_text(value: str | bytes | None) -> str | None:
    """A chunk's text from its stored form (plain TEXT or pack_text's zlib BLOB): the SQL `chunk_text`."""
    if isinstance(value, bytes):
        return zlib.decompress(value).decode("utf-8")
    return value


class PackedTextRow(SearchRow):
    """A SearchRow read with its text as stored (`pack_text`): unpacked when first read, once. A search reads
    ~40 rows a side and looks at the text of the few it scores or shows (~4 us a row saved on the others)."""

    @property  # type: ignore[override]
    def text(self) -> str:
        value = self.__dict__["_stored"]
        if isinstance(value, bytes):
            value = self.__dict__["_stored"] = stored_text(value)
        return value

    @text.setter
    def text(self, value: str | bytes) -> None:
        self.__dict__["_stored"] = value


def vector_to_blob(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


# Tags of the compact encodings. A float32 blob is the raw vector (its length a multiple of 4); a compact
# blob starts with its tag and its length is never a multiple of 4 (int8 adds a pad byte when it would be).
_TAG_FLOAT16 = 2
_TAG_INT8 = 1
_TAG_INT8_PADDED = 0x11
# int10: 0x20 | (values short of a multiple of 4, in bits 0-1) | 0x04 when a pad byte follows
_TAG_INT10 = 0x20
_INT10_PADDED = 0x04
_INT10_PEAK = 511


def encode_vector(vector: np.ndarray, encoding: VectorEncoding = "float32") -> bytes:
    """One vector as stored: raw float32, or tagged float16, or tagged int8 with a float32 scale."""
    import numpy as np

    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if encoding == "float16":
        return bytes([_TAG_FLOAT16]) + arr.astype(np.float16).tobytes()
    if encoding == "int8":
        peak = float(np.max(np.abs(arr))) if arr.size else 0.0
        scale = peak / 127.0 if peak > 0 else 1.0
        quantized = np.clip(np.rint(arr / scale), -127, 127).astype(np.int8)
        body = np.float32(scale).tobytes() + quantized.tobytes()
        if (len(body) + 1) % 4 == 0:
            return bytes([_TAG_INT8_PADDED]) + body + b"\0"
        return bytes([_TAG_INT8]) + body
    if encoding == "int10":
        return _encode_int10(arr)
    return arr.tobytes()


def _encode_int10(arr: np.ndarray) -> bytes:
    """Tag, float32 scale, then the values as 10-bit offsets (value / scale + 511, 0..1022), four per 5 bytes.

    At 384 dims a window vector takes 485 bytes (float16: 769). Rankings on the evals' real e5 windows are
    those of float16 (LoCoMo: one question of 760 moves at hit@10; Python docs identical; docs/storage.md)."""
    import numpy as np

    peak = float(np.max(np.abs(arr))) if arr.size else 0.0
    scale = peak / _INT10_PEAK if peak > 0 else 1.0
    short = -len(arr) % 4
    codes = np.clip(np.rint(arr / scale), -_INT10_PEAK, _INT10_PEAK).astype(np.int32) + _INT10_PEAK
    v = np.concatenate([codes, np.full(short, _INT10_PEAK, np.int32)]).reshape(-1, 4).astype(np.uint16)
    packed = np.empty((len(v), 5), dtype=np.uint8)
    packed[:, 0] = v[:, 0] & 0xFF
    packed[:, 1] = (v[:, 0] >> 8) | ((v[:, 1] & 0x3F) << 2)
    packed[:, 2] = (v[:, 1] >> 6) | ((v[:, 2] & 0x0F) << 4)
    packed[:, 3] = (v[:, 2] >> 4) | ((v[:, 3] & 0x03) << 6)
    packed[:, 4] = v[:, 3] >> 2
    body = np.float32(scale).tobytes() + packed.tobytes()
    if (len(body) + 1) % 4 == 0:
        return bytes([_TAG_INT10 | short | _INT10_PADDED]) + body + b"\0"
    return bytes([_TAG_INT10 | short]) + body


def _is_int10(tag: int) -> bool:
    return tag & 0xF8 == _TAG_INT10


def _int10_length(length: int, tag: int) -> int:
    """Bytes of packed values in an int10 blob of this length and tag."""
    return length - 5 - (1 if tag & _INT10_PADDED else 0)


def _decode_int10(raw: np.ndarray, tag: int) -> np.ndarray:
    """rows x blob bytes (uint8, one tag and length) -> rows x dims float32 (not yet unit length)."""
    import numpy as np

    groups = _int10_length(raw.shape[1], tag) // 5
    p = raw[:, 5 : 5 + groups * 5].reshape(len(raw), groups, 5).astype(np.uint16)
    v = np.empty((len(raw), groups, 4), dtype=np.int16)
    v[:, :, 0] = p[:, :, 0] | ((p[:, :, 1] & 0x03) << 8)
    v[:, :, 1] = (p[:, :, 1] >> 2) | ((p[:, :, 2] & 0x0F) << 6)
    v[:, :, 2] = (p[:, :, 2] >> 4) | ((p[:, :, 3] & 0x3F) << 4)
    v[:, :, 3] = (p[:, :, 3] >> 6) | (p[:, :, 4] << 2)
    dims = groups * 4 - (tag & 0x03)
    scales = raw[:, 1:5].copy().view(np.float32)
    return (v.reshape(len(raw), groups * 4)[:, :dims].astype(np.float32) - _INT10_PEAK) * scales


def blob_to_vector(value: bytes | str) -> np.ndarray:
    """A stored vector as float32: any encoding_vector blob, or JSON text (the spec's format, and caches
    from version-1 files)."""
    import numpy as np

    if isinstance(value, str):
        return np.asarray(json.loads(value), dtype=np.float32)
    if len(value) % 4 == 0:
        return np.frombuffer(value, dtype=np.float32).copy()
    tag = value[0]
    if tag == _TAG_FLOAT16:
        return _unit_again(np.frombuffer(value, dtype=np.float16, offset=1).astype(np.float32))
    if _is_int10(tag):
        return _unit_again(_decode_int10(np.frombuffer(value, dtype=np.uint8)[None, :], tag)[0])
    end = len(value) - (1 if tag == _TAG_INT8_PADDED else 0)
    scale = np.frombuffer(value, dtype=np.float32, count=1, offset=1)[0]
    return _unit_again(np.frombuffer(value[5:end], dtype=np.int8).astype(np.float32) * scale)


def _unit_again(rows: np.ndarray) -> np.ndarray:
    """Rounded vectors that were unit length (every provider's are) made unit length again: search takes a
    dot product for the cosine, and another backend (pgvector) normalises, so both must see a unit vector."""
    import numpy as np

    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    near = np.abs(norms - 1.0) < 0.01
    return np.where(near, rows / np.where(near, norms, 1.0), rows).astype(np.float32)


def decode_blocks(rows: Iterable[tuple[int, bytes]], block: int = 8192) -> Iterator[tuple[int, bytes]]:
    """(rowid, stored blob) rows as (rowid, float32 blob) rows: what VectorMatrix.from_rows reads. float32
    rows pass through; compact ones are decoded a block at a time (one numpy pass per block and width)."""
    import numpy as np

    rows = iter(rows)
    while True:
        chunk = list(itertools.islice(rows, block))
        if not chunk:
            return
        if all(isinstance(b, bytes) and len(b) % 4 == 0 for _, b in chunk):
            yield from chunk
            continue
        by_shape: dict[tuple[int, int], list[int]] = {}
        for i, (_, blob) in enumerate(chunk):
            if isinstance(blob, bytes) and len(blob) % 4:
                by_shape.setdefault((len(blob), blob[0]), []).append(i)
        decoded: dict[int, bytes] = {}
        for (length, tag), members in by_shape.items():
            raw = np.frombuffer(b"".join(chunk[i][1] for i in members), dtype=np.uint8).reshape(len(members), length)
            if tag == _TAG_FLOAT16:
                flat = raw[:, 1:].copy().view(np.float16).astype(np.float32)
            elif tag in (_TAG_INT8, _TAG_INT8_PADDED):
                end = length - (1 if tag == _TAG_INT8_PADDED else 0)
                scales = raw[:, 1:5].copy().view(np.float32)
                flat = raw[:, 5:end].copy().view(np.int8).astype(np.float32) * scales
            elif _is_int10(tag):
                flat = _decode_int10(raw, tag)
            else:
                continue
            for i, row in zip(members, _unit_again(flat), strict=True):
                decoded[i] = row.tobytes()
        for i, (rowid, blob) in enumerate(chunk):
            yield rowid, decoded.get(i, blob)


_PRECISION = {"float32": 32, "float16": 16, "int10": 10, "int8": 8}


def blob_precision(blob: bytes | str) -> int:
    """Bits per value of a stored vector (JSON text counts as float32)."""
    if isinstance(blob, str) or len(blob) % 4 == 0:
        return 32
    if blob[0] == _TAG_FLOAT16:
        return 16
    return 10 if _is_int10(blob[0]) else 8


def vector_dims(blob: bytes) -> int:
    """The width of a stored vector, read from its length and tag."""
    if len(blob) % 4 == 0:
        return len(blob) // 4
    if blob[0] == _TAG_FLOAT16:
        return (len(blob) - 1) // 2
    if _is_int10(blob[0]):
        return _int10_length(len(blob), blob[0]) // 5 * 4 - (blob[0] & 0x03)
    return len(blob) - 5 - (1 if blob[0] == _TAG_INT8_PADDED else 0)


def hash_key(text_hash: str) -> bytes | str:
    """The stored form of a text hash: the 32 bytes of a SHA-256 hex digest (half its length), else as is."""
    if len(text_hash) == 64:
        with contextlib.suppress(ValueError):
            return bytes.fromhex(text_hash)
    return text_hash


def hash_hex(key: bytes | str) -> str:
    return key.hex() if isinstance(key, bytes) else str(key)


def _vector_to_json(vector: np.ndarray | None) -> str:
    import numpy as np

    if vector is None:
        return "[]"
    return json.dumps([round(float(x), 8) for x in np.asarray(vector, dtype=np.float32)])


def windows_of(vector: np.ndarray | None) -> np.ndarray | None:
    """A chunk's vectors as a (windows, dims) float32 matrix: one row per window (one for most chunks)."""
    import numpy as np

    if vector is None:
        return None
    arr = np.asarray(vector, dtype=np.float32)
    if arr.size == 0:
        return None
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def _parse_identity(value: str | None) -> tuple[str, str, str] | None:
    try:
        parsed = json.loads(value) if value else None
    except json.JSONDecodeError:
        return None
    if isinstance(parsed, list) and len(parsed) == 3 and all(isinstance(x, str) for x in parsed):
        return (parsed[0], parsed[1], parsed[2])
    return None


def cache_rows(conn: apsw.Connection) -> Iterator[tuple[str, str, str, str, np.ndarray]]:
    """Every cached vector of an index file as (provider, model, provider_key, hex hash, float32 vector):
    embedding_cache, then the hashed window rows under the identity that embedded them (a copy to another
    backend must carry both, or it would embed the indexed text again)."""
    for provider, model, key, text_hash, blob in conn.execute(
        "SELECT provider, model, provider_key, hash, embedding FROM embedding_cache"
    ):
        yield provider, model, key, hash_hex(text_hash), blob_to_vector(blob)
    if "hash" not in {r[1] for r in conn.execute("PRAGMA table_info(chunk_vectors)")}:
        return
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (VECTOR_IDENTITY_KEY,)).fetchone()
    identity = _parse_identity(row[0] if row else None)
    if identity is None:
        return
    seen: set[bytes] = set()
    for key, blob in conn.execute("SELECT hash, embedding FROM chunk_vectors WHERE hash IS NOT NULL"):
        if key not in seen:
            seen.add(key)
            yield (*identity, hash_hex(key), blob_to_vector(blob))


def _window_keys(hashes: Sequence[str] | None, count: int) -> list[bytes | str | None]:
    """The stored hash of each window, or None for all when they are not known (or do not match in number)."""
    if hashes is None or len(hashes) != count:
        return [None] * count
    return [hash_key(h) for h in hashes]


def _sqlite_vec_path(extension_path: str | None) -> str:
    """The vec0 library inside the sqlite-vec package, found without importing it (its module imports numpy,
    which keyword-only start-up never needs)."""
    if extension_path:
        return extension_path
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the sqlite-vec package is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


class Store:
    """A connection to one index file with the schema in place.

    `engine` picks the vector search: "numpy" (default, exact, over a float32 matrix read from
    chunk_vectors) or "sqlite-vec" (the spec's vec0 table `chunks_vec`, kept in step, queried by KNN).
    `json_embeddings` also writes the spec's JSON vector into chunks.embedding (off: it would double the file).
    `encoding` is how new vectors are written (rows of any encoding are read); float32 here, the exact
    primitive, while the config's default (store.vector.encoding, which MemoryIndex passes) is float16.
    `exact_vectors` keeps the numpy engine exact at every size (no int8 first pass, storage/vectors.py).
    `compress_text` writes chunk text zlib-compressed (store.compressText); rows of either kind are read, in
    SQL through `chunk_text(text)`, which every connection of a Store has.
    """

    def __init__(
        self,
        path: Path,
        vector_enabled: bool = True,
        extension_path: str | None = None,
        read_only: bool = False,
        engine: VectorEngine = "numpy",
        json_embeddings: bool = False,
        encoding: VectorEncoding = "float32",
        exact_vectors: bool = False,
        compress_text: bool = False,
    ) -> None:
        self.path = Path(path)
        self.compress_text = compress_text
        self.exact_vectors = exact_vectors
        self.read_only = read_only
        self.engine: VectorEngine = engine
        self.json_embeddings = json_embeddings
        self.encoding: VectorEncoding = encoding
        # the vectors of deleted chunks move to embedding_cache (off when the cache is: nothing would read them)
        self.keep_deleted_vectors = True
        self._matrix: VectorMatrix | None = None
        self._matrix_token: tuple[int, str | None] | None = None
        # _common_terms' answers while the index stays the same: (data_version, total_changes) -> term -> bool
        self._common_key: tuple[int, int] | None = None
        self._common_memo: dict[str, bool] = {}
        # the same key's sample of the index for _count_common: (max rowid, chunks in the sample windows)
        self._sample_memo: tuple[int, list[tuple[int, int]], int] | None = None
        # chunk id -> rowid of the rows searches read, while the index stays the same (the same key)
        self._rowid_key: tuple[int, int] | None = None
        self._rowid_memo: dict[str, int] = {}
        self._present_memo: dict[str, bool] = {}  # terms_present's answers, emptied with the rowid memo
        # the last ranking of the matrix: (weak matrix, query bytes, k, (rowids, scores)); a search that read the
        # rows of its best few asks again for more of the same ranking (`vector_search`'s `read`)
        self._last_top: tuple[Any, bytes, int, tuple[np.ndarray, np.ndarray]] | None = None
        self._fts_deleted = False  # rows left the FTS index since the last tidy_fts
        check_index_path(self.path)  # never open (and so never write) a file mdrecall did not create
        if not read_only:
            make_private_dirs(self.path.parent)
        try:
            self.conn = _connect(self.path, read_only)
        except apsw.Error as err:
            raise StoreCorruptError(f"cannot open index file: {err}") from err
        self.conn.create_scalar_function("chunk_text", stored_text, 1, deterministic=True)
        try:
            self.conn.set_busy_timeout(30_000)
            version = self._check_schema_version()
            self._check_columns()
            if not read_only:
                self._claim()
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                # deleted rows are overwritten with zeros, not left in free space (a forgotten fact is gone)
                self.conn.execute("PRAGMA secure_delete=ON")
                self._migrate()
                self.conn.execute(SCHEMA)
                if version != SCHEMA_VERSION:
                    self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                for companion in ("", "-wal", "-shm"):  # SQLite creates them 0644; later ones copy the file's mode
                    make_private(f"{self.path}{companion}")
        except (apsw.CorruptError, apsw.NotADBError, apsw.SQLError) as err:
            self.close()
            raise StoreCorruptError(f"index file is corrupt: {err}") from err
        except StoreCorruptError:
            self.close()
            raise
        self.fts = self._ensure_fts()
        self.vector = self._load_vector_extension(vector_enabled, extension_path)
        if self.vector.available:
            self.vector.dims = self._vec_table_dims()

    def _claim(self) -> None:
        """Mark the file as mdrecall's (in the header, before WAL mode, so even a truncated file keeps it)."""
        if self.conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _check_schema_version(self) -> int:
        """Refuse files written by an unknown schema version (the caller rebuilds them from markdown)."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, 1, 2, SCHEMA_VERSION):
            raise StoreCorruptError(f"index schema version {version} is not supported (expected {SCHEMA_VERSION})")
        return int(version)

    def _check_columns(self) -> None:
        """Tables that exist with other columns (another tool's file, an unknown layout) are not ours."""
        for table, expected in EXPECTED_COLUMNS.items():
            columns = tuple(r[1] for r in self.conn.execute(f"PRAGMA table_info({table})"))
            if columns and columns != expected and columns != LEGACY_COLUMNS.get(table):
                raise StoreCorruptError(f"table {table} has columns {columns}, expected {expected}")

    def _migrate(self) -> None:
        """A version-2 chunk_vectors gets its hash column (NULL in old rows: they serve no cache lookups).

        Nothing else is rewritten here: the stored storage format (2) makes the next sync rebuild the index,
        seeded from this file's embedding cache (`copy_cache_from`), so no window is embedded again."""
        columns = tuple(r[1] for r in self.conn.execute("PRAGMA table_info(chunk_vectors)"))
        if columns == LEGACY_COLUMNS["chunk_vectors"]:
            with self.transaction():
                self.conn.execute("ALTER TABLE chunk_vectors ADD COLUMN hash BLOB")

    # -- setup -------------------------------------------------------------------------------------

    def _ensure_fts(self) -> FtsState:
        try:
            self.conn.execute(FTS_SCHEMA)
            if not self.read_only:
                self._fts_secure_delete()
            return FtsState(enabled=True, available=True)
        except apsw.Error as err:  # an SQLite built without FTS5
            return FtsState(enabled=True, available=False, error=str(err))

    def _fts_secure_delete(self) -> None:
        """FTS5's 'secure-delete' option: a deleted row's terms leave the index at once, instead of staying in
        its segments until they are merged (SQLite >= 3.42; older ones leave them until the next merge)."""
        row = self.conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'secure-delete'").fetchone()
        if row is None or row[0] != 1:
            with contextlib.suppress(apsw.SQLError):
                self.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('secure-delete', 1)")

    def _load_vector_extension(self, enabled: bool, extension_path: str | None) -> VectorState:
        if not enabled:
            return VectorState(enabled=False)
        try:
            path = _sqlite_vec_path(extension_path)
            self.conn.enable_load_extension(True)
            self.conn.load_extension(path)
            self.conn.enable_load_extension(False)
            return VectorState(enabled=True, available=True, extension_path=path)
        except (apsw.Error, ImportError, AttributeError, OSError) as err:
            return VectorState(enabled=True, available=False, extension_path=extension_path, load_error=str(err))

    def _vec_table_dims(self) -> int | None:
        """Width of the stored vectors: chunks_vec's declared width (vec0 engine) or the first stored blob."""
        if not self.uses_vec0:
            first = self.conn.execute("SELECT embedding FROM chunk_vectors LIMIT 1").fetchone()
            return vector_dims(bytes(first[0])) if first and first[0] else None
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
        if not row or not row[0]:
            return None
        sql = row[0].lower()
        start = sql.find("float[")
        if start < 0:
            return None
        end = sql.find("]", start)
        return int(sql[start + 6 : end])

    @property
    def uses_vec0(self) -> bool:
        """The spec's vec0 table is kept and queried only with engine "sqlite-vec" (and the extension loaded)."""
        return self.engine == "sqlite-vec" and self.vector.available

    def ensure_vector_table(self, dims: int) -> bool:
        """Create chunks_vec for `dims` (vec0 engine only), dropping and refilling it when the width changed."""
        if not self.uses_vec0:
            if self.vector.available:
                self.vector.dims = dims
            return self.vector.available
        if self.vector.dims == dims:
            return True
        with self.transaction():
            self.conn.execute("DROP TABLE IF EXISTS chunks_vec")
            self.conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0(\n"
                f"  id TEXT PRIMARY KEY,\n  embedding FLOAT[{int(dims)}]\n)"
            )
        self.vector.dims = dims
        return True

    def close(self) -> None:
        self._matrix = None
        with contextlib.suppress(apsw.Error):
            self.conn.close()

    def replace_contents(self, source: Store) -> None:
        """Make this database an exact copy of `source` in one write transaction (SQLite's backup API).

        This is the "swap" of a full reindex. Unlike renaming files, it is safe for every other connection
        to this index, in this process or another: readers keep their snapshot until the copy commits, a
        kill mid-copy rolls back, and no stale WAL or shared-memory file can meet the new content.
        """
        with self.conn.backup("main", source.conn, "main") as backup:
            backup.step(-1)
        self._matrix = None
        self.refresh_vector_state()

    def refresh_vector_state(self) -> None:
        """Re-read the vec0 table's width (another connection may have recreated it)."""
        self.vector.dims = self._vec_table_dims() if self.vector.available else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (a savepoint when nested): all or nothing."""
        with self.conn:
            yield

    def checkpoint(self) -> None:
        with contextlib.suppress(apsw.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- meta --------------------------------------------------------------------------------------

    def read_meta(self) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if not row:
            return None
        try:
            value = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def write_meta(self, meta: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (META_KEY, json.dumps(meta, sort_keys=True)),
        )

    def read_meta_value(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def write_meta_value(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def session_mtimes(self, paths: Sequence[str]) -> dict[str, int]:
        """mtime (ms) of these indexed files, from the files table."""
        if not paths:
            return {}
        marks = ",".join("?" * len(paths))
        rows = self.conn.execute(f"SELECT path, mtime FROM files WHERE path IN ({marks})", list(paths))
        return {str(r[0]): int(r[1]) for r in rows}

    def vec_version(self) -> str | None:
        """The loaded sqlite-vec extension's version (a deep status probe); None when it is not loaded."""
        if not self.vector.available:
            return None
        row = self.conn.execute("SELECT vec_version()").fetchone()
        return str(row[0]) if row else None

    def tidy_fts(self) -> bool:
        """Merge the FTS index into one segment once it has more than FTS_MAX_SEGMENTS (True when it did).

        Every write transaction leaves a segment; FTS5's automerge keeps up to ~4 a level, and every MATCH
        probes each segment's b-tree. At 100k chunks (bench_search.py), 11 segments -> 1 took the hybrid OR
        keyword query from 12.5 to 9.9 ms and a MATCH restricted to one chunk (`terms_held`) from 30 to 5 us,
        for a ~1.3 s 'optimize'. Rankings do not change: bm25 reads the same statistics.

        It also runs after a sync that deleted rows: FTS5's secure-delete takes a deleted row's terms out of
        the index, but bytes of them can stay in the rewritten pages until the segments are merged, and the
        text of a forgotten fact must not stay in the file (docs/safety.md, "Forgetting")."""
        if not self.fts.available:
            return False
        purge, self._fts_deleted = self._fts_deleted, False
        segments = int(self.conn.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])
        if segments <= FTS_MAX_SEGMENTS and not purge:
            return False
        self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
        return True

    def _vectors_changed(self) -> None:
        """Renew the generation token: every connection's cached matrix is stale from this commit on."""
        self._matrix = None
        self.write_meta_value(VECTOR_GENERATION_KEY, uuid.uuid4().hex)

    def vector_identity(self) -> tuple[str, str, str] | None:
        """(provider, model, provider_key) that embedded the hashed rows of chunk_vectors, if recorded (read
        each time, one key lookup: another connection or a swap may have changed it)."""
        return _parse_identity(self.read_meta_value(VECTOR_IDENTITY_KEY))

    def set_vector_identity(self, provider: str, model: str, provider_key: str) -> None:
        """Record who embeds the vectors written from now on. Rows of another identity keep their vectors
        but lose their hashes: they must never answer a cache lookup for this one."""
        identity = (provider, model, provider_key)
        if self.vector_identity() == identity:
            return
        with self.transaction():
            if self.vector_identity() is not None:
                self.conn.execute("UPDATE chunk_vectors SET hash = NULL WHERE hash IS NOT NULL")
            self.write_meta_value(VECTOR_IDENTITY_KEY, json.dumps(list(identity)))

    # -- files and chunks --------------------------------------------------------------------------

    def get_files(self, source: str) -> dict[str, FileRow]:
        rows = self.conn.execute("SELECT path, source, hash, mtime, size FROM files WHERE source = ?", (source,))
        return {r[0]: FileRow(*r) for r in rows}

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of the files a sync recorded as skipped (binary, too large, ...), by path."""
        rows = self.conn.execute(
            "SELECT path, substr(hash, ?) FROM files WHERE substr(hash, 1, ?) = ? ORDER BY path",
            (len(SKIPPED_HASH_PREFIX) + 1, len(SKIPPED_HASH_PREFIX), SKIPPED_HASH_PREFIX),
        )
        return [(str(path), str(reason)) for path, reason in rows]

    def upsert_file(self, row: FileRow) -> None:
        self.conn.execute(
            "INSERT INTO files(path, source, hash, mtime, size) VALUES(?, ?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
            "mtime = excluded.mtime, size = excluded.size",
            (row.path, row.source, row.hash, row.mtime, row.size),
        )

    def delete_file(self, path: str, source: str) -> None:
        """Remove a file and all its chunks from every table."""
        self.delete_chunks_for(path, source)
        self.conn.execute("DELETE FROM files WHERE path = ? AND source = ?", (path, source))

    def delete_chunks_for(self, path: str, source: str) -> None:
        """Every row of one file's chunks, each removed by key (never a scan of a table)."""
        rows = self.conn.execute("SELECT rowid, id FROM chunks WHERE path = ? AND source = ?", (path, source))
        found = rows.fetchall()
        if not found:
            return
        rowids = [(r[0],) for r in found]
        self._keep_in_cache(rowids)
        before = self.conn.total_changes()
        self.conn.executemany("DELETE FROM chunk_vectors WHERE chunk_rowid = ?", rowids)
        deleted_vectors = self.conn.total_changes() - before
        if self.uses_vec0 and self.vector.dims is not None:
            self.conn.executemany("DELETE FROM chunks_vec WHERE id = ?", [(r[1],) for r in found])
        if self.fts.available:
            self.conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", rowids)
            self._fts_deleted = True  # tidy_fts merges the segments: no byte of the deleted terms stays
        self.conn.execute("DELETE FROM chunks WHERE path = ? AND source = ?", (path, source))
        if deleted_vectors:
            self._vectors_changed()

    def _keep_in_cache(self, rowids: Sequence[tuple[int]]) -> None:
        """Move the hashed vectors of chunks about to go into embedding_cache (unless another chunk still
        holds the same text): an edited or deleted file's windows stay cached without being stored twice."""
        identity = self.vector_identity()
        if identity is None or not self.keep_deleted_vectors:
            return
        stamp = now_ms()
        for (rowid,) in rowids:
            moved = self.conn.execute(
                "SELECT v.hash, v.embedding FROM chunk_vectors v WHERE v.chunk_rowid = ? AND v.hash IS NOT NULL "
                "AND NOT EXISTS (SELECT 1 FROM chunk_vectors o WHERE o.hash = v.hash AND o.chunk_rowid != ?)",
                (rowid, rowid),
            ).fetchall()
            self.conn.executemany(
                _CACHE_INSERT,
                [(*identity, key, blob, vector_dims(bytes(blob)), stamp) for key, blob in moved],
            )

    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None:
        """Write new chunks to chunks, chunk_vectors (one row per window), chunks_fts, and chunks_vec (vec0
        engine only). The caller removes a file's previous chunks first (`delete_chunks_for`).

        A window written with its text hash becomes the cache entry of that text: an embedding_cache row of
        the same text (the store's identity) is dropped, so each vector is stored once."""
        stamp = now_ms()
        wrote_vectors = False
        identity = self.vector_identity()
        for row in rows:
            windows = windows_of(row.embedding)
            spec_json = _vector_to_json(windows[0]) if self.json_embeddings and windows is not None else ""
            self.conn.execute(
                "INSERT INTO chunks(id, path, source, start_line, end_line, hash, model, text, "
                "embedding, updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row.id,
                    row.path,
                    row.source,
                    row.start_line,
                    row.end_line,
                    row.hash,
                    row.model,
                    pack_text(row.text) if self.compress_text else row.text,
                    spec_json,
                    stamp,
                ),
            )
            rowid = self.conn.last_insert_rowid()
            if windows is not None:
                keys = _window_keys(row.window_hashes, len(windows))
                self.conn.executemany(
                    "INSERT INTO chunk_vectors(chunk_rowid, window, embedding, hash) VALUES(?, ?, ?, ?)",
                    [(rowid, i, encode_vector(w, self.encoding), keys[i]) for i, w in enumerate(windows)],
                )
                if identity is not None:
                    self.conn.executemany(
                        "DELETE FROM embedding_cache WHERE provider = ? AND model = ? AND provider_key = ? "
                        "AND hash = ?",
                        [(*identity, key) for key in keys if key is not None],
                    )
                wrote_vectors = True
                if self.uses_vec0 and self.vector.dims == windows.shape[1]:
                    # an orphan vector row (e.g. left by a crash between tables) must not block the insert
                    self.conn.execute("DELETE FROM chunks_vec WHERE id = ?", (row.id,))
                    self.conn.execute(
                        "INSERT INTO chunks_vec(id, embedding) VALUES(?, ?)", (row.id, vector_to_blob(windows[0]))
                    )
            if self.fts.available:
                self.conn.execute(
                    "INSERT INTO chunks_fts(rowid, text) VALUES(?, ?)",
                    (rowid, index_text(with_context(row.context, row.text))),
                )
        if wrote_vectors:
            self._vectors_changed()

    # -- vectors pending (chunks written keyword-only while the embedding provider was down) -------------

    _PENDING = (
        "FROM chunks c WHERE c.model = ? AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_rowid = c.rowid)"
    )

    def pending_vector_chunks(self, model: str, limit: int) -> list[tuple[str, str, str]]:
        """(id, hash, text) of chunks of `model` that still wait for their vector (no chunk_vectors row)."""
        rows = self.conn.execute(f"SELECT c.id, c.hash, chunk_text(c.text) {self._PENDING} LIMIT ?", (model, limit))
        return [(r[0], r[1], r[2]) for r in rows]

    def pending_vector_count(self, model: str) -> int:
        row = self.conn.execute(f"SELECT COUNT(*) {self._PENDING}", (model,))
        return int(row.fetchone()[0])

    def set_chunk_vector(self, chunk_id: str, vector: np.ndarray) -> None:
        """Give a pending chunk its vectors, one row per window (chunk_vectors, the spec's JSON column and vec0
        when in use). Their text hashes are not known here: these rows answer no cache lookup."""
        found = self.conn.execute("SELECT rowid FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        windows = windows_of(vector)
        if found is None or windows is None:
            return
        rowid = int(found[0])
        self.conn.execute("DELETE FROM chunk_vectors WHERE chunk_rowid = ?", (rowid,))
        self.conn.executemany(
            "INSERT INTO chunk_vectors(chunk_rowid, window, embedding) VALUES(?, ?, ?)",
            [(rowid, i, encode_vector(w, self.encoding)) for i, w in enumerate(windows)],
        )
        if self.json_embeddings:
            self.conn.execute("UPDATE chunks SET embedding = ? WHERE rowid = ?", (_vector_to_json(windows[0]), rowid))
        if self.uses_vec0 and self.vector.dims == windows.shape[1]:
            self.conn.execute("DELETE FROM chunks_vec WHERE id = ?", (chunk_id,))
            self.conn.execute(
                "INSERT INTO chunks_vec(id, embedding) VALUES(?, ?)", (chunk_id, vector_to_blob(windows[0]))
            )
        self._vectors_changed()

    def counts(self) -> dict[str, dict[str, int]]:
        """Files and chunks per source."""
        result: dict[str, dict[str, int]] = {}
        for source, n in self.conn.execute("SELECT source, COUNT(*) FROM files GROUP BY source"):
            result.setdefault(source, {"files": 0, "chunks": 0})["files"] = n
        for source, n in self.conn.execute("SELECT source, COUNT(*) FROM chunks GROUP BY source"):
            result.setdefault(source, {"files": 0, "chunks": 0})["chunks"] = n
        return result

    def chunk_counts(self) -> dict[str, int]:
        """Chunks per file path (the inspector's file list)."""
        return {str(path): int(n) for path, n in self.conn.execute("SELECT path, COUNT(*) FROM chunks GROUP BY path")}

    def file_chunks(self, path: str) -> list[tuple[str, int, int]]:
        """(id, start line, end line) of one file's chunks, in file order."""
        rows = self.conn.execute(
            "SELECT id, start_line, end_line FROM chunks WHERE path = ? ORDER BY start_line, end_line", (path,)
        )
        return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]

    def vector_row_count(self) -> int:
        """Stored vectors, one per window (status and probes only; searches never count)."""
        return int(self.conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0])

    # -- embedding cache ---------------------------------------------------------------------------

    def cache_get(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given text hashes (looked up in batches of 400): the index's own window rows
        (when this identity embedded them), then embedding_cache."""
        wanted = {hash_key(h): h for h in hashes}
        found: dict[str, np.ndarray] = {}
        keys = list(wanted)
        need = _PRECISION[self.encoding]  # a vector stored coarser than this store writes is embedded again
        if self.vector_identity() == (provider, model, provider_key):
            for blob_key, blob in self._batched(
                "SELECT hash, embedding FROM chunk_vectors WHERE hash IN ({marks})", (), keys
            ):
                if blob_precision(blob) >= need:
                    found.setdefault(wanted[blob_key], blob_to_vector(blob))
            keys = [k for k in keys if wanted[k] not in found]
        for key, blob, dims in self._batched(
            "SELECT hash, embedding, dims FROM embedding_cache WHERE provider = ? AND model = ? "
            "AND provider_key = ? AND hash IN ({marks})",
            (provider, model, provider_key),
            keys,
        ):
            if blob_precision(blob) < need:
                continue
            vector = blob_to_vector(blob)
            if dims and vector.size != dims:  # several windows, stored as one (windows * dims) blob
                vector = vector.reshape(-1, dims)
            found[wanted[key]] = vector
        return found

    def _batched(self, sql: str, params: tuple, keys: Sequence[Any]) -> Iterator[tuple]:
        for start in range(0, len(keys), CACHE_LOOKUP_BATCH):
            batch = keys[start : start + CACHE_LOOKUP_BATCH]
            yield from self.conn.execute(sql.format(marks=",".join("?" * len(batch))), (*params, *batch))

    def cache_touch(self, provider: str, model: str, provider_key: str, hashes: Iterable[str]) -> None:
        """Mark cache entries as used now, so LRU eviction keeps what is in use (window rows of the index are
        never evicted: they have no stamp to renew)."""
        stamp = now_ms()
        for text_hash in hashes:
            self.conn.execute(
                "UPDATE embedding_cache SET updated_at = ? WHERE provider = ? AND model = ? "
                "AND provider_key = ? AND hash = ?",
                (stamp, provider, model, provider_key, hash_key(text_hash)),
            )

    def cache_put(
        self, provider: str, model: str, provider_key: str, entries: Iterable[tuple[str, np.ndarray]]
    ) -> None:
        """Store vectors in the store's encoding (dims = the width of one vector; windows are stacked)."""
        import numpy as np

        stamp = now_ms()
        for text_hash, vector in entries:
            arr = np.asarray(vector, dtype=np.float32)
            dims = int(arr.shape[-1]) if arr.ndim else 0
            blob = encode_vector(arr, self.encoding) if arr.ndim == 1 else vector_to_blob(arr)
            self.conn.execute(
                "INSERT INTO embedding_cache(provider, model, provider_key, hash, embedding, dims, updated_at) "
                "VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(provider, model, provider_key, hash) DO UPDATE SET "
                "embedding = excluded.embedding, dims = excluded.dims, updated_at = excluded.updated_at",
                (provider, model, provider_key, hash_key(text_hash), blob, dims, stamp),
            )

    def cache_evict(self, max_entries: int | None) -> int:
        """Drop the least recently used entries of embedding_cache beyond max_entries (counting the index's
        own window rows, which are never dropped: search needs them); returns how many were dropped."""
        if not max_entries:
            return 0
        stored = self._cache_table_count()
        excess = min(stored, stored + self._hashed_window_count() - max_entries)
        if excess <= 0:
            return 0
        self.conn.execute(
            "DELETE FROM embedding_cache WHERE rowid IN "
            "(SELECT rowid FROM embedding_cache ORDER BY updated_at ASC, rowid ASC LIMIT ?)",
            (excess,),
        )
        return excess

    def _cache_table_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0])

    def _hashed_window_count(self) -> int:
        if "hash" not in {r[1] for r in self.conn.execute("PRAGMA table_info(chunk_vectors)")}:
            return 0  # a version-2 file opened read-only
        sql = "SELECT COUNT(DISTINCT hash) FROM chunk_vectors WHERE hash IS NOT NULL"
        return int(self.conn.execute(sql).fetchone()[0])

    def cache_count(self) -> int:
        """Cached vectors: the index's hashed window rows plus embedding_cache (vectors no chunk uses)."""
        return self._cache_table_count() + self._hashed_window_count()

    def copy_cache_from(self, other_db: Path) -> int:
        """Seed this store's embedding cache from another index file (used by the safe full reindex): its
        embedding_cache and its hashed window rows (under the identity that embedded them). Keys of older
        files (64 hex characters) are converted to the 32-byte form."""
        if not other_db.exists():
            return 0
        before = self.cache_count()
        self.conn.execute("ATTACH DATABASE ? AS old", (str(other_db),))
        try:
            tables = {r[0] for r in self.conn.execute("SELECT name FROM old.sqlite_master WHERE type = 'table'")}
            with self.transaction():
                if "embedding_cache" in tables:
                    self.conn.execute(
                        "INSERT OR IGNORE INTO embedding_cache SELECT provider, model, provider_key, "
                        "CASE WHEN typeof(hash) = 'text' AND length(hash) = 64 THEN coalesce(unhex(hash), hash) "
                        "ELSE hash END, embedding, dims, updated_at FROM old.embedding_cache"
                    )
                self._copy_windows_from_attached(tables)
        finally:
            self.conn.execute("DETACH DATABASE old")
        return self.cache_count() - before

    def _copy_windows_from_attached(self, tables: set[str]) -> None:
        if "chunk_vectors" not in tables or "meta" not in tables:
            return
        if "hash" not in {r[1] for r in self.conn.execute("PRAGMA old.table_info(chunk_vectors)")}:
            return
        row = self.conn.execute("SELECT value FROM old.meta WHERE key = ?", (VECTOR_IDENTITY_KEY,)).fetchone()
        identity = _parse_identity(row[0] if row else None)
        if identity is None:
            return
        stamp = now_ms()
        rows = self.conn.execute("SELECT hash, embedding FROM old.chunk_vectors WHERE hash IS NOT NULL")
        self.conn.executemany(  # streamed: a large index's vectors never sit in memory at once
            _CACHE_INSERT,
            ((*identity, key, blob, vector_dims(bytes(blob)), stamp) for key, blob in rows),
        )

    # -- queries -----------------------------------------------------------------------------------

    def keyword_search(self, fts_query: str, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        """FTS5 MATCH ranked by bm25 (lower is better); the score field holds the raw bm25 rank.

        FTS5 ranks inside the index (`ORDER BY rank LIMIT`), then the few best rows are joined to chunks and
        filtered by model and source. Filtering first would read a chunk row for every match: 100k of them
        for common words. If the filter drops rows, the net widens until enough pass or matches run out.
        """
        if not self.fts.available or limit <= 0:
            return []
        wanted = set(sources)
        k = limit
        while True:
            hits = self._ranked_rowids(fts_query, k)
            rows = self._chunks_by_rowid([h[0] for h in hits])
            out = []
            for rowid, rank in hits:
                r = rows.get(rowid)
                if r is None or r[2] not in wanted or r[6] != model:
                    continue
                out.append(PackedTextRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], float(rank)))
            if len(out) >= limit or len(hits) < k:
                return out[:limit]
            k *= 4

    def _ranked_rowids(self, fts_query: str, k: int) -> list[tuple[int, float]]:
        """The k best (rowid, bm25 rank) for a MATCH expression.

        bm25 gives a term found in more than half of the chunks an IDF of 1e-6 (FTS5 clamps the negative
        value), yet counting and scoring it costs a pass over its whole doclist: ~0.9 s for three common
        words at 100k chunks. So in a large index, a plain query of quoted terms (what search builds) is
        ranked by its informative terms only; common terms still decide which chunks match (AND) or fill
        the tail after every informative match (OR). The order differs from full bm25 only by the 1e-6
        contributions, i.e. among exact ties.
        """
        parsed = _plain_terms(fts_query) if self._fts_rows_estimate() >= COMMON_TERM_MIN_ROWS else None
        if parsed is not None:
            op, terms = parsed
            common = self._common_terms(terms)
            if common:
                return self._ranked_without_common(op, [t for t in terms if t not in common], common, k)
        return self.conn.execute(
            "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?", (fts_query, k)
        ).fetchall()

    def _ranked_without_common(self, op: str, rare: list[str], common: list[str], k: int) -> list[tuple[int, float]]:
        ranked: list[tuple[int, float]] = []
        if rare:
            want = k if op == "OR" else k * 4
            while True:
                ranked = self.conn.execute(
                    "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
                    (f" {op} ".join(rare), want),
                ).fetchall()
                if op == "OR":
                    break
                needed = " AND ".join(common)
                kept = [
                    hit
                    for hit in ranked
                    if self.conn.execute(
                        "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid = ?", (needed, hit[0])
                    ).fetchone()
                ]
                if len(kept) >= k or len(ranked) < want:
                    return kept[:k]
                want *= 4
        if len(ranked) >= k or (rare and op == "AND"):
            return ranked[:k]
        # only near-zero scores remain: matches of the common terms, in index order
        seen = {rowid for rowid, _ in ranked}
        fill = self.conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?",
            (f" {op} ".join(common if op == "OR" or not rare else rare + common), k + len(seen)),
        ).fetchall()
        ranked += [(rowid, COMMON_ONLY_RANK) for (rowid,) in fill if rowid not in seen]
        return ranked[:k]

    def _fts_rows_estimate(self) -> int:
        row = self.conn.execute("SELECT max(rowid) FROM chunks").fetchone()
        return int(row[0] or 0)

    def _common_terms(self, terms: Sequence[str]) -> list[str]:
        """The terms found in more than COMMON_TERM_SHARE of the chunks, estimated from three rowid windows
        (a doclist seek and a short count each), never by walking a term's whole doclist.

        Answers are remembered until the index changes (another connection's commit moves `data_version`,
        this one's writes move `total_changes`): a hybrid query asks twice for the same terms, and a long-lived
        server keeps seeing the same words."""
        key = (int(self.conn.execute("PRAGMA data_version").fetchone()[0]), int(self.conn.total_changes()))
        if key != self._common_key:
            self._common_key, self._common_memo, self._sample_memo = key, {}, None
        missing = [t for t in dict.fromkeys(terms) if t not in self._common_memo]
        if missing:
            self._common_memo.update(self._count_common(missing))
        return [t for t in terms if self._common_memo.get(t)]

    def _common_sample(self) -> tuple[list[tuple[int, int]], int]:
        """The three rowid windows that _count_common samples and how many chunks they hold (kept with the
        common-term memo: ~2.5 ms a query at 100k chunks when every new word counted them again)."""
        if self._sample_memo is None:
            top = self._fts_rows_estimate()
            width = COMMON_TERM_SAMPLE
            windows = [(s, s + width) for s in (max(0, top * q // 4 - width // 2) for q in (1, 2, 3))]
            docs = sum(
                self.conn.execute("SELECT count(*) FROM chunks WHERE rowid > ? AND rowid <= ?", w).fetchone()[0]
                for w in windows
            )
            self._sample_memo = (top, windows, int(docs))
        return self._sample_memo[1], self._sample_memo[2]

    def _count_common(self, terms: Sequence[str]) -> dict[str, bool]:
        windows, docs = self._common_sample()
        out: dict[str, bool] = {}
        for term in terms:
            hits = 0
            for low, high in windows:
                if not docs:
                    break
                hits += self.conn.execute(
                    "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid > ? AND rowid <= ?",
                    (term, low, high),
                ).fetchone()[0]
                if hits > COMMON_TERM_SHARE * docs:
                    break
            out[term] = bool(docs) and hits > COMMON_TERM_SHARE * docs
        return out

    def _chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, tuple]:
        """rowid -> (id, path, source, start_line, end_line, text as stored, model). The stored text is unpacked
        by `PackedTextRow` when read, not by the SQL `chunk_text`: a Python function called from SQL costs ~5 us
        a row, and a search reads ~40 rows whose text it mostly never looks at."""
        found: dict[int, tuple] = {}
        for start in range(0, len(rowids), CACHE_LOOKUP_BATCH):
            batch = rowids[start : start + CACHE_LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            for r in self.conn.execute(
                f"SELECT rowid, id, path, source, start_line, end_line, text, model FROM chunks "
                f"WHERE rowid IN ({marks})",
                tuple(batch),
            ):
                found[r[0]] = r[1:]
        if found:
            memo = self._rowid_map()
            memo.update((r[0], rowid) for rowid, r in found.items())
        return found

    def _rowid_map(self) -> dict[str, int]:
        """The remembered chunk id -> rowid pairs, emptied when the index changed (another connection's commit
        moves `data_version`, this one's writes `total_changes`) or when it grew large."""
        key = (int(self.conn.execute("PRAGMA data_version").fetchone()[0]), int(self.conn.total_changes()))
        if key != self._rowid_key or len(self._rowid_memo) > ROWID_MEMO_MAX:
            self._rowid_key, self._rowid_memo, self._present_memo = key, {}, {}
        return self._rowid_memo

    def _rowids(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """chunk id -> rowid for the indexed ones. A search looks up the windows and the terms of candidates
        whose rows it has just read (`_chunks_by_rowid` remembers them): those need no query."""
        memo = self._rowid_map()
        ids = list(dict.fromkeys(chunk_ids))
        missing = [i for i in ids if i not in memo]
        for start in range(0, len(missing), CACHE_LOOKUP_BATCH):
            batch = missing[start : start + CACHE_LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            memo.update(dict.fromkeys(batch, NOT_INDEXED))
            for rowid, chunk_id in self.conn.execute(f"SELECT rowid, id FROM chunks WHERE id IN ({marks})", batch):
                memo[str(chunk_id)] = int(rowid)
        return {i: memo[i] for i in ids if memo[i] != NOT_INDEXED}

    def vector_search(
        self, query: np.ndarray, model: str, sources: Sequence[str], limit: int, read: int | None = None
    ) -> list[SearchRow]:
        """Top chunks by cosine similarity, each scored by its best window, exact.

        The numpy engine (default) multiplies a cached float32 matrix of every window by the query; the
        "sqlite-vec" engine asks vec0 for the k nearest. Both filter by model and source after ranking and
        widen the net when the filter drops rows; neither counts the table per query. `read`: the numpy engine
        reads the rows of the best `read` only (the first `read` of the `limit` it ranks).
        """
        return self.start_vector_search(query, model, sources, limit, beside=False, read=read)()

    def start_vector_search(
        self,
        query: np.ndarray,
        model: str,
        sources: Sequence[str],
        limit: int,
        beside: bool = True,
        read: int | None = None,
    ) -> Callable[[], list[SearchRow]]:
        """`vector_search` begun now: with `beside` and a large matrix, its scan runs on the vector module's
        helper thread while the caller goes on (the scan needs no SQL and releases the GIL), and the returned
        function waits for it, then reads the rows. Every query on the connection stays on the caller's
        thread."""
        if limit <= 0:
            return list
        if self.uses_vec0 and self.vector.dims == len(query):
            return lambda: self._knn_search(query, model, sources, limit)
        matrix = self.vector_matrix()
        if matrix is None or len(matrix) == 0 or matrix.dims != len(query):
            return list
        first = matrix.start_top(query, limit) if beside else None
        return lambda: self._matrix_rows(matrix, query, model, sources, limit, first, read)

    def _matrix_rows(
        self,
        matrix: VectorMatrix,
        query: np.ndarray,
        model: str,
        sources: Sequence[str],
        limit: int,
        first: Callable[[], tuple[np.ndarray, np.ndarray]] | None,
        read: int | None = None,
    ) -> list[SearchRow]:
        """The first `read` (default `limit`) rows of the best chunks of these sources and model, best first:
        rows are read best first, as many at a time as are still wanted (~5 us a row)."""
        wanted = set(sources)
        want = limit if read is None else max(1, min(read, limit))
        k = limit
        while True:
            rowids, scores = first() if first is not None else self._ranking(matrix, query, k)
            first = None
            ranked, scored = rowids.tolist(), scores.tolist()
            out: list[SearchRow] = []
            at = 0
            while at < len(ranked) and len(out) < want:
                batch = ranked[at : at + want - len(out)]
                rows = self._chunks_by_rowid(batch)
                for rowid, score in zip(batch, scored[at : at + len(batch)], strict=True):
                    r = rows.get(rowid)
                    if r is None or r[2] not in wanted or r[6] != model:
                        continue
                    out.append(PackedTextRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], float(score)))
                at += len(batch)
            if len(out) >= want or k >= len(matrix):
                return out
            k *= 4

    def _ranking(self, matrix: VectorMatrix, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """`matrix.top(query, k)`, remembered for the last query (asked again when a search reads more rows)."""
        key = query.tobytes()
        last = self._last_top
        if last is not None and last[0]() is matrix and last[1] == key and last[2] == k:
            return last[3]
        found = matrix.top(query, k)
        self._last_top = (weakref.ref(matrix), key, k, found)
        return found

    def window_vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """chunk id -> its stored window vectors, one row per window in window order (unit length).

        With the numpy engine they are sliced from the matrix vector search already holds (~1 ms a query
        less than reading ~200 blobs back); windows sit there in the order they were written, window order.
        """
        matrix = self.vector_matrix() if not self.uses_vec0 and self._matrix is not None else None
        if matrix is None:
            return self._window_vectors_stored(chunk_ids)
        out: dict[str, np.ndarray] = {}
        for chunk_id, rowid in self._rowids(chunk_ids).items():
            windows = matrix.windows_of(rowid)
            if windows is not None:
                out[chunk_id] = windows
        return out

    def _window_vectors_stored(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """window_vectors read from chunk_vectors (no matrix in memory)."""
        import numpy as np

        found: dict[str, list[tuple[int, bytes]]] = {}
        ids = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(ids), CACHE_LOOKUP_BATCH):
            batch = ids[start : start + CACHE_LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            rows = self.conn.execute(
                f"SELECT c.id, v.window, v.embedding FROM chunks c JOIN chunk_vectors v ON v.chunk_rowid = c.rowid "
                f"WHERE c.id IN ({marks})",
                tuple(batch),
            )
            for (chunk_id, window), blob in decode_blocks(((r[0], r[1]), bytes(r[2])) for r in rows):
                found.setdefault(str(chunk_id), []).append((int(window), blob))
        out: dict[str, np.ndarray] = {}
        for chunk_id, rows in found.items():
            rows.sort()
            widths = {len(blob) for _, blob in rows}
            if len(widths) == 1:
                out[chunk_id] = np.frombuffer(b"".join(b for _, b in rows), dtype=np.float32).reshape(len(rows), -1)
        return out

    def terms_present(self, matches: Sequence[str]) -> set[str]:
        """The FTS5 match units (a quoted term, a prefix) that at least one indexed chunk holds: one MATCH
        with LIMIT 1 each (no ranking), remembered until the index changes (a search asks for the names of its
        query: the same few names come back). Without FTS5 every unit counts as present."""
        if not self.fts.available:
            return set(matches)
        self._rowid_map()  # empties the memo when the index changed
        memo = self._present_memo
        if len(memo) > ROWID_MEMO_MAX:
            memo.clear()
        out: set[str] = set()
        for match in dict.fromkeys(matches):
            held = memo.get(match)
            if held is None:
                sql = "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1"
                held = memo[match] = self.conn.execute(sql, (match,)).fetchone() is not None
            if held:
                out.add(match)
        return out

    def terms_held(self, chunk_ids: Sequence[str], terms: Sequence[str]) -> dict[str, set[str]]:
        """chunk id -> the FTS terms (already cut like the index) its indexed text holds, context included.

        The FTS row of a chunk also holds its context (the log's date, the headings above it), which the
        chunk text does not say; this asks the index itself, one MATCH per term over these chunks only."""
        if not self.fts.available or not chunk_ids or not terms:
            return {}
        ids = list(dict.fromkeys(chunk_ids))[:CACHE_LOOKUP_BATCH]
        by_rowid = {rowid: chunk_id for chunk_id, rowid in self._rowids(ids).items()}
        if not by_rowid:
            return {}
        rowid_marks = ",".join("?" * len(by_rowid))
        out: dict[str, set[str]] = {}
        for term in dict.fromkeys(terms):
            for (rowid,) in self.conn.execute(
                f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({rowid_marks})",
                (quote_term(term), *by_rowid),
            ):
                out.setdefault(by_rowid[int(rowid)], set()).add(term)
        return out

    def vector_matrix(self) -> VectorMatrix | None:
        """Every stored window as one matrix, read once and kept while the vectors stay the same.

        Another connection's commit changes `PRAGMA data_version`; only when it does is the generation
        token read, and only a new token (some vector written or deleted) re-reads the matrix.
        """
        data_version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        if self._matrix is not None and self._matrix_token is not None and self._matrix_token[0] == data_version:
            return self._matrix
        token = self.read_meta_value(VECTOR_GENERATION_KEY)
        if self._matrix is not None and self._matrix_token is not None and self._matrix_token[1] == token:
            self._matrix_token = (data_version, token)
            return self._matrix
        first = self.conn.execute("SELECT embedding FROM chunk_vectors LIMIT 1").fetchone()
        if not first or not first[0]:
            self._matrix, self._matrix_token = None, (data_version, token)
            return None
        from mdrecall.storage.vectors import VectorMatrix

        dims = vector_dims(bytes(first[0]))
        count = int(self.conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0])
        rows = self.conn.execute("SELECT chunk_rowid, embedding FROM chunk_vectors")
        self._matrix = VectorMatrix.from_rows(decode_blocks(rows), dims, count)  # compact rows decoded to float32
        self._matrix.exact = self.exact_vectors
        self._matrix.prepare()
        self._matrix_token = (data_version, token)
        return self._matrix

    def _knn_search(self, query: np.ndarray, model: str, sources: Sequence[str], limit: int) -> list[SearchRow]:
        # vec0 (spec DDL, L2 metric) over unit vectors: cosine = 1 - d^2 / 2, same order as cosine distance.
        # No COUNT(*) per query (a full scan of vec0): fewer hits than k means the table is exhausted.
        k = limit
        results: list[SearchRow] = []
        while k > 0:
            rows = self.conn.execute(
                "SELECT id, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (vector_to_blob(query), k),
            ).fetchall()
            results = self._join_chunks(rows, model, sources)
            if len(results) >= limit or len(rows) < k or k >= VEC0_MAX_K:
                break
            k = min(k * 4, VEC0_MAX_K)  # filtered out by source/model: widen the net
        return results[:limit]

    def _join_chunks(self, hits: list[tuple[str, float]], model: str, sources: Sequence[str]) -> list[SearchRow]:
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = self.conn.execute(
            f"SELECT id, path, source, start_line, end_line, chunk_text(text) FROM chunks "
            f"WHERE id IN ({marks}) AND model = ?",
            (*[h[0] for h in hits], model),
        )
        by_id = {r[0]: r for r in rows}
        wanted = set(sources)
        out = []
        for chunk_id, distance in hits:
            r = by_id.get(chunk_id)
            if r is None or r[2] not in wanted:
                continue
            out.append(SearchRow(r[0], r[1], r[2], int(r[3]), int(r[4]), r[5], 1.0 - float(distance) ** 2 / 2.0))
        return out


def _connect(path: Path, read_only: bool) -> apsw.Connection:
    """Read-write, or read-only and immutable (a read-only state directory cannot hold WAL/-shm files)."""
    if not read_only:
        return apsw.Connection(str(path))
    from urllib.parse import quote

    uri = f"file:{quote(os.fsencode(path).decode('utf-8', 'surrogateescape'))}?mode=ro&immutable=1"
    return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


def remove_db_files(path: Path) -> None:
    """Delete an index file with its WAL and shared-memory companions, only if it is mdrecall's own."""
    remove_own_db_files(path)


SKIPPED_HASH_PREFIX = "skipped:"
