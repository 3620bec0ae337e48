"""`mdrecall ui`: the memory inspector as a local web page (Starlette + uvicorn, as the MCP HTTP server).

Security, as for the MCP HTTP server and as Jupyter does it:
- it listens on 127.0.0.1 only; the address it prints carries a random token (`/?token=…`);
- every request needs the token: the first page load trades `?token=` for an HttpOnly, SameSite=Strict
  cookie (and drops it from the address bar), API calls send it in the `X-Mdrecall-Token` header;
- the Host header must name this server (127.0.0.1 / localhost / [::1] and its port: no DNS rebinding), and
  an Origin header, when sent, must be this server's own;
- writes (POST) need the token in the header, never the cookie alone, plus a same-origin Origin: a page on
  another site can neither read nor change memory (CSRF);
- files are read through the backend's path rules (the workspace and its extra paths only); static files
  come from a fixed list inside the package; nothing else is served.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import sys
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from mdrecall.errors import MdrecallError, PathRefusedError
from mdrecall.net import PortBusyError, listen_socket
from mdrecall.ui.inspector import Inspector

DEFAULT_PORT = 8767
TOKEN_HEADER = "x-mdrecall-token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
STATIC_FILES = {"app.js": "text/javascript", "style.css": "text/css", "favicon.svg": "image/svg+xml"}
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        b"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
]


def cookie_name(port: int) -> str:
    return f"mdrecall-ui-{port}"


def allowed_hosts(port: int) -> set[str]:
    return {f"{name}:{port}" for name in LOOPBACK_NAMES}


class Guard:
    """The checks every request passes before it reaches a page or an endpoint (pure ASGI middleware)."""

    def __init__(self, app: Any, token: str, port: int) -> None:
        if not token:
            raise ValueError("a non-empty token is required")
        self.app = app
        self.token = token.encode()
        self.hosts = allowed_hosts(port)
        self.origins = {f"http://{host}" for host in self.hosts}
        self.cookie = cookie_name(port)

    def _matches(self, supplied: str | bytes | None) -> bool:
        if not supplied:
            return False
        value = supplied.encode() if isinstance(supplied, str) else supplied
        return hmac.compare_digest(value, self.token)

    def _cookie_token(self, headers: dict[bytes, bytes]) -> str | None:
        raw = headers.get(b"cookie", b"").decode("latin-1")
        for part in raw.split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie:
                return value
        return None

    def refusal(self, scope: dict[str, Any]) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.hosts:
            return 403, "unknown Host: open the address mdrecall ui printed"
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1").lower() not in self.origins:
            return 403, "cross-origin request refused"
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD", "POST"):
            return 405, f"method {method} not allowed"
        header_token = headers.get(TOKEN_HEADER.encode())
        if method == "POST":
            site = headers.get(b"sec-fetch-site", b"same-origin")
            if site not in (b"same-origin", b"none"):
                return 403, "cross-site request refused"
            if not self._matches(header_token):
                return 401, f"send the token in the {TOKEN_HEADER} header"
            return None
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        candidates = [header_token, self._cookie_token(headers), *(query.get("token") or [])]
        if not any(self._matches(c) for c in candidates):
            return 401, "token required: open the address mdrecall ui printed"
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            return
        refused = self.refusal(scope)
        if refused is not None:
            status, reason = refused
            await _send_json(send, {"error": reason}, status)
            return

        async def secured(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)


async def _send_json(send: Any, body: Any, status: int) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + SECURITY_HEADERS})
    await send({"type": "http.response.body", "body": payload})


def _static(name: str) -> bytes:
    return resources.files("mdrecall.ui").joinpath("static", name).read_bytes()


def _page(token: str) -> str:
    html = _static("index.html").decode("utf-8")
    return html.replace("{{TOKEN}}", token)


def _int_arg(params: Any, name: str) -> int | None:
    raw = params.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise MdrecallError(f"{name} must be a whole number (got {raw!r})") from None


def _float_arg(params: Any, name: str) -> float | None:
    raw = params.get(name)
    if raw in (None, ""):
        return None
    try:
        return float(raw)
    except ValueError:
        raise MdrecallError(f"{name} must be a number (got {raw!r})") from None


def build_app(inspector: Inspector, token: str, port: int) -> Any:
    """The Starlette app behind the `Guard`."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    def api(work: Callable[[Request, dict[str, Any]], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            body: dict[str, Any] = {}
            if request.method == "POST":
                if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
                    return JSONResponse({"error": "send JSON (Content-Type: application/json)"}, status_code=415)
                try:
                    body = json.loads(await request.body() or b"{}")
                except ValueError:
                    return JSONResponse({"error": "the body is not valid JSON"}, status_code=400)
                if not isinstance(body, dict):
                    return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
            try:
                result = await run_in_threadpool(work, request, body)
            except PathRefusedError as err:
                return JSONResponse({"error": str(err)}, status_code=403)
            except MdrecallError as err:
                status = 404 if "not found" in str(err) else 400
                return JSONResponse({"error": str(err)}, status_code=status)
            except Exception as err:  # one line for the page, never a traceback
                first = str(err).splitlines()[0] if str(err) else ""
                return JSONResponse({"error": f"{type(err).__name__}: {first}".rstrip(": ")}, status_code=500)
            return JSONResponse(result)

        return endpoint

    async def index(request: Request) -> Response:
        if "token" in request.query_params:  # trade the token in the address for a cookie, as Jupyter does
            response: Response = RedirectResponse("/", status_code=303)
            response.set_cookie(cookie_name(port), token, httponly=True, samesite="strict", path="/")
            return response
        return HTMLResponse(_page(token))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        kind = STATIC_FILES.get(name)
        if kind is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        return Response(_static(name), media_type=kind)

    def overview(request: Request, body: dict[str, Any]) -> Any:
        return inspector.overview()

    def search(request: Request, body: dict[str, Any]) -> Any:
        params = request.query_params
        return inspector.search(
            params.get("q", ""),
            mode=params.get("mode") or "hybrid",
            max_results=_int_arg(params, "n"),
            min_score=_float_arg(params, "minScore"),
        )

    def files(request: Request, body: dict[str, Any]) -> Any:
        return inspector.files()

    def file(request: Request, body: dict[str, Any]) -> Any:
        params = request.query_params
        return inspector.file(params.get("path", ""), _int_arg(params, "from"), _int_arg(params, "to"))

    def facts(request: Request, body: dict[str, Any]) -> Any:
        return inspector.facts()

    def edit_fact(request: Request, body: dict[str, Any]) -> Any:
        category = body.get("category") or None
        return inspector.edit_fact(str(body.get("id") or ""), str(body.get("text") or ""), category)

    def forget_fact(request: Request, body: dict[str, Any]) -> Any:
        return inspector.forget_fact(str(body.get("id") or ""))

    def activity(request: Request, body: dict[str, Any]) -> Any:
        return inspector.activity()

    def status(request: Request, body: dict[str, Any]) -> Any:
        return inspector.status()

    def reindex(request: Request, body: dict[str, Any]) -> Any:
        if request.method == "POST":
            return inspector.start_reindex(force=bool(body.get("force", True)))
        return inspector.reindex_progress()

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/api/overview", api(overview), methods=["GET"]),
        Route("/api/search", api(search), methods=["GET"]),
        Route("/api/files", api(files), methods=["GET"]),
        Route("/api/file", api(file), methods=["GET"]),
        Route("/api/facts", api(facts), methods=["GET"]),
        Route("/api/facts/edit", api(edit_fact), methods=["POST"]),
        Route("/api/facts/forget", api(forget_fact), methods=["POST"]),
        Route("/api/activity", api(activity), methods=["GET"]),
        Route("/api/status", api(status), methods=["GET"]),
        Route("/api/reindex", api(reindex), methods=["GET", "POST"]),
    ]
    return Guard(Starlette(routes=routes), token, port)


