"""What the memory inspector shows, as plain dicts: one workspace and agent, any backend.

Everything goes through the code the CLI uses: the backend protocol (`open_backend`: search, read_file,
status, sync, the file and chunk listing), the fact store (`FactStore`: list, edit, forget, so
`memory/facts.md` stays the source of truth) and the hooks' state file. The HTTP layer (`ui/server.py`) only
turns these dicts into JSON; the tests call both.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mdrecall.errors import IndexWriteError, MdrecallError
from mdrecall.text.bounds import no_results_line
from mdrecall.ui.markdown import render_markdown

if TYPE_CHECKING:
    from mdrecall.backends import MemoryBackend
    from mdrecall.config.settings import Settings

MAX_QUERY_CHARS = 2000
MAX_RESULTS = 50
SEARCH_MODES = ("hybrid", "keyword", "vector")


class ReindexJob:
    """One background reindex at a time; its progress is read without waiting for the backend."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.state: dict[str, Any] = {"running": False}

    def snapshot(self) -> dict[str, Any]:
        with self._guard:
            return dict(self.state)

    def update(self, **changes: Any) -> None:
        with self._guard:
            self.state.update(changes)

    def claim(self, force: bool) -> bool:
        """Mark a job started; False when one is already running."""
        with self._guard:
            if self.state.get("running"):
                return False
            self.state = {
                "running": True,
                "force": force,
                "done": 0,
                "total": 0,
                "label": "starting",
                "chunksDone": 0,
                "chunksTotal": 0,
                "startedAt": int(time.time() * 1000),
            }
            return True


