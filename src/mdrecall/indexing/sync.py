"""Bring the index in line with the markdown: incremental sync, and the safe full reindex.

Incremental: a file whose mtime and size match its row is skipped without reading; otherwise it is read
and hashed, and only a changed hash re-chunks and re-embeds it (cache first). Rows of vanished files are
deleted. Each file is written in its own transaction, so an interrupted sync never leaves a half-indexed
file.

Full reindex (meta changed, or forced): everything is built in `{db}.tmp-{uuid}` next to the live index,
seeded with the live embedding cache, then copied over the live index in one transaction (SQLite's backup
API, `Store.replace_contents`): readers see the old index or the new one, never a mix. If anything fails
the temp files are removed and the live index is untouched.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mdrecall.config.settings import MemoryConfig
from mdrecall.documents.chunking import Chunk, chunk_markdown, hash_text
from mdrecall.documents.context import CONTEXT_VERSION, chunk_prefixes, with_context
from mdrecall.documents.sessions import SessionFile, map_lines, read_transcript
from mdrecall.documents.windows import DEFAULT_WINDOW_LINES, DEFAULT_WINDOW_STRIDE, WindowPlan, chunk_windows
from mdrecall.documents.workspace import MEMORY_SOURCE, SESSIONS_SOURCE, MemoryFile, decode_text, has_text_bom
from mdrecall.embeddings.base import EmbeddingProvider
from mdrecall.embeddings.factory import ProviderSwitchedError
from mdrecall.errors import EmbeddingError
from mdrecall.storage.base import ChunkRow, FileRow, IndexStore
from mdrecall.storage.sqlite import SKIPPED_HASH_PREFIX, STORAGE_FORMAT, Store, remove_db_files
from mdrecall.text.redact import REDACTION_VERSION, redact
from mdrecall.text.tokens import FTS_TEXT_VERSION

ProgressFn = Callable[[int, int, str], None]
# (chunks embedded or taken from the cache so far, chunks to embed in this sync): drives rate and ETA
ChunkProgressFn = Callable[[int, int], None]
FTS_ONLY_MODEL = "fts-only"
EMBED_WINDOW_CHUNKS = 256
# a local model embeds ~10-50 chunks/s: report after every step so progress moves (remote calls stay whole)
LOCAL_EMBED_STEP = 64
MAX_FILE_BYTES = 10_000_000  # default of the `maxFileBytes` setting
BINARY_SNIFF_BYTES = 8192

if TYPE_CHECKING:
    import numpy as np


@dataclass
class SyncReport:
    """What a sync did; printed by the CLI and returned to library callers."""

    reason: str = "manual"
    full_reindex: bool = False
    full_reason: str | None = None
    files_scanned: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    chunks_indexed: int = 0
    texts_embedded: int = 0
    cache_hits: int = 0
    embed_seconds: float = 0.0
    seconds: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    sessions_pending: int = 0
    sessions_malformed_lines: int = 0
    # the provider failed: the keyword side is indexed, these chunks wait for vectors (filled by a later sync)
    provider_error: str | None = None
    vectors_pending: int = 0
    vectors_filled: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "fullReindex": self.full_reindex,
            "fullReason": self.full_reason,
            "filesScanned": self.files_scanned,
            "filesIndexed": self.files_indexed,
            "filesUnchanged": self.files_unchanged,
            "filesDeleted": self.files_deleted,
            "chunksIndexed": self.chunks_indexed,
            "textsEmbedded": self.texts_embedded,
            "cacheHits": self.cache_hits,
            "embedSeconds": round(self.embed_seconds, 3),
            "seconds": round(self.seconds, 3),
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "sessionsPending": self.sessions_pending,
            "sessionsMalformedLines": self.sessions_malformed_lines,
            "providerError": self.provider_error,
            "vectorsPending": self.vectors_pending,
            "vectorsFilled": self.vectors_filled,
        }


def index_model(provider: EmbeddingProvider | None) -> str:
    return provider.model if provider is not None else FTS_ONLY_MODEL


def expected_meta(provider: EmbeddingProvider | None, config: MemoryConfig) -> dict[str, Any]:
    """The meta an index built now would carry; any difference with the stored one forces a full reindex."""
    return {
        "provider": provider.id if provider is not None else "none",
        "model": index_model(provider),
        "providerKey": provider.provider_key if provider is not None else None,
        "chunkTokens": config.chunking.tokens,
        "chunkOverlap": config.chunking.overlap,
        "vectorDims": provider.dims if provider is not None else None,
        "ftsText": FTS_TEXT_VERSION,
        "storage": STORAGE_FORMAT,
        "chunkContext": CONTEXT_VERSION,
        # memory files redacted or not, and the rules' version: a change rebuilds (and so purges) the index
        "redaction": f"v{REDACTION_VERSION}" + ("" if config.redact_memory else "-sessions-only"),
        "windows": _windows_meta(provider),
        "vectorEncoding": config.store.vector.encoding if provider is not None else None,
    }


def _windows_meta(provider: EmbeddingProvider | None) -> str | None:
    """How chunks are cut into embedded windows (None: one vector per chunk); a change rebuilds the index."""
    plan = window_plan(provider) if provider is not None else None
    return None if plan is None else f"lines={plan.lines},stride={plan.stride},tokens={plan.max_tokens}"


NO_INDEX_META = "no index metadata"


def full_reindex_reason(stored: dict[str, Any] | None, expected: dict[str, Any]) -> str | None:
    """Why the stored index cannot be updated incrementally, or None when it can."""
    if stored is None:
        return NO_INDEX_META
    for key, label in (
        ("provider", "provider"),
        ("model", "model"),
        ("providerKey", "provider key"),
        ("chunkTokens", "chunk tokens"),
        ("chunkOverlap", "chunk overlap"),
        ("ftsText", "keyword index format"),
        ("storage", "storage format"),
        ("chunkContext", "chunk context format"),
        ("redaction", "secret redaction"),
        ("windows", "embedding windows"),
    ):
        if stored.get(key) != expected.get(key):
            return f"{label} changed ({stored.get(key)!r} -> {expected.get(key)!r})"
    encoding = stored.get("vectorEncoding", "float32")  # indexes written before the setting held float32
    if expected.get("vectorEncoding") not in (None, encoding):
        return f"vector encoding changed ({encoding!r} -> {expected['vectorEncoding']!r})"
    if expected.get("vectorDims") is not None and stored.get("vectorDims") != expected["vectorDims"]:
        return f"vector dims changed ({stored.get('vectorDims')!r} -> {expected['vectorDims']!r})"
    return None


def decode_markdown(raw: bytes) -> tuple[str, bool]:
    """File bytes decoded (UTF-8, or UTF-16/32 with a BOM), undecodable bytes replaced; the flag says if any were."""
    return decode_text(raw)


def skip_reason(size: int, head: bytes, limit: int | None = None) -> str | None:
    """Why a file is not indexed at all (recorded so it is not retried until it changes), or None."""
    limit = MAX_FILE_BYTES if limit is None else limit
    if size > limit:
        return f"too large to index ({size / 1e6:.1f} MB > {limit / 1e6:g} MB limit, setting maxFileBytes)"
    if b"\0" in head[:BINARY_SNIFF_BYTES] and not has_text_bom(head):
        return "binary content (NUL bytes), not markdown"
    return None


def chunk_id(source: str, path: str, chunk: Chunk, model: str) -> str:
    return hash_text(f"{source}:{path}:{chunk.start_line}:{chunk.end_line}:{chunk.hash}:{model}")


@dataclass(slots=True)
class _PendingFile:
    file: MemoryFile | SessionFile
    hash: str
    chunks: list[Chunk] | None  # None: not kept in memory (a large sync reads the file again when its turn comes)
    source: str = MEMORY_SOURCE
    # (start, end) line numbers to store per chunk; transcripts cite JSONL lines, not flattened text lines
    lines: list[tuple[int, int]] | None = None
    # per chunk, the context prefix (log date, heading path) embedded and keyword-indexed with it
    contexts: list[str] | None = None

    # how many chunks the file has (kept when the chunks themselves are not)
    chunk_count: int = 0
    # per chunk, the hashes of its embedded windows' texts once embedded (stored with the vectors)
    window_hashes: Sequence[Sequence[str]] | None = None

    def context(self, index: int) -> str:
        return self.contexts[index] if self.contexts is not None else ""

    def line_range(self, index: int) -> tuple[int, int]:
        if self.lines is not None:
            return self.lines[index]
        chunk = self.chunks[index]
        return chunk.start_line, chunk.end_line


class Embedder:
    """Embeds chunk texts through the embedding cache; only cache misses reach the provider."""

    def __init__(
        self,
        store: IndexStore,
        provider: EmbeddingProvider | None,
        config: MemoryConfig,
        on_chunks: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.provider = provider
        self.cache_enabled = config.cache.enabled
        self.max_entries = config.cache.max_entries
        self.texts_embedded = 0
        self.cache_hits = 0
        self.seconds = 0.0
        self.on_chunks = on_chunks  # called with how many more chunks are done (embedded or from the cache)
        # per chunk of the last `embed` call, the hashes of its windows' texts (stored with the vectors)
        self.window_hashes: list[list[str]] = []

    def _advance(self, count: int) -> None:
        if self.on_chunks is not None and count:
            self.on_chunks(count)

    def embed(self, chunks: Sequence[Chunk], contexts: Sequence[str] | None = None) -> list[np.ndarray | None]:
        """Per chunk its vectors: one row per window (documents/windows.py) for a local model, else one vector of
        the whole chunk. Each text embedded is `with_context(context, window)`; the cache is keyed by its hash."""
        provider = self.provider
        if provider is None:
            return [None] * len(chunks)
        prefixes = list(contexts) if contexts is not None else [""] * len(chunks)
        plan = window_plan(provider)
        per_chunk = [
            [with_context(p, w) for w in (chunk_windows(c.text, plan, p) if plan is not None else [c.text])]
            for c, p in zip(chunks, prefixes, strict=True)
        ]
        pairs = [(c, w) for c, ws in zip(chunks, per_chunk, strict=True) for w in ws]
        texts = [Chunk(c.start_line, c.end_line, w, hash_text(w)) for c, w in pairs]
        counts = [len(ws) for ws in per_chunk]
        bounds = list(itertools.accumulate(counts, initial=0))
        self.window_hashes = [[t.hash for t in texts[a:b]] for a, b in itertools.pairwise(bounds)]
        # a chunk progress callback (`on_chunks`, when the embedder has one) counts chunks, not windows
        outer = getattr(self, "on_chunks", None)
        if outer is not None:
            self.on_chunks = _windows_to_chunks(outer, counts)
        try:
            vectors = self._embed_texts(texts)
            if outer is not None:
                self.on_chunks(len(texts))  # repeated windows were embedded once: count every chunk as done
        finally:
            if outer is not None:
                self.on_chunks = outer
        out: list[np.ndarray | None] = []
        offset = 0
        for n in counts:
            out.append(vectors[offset] if n == 1 else _stack(vectors[offset : offset + n]))
            offset += n
        return out

    def _embed_texts(self, chunks: Sequence[Chunk]) -> list[np.ndarray]:
        """One vector per text, cache first; only misses reach the provider."""
        provider = self.provider
        assert provider is not None
        hashes = [c.hash for c in chunks]
        cached: dict[str, np.ndarray] = {}
        if self.cache_enabled:
            cached = self.store.cache_get(provider.id, provider.model, provider.provider_key, hashes)
        self.cache_hits += sum(1 for h in hashes if h in cached)
        missing = {c.hash: c.text for c in chunks if c.hash not in cached}
        self._advance(len(chunks) - sum(1 for c in chunks if c.hash in missing))
        if missing:
            fresh = self._embed_missing(provider, missing)
            cached.update(fresh)
        elif cached and self.cache_enabled and self.max_entries:
            with self.store.transaction():
                self.store.cache_touch(provider.id, provider.model, provider.provider_key, set(hashes))
        return [cached[h] for h in hashes]

    def _embed_missing(self, provider: EmbeddingProvider, missing: dict[str, str]) -> dict[str, np.ndarray]:
        keys = list(missing)
        started = time.perf_counter()
        vectors = self._embed_in_steps(provider, keys, missing)
        self.seconds += time.perf_counter() - started
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            raise EmbeddingError(
                f"embedding provider returned {vectors.shape[0] if vectors.ndim else 0} vectors for {len(keys)} texts"
            )
        if provider.dims is not None and vectors.shape[1] != provider.dims:
            raise EmbeddingError(f"embedding dimension mismatch: expected {provider.dims}, got {vectors.shape[1]}")
        self.texts_embedded += len(keys)
        fresh = dict(zip(keys, vectors, strict=True))
        if not self.step_progress(provider):
            self._advance(len(keys))
        if self.cache_enabled:
            with self.store.transaction():
                self.store.cache_put(provider.id, provider.model, provider.provider_key, fresh.items())
                self.store.cache_evict(self.max_entries)
        return fresh

    @staticmethod
    def step_progress(provider: EmbeddingProvider) -> bool:
        """Local models are slow per text: embed them in steps and report after each one."""
        return provider.id == "local"

    def _embed_in_steps(self, provider: EmbeddingProvider, keys: list[str], missing: dict[str, str]) -> np.ndarray:
        """All vectors for `keys` in order; local models get length-sorted steps (padding stays small)."""
        import numpy as np

        if not self.step_progress(provider) or len(keys) <= LOCAL_EMBED_STEP:
            vectors = np.asarray(provider.embed_batch([missing[k] for k in keys]), dtype=np.float32)
            if self.step_progress(provider):
                self._advance(len(keys))
            return vectors
        order = sorted(range(len(keys)), key=lambda i: len(missing[keys[i]]))
        parts: list[np.ndarray] = []
        for start in range(0, len(order), LOCAL_EMBED_STEP):
            step = order[start : start + LOCAL_EMBED_STEP]
            parts.append(np.asarray(provider.embed_batch([missing[keys[i]] for i in step]), dtype=np.float32))
            self._advance(len(step))
        if any(p.ndim != 2 or p.shape[0] == 0 for p in parts):
            raise EmbeddingError("embedding provider returned no vectors for a batch")
        stacked = np.concatenate(parts)
        result = np.empty_like(stacked)
        result[np.asarray(order)] = stacked
        return result


def _embed_or_defer(
    embedder: Embedder, chunks: Sequence[Chunk], report: SyncReport, contexts: Sequence[str] | None = None
) -> list[np.ndarray | None]:
    """Vectors for the chunks, or Nones once the provider failed: the keyword side is never held hostage.

    A provider switch (fallback) is re-raised: the index must be rebuilt under the new provider's identity.
    """
    if report.provider_error is not None or embedder.provider is None:
        return [None] * len(chunks)
    try:
        return embedder.embed(chunks, contexts)
    except ProviderSwitchedError:
        raise
    except EmbeddingError as err:
        report.provider_error = str(err)
        return [None] * len(chunks)


def _fill_pending_vectors(store: IndexStore, embedder: Embedder, model: str, report: SyncReport) -> None:
    """Embed chunks indexed keyword-only while the provider was down (it answers again now)."""
    while True:
        rows = store.pending_vector_chunks(model, EMBED_WINDOW_CHUNKS)
        if not rows:
            return
        chunks = [Chunk(0, 0, text, text_hash) for _, text_hash, text in rows]
        vectors = _embed_or_defer(embedder, chunks, report)
        if report.provider_error is not None or any(v is None or len(v) == 0 for v in vectors):
            return
        if store.vector.dims is None and vectors:
            store.ensure_vector_table(len(vectors[0]))  # type: ignore[arg-type]
        with store.transaction():
            for (chunk_id, _, _), vector in zip(rows, vectors, strict=True):
                store.set_chunk_vector(chunk_id, vector)  # type: ignore[arg-type]
        report.vectors_filled += len(rows)


def _stack(rows: Sequence[np.ndarray]) -> np.ndarray:
    import numpy as np

    return np.stack(rows)


def _windows_to_chunks(report: Callable[[int], None], counts: Sequence[int]) -> Callable[[int], None]:
    """Turn "n more windows embedded" into "m more chunks done" for the chunk progress callback."""
    bounds = list(itertools.accumulate(counts))
    state = {"windows": 0, "chunks": 0}

    def advance(windows: int) -> None:
        state["windows"] = min(state["windows"] + windows, bounds[-1] if bounds else 0)
        done = bisect.bisect_right(bounds, state["windows"])
        if done > state["chunks"]:
            report(done - state["chunks"])
            state["chunks"] = done

    return advance


def window_plan(provider: EmbeddingProvider) -> WindowPlan | None:
    """Windows for the offline models (their input is short: 256-512 tokens); remote models read 8k tokens and
    bill per request, so they keep the spec's one vector per chunk."""
    if provider.id != "local":
        return None
    max_tokens = provider.max_seq_length or 256
    return WindowPlan(DEFAULT_WINDOW_LINES, DEFAULT_WINDOW_STRIDE, int(max_tokens))


