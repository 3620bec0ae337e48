"""Index size per chunk, split by table, through the real sync path.

A synthetic workspace is indexed by `incremental_sync` with a counting stand-in for the default model:
provider id "local" with e5's 512-token input, so chunks are cut into windows exactly as for
multilingual-e5-small, and the identity strings (model name, 64-hex provider key, window hashes) have their
real lengths. The same workspace is indexed again with one vector per chunk (a non-local provider id: the
spec's layout), so both densities are measured. Vectors are random unit vectors (their bytes do not depend on
what they mean). Two workspaces: "notes" (bench_index.generate_workspace: notes of 4-30 bullet lines, ~4.7
windows per chunk) and "dense" (one near-default-size chunk of short bullet lines per file: ~7.7 windows per
chunk, about the density bench_search measures search at).

Per table (dbstat: pages of each b-tree, indexes counted with their table) and whole file + WAL, before and
after the checkpoint a sync ends with. Figures are printed and written to bench/results/storage.json.

    python bench/bench_storage.py                              # 2000 files of each workspace
    python bench/bench_storage.py --encodings float32 float16 int10 int8 --plain-text
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_index import NAMES, TOPICS, generate_workspace  # noqa: E402
from mdrecall.config.settings import parse_config  # noqa: E402
from mdrecall.documents.workspace import list_memory_files  # noqa: E402
from mdrecall.indexing.sync import incremental_sync  # noqa: E402
from mdrecall.storage.sqlite import Store  # noqa: E402

DIMS = 384
DENSE_CHARS = 1500  # a default chunk is 400 tokens: at 1530 characters some of these files become two chunks
FLOAT32_VECTOR = DIMS * 4


class RandomProvider:
    """Deterministic random unit vectors per text; id "local" makes sync cut e5's windows."""

    model = "multilingual-e5-small"
    dims = DIMS
    max_seq_length = 512

    def __init__(self, windows: bool) -> None:
        self.id = "local" if windows else "bench-remote"
        self.provider_key = hashlib.sha256(self.id.encode()).hexdigest()
        self.texts = 0

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]


def file_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _group(name: str) -> str:
    if name.startswith("chunks_fts"):
        return "fts"
    if name == "chunks" or name.startswith(("idx_chunks_", "sqlite_autoindex_chunks_")):
        return "chunks"
    if name == "chunk_vectors" or name.startswith(("idx_chunk_vectors", "sqlite_autoindex_chunk_vectors")):
        return "chunk_vectors"
    if name == "embedding_cache" or name.startswith(("idx_embedding_cache", "sqlite_autoindex_embedding_cache")):
        return "embedding_cache"
    if name == "files" or name.startswith("sqlite_autoindex_files"):
        return "files"
    return "other"


def table_bytes(store: Store) -> dict[str, dict[str, int]]:
    """Bytes of each b-tree (dbstat) and of each table with its indexes."""
    btrees = {str(n): int(b) for n, b in store.conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")}
    grouped: dict[str, int] = {}
    for name, size in btrees.items():
        grouped[_group(name)] = grouped.get(_group(name), 0) + size
    return {"btrees": btrees, "tables": grouped}


def dense_workspace(root: Path, files: int) -> None:
    """One chunk of nearly the default size (400 tokens) of short bullet lines per file: ~7.7 windows a
    chunk, as e5 cuts prose docs (issue 14 measured ~7.6)."""
    rng = random.Random(3)
    (root / "memory").mkdir(parents=True, exist_ok=True)
    for i in range(files):
        topic = rng.choice(list(TOPICS))
        lines = [f"# Note {i}: {topic}", ""]
        while sum(len(line) + 1 for line in lines) < DENSE_CHARS:
            words = " ".join(rng.sample(TOPICS[topic].split(), 4))
            lines.append(f"- {rng.choice(NAMES)}: {words} for {topic}, item {i}.")
        (root / "memory" / f"n{i}.md").write_text("\n".join(lines) + "\n")


def measure(root: Path, workspace: str, windows: bool, encoding: str | None, plain_text: bool) -> dict[str, Any]:
    """One index built through the real sync, its store opened as MemoryIndex opens it (config's encoding and
    text compression; `encoding` None = the config default)."""
    provider = RandomProvider(windows)
    store_cfg: dict[str, Any] = {"compressText": not plain_text}
    if encoding is not None:
        store_cfg["vector"] = {"encoding": encoding}
    config = parse_config({"store": store_cfg})
    text = "plain" if plain_text else "zlib"
    db = root / f"index-{workspace}-{'windows' if windows else 'one'}-{encoding or 'default'}-{text}.sqlite"
    store = Store(db, encoding=config.store.vector.encoding, compress_text=config.store.compress_text)
    files = list_memory_files(root / workspace, [])
    started = time.perf_counter()
    report = incremental_sync(store, provider, config, files)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    chunks = int(store.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
    windows_stored = int(store.conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0])
    before_checkpoint = file_bytes(db)
    store.checkpoint()
    after = file_bytes(db)
    split = table_bytes(store)
    text_bytes = int(store.conn.execute("SELECT SUM(length(CAST(text AS BLOB))) FROM chunks").fetchone()[0])
    store.close()
    per_chunk = {k: round(v / chunks) for k, v in sorted(split["tables"].items())}
    return {
        "workspace": workspace,
        "layout": "e5 windows" if windows else "one vector per chunk",
        "encoding": config.store.vector.encoding + (" (default)" if encoding is None else ""),
        "text": "plain" if plain_text else "zlib (default)",
        "files": len(files),
        "chunks": chunks,
        "vectors_per_chunk": round(windows_stored / chunks, 2),
        "texts_embedded": report.texts_embedded,
        "sync_seconds": round(seconds, 1),
        "bytes_per_chunk": round(after / chunks),
        "bytes_per_chunk_before_checkpoint": round(before_checkpoint / chunks),
        "bytes_per_chunk_by_table": per_chunk,
        "bytes_per_chunk_by_btree": {k: round(v / chunks) for k, v in sorted(split["btrees"].items())},
        "floor_bytes_per_chunk": {
            "text": round(text_bytes / chunks),
            "float32_vectors": round(windows_stored / chunks * FLOAT32_VECTOR),
            "int8_vectors": round(windows_stored / chunks * (DIMS + 4)),
        },
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="mdrecall-bench-storage-"))
    results: dict[str, Any] = {"dims": DIMS, "files": args.files, "runs": []}
    try:
        generate_workspace(root / "notes", args.files)
        dense_workspace(root / "dense", args.files)
        for workspace in ("dense", "notes"):
            for windows in (True, False):
                for encoding in args.encodings:
                    for plain_text in (False, True) if args.plain_text else (False,):
                        chosen = None if encoding == "default" else encoding
                        entry = measure(root, workspace, windows, chosen, plain_text)
                        results["runs"].append(entry)
                        print(json.dumps(entry), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--encodings", nargs="*", default=["default"], help="store.vector.encoding values to measure")
    parser.add_argument("--plain-text", action="store_true", help="also measure each with store.compressText off")
    parser.add_argument("--out", type=Path, default=Path("bench/results/storage.json"))
    args = parser.parse_args()
    run(args)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