class Inspector:
    """The data behind every page. Backend and fact-store calls are serialised by one lock (one SQLite
    connection, one LanceDB handle); a reindex holds it too, so a search asked meanwhile waits for it."""

    def __init__(self, settings: Settings, backend: MemoryBackend | None = None) -> None:
        from mdrecall.backends import open_backend

        self.settings = settings
        self.backend = backend if backend is not None else open_backend(settings)
        self._lock = threading.RLock()
        self._facts: Any = None
        self.job = ReindexJob()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            yield

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=60)
        with self._lock:
            if self._facts is not None:
                self._facts.close()
            self.backend.close()

    # -- overview ----------------------------------------------------------------------------------

    def overview(self) -> dict[str, Any]:
        """Who and where: the page header."""
        from mdrecall.backends.factory import backend_name

        return {
            "workspace": str(self.settings.workspace),
            "agent": self.settings.agent_id,
            "backend": backend_name(self.settings),
        }

    # -- search ------------------------------------------------------------------------------------

    def _fresh(self) -> str | None:
        """Sync a stale index first, as `mdrecall search` does; a write fault leaves the last index to answer."""
        backend = self.backend
        if backend.read_only:
            return "the index is read-only: answering from the index as it is"
        if not backend.is_dirty():
            return None
        try:
            backend.sync(reason="stale")
        except IndexWriteError as err:
            return str(err)
        return None

    def search(
        self,
        query: str,
        mode: str = "hybrid",
        max_results: int | None = None,
        min_score: float | None = None,
    ) -> dict[str, Any]:
        """The CLI's search (same engine and defaults) with each result's explanation."""
        query = (query or "").strip()
        if not query:
            raise MdrecallError("the query is empty: say what to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise MdrecallError(f"the query is longer than {MAX_QUERY_CHARS} characters")
        if mode not in SEARCH_MODES:
            raise MdrecallError(f"mode must be one of {', '.join(SEARCH_MODES)}")
        if max_results is not None and not 1 <= max_results <= MAX_RESULTS:
            raise MdrecallError(f"max results must be between 1 and {MAX_RESULTS}")
        if min_score is not None and not 0.0 <= min_score <= 1.0:
            raise MdrecallError("min score must be between 0 and 1")
        with self._locked():
            note = self._fresh()
            started = time.perf_counter()
            response = self.backend.search(
                query,
                max_results=max_results,
                min_score=min_score,
                mode=mode,  # type: ignore[arg-type]
                explain=True,
            )
            elapsed = time.perf_counter() - started
        results = response.results
        out: dict[str, Any] = {
            "query": query,
            "mode": response.mode,
            "provider": response.provider,
            "model": response.model,
            "backend": response.backend,
            "notice": response.notice,
            "note": note,
            "relaxed": response.relaxed,
            "ms": round(elapsed * 1000, 1),
            "results": [self._result(r) for r in results],
        }
        if response.backend_fallback:
            out["backendFallback"] = response.backend_fallback
        if not results:
            out["message"] = no_results_line(query, response.notice)
        return out

    @staticmethod
    def _result(result: Any) -> dict[str, Any]:
        out = result.to_dict()
        out["explain"] = getattr(result, "explain", None)
        return out

    # -- browse ------------------------------------------------------------------------------------

    def files(self) -> dict[str, Any]:
        """Every memory file the backend reads, with its chunk count in the index."""
        with self._locked():
            files = self.backend.memory_files()
        return {"files": files, "count": len(files)}

    def file(self, rel_path: str, from_line: int | None = None, to_line: int | None = None) -> dict[str, Any]:
        """One memory file (through the backend's path rules), rendered, with its chunks and the cited range."""
        if not rel_path or not rel_path.strip():
            raise MdrecallError("say which file: path=memory/…")
        if from_line is not None and from_line < 1:
            raise MdrecallError("from must be a line number >= 1")
        if to_line is not None and from_line is not None and to_line < from_line:
            raise MdrecallError("to must not be before from")
        with self._locked():
            read = self.backend.read_file(rel_path)
            chunks = self.backend.file_chunks(read["path"])
        text = read["text"]
        out: dict[str, Any] = {
            "path": read["path"],
            "text": text,
            "lines": len(text.splitlines()),
            "html": render_markdown(text),
            "chunks": chunks,
        }
        if from_line is not None:
            out["highlight"] = {"from": from_line, "to": to_line if to_line is not None else from_line}
        return out

    # -- facts -------------------------------------------------------------------------------------

    def _fact_store(self) -> Any:
        from mdrecall.facts.store import FactStore, require_lancedb

        require_lancedb()
        if self._facts is None:
            backend = self.backend
            self._facts = FactStore(self.settings, lambda: backend.provider_result)
        return self._facts

    def facts(self) -> dict[str, Any]:
        """The stored facts (oldest first) with category, date and where each came from."""
        with self._locked():
            try:
                store = self._fact_store()
            except MdrecallError as err:
                return {"available": False, "reason": str(err), "facts": []}
            facts = store.list()
            sources = store.sources(facts)
            file_path = store.file.rel_path
        rows = [{**f.to_dict(), "source": sources.get(f.id, "hand edit")} for f in facts]
        return {"available": True, "file": file_path, "facts": rows, "count": len(rows)}

    def edit_fact(self, fact_id: str, text: str, category: str | None = None) -> dict[str, Any]:
        with self._locked():
            return self._fact_store().edit(fact_id, text, category=category, source="ui").to_dict()

    def forget_fact(self, fact_id: str) -> dict[str, Any]:
        if not fact_id or not fact_id.strip():
            raise MdrecallError("say which memory to forget: its id")
        with self._locked():
            return self._fact_store().forget(fact_id.strip()).to_dict()

    # -- activity and health -----------------------------------------------------------------------

    def activity(self, limit: int = 50) -> dict[str, Any]:
        """What the agent hooks did recently: events (captures, recalls, flushes) and per-session counters."""
        from mdrecall.agents.hooks import HookState

        state = HookState(self.settings)
        data = state.read()
        sessions = [
            {"session": key, **{k: v for k, v in value.items() if k != "linesRead"}}
            for key, value in (data.get("sessions") or {}).items()
            if isinstance(value, dict)
        ]
        sessions.sort(key=lambda s: -int(s.get("updatedAt") or 0))
        events = [e for e in (data.get("events") or []) if isinstance(e, dict)]
        events.sort(key=lambda e: -int(e.get("at") or 0))
        return {"stateFile": str(state.path), "events": events[:limit], "sessions": sessions[:limit]}

    def status(self) -> dict[str, Any]:
        with self._locked():
            status = self.backend.status()
        status["reindex"] = self.job.snapshot()
        return status

    def start_reindex(self, force: bool = True) -> dict[str, Any]:
        """Start a reindex in a thread (a full rebuild when `force`); its progress: `reindex_progress()`."""
        if self.backend.read_only:
            raise MdrecallError("the index is read-only here: it cannot be rebuilt")
        if not self.job.claim(force):
            return {"started": False, **self.job.snapshot()}
        self._thread = threading.Thread(target=self._reindex, args=(force,), name="mdrecall-ui-reindex", daemon=True)
        self._thread.start()
        return {"started": True, **self.job.snapshot()}

    def _reindex(self, force: bool) -> None:
        def files(done: int, total: int, label: str) -> None:
            self.job.update(done=done, total=total, label=label)

        def chunks(done: int, total: int) -> None:
            self.job.update(chunksDone=done, chunksTotal=total)

        try:
            with self._locked():
                report = self.backend.sync(force=force, reason="ui", progress=files, chunk_progress=chunks)
        except Exception as err:  # reported on the page as one line; the last index keeps answering
            self.job.update(running=False, error=str(err) or type(err).__name__, finishedAt=int(time.time() * 1000))
            return
        self.job.update(running=False, report=report.as_dict(), label="done", finishedAt=int(time.time() * 1000))

    def reindex_progress(self) -> dict[str, Any]:
        return self.job.snapshot()