def _unchanged_on_disk(row: FileRow | None, file: MemoryFile | SessionFile) -> bool:
    """The fast path: same mtime and size as when indexed, so the file is not even read."""
    return row is not None and row.mtime == file.mtime_ms and row.size == file.size


# Above this many bytes of changed memory files, a sync keeps only each file's chunk count while it counts
# the work, and reads the file again when its embedding batch comes: memory stays at about one batch (100k
# files: peak RSS 440 MB when every chunk was held). Below it, the chunks are kept (read once).
STREAM_ABOVE_BYTES = 64 * 1024 * 1024


def _chunked(file: MemoryFile, text: str, config: MemoryConfig) -> tuple[list[Chunk], list[str]]:
    chunks = chunk_markdown(text, config.chunking.tokens, config.chunking.overlap)
    return chunks, chunk_prefixes(file.path, text, [c.start_line for c in chunks])


def _memory_text(raw: bytes, config: MemoryConfig) -> tuple[str, bool]:
    """A memory file's text as indexed (decoded, redacted when `redactMemory`), and whether bytes were replaced.

    Secrets never reach chunks, FTS, vectors or the cache; the file itself is untouched."""
    text, replaced = decode_markdown(raw)
    return (redact(text) if config.redact_memory else text), replaced


def _iter_changed(
    store: IndexStore,
    files: Iterable[MemoryFile],
    config: MemoryConfig,
    report: SyncReport,
    indexed: dict[str, FileRow] | None = None,
    keep_chunks: bool = True,
) -> Iterator[_PendingFile]:
    """The changed files, read and chunked one at a time (a single-pass sync writes each group before the
    next files are read)."""
    indexed = store.get_files(MEMORY_SOURCE) if indexed is None else indexed
    for file in files:
        row = indexed.get(file.path)
        if _unchanged_on_disk(row, file):
            report.files_unchanged += 1
            continue
        try:
            reason = skip_reason(file.size, b"", config.max_file_bytes)
            raw = b"" if reason else file.abs_path.read_bytes()
        except OSError as err:
            report.skipped.append((file.path, f"unreadable: {err.strerror or err}"))
            continue
        reason = reason or skip_reason(len(raw), raw, config.max_file_bytes)
        if reason:
            _record_skipped(store, file, reason)
            report.skipped.append((file.path, reason))
            continue
        text, replaced = _memory_text(raw, config)
        del raw
        if replaced:
            report.skipped.append((file.path, "not valid UTF-8: undecodable bytes replaced (indexed anyway)"))
        file_hash = hash_text(text)
        if row is not None and row.hash == file_hash:
            with store.transaction():
                store.upsert_file(FileRow(file.path, MEMORY_SOURCE, file_hash, file.mtime_ms, file.size))
            report.files_unchanged += 1
            continue
        chunks, contexts = _chunked(file, text, config)
        if keep_chunks:
            yield _PendingFile(file, file_hash, chunks, contexts=contexts, chunk_count=len(chunks))
        else:  # a counting walk: the file is read again when its group comes
            yield _PendingFile(file, "", None, chunk_count=len(chunks))


