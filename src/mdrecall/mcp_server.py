"""An MCP server exposing `memory_search`, `memory_get` and `memory_status` over stdio (or local HTTP).

Built on the official SDK's low-level `Server` (mcp >= 2) rather than `MCPServer`: `MCPServer` derives
input schemas from Python signatures, which cannot express the spec's `from` argument (a Python keyword)
or our camelCase names; the low-level server publishes exactly the schemas of `mdrecall.agents.tools`, so MCP
clients and in-process agents see the same tools.

    python -m mdrecall.mcp_server --workspace DIR --state-dir DIR [--agent ID] [--config FILE]
    python -m mdrecall.mcp_server ... --http [--host 127.0.0.1] [--port 8765] [--token-file FILE]

HTTP (streamable HTTP at `/mcp`) requires `Authorization: Bearer <token>` on every request (the scheme is
case-insensitive, as RFC 7235 says); requests without it, or with another token, get 401. The token comes
from `--token-file` or $MDRECALL_MCP_TOKEN (never from the command line, where `ps` shows it to every user);
without either a random token is generated and printed on stderr.

Tool results carry `isError: true` when the tool reports an error (bad arguments, refused path, memory
unavailable). `memory_search`, `memory_get` and `memory_status` declare an output schema matching their
structured content; the fact tools return structured content without one.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import io
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mdrecall import __version__
from mdrecall.agents.tools import OUTPUT_SCHEMAS, MemoryTools
from mdrecall.backends import MemoryBackend, open_backend
from mdrecall.config.settings import Settings
from mdrecall.errors import ConfigError, MdrecallError
from mdrecall.net import listen_socket
from mdrecall.text.bounds import invalid_text_field, invalid_text_message, is_valid_text

try:  # the SDK is a core dependency; a broken install gets one line from main(), not a traceback
    import anyio
    import anyio.to_thread
    import mcp.types as mcp_types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from starlette.responses import JSONResponse
except ImportError as _missing:  # pragma: no cover - exercised only on broken installs
    _IMPORT_ERROR: ImportError | None = _missing
else:
    _IMPORT_ERROR = None

SERVER_NAME = "mdrecall"
DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8765
TOKEN_ENV = "MDRECALL_MCP_TOKEN"


def sdk_missing() -> str | None:
    """Why the server cannot start (the MCP SDK failed to import), or None."""
    if _IMPORT_ERROR is None:
        return None
    return f"the MCP SDK cannot be imported ({_IMPORT_ERROR}); reinstall it: pip install --force-reinstall mdrecall"


def _read_only() -> Any:
    return mcp_types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def _tool_list(tools: MemoryTools) -> list[Any]:
    """MCP tool descriptors built from the same definitions an in-process agent gets, with output schemas."""
    return [
        mcp_types.Tool(
            name=spec["name"],
            description=spec["description"],
            input_schema=spec["parameters"],
            output_schema=OUTPUT_SCHEMAS.get(spec["name"]),
            annotations=_read_only() if spec["name"] in OUTPUT_SCHEMAS else None,
        )
        for spec in tools.definitions(style="plain")
    ]


def is_error_result(name: str, result: dict[str, Any], extra: Sequence[str] = ()) -> bool:
    """A tool result the client should flag: an unknown tool, or any result that carries an `error`.
    `extra`: names of tools added on top of MemoryTools (the fact tools, docs/facts.md)."""
    return (name not in OUTPUT_SCHEMAS and name not in extra) or bool(result.get("error"))


def build_server(tools: MemoryTools | Any) -> Any:
    """A low-level MCP server whose tool calls go to `tools.call` (run in a worker thread: it blocks)."""

    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=_tool_list(tools))

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        arguments = dict(params.arguments or {})
        invalid = (params.meta or {}).get(INVALID_TEXT_META)
        if invalid:  # marked by repair_invalid_text: the client sent a lone surrogate here
            result: dict[str, Any] = {
                "error": invalid_text_message(str(invalid)),
                "action": f"call {params.name} again with valid text",
            }
        else:
            result = await anyio.to_thread.run_sync(tools.call, params.name, arguments)
        text = json.dumps(result, ensure_ascii=False)
        if not is_valid_text(text):  # a reply that cannot be sent as UTF-8 would never reach the client
            result = {"error": invalid_text_message("the reply"), "action": "call the tool again with valid text"}
            text = json.dumps(result, ensure_ascii=False)
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=text)],
            structured_content=result,
            is_error=is_error_result(params.name, result, tools.extra_names),
        )

    def input_schema(name: str) -> dict[str, Any] | None:
        for spec in tools.definitions(style="plain"):
            if spec["name"] == name:
                return spec["parameters"]
        return None

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=tools.prompt_section() or None,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _stderr_progress() -> Any:
    """Progress of a first index build, on stderr (MCP clients log a server's stderr), every 2 s at most."""
    last = [0.0]

    def update(done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0 or done == total:
            last[0] = now
            print(f"mdrecall: building the index {done}/{total} {label}", file=sys.stderr, flush=True)

    return update


def _open_tools(settings: Settings) -> tuple[MemoryBackend, MemoryTools]:
    from mdrecall.agents.fact_tools import (
        with_fact_tools,  # memory_store/recall/forget when facts are on (docs/facts.md)
    )

    index = open_backend(settings)
    return index, with_fact_tools(MemoryTools(index, include_status=True, progress=_stderr_progress()), settings)


def read_token(token_file: str | os.PathLike[str] | None) -> str | None:
    """The HTTP bearer token: the file's content, else $MDRECALL_MCP_TOKEN, else None (a random one is made)."""
    if token_file:
        try:
            token = Path(token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as err:
            raise ConfigError(f"cannot read the token file {token_file}: {err.strerror}") from None
        if not token:
            raise ConfigError(f"the token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


# ---------------------------------------------------------------------------------------------------------
# stdio
# ---------------------------------------------------------------------------------------------------------


async def serve_stdio(server: Any) -> None:
    stdin = _ValidTextLines(anyio.wrap_file(_StdinText(sys.stdin.buffer, encoding="utf-8", errors="replace")))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        await server.run(read_stream, write_stream, server.create_initialization_options())


def start_warm_server(settings: Settings, index: MemoryBackend, tools: Any) -> Any:
    """Answer hooks and `mdrecall search` from this process while it runs (mdrecall.agents.serve), unless
    another process already does; returns the server to stop, or None. Never fatal: hooks fall back to a
    cold process."""
    from mdrecall.agents.serve import WarmServer

    facts = getattr(tools, "facts", None)
    warm = WarmServer(
        settings, index=index, fact_store=getattr(facts, "store", None), lock=getattr(facts, "_lock", None)
    )
    try:
        return warm if warm.start() else None
    except (MdrecallError, OSError) as err:
        print(f"mdrecall: warm server off: {err}", file=sys.stderr, flush=True)
        return None


class _StdinText(io.TextIOWrapper):
    """stdin as UTF-8 text whose close never closes the process's own stdin buffer."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


class _ValidTextLines:
    """The lines of a stdio stream, each passed through `repair_invalid_text` (see there)."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines

    def __aiter__(self) -> Any:
        return self._repaired()

    async def _repaired(self) -> Any:
        async for line in self._lines:
            yield repair_invalid_text(line)


INVALID_TEXT_META = "mdrecall/invalidText"
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def repair_invalid_text(line: str) -> str:
    """A JSON-RPC line whose strings hold lone surrogates (JSON `"\\ud800"`) made parseable: the SDK's parser
    refuses such a line and no reply is ever sent. The surrogates become U+FFFD and a tool call is marked
    (`_meta`), so that it is answered with an error naming the argument instead."""
    if "\\u" not in line:
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line
    bad = invalid_text_field(message)
    if not bad or not isinstance(message, dict):
        return line
    params = message.get("params")
    if message.get("method") == "tools/call" and isinstance(params, dict):
        field = invalid_text_field(params.get("arguments"), "arguments") or "the tool name"
        message = _without_surrogates(message)
        message["params"].setdefault("_meta", {})[INVALID_TEXT_META] = field
        return json.dumps(message)
    return json.dumps(_without_surrogates(message))


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


def run_stdio(settings: Settings) -> None:
    """Serve the memory tools on stdin/stdout until the client disconnects."""
    index, tools = _open_tools(settings)
    warm = start_warm_server(settings, index, tools)
    try:
        anyio.run(serve_stdio, build_server(tools))
    finally:
        if warm is not None:
            warm.stop()
        index.close()


# ---------------------------------------------------------------------------------------------------------
# streamable HTTP with a bearer token
# ---------------------------------------------------------------------------------------------------------


def bearer_matches(header: bytes, token: bytes) -> bool:
    """`Authorization: <scheme> <token>` with the scheme `Bearer` in any case (RFC 7235), constant-time."""
    scheme, _, supplied = header.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(supplied.strip(), token)


class BearerTokenMiddleware:
    """Reject every HTTP request whose `Authorization` header is not `Bearer <token>` (401)."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("a non-empty bearer token is required")
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan events carry no credentials
            await self.app(scope, receive, send)
            return
        supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not bearer_matches(supplied, self._token):
            response = JSONResponse(
                {"error": "unauthorized", "detail": "send Authorization: Bearer <token>"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="mdrecall"'},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_http_app(tools: MemoryTools, token: str, host: str = DEFAULT_HTTP_HOST) -> Any:
    """The SDK's streamable-HTTP app at `/mcp`, behind the bearer-token check."""
    server = build_server(tools)
    return BearerTokenMiddleware(server.streamable_http_app(host=host), token)


def run_http(
    settings: Settings, host: str = DEFAULT_HTTP_HOST, port: int = DEFAULT_HTTP_PORT, token: str | None = None
) -> None:
    """Serve streamable HTTP on host:port (default 127.0.0.1); generates and prints a token if none given.

    The port is taken first: a busy or impossible one is one MdrecallError before any index is opened."""
    import uvicorn

    sock = listen_socket(host, port)
    try:
        if not token:
            token = secrets.token_urlsafe(24)
            print(f"mdrecall MCP token: {token}", file=sys.stderr, flush=True)
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(f"warning: serving memory on {host}, not only this machine", file=sys.stderr, flush=True)
        index, tools = _open_tools(settings)
        warm = start_warm_server(settings, index, tools)
        try:
            app = build_http_app(tools, token, host)
            print(f"mdrecall MCP server on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
            uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
        finally:
            if warm is not None:
                warm.stop()
            index.close()
    finally:
        sock.close()


# ---------------------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mdrecall.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", "-w", help="workspace folder (default: current dir)")
    parser.add_argument("--state-dir", help="state dir (default: $MDRECALL_STATE_DIR or ~/.mdrecall)")
    parser.add_argument("--agent", "-a", help="agent id (default: main)")
    parser.add_argument("--config", "-c", help="config file (default: <workspace>/mdrecall.toml)")
    parser.add_argument("--db", help="index file (overrides <state dir>/memory/<agent>.sqlite)")
    parser.add_argument("--openclaw", action="store_true", help="read settings from the OpenClaw config")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default=DEFAULT_HTTP_HOST, help="HTTP host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help=f"HTTP port (default {DEFAULT_HTTP_PORT})")
    parser.add_argument(
        "--token-file", help=f"file holding the HTTP bearer token (default: ${TOKEN_ENV}, else a random one)"
    )
    return parser


def _settings_from_args(args: argparse.Namespace) -> Settings:
    from mdrecall.config.openclaw import settings_for

    settings, warnings = settings_for(args.openclaw, args.agent, args.workspace, args.config, args.state_dir, args.db)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    missing = sdk_missing()
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 1
    try:
        settings = _settings_from_args(args)
        if args.http:
            run_http(settings, host=args.host, port=args.port, token=read_token(args.token_file))
        else:
            run_stdio(settings)
    except MdrecallError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
