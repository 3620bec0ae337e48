"""A scripted OpenAI-compatible chat model on 127.0.0.1, for driving a real agent (OpenClaw) offline.

`POST /v1/chat/completions` (streamed as server-sent events when the request says `stream: true`, else one
JSON answer). The script, per request:
1. no tool result yet: call the first offered tool whose name ends with `tool_suffix` (e.g. `memory_search`)
   with `tool_arguments`; when the agent defers tool schemas behind Tool Search (`tool_search` / `tool_call`,
   OpenClaw's default), search for it first and then call it through `tool_call`;
2. the memory tool answered: reply in plain text (`final_text`).
Every request body is kept in `requests`, so a test can check which tools the agent offered and what the
tool result it sent back holds. `GET /v1/models` lists the one model.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.local_http import LocalHttpServer


class FakeChatModel(LocalHttpServer):
    def __init__(
        self,
        model: str = "scripted",
        tool_suffix: str = "memory_search",
        tool_arguments: dict[str, Any] | None = None,
        final_text: str = "Done.",
        max_requests: int = 8,
    ) -> None:
        super().__init__()
        self.model = model
        self.tool_suffix = tool_suffix
        self.tool_arguments = tool_arguments or {}
        self.final_text = final_text
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()

    # -- what the agent sent -------------------------------------------------------------------------

    @staticmethod
    def tool_names(request: dict[str, Any]) -> list[str]:
        names = []
        for tool in request.get("tools") or []:
            function = tool.get("function") if isinstance(tool, dict) else None
            name = (function or tool).get("name") if isinstance(function or tool, dict) else None
            if isinstance(name, str):
                names.append(name)
        return names

    @staticmethod
    def tool_results(request: dict[str, Any]) -> list[str]:
        """The text of every `tool` message in a request (content may be a string or a list of parts)."""
        out = []
        for message in request.get("messages") or []:
            if message.get("role") != "tool":
                continue
            out.append(FakeChatModel._text(message.get("content")))
        return out

    # -- HTTP ----------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path.split("?", 1)[0]
        self.paths.append(f"{method} {path}")
        if method == "GET" and path.endswith("/models"):
            self.send_payload(handler, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})
            return
        if method != "POST" or not path.endswith("/chat/completions"):
            self.send_payload(handler, 404, {"error": {"message": f"no route {path}"}})
            return
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length) or b"{}")
        except ValueError:
            self.send_payload(handler, 400, {"error": {"message": "body is not JSON"}})
            return
        with self._lock:
            self.requests.append(body)
        message = self._next_message(body)
        if body.get("stream"):
            self._stream(handler, message)
        else:
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            self.send_payload(
                handler,
                200,
                {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": self.model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )

    def _next_message(self, body: dict[str, Any]) -> dict[str, Any]:
        """Call the memory tool (directly, or through Tool Search's tool_search + tool_call), then answer.

        Call ids are letters and digits only: OpenClaw rewrites other ids (it drops `_`)."""
        results = self._tool_results_by_id(body)
        memory = [text for call_id, text in results if call_id.startswith("callmemory")]
        searches = [text for call_id, text in results if call_id.startswith("callsearch")]
        n = len(self.requests)
        if memory or n > self.max_requests:
            return {"role": "assistant", "content": self.final_text if memory else "giving up: too many turns"}
        if searches:
            found = re.findall(rf"[A-Za-z0-9_-]*{re.escape(self.tool_suffix)}\b", searches[-1])
            if not found:
                return {"role": "assistant", "content": f"tool_search found no {self.tool_suffix}"}
            return self._call(f"callmemory{n}", "tool_call", {"id": found[0], "args": self.tool_arguments})
        offered = self.tool_names(body)
        direct = [name for name in offered if name.endswith(self.tool_suffix)]
        if direct:
            return self._call(f"callmemory{n}", direct[0], self.tool_arguments)
        if "tool_search" in offered:
            return self._call(f"callsearch{n}", "tool_search", {"query": self.tool_suffix.replace("_", " ")})
        return {"role": "assistant", "content": f"no tool ending in {self.tool_suffix} was offered"}

    def memory_results(self) -> list[str]:
        """Text of every tool result answering the memory tool call (direct or through tool_call)."""
        out = []
        for request in self.requests:
            for message in request.get("messages") or []:
                if message.get("role") == "tool" and str(message.get("tool_call_id", "")).startswith("callmemory"):
                    out.append(self._text(message.get("content")))
        return list(dict.fromkeys(out))

    @staticmethod
    def _text(content: Any) -> str:
        if isinstance(content, list):
            return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return str(content)

    def _tool_results_by_id(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            (str(m.get("tool_call_id", "")), self._text(m.get("content")))
            for m in body.get("messages") or []
            if m.get("role") == "tool"
        ]

    @staticmethod
    def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def _stream(self, handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
        base = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion.chunk", "model": self.model}
        chunks: list[dict[str, Any]] = [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            chunks.append(
                {"index": 0, "delta": {"tool_calls": [{"index": 0, **call}]}, "finish_reason": None},
            )
            finish = "tool_calls"
        else:
            chunks.append({"index": 0, "delta": {"content": message["content"]}, "finish_reason": None})
            finish = "stop"
        chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
        events = [{**base, "created": int(time.time()), "choices": [c]} for c in chunks]
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        events.append({**base, "created": int(time.time()), "choices": [], "usage": usage})
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        payload = data.encode()
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except OSError:
            pass
