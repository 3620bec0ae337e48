"""A fake OpenAI Responses API on 127.0.0.1 for checks against the real Codex CLI.

`POST /v1/responses` (streaming) answers one assistant message as server-sent events: response.created,
response.output_item.added, response.content_part.added, response.output_text.delta,
response.output_text.done, response.content_part.done, response.output_item.done, response.completed.
Every request body is recorded in `requests`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def response_events(reply: str, model: str, rid: str = "resp_fake_1") -> list[bytes]:
    item_id = "msg_fake_1"
    part = {"type": "output_text", "text": reply, "annotations": []}
    item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    base = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
    usage = {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    return [
        _event("response.created", {"response": base}),
        _event("response.in_progress", {"response": base}),
        _event(
            "response.output_item.added",
            {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
        ),
        _event(
            "response.content_part.added",
            {"item_id": item_id, "output_index": 0, "content_index": 0, "part": {**part, "text": ""}},
        ),
        _event(
            "response.output_text.delta", {"item_id": item_id, "output_index": 0, "content_index": 0, "delta": reply}
        ),
        _event("response.output_text.done", {"item_id": item_id, "output_index": 0, "content_index": 0, "text": reply}),
        _event("response.content_part.done", {"item_id": item_id, "output_index": 0, "content_index": 0, "part": part}),
        _event("response.output_item.done", {"output_index": 0, "item": item}),
        _event("response.completed", {"response": {**base, "status": "completed", "output": [item], "usage": usage}}),
    ]


class FakeResponses:
    def __init__(self, reply: str = "Noted.") -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                outer.paths.append(f"GET {self.path}")
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200, json.dumps({"object": "list", "data": [], "models": []}).encode(), "application/json"
                    )
                    return
                self._send(404, b"{}", "application/json")

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                outer.paths.append(f"POST {self.path}")
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                if not self.path.split("?")[0].endswith("/responses"):
                    self._send(404, b"{}", "application/json")
                    return
                outer.requests.append(body)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for event in response_events(outer.reply, str(body.get("model") or "fake")):
                    self.wfile.write(event)
                    self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeResponses:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
