"""A fake OpenAI Responses API on 127.0.0.1 for checks against the real Codex CLI.

`POST /v1/responses` (streaming) answers one assistant message as server-sent events: response.created,
response.output_item.added, response.content_part.added, response.output_text.delta,
response.output_text.done, response.content_part.done, response.output_item.done, response.completed.
Every request body is recorded in `requests`.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from local_http import LocalHttpServer


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


class FakeResponses(LocalHttpServer):
    def __init__(self, reply: str = "Noted.") -> None:
        super().__init__()
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        self.paths.append(f"{method} {handler.path}")
        if method == "GET":
            if handler.path.rstrip("/").endswith("/models"):
                self.send_payload(handler, 200, {"object": "list", "data": [], "models": []})
            else:
                self.send_payload(handler, 404, {})
            return
        body = self.read_json(handler)
        if not handler.path.split("?")[0].endswith("/responses"):
            self.send_payload(handler, 404, {})
            return
        self.requests.append(body)
        self.send_events(handler, response_events(self.reply, str(body.get("model") or "fake")))
