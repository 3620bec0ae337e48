"""The warm path: one long-lived process answers hooks and CLI searches over a private Unix socket.

A hook is a new process per event, and a cold process pays for its imports (LanceDB alone ~1 s) and for
loading the embedding model. While an agent session runs, the MCP server the agent started (or
`mdrecall serve`) keeps all of that loaded and listens on

    <state dir>/run/<key>.sock      (directory 0700, socket 0600; the peer's uid is checked)

where `<key>` names the workspace, agent, state dir and config file. `mdrecall hook ...` and
`mdrecall search ...` try the socket first and fall back to the cold path when nobody listens, when the
server runs another version or config, or when it fails. Only one process serves a key: it holds
`<key>.lock` for its lifetime.

Protocol: one JSON object per line each way. Requests carry `op` (`ping`, `hook`, `search`) and
`identity` (the key's parts), which the server checks against its own.

The client half (`identity_for`, `call`) imports only the standard library: the warm path must not pay
for the imports it exists to avoid.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mdrecall import __version__

RUN_DIRNAME = "run"
MAX_REQUEST_BYTES = 4 * 1024 * 1024
CONNECT_TIMEOUT = 0.5
# A hook waits this long for a warm answer (the server may still be loading the model); below the hook
# timeouts `install` writes (30 s for UserPromptSubmit), so a stuck server still leaves time for the cold path.
DEFAULT_REPLY_TIMEOUT = 20.0
# sockaddr_un.sun_path holds 108 bytes on Linux (104 on macOS) including the terminating NUL.
MAX_SOCKET_PATH = 103


# ---------------------------------------------------------------------------------------------------------
# Identity and paths (standard library only)
# ---------------------------------------------------------------------------------------------------------


def identity_for(workspace: str | os.PathLike[str], agent: str, state_dir: Path, config: Path | None) -> dict[str, str]:
    """What a request and a server must agree on: real workspace path, agent, real state dir, config file.

    `config` is the file the settings were read from (None: no config file, defaults)."""
    return {
        "workspace": os.path.realpath(workspace),
        "agent": agent,
        "stateDir": os.path.realpath(state_dir),
        "config": os.path.realpath(config) if config else "",
        "version": __version__,
    }


def default_config_file(workspace: str | os.PathLike[str], explicit: str | os.PathLike[str] | None) -> Path | None:
    """The config file settings would read: `--config`, else `<workspace>/mdrecall.toml` when it exists."""
    from mdrecall.config.paths import CONFIG_FILENAME

    if explicit:
        return Path(explicit).expanduser()
    candidate = Path(workspace) / CONFIG_FILENAME
    return candidate if candidate.is_file() else None


def key_of(identity: dict[str, str]) -> str:
    raw = "\0".join(identity[k] for k in ("workspace", "agent", "stateDir", "config"))
    return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def socket_path(identity: dict[str, str]) -> Path:
    return Path(identity["stateDir"]) / RUN_DIRNAME / f"{key_of(identity)}.sock"


def usable_socket_path(path: Path) -> bool:
    return len(os.fsencode(str(path))) <= MAX_SOCKET_PATH


# ---------------------------------------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------------------------------------


def call(
    identity: dict[str, str], request: dict[str, Any], timeout: float = DEFAULT_REPLY_TIMEOUT
) -> dict[str, Any] | None:
    """The warm server's answer to `request`, or None when no warm server can answer (use the cold path)."""
    path = socket_path(identity)
    if not usable_socket_path(path) or not path.exists():
        return None
    try:
        info = os.stat(path.parent)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:  # not ours, or others could swap the socket
            return None
    except OSError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(str(path))
        sock.settimeout(timeout)
        sock.sendall(json.dumps({**request, "identity": identity}, ensure_ascii=False).encode() + b"\n")
        data = _read_line(sock)
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    try:
        answer = json.loads(data)
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.get("fallback"):
        return None
    return answer


def _read_line(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk or size > MAX_REQUEST_BYTES:
            break
    data = b"".join(chunks)
    if b"\n" not in data:
        raise ValueError("incomplete message")
    return data.split(b"\n", 1)[0]


def ping(identity: dict[str, str], timeout: float = 2.0) -> dict[str, Any] | None:
    return call(identity, {"op": "ping"}, timeout=timeout)


def warm_status(settings: Any) -> dict[str, Any]:
    """For `status`: is a warm server answering for these settings, where, since when."""
    identity = identity_for(settings.workspace, settings.agent_id, settings.state_dir, settings.config_path)
    path = socket_path(identity)
    info: dict[str, Any] = {"running": False, "socket": str(path)}
    if not serves_cli_identity(settings):
        info["reason"] = "an explicit --db or OpenClaw layout: hooks use the cold path"
    elif not usable_socket_path(path):
        info["reason"] = f"the socket path is longer than {MAX_SOCKET_PATH} bytes: use a shorter --state-dir"
    else:
        answer = ping(identity)
        if answer and answer.get("ok"):
            info.update(running=True, pid=answer.get("pid"), served=answer.get("served", 0))
        else:
            info["reason"] = "start `mdrecall serve`, or an agent's MCP server (`mdrecall mcp`) runs it"
    return info


# ---------------------------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------------------------


def _peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid (Linux SO_PEERCRED; None where the platform does not say)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]