def _record_skipped(store: IndexStore, file: MemoryFile, reason: str) -> None:
    """Keep a row for a skipped file (no chunks) so it counts as indexed until it changes."""
    with store.transaction():
        store.delete_chunks_for(file.path, MEMORY_SOURCE)
        store.upsert_file(FileRow(file.path, MEMORY_SOURCE, SKIPPED_HASH_PREFIX + reason, file.mtime_ms, file.size))


def _windows(pending: Iterable[_PendingFile], max_chunks: int) -> Iterator[list[_PendingFile]]:
    """Group files so each group carries about max_chunks chunks: one embedding call per group (lazily: a
    single-pass sync reads the next files only once the group before is written)."""
    current: list[_PendingFile] = []
    count = 0
    for item in pending:
        if current and count + item.chunk_count > max_chunks:
            yield current
            current, count = [], 0
        current.append(item)
        count += item.chunk_count
    if current:
        yield current


def _write_file(store: IndexStore, item: _PendingFile, vectors: Sequence[np.ndarray | None], model: str) -> None:
    rows = []
    seen: set[str] = set()
    hashes = item.window_hashes if item.window_hashes is not None else [None] * len(item.chunks)
    for index, (chunk, vector) in enumerate(zip(item.chunks, vectors, strict=True)):
        start, end = item.line_range(index)
        located = Chunk(start, end, chunk.text, chunk.hash)
        row_id = chunk_id(item.source, item.file.path, located, model)
        if row_id in seen:
            continue  # identical text at the same lines (segments of one long repetitive line): same chunk
        seen.add(row_id)
        rows.append(
            ChunkRow(
                id=row_id,
                path=item.file.path,
                source=item.source,
                start_line=start,
                end_line=end,
                hash=chunk.hash,
                model=model,
                text=chunk.text,
                embedding=vector,
                context=item.context(index),
                window_hashes=hashes[index] if vector is not None else None,
            )
        )
    with store.transaction():
        store.delete_chunks_for(item.file.path, item.source)
        store.insert_chunks(rows)
        store.upsert_file(FileRow(item.file.path, item.source, item.hash, item.file.mtime_ms, item.file.size))


