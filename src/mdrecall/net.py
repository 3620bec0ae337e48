"""Listening sockets for the local servers (`mdrecall mcp --http`, `mdrecall ui`): taken before any other work,
so a busy or impossible port is one MdrecallError naming it, not a server error after a false "listening" line.

A base module like `files`: imports nothing of mdrecall but `errors`.
"""

from __future__ import annotations

import errno
import socket

from mdrecall.errors import MdrecallError


class PortBusyError(MdrecallError):
    """The port is taken by another process."""


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening, non-blocking TCP socket on host:port, or one MdrecallError naming both (busy: PortBusyError;
    not allowed, no such address, a port outside 0-65535)."""
    sock: socket.socket | None = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(64)
        sock.setblocking(False)
        return sock
    except (OSError, OverflowError) as err:
        if sock is not None:
            sock.close()
        reason = getattr(err, "strerror", None) or str(err)
        busy = getattr(err, "errno", None) == errno.EADDRINUSE
        raise (PortBusyError if busy else MdrecallError)(f"cannot listen on {host}:{port}: {reason}") from None