def serves_cli_identity(settings: Any) -> bool:
    """The index is the one `--workspace/--agent/--state-dir/--config` lead to (no explicit --db)."""
    from mdrecall.config.settings import default_db_path

    if settings.config.store.path:
        return True  # set by the config file, which is part of the identity
    return settings.db_path == default_db_path(settings.state_dir, settings.agent_id, settings.workspace)


def private_run_dir(run: Path) -> Path:
    """`<state>/run`, created 0700; an existing one is tightened to 0700 (refused when another user owns it)."""
    from mdrecall.errors import MdrecallError

    run.parent.mkdir(parents=True, exist_ok=True)
    run.mkdir(exist_ok=True, mode=0o700)
    info = os.lstat(run)
    if run.is_symlink() or info.st_uid != os.getuid():
        raise MdrecallError(f"{run} is not a directory owned by you: the warm server will not listen there")
    if info.st_mode & 0o077:
        os.chmod(run, 0o700)
    return run


class WarmServer:
    """Serves `hook` and `search` requests for one workspace from objects kept loaded.

    `index`: an open MemoryBackend (the MCP server's); opened on first use when None. `fact_store`: a
    FactStore to share (the MCP server's fact tools hold one), with `lock`, the lock its other users take.
    Requests run one at a time.
    """

    def __init__(
        self,
        settings: Any,
        index: Any = None,
        fact_store: Any = None,
        log: Callable[[str], None] | None = None,
        lock: Any = None,
    ) -> None:
        self.settings = settings
        self.identity = identity_for(settings.workspace, settings.agent_id, settings.state_dir, settings.config_path)
        self.path = socket_path(self.identity)
        self._index = index
        self._owns_index = index is None
        self._fact_store = fact_store
        self._runner: Any = None
        self._lock = lock or threading.Lock()  # shared with the MCP fact tools when they hold the same store
        self._lock_held: contextlib.ExitStack | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._config_stamp = self._stamp()
        self._log = log or (lambda message: print(f"mdrecall: {message}", file=sys.stderr, flush=True))
        self.served = 0
        self.warm = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, warm_up: bool = True) -> bool:
        """Listen, unless another process already serves this key (False) or the socket path is unusable."""
        import socketserver

        from mdrecall.locks import file_lock

        if not serves_cli_identity(self.settings):
            return False  # an explicit --db (or OpenClaw's layout): a hook's request could not name this index
        if not usable_socket_path(self.path):
            self._log(f"warm server off: socket path too long ({self.path}); hooks use the cold path")
            return False
        private_run_dir(self.path.parent)
        lock_path = self.path.with_suffix(".lock")
        held_for_life = contextlib.ExitStack()  # one server per key: the lock is held until stop()
        if not held_for_life.enter_context(file_lock(lock_path, timeout=0)):
            held_for_life.close()
            return False
        self._lock_held = held_for_life
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # stale: whoever made it no longer holds the lock
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                outer._handle_connection(self.request, self.rfile, self.wfile)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        old_umask = os.umask(0o177)
        try:
            self._server = Server(str(self.path), Handler)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, name="mdrecall-warm", daemon=True)
        self._thread.start()
        if warm_up:
            threading.Thread(target=self._warm_up, name="mdrecall-warm-up", daemon=True).start()
        else:
            self.warm.set()
        return True

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._server = None
        if self._lock_held is not None:
            self._lock_held.close()
            self._lock_held = None
        if self._owns_index and self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> WarmServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the loaded objects ------------------------------------------------------------------------

    @property
    def index(self) -> Any:
        if self._index is None:
            from mdrecall.backends import open_backend

            self._index = open_backend(self.settings)
        return self._index

    @property
    def runner(self) -> Any:
        if self._runner is None:
            from mdrecall.agents.hooks import HookRunner

            def shared() -> Any:
                return self.index.provider_result

            self._runner = HookRunner(self.settings, shared, index=self.index, store=self._fact_store)
        return self._runner

    def _warm_up(self) -> None:
        """Load what the first request would otherwise wait for: the embedding model (a local one; a remote
        provider is not called), and LanceDB with the fact table when facts are stored."""
        try:
            with self._lock:
                runner = self.runner
                if runner._has_facts():
                    runner.store.recall("warm up", limit=1)
                provider = self.index.provider
                if provider is not None and provider.id == "local":
                    provider.embed_query("warm up")
        except Exception as err:  # warming is an optimisation: a failure shows again on the real call
            self._log(f"warm-up: {err}")
        finally:
            self.warm.set()

    def _stamp(self) -> tuple[tuple[int, int] | None, ...]:
        """The config file and the trust file as they were: a change to either (an edit, `mdrecall trust`)
        makes this server refuse, so the cold path reads them afresh."""
        from mdrecall.config.trust import trust_file

        stamps = []
        for path in (self.settings.config_path, trust_file(self.settings.state_dir)):
            try:
                info = os.stat(path) if path else None
            except OSError:
                info = None
            stamps.append((info.st_mtime_ns, info.st_size) if info else None)
        return tuple(stamps)

    # -- requests ----------------------------------------------------------------------------------

    def _handle_connection(self, conn: socket.socket, rfile: Any, wfile: Any) -> None:
        uid = _peer_uid(conn)
        if uid is not None and uid != os.getuid():
            answer: dict[str, Any] = {"ok": False, "error": "refused: another user", "fallback": True}
        else:
            line = rfile.readline(MAX_REQUEST_BYTES + 1)
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError:
                answer = {"ok": False, "error": "bad request", "fallback": True}
            else:
                answer = self.handle(request)
        with contextlib.suppress(OSError):
            wfile.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
            wfile.flush()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request's answer. `fallback: true` tells the client to run the cold path instead."""
        from mdrecall.errors import MdrecallError

        op = request.get("op")
        if op == "ping":
            return {
                "ok": True,
                "pid": os.getpid(),
                "version": __version__,
                "identity": self.identity,
                "served": self.served,
                "warm": self.warm.is_set(),
            }
        if request.get("identity") != self.identity:
            return {"ok": False, "fallback": True, "error": "another workspace, agent, state dir, config or version"}
        if self._stamp() != self._config_stamp:
            return {"ok": False, "fallback": True, "error": "the config or its trust changed since this server started"}
        handler = {"hook": self._hook, "search": self._search}.get(str(op))
        if handler is None:
            return {"ok": False, "fallback": True, "error": f"unknown op {op!r}"}
        try:
            with self._lock:
                answer = handler(request)
            self.served += 1
            return answer
        except MdrecallError as err:
            return {"ok": False, "error": str(err)}
        except Exception as err:  # the cold path may still work (and will report the error itself)
            self._log(f"warm {op} failed: {type(err).__name__}: {err}")
            return {"ok": False, "fallback": True, "error": f"{type(err).__name__}: {err}"}

    def _hook(self, request: dict[str, Any]) -> dict[str, Any]:
        payload = request.get("payload")
        result = self.runner.run(str(request.get("event")), payload if isinstance(payload, dict) else {})
        notice = f"warning: {self.settings.trust_notice}" if getattr(self.settings, "trust_notice", None) else ""
        return {
            "ok": True,
            "stdout": result.stdout,
            "stderr": [notice, *(result.stderr or [])] if notice else list(result.stderr or []),
            "actions": result.actions or [],
        }

    def _search(self, request: dict[str, Any]) -> dict[str, Any]:
        """`mdrecall search` as the CLI answers it: a stale index is synced first (a failed sync leaves the
        last index to answer), each result's lines widened to whole lines."""
        from mdrecall.agents.tools import no_memory_files_message
        from mdrecall.errors import IndexWriteError

        index = self.index
        empty = no_memory_files_message(index)
        if empty:
            return {"ok": False, "error": empty}
        notes = []
        if not index.read_only and index.is_dirty():
            try:
                index.sync(force=False, reason="stale")
            except IndexWriteError as err:
                notes.append(str(err))
        response = index.search(
            str(request.get("query") or ""), max_results=request.get("maxResults"), min_score=request.get("minScore")
        )
        results = response.results
        return {
            "ok": True,
            "results": [r.to_dict() for r in results],
            "lines": [whole_lines(index, r) for r in results],
            "notes": notes,
            "notice": response.notice,
            "backendFallback": response.backend_fallback,
            "mode": response.mode,
            "provider": response.provider,
        }


def whole_lines(index: Any, result: Any) -> str:
    """A result's snippet widened to whole lines of its file (a 700-character window may start or end
    mid-line); the snippet itself when the file cannot be read or no longer holds it."""
    from mdrecall.errors import MdrecallError

    snippet = result.snippet
    if result.source != "memory" or not snippet.strip():
        return snippet
    try:
        count = result.end_line - result.start_line + 1
        text = index.read_file(result.path, from_line=result.start_line, lines=count)["text"]
    except MdrecallError:
        return snippet
    found = text.find(snippet)
    if found < 0:
        return snippet
    start = text.rfind("\n", 0, found) + 1
    end = text.find("\n", found + len(snippet.rstrip("\n")))
    return text[start : len(text) if end < 0 else end]
