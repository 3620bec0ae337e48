"""A fake embedding server speaking the OpenAI, Voyage and Gemini wire formats, for tests and benchmarks.

Stdlib only (`http.server.ThreadingHTTPServer` on 127.0.0.1, port 0, in a background thread), so any test
can point a real provider at it and see real HTTP: headers, retries, timeouts, concurrency, batch jobs.

Usage in a test module (pytest puts `tests/` on sys.path)::

    from fake_embedding_server import FakeEmbeddingServer, Reply, fake_server, fake_vector  # noqa: F401

    def test_something(fake_server: FakeEmbeddingServer) -> None:
        config = MemoryConfig(provider="openai", remote={"baseUrl": fake_server.openai_base, "apiKey": "k"})
        ...
        assert fake_server.count("embeddings") == 1

Or standalone: `with FakeEmbeddingServer() as server: ...`.

Bases: `url` (http://127.0.0.1:PORT), `openai_base` and `voyage_base` (`url + "/v1"`), `gemini_base`
(`url + "/v1beta"`).

Routes (the names used by `count`, `requests_for` and `script`):
- `embeddings`          POST {v1}/embeddings (OpenAI and Voyage: `{model, input[, input_type]}` → `data[]`)
- `gemini.embed`        POST /v1beta/models/{m}:embedContent → `{embedding: {values}}`
- `gemini.batchEmbed`   POST /v1beta/models/{m}:batchEmbedContents → `{embeddings: [{values}]}`
- `files.upload`        POST {v1}/files (multipart form: `purpose`, `file`) → `{id}`
- `batches.create`      POST {v1}/batches → `{id, status}`
- `batches.get`         GET  {v1}/batches/{id} → status; `completed` after `batch_polls_until_done` polls
- `files.content`       GET  {v1}/files/{id}/content → JSONL output (`custom_id` → `response.body.data`)
- `gemini.upload`       POST /upload/v1beta/files (multipart/related: metadata + JSONL) → `{file: {name}}`
- `gemini.asyncBatch`   POST /v1beta/models/{m}:asyncBatchEmbedContent → operation `{name, done, metadata}`
- `gemini.batches.get`  GET  /v1beta/batches/{id} → operation; done after `batch_polls_until_done` polls
- `gemini.download`     GET  /download/v1beta/files/{id}:download → JSONL (`key` → `response.embedding`)

Vectors: `fake_vector(text, dims)` — deterministic (sha256-seeded), NOT normalised, so tests can check that
clients normalise. Width: `dims` (default 8), per model via `model_dims`.

Knobs (plain attributes, change them any time):
- `script(route, *replies)`: queue `Reply` objects answered first-in first-out by that route (`"*"` = any
  route), before the normal behaviour. `Reply(status=429)`, `Reply(status=500, json={...})`,
  `Reply(text="{not json")`, `Reply(delay=0.5)` (slow, then normal), `Reply(dims=4)` (normal but another
  width), `Reply(drop=1)` (normal minus one vector).
- `delay`: seconds every embedding request (`embeddings`, `gemini.*Embed*`) sleeps before answering.
- `reverse_data`: answer `data[]` in reverse order (clients must sort by `index`).
- `required_key`: when set, requests without it (Bearer / x-goog-api-key) get 401 with a message that
  echoes the key they sent, like real APIs do — to prove clients redact it.
- `outage`: when set to a status (e.g. 503), every request gets it: the provider is down until reset to None.
- `batch_polls_until_done` (1) and `batch_outcome` (`"completed"`, `"failed"`, `"expired"`, `"stuck"`).

Records: `requests` (list of `RecordedRequest`: method, path, query, route, headers with lower-case
names, body bytes, parsed `json`), `count(route=None)`, `requests_for(route)`, `max_in_flight` (highest
number of simultaneous requests seen), `reset()` (clears records, scripts and knobs).

Fixture: `fake_server` (function scope) starts and stops one server per test. Test modules can also
load it with `pytest_plugins = ["fake_embedding_server"]`. (PYTEST_DONT_REWRITE: imported as a plain
module too, so pytest must not try to rewrite its asserts.)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

from local_http import LocalHttpServer, ScriptedReply

EMBED_ROUTES = frozenset({"embeddings", "gemini.embed", "gemini.batchEmbed"})


def fake_vector(text: str, dims: int = 8) -> list[float]:
    """The server's embedding of `text`: same text, same vector; not unit length on purpose."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    values = np.random.default_rng(seed).standard_normal(dims) * 3.0
    return [float(v) for v in values]


