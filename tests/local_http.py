"""A threaded HTTP server on 127.0.0.1 (a free port) for the fake remote APIs the tests talk to.

Subclasses implement `_handle(handler, method)`; this class starts and stops the server and gives its URL.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class ScriptedReply:
    """What every fake server's scripted answer has; with no status/json/text override it is the normal
    answer (after `delay`). Each server's `Reply` adds its own knobs."""

    status: int = 200
    json: Any = None
    text: str | None = None
    delay: float = 0.0

    @property
    def overrides_body(self) -> bool:
        return self.status != 200 or self.json is not None or self.text is not None


class LocalHttpServer:
    """Start/stop (also as a context manager) and `url`; every GET and POST goes to `self._handle`."""

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError

    def _head(self, handler: BaseHTTPRequestHandler) -> None:
        """HEAD: unsupported, as http.server answers it, unless a fake says otherwise."""
        handler.send_error(501, "Unsupported method ('HEAD')")

    @staticmethod
    def read_json(handler: BaseHTTPRequestHandler) -> dict[str, Any]:
        """The request's JSON object body (`{}` when empty; `{"_raw": text}` when it is not JSON)."""
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}
        return data if isinstance(data, dict) else {"_body": data}

    @staticmethod
    def send_events(handler: BaseHTTPRequestHandler, events: list[bytes]) -> None:
        """Server-sent events, one write each, then the connection closes (the stream's end)."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for event in events:
            handler.wfile.write(event)
            handler.wfile.flush()
        handler.close_connection = True

    @staticmethod
    def send_payload(
        handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        """Text (str/bytes) as text/plain, anything else as JSON, with any extra headers."""
        if isinstance(payload, str | bytes):
            data = payload.encode() if isinstance(payload, str) else payload
            content_type = "text/plain"
        else:
            data, content_type = json.dumps(payload).encode(), "application/json"
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout): nothing to answer

    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes: avoid 40 ms ACK stalls

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                fake._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                fake._handle(self, "POST")

            def do_HEAD(self) -> None:  # noqa: N802
                fake._head(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence request logs
                return

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # clients that time out close sockets under us: not an error here

        self._httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"
