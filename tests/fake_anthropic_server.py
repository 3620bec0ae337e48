"""A fake Anthropic Messages API on 127.0.0.1 for checks against the real Claude Code CLI.

It records every request body and answers `POST /v1/messages` with a fixed reply: as server-sent events when
the request says `"stream": true` (message_start, content_block_start, content_block_delta(text_delta),
content_block_stop, message_delta, message_stop: the event sequence of the Messages streaming API), else as
one JSON message. `POST /v1/messages/count_tokens` answers a token count; anything else is a 404.

    server = FakeAnthropic(reply="ok")
    server.start(); ...; server.requests  # the parsed JSON bodies, in order
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def message_events(reply: str, model: str, message_id: str = "msg_fake_01") -> list[bytes]:
    """The streaming events of one assistant message holding `reply` as a single text block."""
    usage = {"input_tokens": 12, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    start = {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }
    return [
        _sse("message_start", start),
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        _sse("ping", {"type": "ping"}),
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply}},
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": max(1, len(reply.split()))},
            },
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]


class FakeAnthropic:
    """A threaded HTTP server on 127.0.0.1 (an ephemeral port) that records requests and replies `reply`."""

    def __init__(self, reply: str = "Noted.") -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    data = json.loads(raw or b"{}")
                except ValueError:
                    data = {"_raw": raw.decode("utf-8", "replace")}
                return data if isinstance(data, dict) else {"_body": data}

            def _json(self, status: int, value: dict[str, Any]) -> None:
                body = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                with outer._lock:
                    outer.paths.append(f"GET {self.path}")
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                path = self.path.split("?")[0]
                with outer._lock:
                    outer.paths.append(f"POST {self.path}")
                if path.endswith("/v1/messages/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                with outer._lock:
                    outer.requests.append(body)
                model = str(body.get("model") or "claude-fake")
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for event in message_events(outer.reply, model):
                        self.wfile.write(event)
                        self.wfile.flush()
                    self.close_connection = True
                    return
                self._json(
                    200,
                    {
                        "id": "msg_fake_01",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [{"type": "text", "text": outer.reply}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 12, "output_tokens": 3},
                    },
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def texts(self) -> list[str]:
        """Every text the model was sent (system blocks and message contents), one string per request."""
        out = []
        with self._lock:
            bodies = list(self.requests)
        for body in bodies:
            out.append(json.dumps(body, ensure_ascii=False))
        return out