def unit(vector: list[float]) -> np.ndarray:
    """What a client should return for a fake vector: float32, L2-normalised."""
    arr = np.asarray(vector, dtype=np.float32)
    return arr / np.linalg.norm(arr)


@dataclass
class Reply(ScriptedReply):
    """A scripted answer. With no `status`/`json`/`text` override it is the normal answer, modified."""

    dims: int | None = None
    drop: int = 0
    headers: dict[str, str] | None = None  # extra response headers (e.g. Retry-After on a 429)


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    route: str
    headers: dict[str, str]
    body: bytes
    json: Any = None


@dataclass
class _Job:
    id: str
    kind: str  # "openai" | "gemini"
    input_file: str
    params: dict[str, Any] = field(default_factory=dict)
    polls: int = 0
    output_file: str | None = None


def _route(method: str, path: str) -> str:
    if method == "POST":
        if path.startswith("/upload/"):
            return "gemini.upload"
        if path.endswith(":embedContent"):
            return "gemini.embed"
        if path.endswith(":batchEmbedContents"):
            return "gemini.batchEmbed"
        if path.endswith(":asyncBatchEmbedContent"):
            return "gemini.asyncBatch"
        if path.endswith("/embeddings"):
            return "embeddings"
        if path.endswith("/files"):
            return "files.upload"
        if path.endswith("/batches"):
            return "batches.create"
    if method == "GET":
        if path.startswith("/download/") and path.endswith(":download"):
            return "gemini.download"
        if re.search(r"/v1beta/batches/[^/]+$", path):
            return "gemini.batches.get"
        if re.search(r"/batches/[^/]+$", path):
            return "batches.get"
        if re.search(r"/files/[^/]+/content$", path):
            return "files.content"
    return "unknown"