SessionGate = Callable[[SessionFile], bool]


def _read_changed_sessions(
    store: IndexStore,
    sessions: Sequence[SessionFile],
    config: MemoryConfig,
    report: SyncReport,
    gate: SessionGate | None,
) -> list[_PendingFile]:
    """Transcripts to (re)index: new ones always; changed ones when `gate` says their delta is due."""
    indexed = store.get_files(SESSIONS_SOURCE)
    pending: list[_PendingFile] = []
    for file in sessions:
        row = indexed.get(file.path)
        if _unchanged_on_disk(row, file):
            report.files_unchanged += 1
            continue
        if row is not None and gate is not None and not file.archived and not gate(file):
            report.sessions_pending += 1
            continue
        try:
            doc = read_transcript(file.abs_path)
        except OSError as err:
            report.skipped.append((file.path, f"unreadable: {err.strerror or err}"))
            continue
        if doc.malformed:
            report.skipped.append((file.path, f"{doc.malformed} malformed JSONL line(s) skipped"))
        report.sessions_malformed_lines += doc.malformed
        chunks = chunk_markdown(doc.text, config.chunking.tokens, config.chunking.overlap) if doc.text else []
        lines = [map_lines(doc, c.start_line, c.end_line) for c in chunks]
        pending.append(_PendingFile(file, doc.hash, chunks, SESSIONS_SOURCE, lines, chunk_count=len(chunks)))
    return pending