def bind(port: int, fallback: bool) -> socket.socket:
    """A listening socket on 127.0.0.1:port; with `fallback`, any free port when that one is taken."""
    try:
        return listen_socket("127.0.0.1", port)
    except PortBusyError:
        if not fallback:
            raise
        return listen_socket("127.0.0.1", 0)


def page_url(port: int, token: str) -> str:
    return f"http://127.0.0.1:{port}/?token={token}"


def serve(
    settings: Any,
    port: int | None = None,
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
    open_browser: bool = False,
    sockets: Sequence[socket.socket] | None = None,
) -> None:
    """Serve the inspector until interrupted; prints (or hands `announce`) the address with its token."""
    import uvicorn

    token = token or secrets.token_urlsafe(24)
    inspector = Inspector(settings)
    try:
        listening = list(sockets) if sockets else [bind(DEFAULT_PORT if port is None else port, port is None)]
        bound = listening[0].getsockname()[1]
        app = build_app(inspector, token, bound)
        url = page_url(bound, token)
        (announce or (lambda line: print(line, file=sys.stderr, flush=True)))(
            f"mdrecall ui for {settings.workspace} (agent {settings.agent_id}): {url}"
        )
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        uvicorn.Server(config).run(sockets=listening)
    finally:
        inspector.close()