def parse_multipart(content_type: str, body: bytes) -> list[tuple[dict[str, str], bytes]]:
    """(headers, payload) of each part of a multipart body (form-data or related)."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        return []
    delimiter = b"--" + match.group(1).encode()
    parts = []
    for chunk in body.split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk.removeprefix(b"\r\n")
        head, _, payload = chunk.partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        parts.append((headers, payload.removesuffix(b"\r\n")))
    return parts


class FakeEmbeddingServer(LocalHttpServer):
    """See the module docstring for the API."""

    def __init__(self, dims: int = 8) -> None:
        self.dims = dims
        self.model_dims: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__()
        self.reset()

    # -- lifecycle (start, stop, url: LocalHttpServer) -----------------------------------------------------

    @property
    def openai_base(self) -> str:
        return self.url + "/v1"

    @property
    def voyage_base(self) -> str:
        return self.url + "/v1"

    @property
    def gemini_base(self) -> str:
        return self.url + "/v1beta"

    # -- knobs and records --------------------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            self.requests: list[RecordedRequest] = []
            self._scripts: dict[str, deque[Reply]] = {}
            self.delay = 0.0
            self.reverse_data = False
            self.required_key: str | None = None
            self.outage: int | None = None
            self.batch_polls_until_done = 1
            self.batch_outcome = "completed"
            self.max_in_flight = 0
            self._in_flight = 0
            self._files: dict[str, str] = {}
            self._jobs: dict[str, _Job] = {}
            self._next_id = 0

    def script(self, route: str, *replies: Reply) -> None:
        with self._lock:
            self._scripts.setdefault(route, deque()).extend(replies)

    def count(self, route: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if route is None or r.route == route)

    def requests_for(self, route: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.route == route]

    def dims_for(self, model: str | None) -> int:
        return self.model_dims.get(str(model).removeprefix("models/"), self.dims)

    # -- request handling ---------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parsed = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        route = _route(method, parsed.path)
        record = RecordedRequest(method, parsed.path, parse_qs(parsed.query), route, headers, body)
        if "json" in headers.get("content-type", "") and body:
            try:
                record.json = json.loads(body)
            except ValueError:
                record.json = None
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            reply = self._pop_script(route)
        try:
            status, payload = self._answer(record, reply)
        except Exception as exc:  # a bug in the fake should show up as a 500 with a reason
            status, payload = 500, {"error": {"message": f"fake server error: {exc!r}"}}
        finally:
            with self._lock:
                self._in_flight -= 1
        self.send_payload(handler, status, payload, reply.headers if reply is not None else None)

    def _pop_script(self, route: str) -> Reply | None:
        for key in (route, "*"):
            queue = self._scripts.get(key)
            if queue:
                return queue.popleft()
        return None

    def _answer(self, req: RecordedRequest, reply: Reply | None) -> tuple[int, Any]:
        delay = reply.delay if reply and reply.delay else (self.delay if req.route in EMBED_ROUTES else 0.0)
        if delay:
            time.sleep(delay)
        if reply is not None and reply.overrides_body:
            return reply.status, reply.text if reply.text is not None else reply.json
        if self.outage is not None:
            return self.outage, {"error": {"message": "service unavailable (fake outage)"}}
        denied = self._check_key(req)
        if denied is not None:
            return denied
        handler = getattr(self, "_r_" + req.route.replace(".", "_"), None)
        if handler is None:
            return 404, {"error": {"message": f"no route for {req.method} {req.path}"}}
        return handler(req, reply or Reply())

    def _check_key(self, req: RecordedRequest) -> tuple[int, Any] | None:
        if self.required_key is None:
            return None
        sent = req.headers.get("x-goog-api-key") or req.headers.get("authorization", "").removeprefix("Bearer ")
        if sent == self.required_key:
            return None
        return 401, {"error": {"message": f"Incorrect API key provided: {sent}", "type": "invalid_request_error"}}

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._next_id += 1
            return f"{prefix}{self._next_id}"

    # -- synchronous embedding routes ---------------------------------------------------------------------

    def _vectors(self, texts: list[str], model: Any, reply: Reply) -> list[list[float]]:
        dims = reply.dims or self.dims_for(model)
        vectors = [fake_vector(text, dims) for text in texts]
        return vectors[: len(vectors) - reply.drop] if reply.drop else vectors

    def _r_embeddings(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        body = req.json or {}
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        vectors = self._vectors(texts, body.get("model"), reply)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        if self.reverse_data:
            data.reverse()
        usage = {"prompt_tokens": sum(len(t) for t in texts), "total_tokens": sum(len(t) for t in texts)}
        return 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}

    def _r_gemini_embed(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        text = (req.json or {})["content"]["parts"][0]["text"]
        vectors = self._vectors([text], req.path.split("/models/")[-1].split(":")[0], reply)
        return 200, {"embedding": {"values": vectors[0]}} if vectors else {}

    def _r_gemini_batchEmbed(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:  # noqa: N802
        requests = (req.json or {}).get("requests", [])
        texts = [r["content"]["parts"][0]["text"] for r in requests]
        vectors = self._vectors(texts, req.path.split("/models/")[-1].split(":")[0], reply)
        return 200, {"embeddings": [{"values": v} for v in vectors]}

    # -- OpenAI / Voyage batch API ------------------------------------------------------------------------

    def _r_files_upload(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        fields: dict[str, bytes] = {}
        for headers, payload in parse_multipart(req.headers.get("content-type", ""), req.body):
            name = re.search(r'name="([^"]+)"', headers.get("content-disposition", ""))
            if name:
                fields[name.group(1)] = payload
        if "file" not in fields:
            return 400, {"error": {"message": "missing file"}}
        file_id = self._new_id("file-")
        self._files[file_id] = fields["file"].decode("utf-8")
        purpose = fields.get("purpose", b"").decode()
        return 200, {"id": file_id, "object": "file", "purpose": purpose, "bytes": len(fields["file"])}

    def _r_batches_create(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        body = req.json or {}
        if body.get("input_file_id") not in self._files:
            return 400, {"error": {"message": "unknown input_file_id"}}
        job = _Job(self._new_id("batch_"), "openai", body["input_file_id"], body)
        self._jobs[job.id] = job
        return 200, {"id": job.id, "object": "batch", "status": "validating", "endpoint": body.get("endpoint")}

    def _r_batches_get(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        job = self._jobs.get(req.path.rsplit("/", 1)[-1])
        if job is None:
            return 404, {"error": {"message": "no such batch"}}
        job.polls += 1
        view: dict[str, Any] = {"id": job.id, "object": "batch", "status": "in_progress"}
        if self.batch_outcome == "stuck" or job.polls < self.batch_polls_until_done:
            return 200, view
        if self.batch_outcome != "completed":
            view["status"] = self.batch_outcome
            view["errors"] = {"data": [{"code": "fake", "message": f"fake batch {self.batch_outcome}"}]}
            return 200, view
        if job.output_file is None:
            job.output_file = self._new_id("file-")
            self._files[job.output_file] = self._openai_output(job, reply)
        view.update(status="completed", output_file_id=job.output_file)
        return 200, view

    def _openai_output(self, job: _Job, reply: Reply) -> str:
        request_params = job.params.get("request_params") or {}
        lines = []
        for line in self._files[job.input_file].splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            body = item.get("body") or {}
            inputs = body.get("input")
            text = inputs if isinstance(inputs, str) else inputs[0]
            model = body.get("model") or request_params.get("model")
            vector = self._vectors([text], model, reply)[0]
            response = {"status_code": 200, "body": {"object": "list", "data": [{"index": 0, "embedding": vector}]}}
            lines.append(
                json.dumps(
                    {
                        "id": f"r-{item['custom_id']}",
                        "custom_id": item["custom_id"],
                        "response": response,
                        "error": None,
                    }
                )
            )
        return "\n".join(lines) + "\n"

    def _r_files_content(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        file_id = req.path.split("/files/")[1].split("/")[0]
        if file_id not in self._files:
            return 404, {"error": {"message": "no such file"}}
        return 200, self._files[file_id]

    # -- Gemini async batch -------------------------------------------------------------------------------

    def _r_gemini_upload(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        parts = parse_multipart(req.headers.get("content-type", ""), req.body)
        if len(parts) != 2:
            return 400, {"error": {"message": f"expected metadata + file parts, got {len(parts)}"}}
        name = "files/" + self._new_id("in")
        self._files[name] = parts[1][1].decode("utf-8")
        return 200, {"file": {"name": name, "mimeType": "application/jsonl", "state": "ACTIVE"}}

    def _r_gemini_asyncBatch(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:  # noqa: N802
        batch = (req.json or {}).get("batch") or {}
        config = batch.get("inputConfig") or batch.get("input_config") or {}
        file_name = config.get("file_name") or config.get("fileName")
        if file_name not in self._files:
            return 400, {"error": {"code": 400, "message": "Input file was not found", "status": "INVALID_ARGUMENT"}}
        model = req.path.split("/models/")[-1].split(":")[0]
        job = _Job("batches/" + self._new_id("b"), "gemini", file_name, {"model": model})
        self._jobs[job.id] = job
        return 200, {"name": job.id, "done": False, "metadata": {"state": "BATCH_STATE_PENDING"}}

    def _r_gemini_batches_get(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        job = self._jobs.get("batches/" + req.path.rsplit("/", 1)[-1])
        if job is None:
            return 404, {"error": {"code": 404, "message": "no such batch", "status": "NOT_FOUND"}}
        job.polls += 1
        pending = {"name": job.id, "done": False, "metadata": {"state": "BATCH_STATE_RUNNING"}}
        if self.batch_outcome == "stuck" or job.polls < self.batch_polls_until_done:
            return 200, pending
        if self.batch_outcome != "completed":
            state = "BATCH_STATE_" + self.batch_outcome.upper()
            return 200, {
                "name": job.id,
                "done": True,
                "metadata": {"state": state},
                "error": {"code": 13, "message": f"fake batch {self.batch_outcome}"},
            }
        if job.output_file is None:
            job.output_file = "files/" + self._new_id("out")
            self._files[job.output_file] = self._gemini_output(job, reply)
        output = {"responsesFile": job.output_file}
        return 200, {
            "name": job.id,
            "done": True,
            "metadata": {"state": "BATCH_STATE_SUCCEEDED", "output": output},
            "response": output,
        }

    def _gemini_output(self, job: _Job, reply: Reply) -> str:
        lines = []
        for line in self._files[job.input_file].splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            text = item["request"]["content"]["parts"][0]["text"]
            vector = self._vectors([text], job.params.get("model"), reply)[0]
            lines.append(json.dumps({"key": item["key"], "response": {"embedding": {"values": vector}}}))
        return "\n".join(lines) + "\n"

    def _r_gemini_download(self, req: RecordedRequest, reply: Reply) -> tuple[int, Any]:
        name = req.path.split("/download/", 1)[1].split("/", 1)[1].removesuffix(":download")
        if name not in self._files:
            return 404, {"error": {"code": 404, "message": "no such file", "status": "NOT_FOUND"}}
        return 200, self._files[name]


@pytest.fixture
def fake_server() -> Iterator[FakeEmbeddingServer]:
    """One fake embedding server per test, stopped afterwards."""
    server = FakeEmbeddingServer().start()
    try:
        yield server
    finally:
        server.stop()