def _vanished(indexed: dict[str, FileRow], files: Sequence[MemoryFile | SessionFile]) -> list[str]:
    """Indexed paths no longer among `files`, sorted (`_CountedWalk.vanished` after one counting pass)."""
    walk = _CountedWalk(files, indexed)
    for _ in walk:
        pass
    return walk.vanished()


_Found = TypeVar("_Found", MemoryFile, SessionFile)


class _CountedWalk(Generic[_Found]):
    """The discovered files, counted as a single-pass sync walks them: how many there were, and how many of
    them are indexed, which tells whether any indexed file vanished without a set of every present path (a
    100k-file sync held one); only when some are gone is the set built."""

    def __init__(self, files: Iterable[_Found], indexed: dict[str, FileRow]) -> None:
        self.files, self.indexed = files, indexed
        self.count = self.present = 0

    def __iter__(self) -> Iterator[_Found]:
        self.count = self.present = 0
        for file in self.files:
            self.count += 1
            self.present += file.path in self.indexed
            yield file

    def vanished(self) -> list[str]:
        """Indexed paths not walked, sorted; walks the files again only when some are gone."""
        if self.present >= len(self.indexed):
            return []
        return sorted(set(self.indexed).difference(f.path for f in self.files))

    def changed_bytes(self) -> int:
        """Bytes of the files that differ from their row by mtime or size (a walk of stat results only)."""
        return sum(f.size for f in self if not _unchanged_on_disk(self.indexed.get(f.path), f))


