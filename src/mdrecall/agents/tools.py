"""The agent-facing tools `memory_search` / `memory_get` (plus `memory_status`) and the "Memory Recall" prompt.

The handlers never raise: an agent cannot catch exceptions, so every failure comes back as a result it can
read and act on (`error` says what went wrong, `action` what to do next, `disabled`/`unavailable` whether
memory can be used at all). `MemoryTools.call(name, arguments)` is the one dispatch point an agent loop or
the MCP server needs.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from mdrecall.backends.base import MemoryBackend
from mdrecall.errors import MdrecallError, PathRefusedError
from mdrecall.retrieval.ranking import citations_enabled
from mdrecall.text.bounds import invalid_text_field, invalid_text_message, is_valid_text

MEMORY_SEARCH = "memory_search"
MEMORY_GET = "memory_get"
MEMORY_STATUS = "memory_status"
MEMORY_TOOL_NAMES = (MEMORY_SEARCH, MEMORY_GET)

MAX_RESULTS_CAP = 100  # a model asking for more than this gets this many (the injection budget trims further)

ChatType = Literal["direct", "group", "channel"]
DefinitionStyle = Literal["openai", "anthropic", "plain"]

SEARCH_DESCRIPTION = (
    "Mandatory recall step: search MEMORY.md + memory/*.md (and session transcripts when enabled) by meaning "
    "and by keyword before answering questions about prior work, decisions, dates, people, preferences, or "
    "todos. Returns the top snippets with path and line range; follow up with memory_get for more lines. If "
    "the result has disabled=true or unavailable=true, memory retrieval is not working: tell the user."
)
GET_DESCRIPTION = (
    "Read lines from MEMORY.md or memory/*.md (workspace-relative path, or a qmd/<collection>/<path> from "
    "memory_search results; optional 1-based `from` line and `lines` count). Use after memory_search to pull "
    "only the lines you need and keep the context small."
)
STATUS_DESCRIPTION = (
    "Report the memory index state: files and chunks indexed, embedding provider and model, whether the "
    "index is stale, and where the workspace and index live."
)

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for: words, a phrase, a name or an identifier."},
        "maxResults": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_RESULTS_CAP,
            "description": "At most this many snippets (default from config, usually 6).",
        },
        "minScore": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Drop snippets scoring below this (0..1, default from config, usually 0.35).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
GET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Workspace-relative path from a memory_search result, e.g. memory/2026-01-31.md.",
        },
        "from": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
        "lines": {"type": "integer", "minimum": 1, "description": "How many lines to return."},
    },
    "required": ["path"],
    "additionalProperties": False,
}
STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"deep": {"type": "boolean", "description": "Also probe the embedding provider and vector search."}},
    "additionalProperties": False,
}

# Output schemas (MCP `outputSchema`): what the structured content of each tool holds. Permissive on purpose
# (extra keys allowed): error results keep the same shape plus `error`/`action`, so clients validate both.
_ERROR_FIELDS: dict[str, Any] = {
    "error": {"type": "string", "description": "What went wrong (present only on failure)."},
    "action": {"type": "string", "description": "What to do next."},
    "warning": {"type": "string"},
    "notice": {"type": "string"},
    "disabled": {"type": "boolean"},
    "unavailable": {"type": "boolean"},
}
SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "startLine": {"type": "integer"},
                    "endLine": {"type": "integer"},
                    "score": {"type": "number"},
                    "snippet": {"type": "string"},
                    "source": {"type": "string"},
                    "citation": {"type": "string"},
                },
                "required": ["path", "startLine", "endLine", "score", "snippet", "source"],
            },
        },
        "provider": {"type": "string"},
        "model": {"type": ["string", "null"]},
        "citations": {"type": "string"},
        "catchingUp": {"type": "boolean"},
        "fallback": {"type": "object"},
        "backend": {"type": "string"},
        "backendFallback": {"type": "object"},
        **_ERROR_FIELDS,
    },
    "required": ["results"],
}
GET_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "text": {"type": "string"}, **_ERROR_FIELDS},
    "required": ["path", "text"],
}
STATUS_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "provider": {"type": "string"},
        "model": {"type": ["string", "null"]},
        "files": {"type": "integer"},
        "chunks": {"type": "integer"},
        "dirty": {"type": "boolean"},
        "workspaceDir": {"type": "string"},
        "dbPath": {"type": "string"},
        **_ERROR_FIELDS,
    },
}
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "memory_search": SEARCH_OUTPUT_SCHEMA,
    "memory_get": GET_OUTPUT_SCHEMA,
    "memory_status": STATUS_OUTPUT_SCHEMA,
}

ALLOWED_PATHS_HINT = "MEMORY.md, memory.md and memory/**/*.md"


class _BadArgument(ValueError):
    """An argument the model got wrong; its message is returned to the model."""


# ---------------------------------------------------------------------------------------------------------
# The "Memory Recall" system-prompt section
# ---------------------------------------------------------------------------------------------------------

RECALL_PROMPT = (
    "## Memory Recall\n"
    "Before answering anything about prior work, decisions, dates, people,\n"
    "preferences, or todos: run memory_search on MEMORY.md + memory/*.md;\n"
    "then use memory_get to pull only the needed lines.\n"
    "If low confidence after search, say you checked."
)
CITATIONS_ON_LINE = "Citations: include Source: <path>#L<start>-L<end> when it helps the user verify a memory."
CITATIONS_OFF_LINE = (
    "Citations are disabled: do not mention memory file paths or line numbers in replies "
    "unless the user explicitly asks."
)


def memory_prompt_section(tool_names: Iterable[str], citations: str = "auto", minimal: bool = False) -> str:
    """The prompt text to add to an agent's system prompt, or "" when no memory tool is offered.

    Only when memory_search or memory_get is registered (a prompt naming tools the model lacks makes it
    call them anyway), and not for minimal (sub-agent) prompts. `citations="off"` tells the agent not to
    cite paths, matching snippets that then carry no `Source:` footer.
    """
    names = set(tool_names)
    if minimal or not names.intersection(MEMORY_TOOL_NAMES):
        return ""
    extra = CITATIONS_OFF_LINE if citations == "off" else CITATIONS_ON_LINE
    return f"{RECALL_PROMPT}\n{extra}\n"


# ---------------------------------------------------------------------------------------------------------
# Result helpers
# ---------------------------------------------------------------------------------------------------------


def include_citations(mode: str, chat_type: str | None) -> bool:
    """`on` always, `off` never, `auto` only in direct chats (paths mean nothing to a group or channel)."""
    return citations_enabled(mode, f"chat:{chat_type or 'direct'}")


def _unavailable(error: str, tool: str) -> dict[str, Any]:
    """The shape of a failed lookup: the agent should tell the user rather than guess from no results."""
    reason = error.strip() or "memory search unavailable"
    lowered = reason.lower()
    if any(word in lowered for word in ("quota", "429", "rate limit", "resource has been exhausted")):
        warning = "Memory search is unavailable because the embedding provider quota is exhausted."
        action = f"Top up or switch the embedding provider, then retry {tool}."
    elif any(word in lowered for word in ("database", "sqlite", "disk", "locked", "busy", "index")):
        warning = "Memory search is unavailable because the memory index cannot be read."
        action = f"Run `mdrecall status` / `mdrecall index --force` to repair the index, then retry {tool}."
    else:
        warning = "Memory search is unavailable due to an index or embedding-provider error."
        action = f"Check the embedding provider configuration (`mdrecall status --deep`), then retry {tool}."
    return {"disabled": True, "unavailable": True, "error": reason, "warning": warning, "action": action}


def _disabled() -> dict[str, Any]:
    return {
        "disabled": True,
        "error": "memory search is disabled in the configuration (enabled = false)",
        "warning": "Memory tools are turned off for this agent.",
        "action": "Tell the user memory is disabled; set enabled = true in the memory config to turn it on.",
    }


# ---------------------------------------------------------------------------------------------------------
# Argument checking: lenient about types models commonly get wrong ("5", 5.0), strict about meaning
# ---------------------------------------------------------------------------------------------------------


def _as_int(value: Any, name: str, minimum: int = 1) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _BadArgument(f"{name} must be an integer >= {minimum}, not a boolean")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < minimum:
        raise _BadArgument(f"{name} must be an integer >= {minimum} (got {value!r})")
    return value


def _as_score(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _BadArgument(f"{name} must be a number between 0 and 1, not a boolean")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise _BadArgument(f"{name} must be a number between 0 and 1 (got {value!r})") from None
    if not isinstance(value, int | float) or math.isnan(value) or not 0 <= value <= 1:
        raise _BadArgument(f"{name} must be a number between 0 and 1 (got {value!r})")
    return float(value)


def _as_text(value: Any, name: str, example: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _BadArgument(f"{name} is required and must be a non-empty string (e.g. {example})")
    if not is_valid_text(value):
        raise _BadArgument(invalid_text_message(name))
    return value


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool arguments as a dict: OpenAI sends a JSON string, Anthropic and MCP a dict."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as err:
            raise _BadArgument(f"arguments are not valid JSON: {err.msg}") from None
        arguments = parsed
    if not isinstance(arguments, Mapping):
        raise _BadArgument("arguments must be a JSON object")
    return dict(arguments)


# ---------------------------------------------------------------------------------------------------------
# Shared by the CLI and the tools: merged hits, the empty-workspace line
# ---------------------------------------------------------------------------------------------------------


def no_memory_files_message(index: Any) -> str | None:
    """One line when the workspace holds no memory at all (and no transcripts), naming where we looked."""
    try:
        if index.discover() or (index.discover_sessions() or []):
            return None
        workspace = index.settings.workspace
        extras = list(index.config.extra_paths)
    except Exception:  # a stand-in index without discovery: nothing to say
        return None
    looked = "MEMORY.md, memory.md, memory/**/*.md" + (f" and extra paths {', '.join(extras)}" if extras else "")
    return (
        f"no MEMORY.md or memory/ found in {workspace} (looked for {looked}): "
        "run mdrecall in your agent's workspace, or pass --workspace DIR"
    )


# ---------------------------------------------------------------------------------------------------------
# The tools
# ---------------------------------------------------------------------------------------------------------


class MemoryTools:
    """`memory_search` / `memory_get` (and optionally `memory_status`) over one `MemoryIndex`.

    `chat_type` decides `citations = "auto"`: citations in direct chats, none in groups/channels.
    Calls are serialised with a lock, so one instance can serve a threaded MCP server.
    """

    # tools whose failure results are not errors of the protocol (the fact tools add theirs)
    extra_names: tuple[str, ...] = ()

    def __init__(
        self,
        index: MemoryBackend,
        *,
        chat_type: ChatType | str = "direct",
        include_status: bool = False,
        citations: str | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        background: bool = True,
    ) -> None:
        self.index = index
        self.chat_type = chat_type
        self.include_status = include_status
        self._citations = citations
        self._progress = progress  # building a missing index (the one time a search waits) reports here
        self._background = background  # False: sync a stale index inline before answering (old behaviour)
        self._lock = threading.Lock()

    # -- configuration -----------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return bool(self.index.config.enabled)

    @property
    def citations_mode(self) -> str:
        return self._citations or self.index.config.citations

    @property
    def names(self) -> list[str]:
        """Tool names offered to the model (empty when memory is disabled in the config)."""
        if not self.enabled:
            return []
        return [*MEMORY_TOOL_NAMES, *([MEMORY_STATUS] if self.include_status else [])]

    def prompt_section(self, minimal: bool = False) -> str:
        """The "Memory Recall" section matching the offered tools and the citations mode."""
        return memory_prompt_section(self.names, self.citations_mode, minimal=minimal)

    def definitions(self, style: DefinitionStyle = "openai") -> list[dict[str, Any]]:
        """Tool definitions to pass to a model: `openai` (function tools), `anthropic` or `plain`."""
        specs = {
            MEMORY_SEARCH: (SEARCH_DESCRIPTION, SEARCH_SCHEMA),
            MEMORY_GET: (GET_DESCRIPTION, GET_SCHEMA),
            MEMORY_STATUS: (STATUS_DESCRIPTION, STATUS_SCHEMA),
        }
        out = []
        for name in self.names:
            description, schema = specs[name]
            if style == "openai":
                out.append(
                    {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
                )
            elif style == "anthropic":
                out.append({"name": name, "description": description, "input_schema": schema})
            else:
                out.append({"name": name, "description": description, "parameters": schema})
        return out

    # -- dispatch ----------------------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
        """Run a tool by name; always returns a JSON-serialisable dict, never raises."""
        handlers = {MEMORY_SEARCH: self.search, MEMORY_GET: self.get, MEMORY_STATUS: self.status}
        handler = handlers.get(name)
        if handler is None:
            return {
                "error": f"unknown tool: {name!r}",
                "action": f"use one of: {', '.join(self.names) or '(memory is disabled)'}",
            }
        try:
            args = _parse_arguments(arguments)
        except _BadArgument as err:
            return self._bad_arguments(name, str(err), {})
        bad = invalid_text_field(args)
        if bad:  # a lone surrogate: answered in one line that does not repeat it (it cannot be sent back)
            return self._bad_arguments(name, invalid_text_message(bad), {})
        return handler(args)

    def call_json(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """`call` serialised as JSON text: what most chat APIs want as the tool-result content."""
        return json.dumps(self.call(name, arguments), ensure_ascii=False)

    def _bad_arguments(self, name: str, message: str, args: Mapping[str, Any]) -> dict[str, Any]:
        if name == MEMORY_GET:
            path = args.get("path") if isinstance(args.get("path"), str) and is_valid_text(args["path"]) else ""
            return {
                "path": path,
                "text": "",
                "error": message,
                "action": "call memory_get again with {path: string, from?: integer >= 1, lines?: integer >= 1}",
            }
        if name == MEMORY_SEARCH:
            return {
                "results": [],
                "error": message,
                "action": "call memory_search again with {query: string, maxResults?: integer, minScore?: 0..1}",
            }
        return {"error": message, "action": f"call {name} again with valid arguments"}

    # -- memory_search -----------------------------------------------------------------------------

    def search(self, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """`memory_search {query, maxResults?, minScore?}` → `{results, provider, model, fallback?}`."""
        args = {**(arguments or {}), **kwargs}
        try:
            query = _as_text(args.get("query"), "query", '"deploy decision"')
            max_results = _as_int(args.get("maxResults"), "maxResults")
            min_score = _as_score(args.get("minScore"), "minScore")
        except _BadArgument as err:
            return self._bad_arguments(MEMORY_SEARCH, str(err), args)
        if max_results is not None:
            max_results = min(max_results, MAX_RESULTS_CAP)
        if not self.enabled:
            return {"results": [], **_disabled()}
        with self._lock:
            return self._search_locked(query, max_results, min_score)

    def _search_locked(self, query: str, max_results: int | None, min_score: float | None) -> dict[str, Any]:
        warning, catching_up = self._refresh()
        try:
            cite = include_citations(self.citations_mode, self.chat_type)
            response = self.index.search(
                query,
                max_results=max_results,
                min_score=min_score,
                citations="on" if cite else "off",
                session_key=f"chat:{self.chat_type}",
            )
        except Exception as err:  # the tool must answer, whatever broke underneath
            return {"results": [], **_unavailable(_describe(err), MEMORY_SEARCH)}
        out: dict[str, Any] = {
            "results": [r.to_dict() for r in response.results],
            "provider": response.provider,
            "model": response.model,
            "citations": self.citations_mode,
            "backend": response.backend,
        }
        if response.backend_fallback:
            out["backendFallback"] = response.backend_fallback  # which engine failed and why (qmd -> builtin)
        fallback = self._fallback()
        if fallback:
            out["fallback"] = fallback
        notices = [n for n in (catching_up, response.notice) if n]
        if notices:
            out["notice"] = " ".join(notices)
        if catching_up:
            out["catchingUp"] = True
        if warning:
            out["warning"] = warning
        return out

    def _refresh(self) -> tuple[str | None, str | None]:
        """(warning, catching-up notice). Search never waits for indexing, except to build a missing index.

        A stale index answers as it is while a background sync catches up (the spec's rule); only an index
        that was never built is synced inline, with progress reported. A failure is a warning, not an error.
        """
        if not self.index.config.sync.on_search:
            return None, None
        try:
            if not (self._background and self.index.background_sync and self.index.has_index()):
                self.index.ensure_fresh(**({"progress": self._progress} if self._progress else {}))
                return None, None
            changed = self.index.dirty_files()
            if not changed and self.index.full_reindex_reason() is None:
                return None, None
            self.index.request_sync("search")
        except Exception as err:
            return f"index refresh failed ({_describe(err)}); results may be stale", None
        what = f"{len(changed)} changed file(s)" if changed else "a settings change (full reindex)"
        return None, f"the index is catching up with {what} in the background; results may miss the latest edits."

    def _fallback(self) -> dict[str, str] | None:
        try:
            result = self.index.provider_result
        except Exception:  # a backend that failed to open answers without one
            return None
        if result is not None and result.fallback_from:
            return {"from": result.fallback_from, "reason": result.fallback_reason or ""}
        return None

    # -- memory_get --------------------------------------------------------------------------------

    def get(self, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """`memory_get {path, from?, lines?}` → `{path, text}`; a missing file gives empty text."""
        args = {**(arguments or {}), **kwargs}
        try:
            path = _as_text(args.get("path"), "path", "memory/2026-01-31.md")
            from_line = _as_int(args.get("from"), "from")
            lines = _as_int(args.get("lines"), "lines")
        except _BadArgument as err:
            return self._bad_arguments(MEMORY_GET, str(err), args)
        if not self.enabled:
            return {"path": path, "text": "", **_disabled()}
        # no lock: a file read must never hold up searches (it reads regular files only, at most MAX_GET_BYTES)
        return self._read(path, from_line, lines)

    def _read(self, path: str, from_line: int | None, lines: int | None) -> dict[str, Any]:
        try:
            return dict(self.index.read_file(path, from_line=from_line, lines=lines))
        except PathRefusedError as err:
            return {"path": path, "text": "", "error": str(err), "action": self._allowed_paths_action()}
        except MdrecallError as err:
            if str(err).startswith("memory file not found"):
                return {"path": path.strip(), "text": ""}
            return {"path": path, "text": "", "error": str(err), "action": "check the path and line numbers"}
        except Exception as err:
            return {"path": path, "text": "", **_unavailable(_describe(err), MEMORY_GET)}

    def _allowed_paths_action(self) -> str:
        extras = list(self.index.config.extra_paths)
        allowed = ALLOWED_PATHS_HINT + (f", and the extra paths {', '.join(extras)}" if extras else "")
        return f"memory_get only reads {allowed} (workspace-relative); use a path from memory_search results"

    # -- memory_status -----------------------------------------------------------------------------

    def status(self, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """`memory_status {deep?}` → the index status dict (or an unavailable result)."""
        args = {**(arguments or {}), **kwargs}
        deep = args.get("deep", False)
        if not isinstance(deep, bool):
            return self._bad_arguments(MEMORY_STATUS, "deep must be true or false", args)
        with self._lock:
            warning, catching_up = self._refresh()
            try:
                status = dict(self.index.status(deep=deep))
            except Exception as err:
                return _unavailable(_describe(err), MEMORY_STATUS)
        if warning:
            status["warning"] = warning
        if catching_up:
            status["notice"] = catching_up
        return status


def _describe(err: BaseException) -> str:
    """A one-line message for any exception (the class name when the message is empty)."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return text or type(err).__name__
