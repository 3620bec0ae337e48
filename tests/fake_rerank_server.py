"""A fake rerank server speaking the Cohere v2, Voyage and Jina wire formats, for tests and evals.

Stdlib only (`http.server.ThreadingHTTPServer` on 127.0.0.1, port 0, in a background thread), the same
pattern as `fake_embedding_server.py`. One server speaks all three formats, one per path prefix:

- `cohere_base` = `url + "/cohere/v2"`: POST /cohere/v2/rerank `{model, query, documents, top_n}` ->
  `{id, results: [{index, relevance_score}], meta}`
- `voyage_base` = `url + "/voyage/v1"`: POST /voyage/v1/rerank `{model, query, documents, top_k}` ->
  `{object: "list", data: [{index, relevance_score}], model, usage}`
- `jina_base` = `url + "/jina/v1"`: POST /jina/v1/rerank `{model, query, documents, top_n}` ->
  `{model, usage, results: [{index, document: {text}, relevance_score}]}`

Results come back best first and cut to top_n/top_k, as the real APIs do. Requests are checked like a strict
API would: a missing or foreign field (`top_k` sent to Cohere, `top_n` to Voyage) gets a 400.

Scores: `scorer(query, document)`; by default the share of the query's words found in the document.

Knobs: `script(*replies)` queues `Reply` objects answered first-in first-out before the normal behaviour
(`Reply(status=429)`, `Reply(text="{not json")`, `Reply(json={...})`, `Reply(delay=1.0)` = slow then normal,
`Reply(mutate=fn)` = the normal payload passed through fn); `required_key` (401 echoing the key sent, as
real APIs do, to prove clients redact it); `outage` (a status every request gets).
Records: `requests` (method, path, headers with lower-case names, parsed `json`), `count()`, `reset()`.
(PYTEST_DONT_REWRITE: imported as a plain module too.)
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from local_http import LocalHttpServer, ScriptedReply

FORMATS = {"cohere": ("/cohere/v2/rerank", "top_n", "results"), "voyage": ("/voyage/v1/rerank", "top_k", "data")}
FORMATS["jina"] = ("/jina/v1/rerank", "top_n", "results")
_WORD = re.compile(r"\w+")


def word_share(query: str, document: str) -> float:
    """The default score: the share of the query's distinct words that the document contains."""
    words = set(_WORD.findall(query.lower()))
    return len(words & set(_WORD.findall(document.lower()))) / len(words) if words else 0.0


@dataclass
class Reply(ScriptedReply):
    """A scripted answer; with no status/json/text override it is the normal answer (after `delay`)."""

    mutate: Callable[[dict[str, Any]], Any] | None = None


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


class FakeRerankServer(LocalHttpServer):
    """See the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        super().__init__()
        self.reset()

    def base(self, provider: str) -> str:
        """The baseUrl a client of `provider` is given (the client appends `/rerank`)."""
        return self.url + FORMATS[provider][0].removesuffix("/rerank")

    @property
    def cohere_base(self) -> str:
        return self.base("cohere")

    @property
    def voyage_base(self) -> str:
        return self.base("voyage")

    @property
    def jina_base(self) -> str:
        return self.base("jina")

    def reset(self) -> None:
        with self._lock:
            self.requests: list[RecordedRequest] = []
            self._script: deque[Reply] = deque()
            self.required_key: str | None = None
            self.outage: int | None = None
            self.scorer: Callable[[str, str], float] = word_share

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    # -- handling -----------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str = "POST") -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest("POST", handler.path, headers, parsed))
            reply = self._script.popleft() if self._script else None
        if reply is not None and reply.delay:
            time.sleep(reply.delay)
        if reply is not None and reply.overrides_body:
            status, payload = reply.status, (reply.text if reply.text is not None else reply.json)
        else:
            status, payload = self._answer(handler.path, headers, parsed)
            if reply is not None and reply.mutate is not None and status == 200:
                payload = reply.mutate(payload)
        self.send_payload(handler, status, payload)

    def _answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if self.outage is not None:
            return self.outage, {"message": "service unavailable (fake outage)"}
        if self.required_key is not None:
            sent = headers.get("authorization", "").removeprefix("Bearer ")
            if sent != self.required_key:
                return 401, {"message": f"invalid api token: {sent}"}
        provider = next((name for name, (route, _, _) in FORMATS.items() if route == path), None)
        if provider is None:
            return 404, {"message": f"no route for POST {path}"}
        problem = self._check_body(provider, body)
        if problem:
            return 400, {"message": problem}
        return 200, self._payload(provider, body)

    def _check_body(self, provider: str, body: Any) -> str | None:
        """What a strict API would refuse: missing fields, wrong types, the other format's count field."""
        _, count_field, _ = FORMATS[provider]
        if not isinstance(body, dict):
            return "body must be a JSON object"
        allowed = {"model", "query", "documents", count_field}
        if set(body) - allowed:
            return f"unknown fields: {sorted(set(body) - allowed)}"
        if not isinstance(body.get("model"), str) or not isinstance(body.get("query"), str):
            return "model and query must be strings"
        docs = body.get("documents")
        if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
            return "documents must be a non-empty list of strings"
        if count_field in body and not (isinstance(body[count_field], int) and body[count_field] >= 1):
            return f"{count_field} must be a positive integer"
        return None

    def _payload(self, provider: str, body: dict[str, Any]) -> dict[str, Any]:
        _, count_field, results_field = FORMATS[provider]
        docs: list[str] = body["documents"]
        scored = [(i, float(self.scorer(body["query"], d))) for i, d in enumerate(docs)]
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        scored = scored[: body.get(count_field, len(docs))]
        items: list[dict[str, Any]] = [{"index": i, "relevance_score": s} for i, s in scored]
        if provider == "cohere":
            return {"id": "fake", results_field: items, "meta": {"billed_units": {"search_units": 1}}}
        if provider == "voyage":
            return {"object": "list", results_field: items, "model": body["model"], "usage": {"total_tokens": 10}}
        for item in items:
            item["document"] = {"text": docs[item["index"]]}
        return {"model": body["model"], "usage": {"total_tokens": 10}, results_field: items}


def refused_url() -> str:
    """A 127.0.0.1 URL nothing listens on (a port just bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v2"


@pytest.fixture(scope="module")
def rerank_server() -> Iterator[FakeRerankServer]:
    """One fake rerank server per test module, reset before each use by the `fake_rerank` fixture."""
    server = FakeRerankServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_rerank(rerank_server: FakeRerankServer) -> FakeRerankServer:
    rerank_server.reset()
    return rerank_server