def _counted_then_streamed(
    store: IndexStore, walk: _CountedWalk, config: MemoryConfig, report: SyncReport, sessions: Iterable[_PendingFile]
) -> tuple[Iterable[_PendingFile], int, int]:
    """(pending files, their count, their chunks) for a large change with progress totals: a counting walk
    reads and chunks each changed file and keeps only the counts, then a second walk reads each file again as
    its group is embedded. Memory stays at one group whatever the number of files (100k files: a list of
    pending files was ~40 MB). The first walk reports skipped files; the second one's bookkeeping is dropped,
    so nothing is reported twice."""
    files = chunks = 0
    for item in _iter_changed(store, walk, config, report, walk.indexed, keep_chunks=False):
        files, chunks = files + 1, chunks + item.chunk_count
    listed = list(sessions)
    second = SyncReport(reason=report.reason)
    streamed = _then_new_skips(_iter_changed(store, walk, config, second, walk.indexed), second, report)
    return itertools.chain(streamed, listed), files + len(listed), chunks + sum(i.chunk_count for i in listed)


def _then_new_skips(items: Iterable[_PendingFile], second: SyncReport, report: SyncReport) -> Iterator[_PendingFile]:
    """The second walk's files, then its skipped files that the first walk did not report (one that became
    unreadable or too large in between)."""
    yield from items
    known = set(report.skipped)
    report.skipped.extend(entry for entry in second.skipped if entry not in known)


