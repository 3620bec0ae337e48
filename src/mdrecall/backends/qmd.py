"""The qmd backend: the `qmd` CLI (npm `@tobilu/qmd`) run as a search sidecar over the same markdown.

mdrecall gives qmd a home of its own under the state directory (`agents/<id>/qmd/`): every call runs with
`XDG_CONFIG_HOME`/`XDG_CACHE_HOME` pointing there (and its working directory there, so a project-local
`.qmd/` is never adopted), and the collections are written to `index.yml` from `[qmd] paths` plus the
workspace's default memory files. `qmd update` (+ `qmd embed` when due) run on boot, after changes
(debounced) and every `update.interval`; searches run `qmd <searchMode> --json -n N -- <query>`.

Results come back as `qmd://<collection>/<path>`; they are mapped to workspace-relative paths for the
default memory files and to `qmd/<collection>/<relative path>` for everything else, which `read_file`
serves from that collection's root and nothing else. Any failure raises `QmdError`; the
`FallbackBackend` in front of this class then lets the builtin index answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdrecall.backends.base import checked_limits
from mdrecall.config.settings import QmdConfig, QmdScopeConfig, parse_duration_ms
from mdrecall.documents.sessions import list_session_files, parse_transcript
from mdrecall.documents.workspace import read_memory_lines
from mdrecall.errors import MdrecallError, PathRefusedError
from mdrecall.files import make_private_dirs, write_atomic
from mdrecall.locks import file_lock
from mdrecall.retrieval.ranking import citations_enabled
from mdrecall.retrieval.results import merge_overlapping_results
from mdrecall.retrieval.search import SearchResponse, SearchResult, finish_results
from mdrecall.text.bounds import bound_query
from mdrecall.text.redact import redact

if TYPE_CHECKING:
    from mdrecall.config.settings import Settings

logger = logging.getLogger(__name__)

QMD_PREFIX = "qmd/"
SESSIONS_COLLECTION = "sessions"
STATE_FILE = "mdrecall-qmd-state.json"
SESSIONS_MANIFEST = "mdrecall-sessions-manifest.json"
_HEADER_RE = re.compile(r"^@@ -(\d+),(\d+) @@[^\n]*\n?")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class QmdError(MdrecallError):
    """qmd could not answer: missing, failing, timing out or printing something unparsable."""


@dataclass(frozen=True)
class Collection:
    """One qmd collection: `root` is the folder qmd indexes with `pattern`; `memory` ones live in the workspace."""

    name: str
    root: Path
    pattern: str
    kind: str  # "memory" (default memory files) | "extra" ([qmd] paths) | "sessions"

    @property
    def source(self) -> str:
        return "sessions" if self.kind == "sessions" else "memory"

    def files(self) -> list[Path]:
        """Regular files under root matching the (comma-separated) pattern, like qmd's scan."""
        found: set[Path] = set()
        for pattern in (p.strip() for p in self.pattern.split(",")):
            if pattern:
                found.update(p for p in self.root.glob(pattern) if p.is_file() and not _ignored(p, self.root))
        return sorted(found)


def _ignored(path: Path, root: Path) -> bool:
    """qmd's built-in exclusions (node_modules, .git, ...), which it never indexes."""
    parts = path.relative_to(root).parts[:-1]
    return any(part in {"node_modules", ".git", ".cache", "vendor", "dist", "build"} for part in parts)


def handelize(rel_path: str) -> str:
    """qmd's path normalisation: non letter/digit runs become '-' (the extension is kept)."""

    def clean(segment: str) -> str:
        out, dash = [], False
        for ch in segment:
            if ch.isalnum() or ch == "$":
                out.append(ch)
                dash = False
            elif not dash:
                out.append("-")
                dash = True
        return "".join(out).strip("-")

    segments = [s for s in rel_path.replace("___", "/").split("/") if s]
    result = []
    for i, segment in enumerate(segments):
        if i == len(segments) - 1:
            stem, dot, ext = segment.rpartition(".")
            if dot and stem and ext.isalnum():
                result.append(clean(stem) + "." + ext)
                continue
        result.append(clean(segment))
    return "/".join(part for part in result if part)


