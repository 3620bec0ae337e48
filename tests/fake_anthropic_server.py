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
from http.server import BaseHTTPRequestHandler
from typing import Any

from local_http import LocalHttpServer


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


class FakeAnthropic(LocalHttpServer):
    """The Messages API's two routes; every request body is kept in `requests`, every path in `paths`."""

    def __init__(self, reply: str = "Noted.") -> None:
        super().__init__()
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()

    def _head(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)  # a reachability probe
        handler.send_header("content-length", "0")
        handler.end_headers()

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        if method == "GET":
            with self._lock:
                self.paths.append(f"GET {handler.path}")
            self.send_payload(
                handler, 404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}}
            )
            return
        body = self.read_json(handler)
        path = handler.path.split("?")[0]
        with self._lock:
            self.paths.append(f"POST {handler.path}")
        if path.endswith("/v1/messages/count_tokens"):
            self.send_payload(handler, 200, {"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            self.send_payload(handler, 404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        with self._lock:
            self.requests.append(body)
        model = str(body.get("model") or "claude-fake")
        if body.get("stream"):
            self.send_events(handler, message_events(self.reply, model))
            return
        self.send_payload(
            handler,
            200,
            {
                "id": "msg_fake_01",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": self.reply}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 3},
            },
        )

    def texts(self) -> list[str]:
        """Every text the model was sent (system blocks and message contents), one string per request."""
        out = []
        with self._lock:
            bodies = list(self.requests)
        for body in bodies:
            out.append(json.dumps(body, ensure_ascii=False))
        return out