def _delete_vanished(store: IndexStore, source: str, vanished: list[str], indexed: dict[str, FileRow]) -> int:
    """Drop the rows of files that are gone (and from `indexed`, which the caller reuses)."""
    for path in vanished:
        with store.transaction():
            store.delete_file(path, source)
        del indexed[path]
    return len(vanished)


def incremental_sync(
    store: IndexStore,
    provider: EmbeddingProvider | None,
    config: MemoryConfig,
    files: Iterable[MemoryFile],
    progress: ProgressFn | None = None,
    reason: str = "manual",
    sessions: Sequence[SessionFile] | None = None,
    session_gate: SessionGate | None = None,
    chunk_progress: ChunkProgressFn | None = None,
) -> SyncReport:
    """Index new and changed files (and transcripts, when given), drop vanished ones, then record the meta.

    `progress` counts files written; `chunk_progress` counts chunks embedded (or found in the cache),
    which is where the time goes with a local model. `files` may be a re-iterable stream (a walk that
    starts again on each iteration): without progress callbacks it is walked once as files are written,
    and once more only when some indexed file has vanished.
    """
    started = time.perf_counter()
    one_pass = progress is None and chunk_progress is None
    if isinstance(files, Iterator):  # a one-shot iterator cannot be walked again to find vanished files
        files = list(files)
    report = SyncReport(reason=reason)
    indexed = store.get_files(MEMORY_SOURCE)  # read once: a no-op sync of 10k files is mostly this and a walk
    walk = _CountedWalk(files, indexed)
    changed_bytes = 0
    if not one_pass:  # totals are counted before anything is written, so vanished files can go first
        changed_bytes = walk.changed_bytes()
        report.files_deleted = _delete_vanished(store, MEMORY_SOURCE, walk.vanished(), indexed)
    if sessions is not None:
        indexed_sessions = store.get_files(SESSIONS_SOURCE)
        report.files_deleted += _delete_vanished(
            store, SESSIONS_SOURCE, _vanished(indexed_sessions, sessions), indexed_sessions
        )

    def changed_sessions() -> Iterator[_PendingFile]:
        if sessions is not None:
            yield from _read_changed_sessions(store, sessions, config, report, session_gate)

    pending: Iterable[_PendingFile]
    if one_pass:
        # nobody asks for totals: one pass, each file read once and written with its group, so memory holds
        # one group of chunks whatever the number of files
        pending = itertools.chain(_iter_changed(store, walk, config, report, indexed), changed_sessions())
        total_chunks = pending_files = 0
    elif changed_bytes <= STREAM_ABOVE_BYTES:  # the changed files are read once, and kept until written
        listed = [*_iter_changed(store, walk, config, report, indexed), *changed_sessions()]
        total_chunks = sum(item.chunk_count for item in listed)
        pending, pending_files = listed, len(listed)
    else:
        pending, pending_files, total_chunks = _counted_then_streamed(store, walk, config, report, changed_sessions())
    chunks_done = 0

    def on_chunks(count: int) -> None:
        nonlocal chunks_done
        chunks_done += count
        if chunk_progress is not None:
            chunk_progress(chunks_done, total_chunks)

    embedder = Embedder(store, provider, config, on_chunks if provider is not None else None)
    model = index_model(provider)
    if chunk_progress is not None:
        chunk_progress(0, total_chunks)
    if provider is not None and provider.dims is not None:
        store.ensure_vector_table(provider.dims)
    if provider is not None:  # the window rows are this identity's cache
        store.set_vector_identity(provider.id, provider.model, provider.provider_key)
        store.keep_deleted_vectors = config.cache.enabled
    done = 0
    if progress:
        progress(0, pending_files, "indexing")
    for group in _windows(pending, EMBED_WINDOW_CHUNKS):
        embedder.window_hashes = []
        vectors = _embed_or_defer(
            embedder,
            [c for item in group for c in item.chunks],
            report,
            [item.context(i) for item in group for i in range(len(item.chunks))],
        )
        hashes = embedder.window_hashes or None
        if provider is not None and store.vector.dims is None and vectors and vectors[0] is not None:
            store.ensure_vector_table(len(vectors[0]))
        offset = 0
        for item in group:
            end = offset + len(item.chunks)
            item.window_hashes = hashes[offset:end] if hashes else None
            _write_file(store, item, vectors[offset:end], model)
            offset += len(item.chunks)
            done += 1
            report.files_indexed += 1
            report.chunks_indexed += len(item.chunks)
            if progress:
                progress(done, pending_files, item.file.path)
            if provider is None:
                on_chunks(len(item.chunks))

    if one_pass:
        report.files_deleted += _delete_vanished(store, MEMORY_SOURCE, walk.vanished(), indexed)
    report.files_scanned = walk.count + len(sessions or [])
    if provider is not None:
        if report.provider_error is None:
            _fill_pending_vectors(store, embedder, model, report)
        report.vectors_pending = store.pending_vector_count(model)
    if provider is not None and config.cache.enabled and config.cache.max_entries:
        with store.transaction():  # the vectors of replaced windows moved to the cache while files were written
            store.cache_evict(config.cache.max_entries)
    meta = expected_meta(provider, config)
    if provider is not None and meta["vectorDims"] is None:
        meta["vectorDims"] = store.vector.dims
    meta["vectorTable"] = provider is not None and store.vector.available
    with store.transaction():
        store.write_meta(meta)
        if report.files_indexed or report.files_deleted:
            store.tidy_fts()  # fewer FTS segments: every keyword query probes each one
    report.texts_embedded = embedder.texts_embedded
    report.cache_hits = embedder.cache_hits
    report.embed_seconds = embedder.seconds
    report.seconds = time.perf_counter() - started
    return report