def _sanitize_name(raw: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    return name or "collection"


def scope_allows(scope: QmdScopeConfig, session_key: str | None) -> bool:
    """The first matching rule decides, else `scope.default`; no session (CLI, library) counts as direct."""
    parts = [p for p in (session_key or "").lower().split(":") if p]
    chat_type = "group" if "group" in parts else "channel" if "channel" in parts else "direct"
    for rule in scope.rules:
        match = rule.match
        if match.chat_type is not None and match.chat_type != chat_type:
            continue
        if match.channel is not None and match.channel.lower() not in parts:
            continue
        if match.key_prefix is not None and not (session_key or "").startswith(match.key_prefix):
            continue
        return rule.action == "allow"
    return scope.default == "allow"


def _parse_snippet(raw: str, line: int | None) -> tuple[str, int, int]:
    """Text and line range of a qmd snippet (`@@ -start,count @@ (...)` header, as qmd prints it)."""
    header = _HEADER_RE.match(raw)
    if header:
        start, count = int(header.group(1)), int(header.group(2))
        lines = raw[header.end() :].split("\n")[:count]
        while lines and not lines[-1].strip():  # qmd's window often ends (or starts) on blank lines
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
            start += 1
        return "\n".join(lines), start, max(start, start + len(lines) - 1)
    start = line if isinstance(line, int) and line >= 1 else 1
    return raw, start, start + max(0, raw.count("\n"))


class Notices:
    """Warnings said once per backend (one per CLI run or server): qmd's troubles (no binary, no embedding
    model) would otherwise be repeated by every update and search."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def once(self, key: str, text: str | None = None) -> bool:
        """Log `text` (default: `key`) as a warning the first time `key` comes up; True if logged now."""
        with self._lock:
            if key in self._said:
                return False
            self._said.add(key)
        logger.warning("%s", text or key)
        return True

    def said(self, key: str) -> bool:
        with self._lock:
            return key in self._said


class QmdBackend:
    """The qmd sidecar for one agent: collections, updates, search, file reads, status."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.cfg: QmdConfig = settings.config.qmd
        self.home = settings.state_dir / "agents" / settings.agent_id / "qmd"
        self.xdg_config = self.home / "xdg-config"
        self.xdg_cache = self.home / "xdg-cache"
        self.sessions_dir = (
            Path(self.cfg.sessions.export_dir).expanduser()
            if self.cfg.sessions.export_dir
            else (self.home / "sessions")
        )
        self._lock = threading.Lock()
        self._state = self._load_state()
        self._booted = False
        self._last_attempt: float | None = None
        self._version: str | None = None
        self._path_maps: dict[str, dict[str, str]] = {}
        self._running: set[subprocess.Popen[bytes]] = set()
        self._embedder: threading.Thread | None = None
        self._closed = False
        self._proc_lock = threading.Lock()
        self.notices = Notices()
        self._missing: str | None = None  # "qmd not found ..." once a run found no binary: not tried again

    # -- configuration -----------------------------------------------------------------------------

    @property
    def needs_embeddings(self) -> bool:
        """`vsearch` and `query` search vectors (`qmd embed`); `search` is BM25 and needs none."""
        return self.cfg.search_mode != "search"

    @property
    def models_dir(self) -> Path:
        """Where qmd (under mdrecall's XDG_CACHE_HOME) keeps its GGUF models."""
        return self.xdg_cache / "qmd" / "models"

    def has_embed_model(self) -> bool:
        """A local embedding model qmd can load without the network: $QMD_EMBED_MODEL as a file, or a GGUF
        already in its model cache. Without one, `qmd embed` first downloads from Hugging Face."""
        named = os.environ.get("QMD_EMBED_MODEL", "").strip()
        if named and not named.startswith("hf:"):
            return Path(named).expanduser().is_file()
        return self.models_dir.is_dir() and any(self.models_dir.glob("*.gguf"))

    @property
    def interval_seconds(self) -> float:
        return self.cfg.update.interval_ms / 1000

    @property
    def index_yml(self) -> Path:
        return self.xdg_config / "qmd" / "index.yml"

    def collections(self) -> list[Collection]:
        """Default memory files (includeDefaultMemory), `[qmd] paths`, and the sessions export when enabled."""
        ws = self.settings.workspace
        out: list[Collection] = []
        if self.cfg.include_default_memory:
            out.append(Collection("memory-root", ws, "MEMORY.md", "memory"))
            if (ws / "memory.md").is_file() and not (ws / "MEMORY.md").is_file():
                out.append(Collection("memory-alt", ws, "memory.md", "memory"))
            out.append(Collection("memory-dir", ws / "memory", "**/*.md", "memory"))
        taken = {c.name for c in out} | {SESSIONS_COLLECTION}
        for entry in self.cfg.paths:
            raw = Path(entry.path).expanduser()
            path = (raw if raw.is_absolute() else ws / raw).resolve()
            root, pattern = (path.parent, path.name) if path.is_file() else (path, entry.pattern)
            name = base = _sanitize_name(entry.name or path.name)
            n = 2
            while name in taken:
                name, n = f"{base}-{n}", n + 1
            taken.add(name)
            out.append(Collection(name, root, pattern, "extra"))
        if self.cfg.sessions.enabled:
            out.append(Collection(SESSIONS_COLLECTION, self.sessions_dir, "*.md", "sessions"))
        return out

    def collection(self, name: str) -> Collection | None:
        return next((c for c in self.collections() if c.name == name), None)

    def write_index_yml(self) -> None:
        """Rewrite the collections into qmd's `index.yml` (JSON is valid YAML); untouched when unchanged."""
        doc = {"collections": {c.name: {"path": str(c.root), "pattern": c.pattern} for c in self.collections()}}
        text = json.dumps(doc, indent=2) + "\n"
        make_private_dirs(self.index_yml.parent)
        with contextlib.suppress(FileNotFoundError):
            if self.index_yml.read_text(encoding="utf-8") == text:
                return
        write_atomic(self.index_yml, text.encode("utf-8"))

    # -- running qmd -------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "QMD_CONFIG_DIR"}
        env.update(XDG_CONFIG_HOME=str(self.xdg_config), XDG_CACHE_HOME=str(self.xdg_cache), NO_COLOR="1")
        return env

    def run(self, args: list[str], timeout_ms: int) -> str:
        """Run `qmd <args>` in its own home; stdout on success, else QmdError (missing, exit code, timeout)."""
        command = shlex.split(self.cfg.command) or ["qmd"]
        if self._missing:
            raise QmdError(self._missing)
        make_private_dirs(self.home)
        with self._proc_lock:  # close() must see every process it has to stop
            if self._closed:
                raise QmdError("qmd backend closed")
            try:
                proc = subprocess.Popen(
                    [*command, *args],
                    cwd=self.home,
                    env=self._env(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
            except FileNotFoundError:
                self._missing = f"qmd not found: {command[0]!r} is not installed or not on PATH"
                raise QmdError(self._missing) from None
            except OSError as err:
                raise QmdError(f"cannot run qmd ({command[0]}): {err.strerror}") from None
            self._running.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout_ms / 1000)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            raise QmdError(f"qmd {args[0]} timed out after {timeout_ms} ms") from None
        finally:
            self._running.discard(proc)
        if self._closed:
            raise QmdError("qmd backend closed")
        if proc.returncode != 0:
            detail = _ANSI_RE.sub("", err.decode("utf-8", "replace")).strip().splitlines()
            last = detail[-1] if detail else "no error output"
            raise QmdError(f"qmd {args[0]} failed (exit {proc.returncode}): {last[:300]}")
        return out.decode("utf-8", "replace")

    # -- updates -----------------------------------------------------------------------------------

    def _load_state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.home / STATE_FILE).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_state(self) -> None:
        make_private_dirs(self.home)
        write_atomic(self.home / STATE_FILE, json.dumps(self._state, indent=2).encode("utf-8"))

    def _record(self, key: str, started: float, error: str | None) -> None:
        entry = {"at": int(time.time() * 1000), "ok": error is None, "ms": round((time.monotonic() - started) * 1000)}
        if error:
            entry["error"] = error
        self._state[key] = entry
        if error is None:
            self._state[key + "Ok"] = entry["at"]
        self._save_state()

    def _ms_since(self, key: str) -> float | None:
        at = self._state.get(key + "Ok")
        return None if not isinstance(at, int | float) else time.time() * 1000 - at

    def refresh(self, force: bool = False, changed: bool = False, wait_embed: bool = False) -> bool:
        """Run an update when due: forced, on boot, after changes (debounced) or once update.interval passed.

        Returns whether an update ran. Failures are recorded for status, never raised.
        """
        if not self._due(force, changed):
            return False
        if not self._lock.acquire(blocking=force):
            return False  # another thread is updating right now
        try:
            with self._process_lock(wait=force) as locked:
                if not locked:
                    return False  # another process (CLI, MCP server) is updating this qmd home right now
                self._booted = True
                self._last_attempt = time.monotonic()
                self._state = self._load_state() or self._state  # another process may have updated meanwhile
                self.update(wait_embed=wait_embed)
        except QmdError as err:
            text = str(err)
            said = f"{text}; the builtin index answers" if text == self._missing else f"qmd update failed: {text}"
            self.notices.once(text, said)
        finally:
            self._lock.release()
        return True

    @contextlib.contextmanager
    def _process_lock(self, wait: bool) -> Iterator[bool]:
        """One `qmd update` per qmd home across processes (an advisory lock on `<home>/update.lock`)."""
        timeout = self.cfg.update.update_timeout_ms / 1000 if wait else 0
        with file_lock(self.home / "update.lock", timeout=timeout) as held:
            yield held

    def _due(self, force: bool, changed: bool) -> bool:
        if force:
            return True
        update = self.cfg.update
        since_ok = self._ms_since("lastUpdate")
        since_attempt = None if self._last_attempt is None else (time.monotonic() - self._last_attempt) * 1000
        if not self._booted and update.on_boot:
            return since_ok is None or changed or since_ok >= update.debounce_ms
        if changed:
            return since_attempt is None or since_attempt >= update.debounce_ms
        interval = update.interval_ms
        if interval > 0 and (since_attempt is None or since_attempt >= interval):
            return True
        return since_ok is None and (since_attempt is None or since_attempt >= update.debounce_ms)

    def update(self, wait_embed: bool = True) -> None:
        """Export sessions, rewrite index.yml, `qmd update`, then `qmd embed` once embedInterval has passed.

        The embed step can take minutes (qmd downloads and runs a GGUF model): searches and background
        updates run it in a thread (`wait_embed=False`) so they never wait for it; `close()` stops it.
        """
        update = self.cfg.update
        started = time.monotonic()
        try:
            if self.cfg.sessions.enabled:
                self.export_sessions()
            self.write_index_yml()
            self.run(["update"], update.update_timeout_ms)
        except (QmdError, OSError) as err:
            self._record("lastUpdate", started, str(err))
            raise QmdError(str(err)) from None
        self._record("lastUpdate", started, None)
        self._path_maps.clear()
        if not self.needs_embeddings or not self._embed_due():
            return  # `search` mode: BM25 needs no vectors, so no model download and no wait
        if wait_embed:
            self.embed()
        elif self._embedder is None or not self._embedder.is_alive():
            self._embedder = threading.Thread(target=self.embed, name="mdrecall-qmd-embed", daemon=True)
            self._embedder.start()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for a background embed to finish (tests, CLI shutdown)."""
        if self._embedder is not None:
            self._embedder.join(timeout)
            return not self._embedder.is_alive()
        return True

    def _embed_due(self) -> bool:
        """Once embedInterval has passed since the last success, and (after a failure) since that attempt too:
        an embed that cannot work (no model offline) is not retried by every update."""
        every = self.cfg.update.embed_interval_ms
        since = self._ms_since("lastEmbed")
        if every <= 0 or (since is not None and since < every):
            return False
        last = self._state.get("lastEmbed")
        if isinstance(last, dict) and not last.get("ok") and isinstance(last.get("at"), int | float):
            return time.time() * 1000 - last["at"] >= every
        return True

    def embed(self) -> bool:
        """`qmd embed` with the embed timeout; the outcome is recorded for status, a failure said once."""
        started = time.monotonic()
        had_model = self.has_embed_model()
        try:
            self.run(["embed"], self.cfg.update.embed_timeout_ms)
        except QmdError as err:
            if not self._closed:
                error = str(err)
                if not had_model and not self.has_embed_model():
                    error = (
                        f"qmd has no embedding model in {self.models_dir} and could not fetch one ({err}); "
                        f"qmd {self.cfg.search_mode} cannot answer until one is there"
                    )
                self._record("lastEmbed", started, error)
                self.notices.once(error, f"qmd embed failed: {error}; the builtin index answers")
            return False
        self._record("lastEmbed", started, None)
        return True

    # -- sessions export ---------------------------------------------------------------------------

    def export_sessions(self) -> dict[str, int]:
        """Sanitised transcripts (User/Assistant turns, secrets masked) as markdown, with retention.

        Only files this exporter wrote (listed in its manifest) are ever replaced or deleted.
        """
        out_dir = self.sessions_dir
        make_private_dirs(out_dir)
        manifest_path = self.home / SESSIONS_MANIFEST
        try:
            owned = set(json.loads(manifest_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            owned = set()
        retention = self.cfg.sessions.retention_days
        cutoff_ms = None if retention is None else (time.time() - retention * 86400) * 1000
        wanted: dict[str, str] = {}
        for file in list_session_files(self.settings.sessions_dir):
            if cutoff_ms is not None and file.mtime_ms < cutoff_ms:
                continue
            name = re.sub(r"[^A-Za-z0-9-]+", "-", file.abs_path.name).strip("-") + ".md"
            try:
                doc = parse_transcript(file.abs_path.read_bytes(), redact_secrets=True)
            except OSError:
                continue
            if doc.text.strip():
                wanted[name] = f"# Session {file.abs_path.name}\n\n{doc.text}\n"
        written = removed = 0
        for name, text in wanted.items():
            target = out_dir / name
            if target.exists() and name not in owned:
                continue  # never overwrite a file we did not write
            if not target.exists() or target.read_text(encoding="utf-8", errors="replace") != text:
                write_atomic(target, text.encode("utf-8"))
                written += 1
            owned.add(name)
        for name in sorted(owned - set(wanted)):
            with contextlib.suppress(FileNotFoundError):
                (out_dir / name).unlink()
                removed += 1
            owned.discard(name)
        write_atomic(manifest_path, json.dumps(sorted(owned)).encode("utf-8"))
        return {"exported": len(wanted), "written": written, "removed": removed}

    # -- search ------------------------------------------------------------------------------------

    def unavailable_reason(self) -> str | None:
        """Why qmd cannot serve right now (no binary, its index was never built), or None."""
        if self._missing:
            return self._missing
        if self._ms_since("lastUpdate") is not None:
            return None
        last = self._state.get("lastUpdate")
        return f"qmd index not built: {last.get('error')}" if isinstance(last, dict) and last.get("error") else None

    def search(
        self,
        query: str,
        max_results: int | None = None,
        min_score: float | None = None,
        *,
        citations: str = "off",
        session_key: str | None = None,
    ) -> SearchResponse:
        """`qmd <searchMode> --json -n N -- <query>`, mapped to mdrecall results; QmdError on any failure."""
        max_results, min_score = checked_limits(max_results, min_score)
        mode = self.cfg.search_mode
        limits = self.cfg.limits
        label = f"qmd-{mode}"
        if not scope_allows(self.cfg.scope, session_key):
            notice = "qmd results are not allowed in this chat (memory.qmd.scope)"
            return SearchResponse([], "qmd", mode, label, notice=notice, backend="qmd")
        cleaned = bound_query(query)  # the same bound as the builtin search (mdrecall.text.bounds)
        if not cleaned:
            return SearchResponse([], "qmd", mode, label, notice="empty query", backend="qmd")
        if self._missing:
            raise QmdError(self._missing)
        if self._ms_since("lastUpdate") is None:
            self.refresh(force=True)  # first search before any update: build the index now
            if self._ms_since("lastUpdate") is None:
                raise QmdError(self.unavailable_reason() or "qmd index not built")
        if mode != "search" and self._ms_since("lastEmbed") is None:
            last = self._state.get("lastEmbed")
            if isinstance(last, dict) and last.get("error"):
                raise QmdError(str(last["error"]))  # the embed failure, already said once in this process
            raise QmdError(f"qmd {mode} needs embeddings and qmd embed has not succeeded yet")
        limit = min(max_results or limits.max_results, limits.max_results)
        # `--` ends qmd's options: a query such as "--full notes" stays a query
        raw = self.run([mode, "--json", "-n", str(limit), "--", cleaned], limits.timeout_ms)
        rows = self._parse(raw)
        results = [r for r in (self._to_result(row) for row in rows) if r is not None]
        if min_score is not None:
            results = [r for r in results if r.score >= min_score]
        results = results[:limit]
        results = finish_results(results, citations_enabled(citations, session_key), limits.max_injected_chars)
        results = merge_overlapping_results(results, self.settings.config.query.merge_overlapping)
        return SearchResponse(results, "qmd", mode, label, backend="qmd")

    @staticmethod
    def _parse(raw: str) -> list[dict[str, Any]]:
        text = raw.strip()
        if not text or text.startswith("No results"):
            return []
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise QmdError(f"qmd printed unparsable JSON ({err.msg} at char {err.pos})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) and isinstance(r.get("file"), str) for r in data):
            raise QmdError("qmd printed JSON that is not a list of results with a 'file'")
        return data

    def _to_result(self, row: dict[str, Any]) -> SearchResult | None:
        uri = row["file"].split("?", 1)[0]
        location = uri.removeprefix("qmd://").lstrip("/")
        name, _, handle = location.partition("/")
        collection = self.collection(name)
        if collection is None or not handle:
            return None
        rel = self._real_path(collection, handle)
        snippet_raw = row.get("snippet") if isinstance(row.get("snippet"), str) else row.get("body") or ""
        text, start, end = _parse_snippet(str(snippet_raw), row.get("line"))
        score = row.get("score")
        return SearchResult(
            path=self.display_path(collection, rel),
            start_line=start,
            end_line=end,
            score=float(score) if isinstance(score, int | float) else 0.0,
            snippet=text.strip()[: self.cfg.limits.max_snippet_chars],
            source=collection.source,
        )

    def _real_path(self, collection: Collection, handle: str) -> str:
        """The on-disk relative path behind qmd's normalised one (qmd reports `My Notes.md` as `My-Notes.md`)."""
        mapping = self._path_maps.get(collection.name)
        if mapping is None or handle not in mapping:
            mapping = {}
            for path in collection.files():
                rel = path.relative_to(collection.root).as_posix()
                mapping.setdefault(handelize(rel).lower(), rel)
                mapping.setdefault(rel.lower(), rel)
            self._path_maps[collection.name] = mapping
        return mapping.get(handle.lower(), handle)

    def display_path(self, collection: Collection, rel: str) -> str:
        """Workspace-relative for the default memory files, `qmd/<collection>/<path>` for the rest."""
        if collection.kind == "memory":
            return (collection.root / rel).relative_to(self.settings.workspace).as_posix()
        return f"{QMD_PREFIX}{collection.name}/{rel}"

    # -- reading files -----------------------------------------------------------------------------

    @staticmethod
    def owns_path(rel_path: str) -> bool:
        return (rel_path or "").strip().startswith(QMD_PREFIX)

    def read_file(self, rel_path: str, from_line: int | None = None, lines: int | None = None) -> dict[str, str]:
        """A file of a qmd collection, `qmd/<collection>/<path>`, read from the collection root; nothing else."""
        if from_line is not None and from_line < 1:
            raise MdrecallError("from must be a line number >= 1")
        if lines is not None and lines < 1:
            raise MdrecallError("lines must be >= 1")
        raw = (rel_path or "").strip()
        mask = redact if self.settings.config.redact_memory else None  # masked as the builtin `get` masks them
        return read_memory_lines(self._resolve(raw), raw, from_line, lines, mask=mask)  # regular files, bounded

    def _resolve(self, raw: str) -> Path:
        if any(bad in raw for bad in ("\0", "\\", "%")):
            raise PathRefusedError(f"path refused: {raw!r} contains a NUL, backslash or percent sign")
        name, _, rel = raw.removeprefix(QMD_PREFIX).partition("/")
        collection = self.collection(name)
        if collection is None:
            known = ", ".join(c.name for c in self.collections()) or "none"
            raise PathRefusedError(f"path refused: no qmd collection {name!r} (collections: {known})")
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise PathRefusedError(f"path refused: give a path inside the collection: {raw}")
        root = collection.root.resolve()
        candidate = collection.root / rel
        try:
            resolved = candidate.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            raise MdrecallError(f"memory file not found: {raw}") from None
        if candidate.is_symlink() or not resolved.is_relative_to(root) or not resolved.is_file():
            raise PathRefusedError(f"path refused: {raw} is outside the collection or not a regular file")
        if candidate not in set(collection.files()):
            raise PathRefusedError(f"path refused: {raw} is not indexed by collection {name!r} ({collection.pattern})")
        return candidate

    # -- status ------------------------------------------------------------------------------------

    def version(self) -> str | None:
        if self._version is None:
            try:
                out = self.run(["--version"], self.cfg.update.command_timeout_ms).strip()
            except QmdError:
                return None
            self._version = out.removeprefix("qmd ").strip() or out
        return self._version

    def status(self) -> dict[str, Any]:
        """qmd's version, collections with document counts, last update and embed (qmd status is text)."""
        out: dict[str, Any] = {
            "command": self.cfg.command,
            "searchMode": self.cfg.search_mode,
            "home": str(self.home),
            "version": self.version(),
            "collections": [
                {"name": c.name, "path": str(c.root), "pattern": c.pattern, "documents": None}
                for c in self.collections()
            ],
            "documents": None,
            "vectors": None,
        }
        for key in ("lastUpdate", "lastEmbed"):
            if isinstance(self._state.get(key), dict):
                out[key] = self._state[key]
        try:
            text = _ANSI_RE.sub("", self.run(["status"], self.cfg.update.command_timeout_ms))
        except QmdError as err:
            out["available"] = False
            out["error"] = str(err)
            return out
        out["available"] = True
        if found := re.search(r"Total:\s+(\d+)", text):
            out["documents"] = int(found.group(1))
        if found := re.search(r"Vectors:\s+(\d+)", text):
            out["vectors"] = int(found.group(1))
        counts = dict(re.findall(r"^\s+(\S+) \(qmd://[^)]*\)\s*\n\s+Pattern:[^\n]*\n\s+Files:\s+(\d+)", text, re.M))
        for entry in out["collections"]:
            if entry["name"] in counts:
                entry["documents"] = int(counts[entry["name"]])
        return out

    def close(self) -> None:
        """Stop whatever qmd is still running for us (an embed in the background), never leave it orphaned."""
        with self._proc_lock:
            self._closed = True
            running = list(self._running)
        for proc in running:
            _kill(proc)
        if self._embedder is not None:
            self._embedder.join(timeout=5)
        self._path_maps.clear()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """qmd runs in its own session: kill the whole group (node spawns helpers)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


__all__ = ["Collection", "QmdBackend", "QmdError", "handelize", "parse_duration_ms", "scope_allows"]