def temp_db_path(db_path: Path) -> Path:
    return db_path.with_name(f"{db_path.name}.tmp-{uuid.uuid4().hex}")


def safe_reindex(
    live: Store,
    open_store: Callable[[Path], Store],
    provider: EmbeddingProvider | None,
    config: MemoryConfig,
    files: Iterable[MemoryFile],
    progress: ProgressFn | None = None,
    reason: str = "manual",
    sessions: Sequence[SessionFile] | None = None,
    chunk_progress: ChunkProgressFn | None = None,
) -> SyncReport:
    """Rebuild the whole index in a temp DB (cache seeded from the live one), then copy it over the live one in
    one transaction.

    The swap copies the temp DB over the live one in a single transaction (`Store.replace_contents`).
    On any failure (Ctrl-C included) the temp files are removed and the live index keeps its contents; only
    the vectors embedded so far join its embedding cache, so the next run does not embed them again.
    """
    tmp_path = temp_db_path(live.path)
    tmp_store = open_store(tmp_path)
    swapped = False
    try:
        tmp_store.copy_cache_from(live.path)
        report = incremental_sync(
            tmp_store, provider, config, files, progress, reason, sessions, chunk_progress=chunk_progress
        )
        report.full_reindex = True
        live.replace_contents(tmp_store)
        swapped = True
        return report
    finally:
        tmp_store.close()
        if not swapped and provider is not None and config.cache.enabled:
            _keep_embedded(live, tmp_path)
        remove_db_files(tmp_path)


def _keep_embedded(live: Store, tmp_path: Path) -> None:
    """A rebuild that did not finish: its vectors go to the live index's embedding cache (best effort; the
    failure that stopped the rebuild is what the caller sees)."""
    with contextlib.suppress(Exception):
        live.copy_cache_from(tmp_path)
