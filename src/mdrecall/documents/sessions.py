"""Session transcripts (`sessions/*.jsonl`): parsing, redaction, discovery and delta tracking.

A transcript becomes plain text with one line per kept message (`User: …` / `Assistant: …`) so the normal
markdown chunker can cut it; `line_map` remembers which JSONL line each text line came from so a search hit
can cite the transcript itself. Secrets are masked before anything reaches the index. Live transcripts grow
all the time, so `SessionDeltaTracker` decides when enough was appended to be worth a re-index (the spec's
`deltaBytes` / `deltaMessages` thresholds).
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mdrecall.documents.chunking import hash_text
from mdrecall.documents.workspace import read_regular_bytes
from mdrecall.errors import MdrecallError
from mdrecall.text.bounds import without_nul
from mdrecall.text.redact import redact

logger = logging.getLogger(__name__)

SESSIONS_PREFIX = "sessions/"
ROLE_LABELS = {"user": "User", "assistant": "Assistant"}
_ARCHIVED_RE = re.compile(r".+\.jsonl\.reset\..+")
_READ_CHUNK = 1 << 20

# -- parsing -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionDocument:
    """A transcript as indexable text; `line_map[i]` is the 1-based JSONL line of text line i+1.

    `size` is the number of bytes parsed: pass it to `SessionDeltaTracker.mark_synced` after indexing.
    """

    text: str
    line_map: list[int]
    messages: int
    malformed: int
    hash: str
    size: int = 0


def _decode(raw: bytes | str) -> str:
    """Bytes are decoded leniently: a stray invalid byte must not hide the rest of a transcript."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    return text[1:] if text.startswith("\ufeff") else text


def normalize_whitespace(text: str) -> str:
    """Collapse every whitespace run (newlines included) to one space, so a message is one text line."""
    return " ".join(text.split())


def content_text(content: Any) -> str:
    """Text of a message's content: a string as is, or the text blocks of a list (`text`, and Codex's
    `input_text` / `output_text`) joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in ("text", "input_text", "output_text")
        and isinstance(block.get("text"), str)
        and block["text"]
    ]
    return "\n".join(parts)


def _parse_line(line: str) -> dict[str, Any] | None:
    """The JSON object on a line, or None when the line is malformed (never an exception)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _message_line(record: dict[str, Any], redact_secrets: bool) -> str | None:
    """`User: …` / `Assistant: …` for a kept message record, else None."""
    if record.get("type") != "message":
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        return None
    label = ROLE_LABELS.get(message.get("role")) if isinstance(message.get("role"), str) else None
    if label is None:
        return None
    text = normalize_whitespace(content_text(message.get("content")))
    if not text:
        return None
    if redact_secrets:
        text = redact(text)
    return f"{label}: {text}"


def jsonl_records(text: str, start_line: int = 0) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(1-based line number, JSON object or None when malformed) for each non-blank line after `start_line`:
    the one JSONL reader of every transcript mdrecall reads (the index, the hooks, the session-memory file).

    Lines are split on "\n" only: str.splitlines would also split on U+2028 etc., which JSON strings may
    contain raw."""
    for line_no, raw_line in enumerate(text.split("\n"), start=1):
        if line_no <= start_line:
            continue
        line = raw_line.strip()
        if line:
            yield line_no, _parse_line(line)


def conversation_turn(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """(role, text) of a user or assistant message in any agent's transcript: OpenClaw's
    `{"type": "message", "message": {...}}`, Claude Code's `{"type": "user", "message": {...}}`, a Codex
    rollout's `{"type": "response_item", "payload": {...}}`, or a bare message. Meta entries, compaction
    summaries, slash commands and command echoes are not conversation (None)."""
    if entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    message: Any = entry
    if isinstance(entry.get("payload"), Mapping):
        message = entry["payload"]
    elif isinstance(entry.get("message"), Mapping):
        message = entry["message"]
    role = message.get("role")
    if role not in ("user", "assistant"):
        return None
    text = content_text(message.get("content")).strip()
    if not text or text.startswith(("/", "<command-", "<local-command")):
        return None
    return role, text


# The largest transcript the hooks read whole (an agent's transcript of a long session is tens of MB).
MAX_HOOK_TRANSCRIPT_BYTES = 256 * 1024 * 1024


def transcript_turns(path: str | os.PathLike[str] | None, start_line: int = 0) -> tuple[list[tuple[str, str]], int]:
    """The conversation turns of a transcript file from line `start_line` on, and its line count (an unreadable
    file: no turns; a file shorter than `start_line` was replaced, so it is read from the start)."""
    if not path:
        return [], start_line
    try:  # a regular file only: a FIFO or device named as the transcript never blocks a hook
        raw = read_regular_bytes(Path(path), str(path), MAX_HOOK_TRANSCRIPT_BYTES)
    except (MdrecallError, OSError):
        return [], start_line
    text = raw.decode("utf-8", errors="replace")
    total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if start_line > total:
        start_line = 0
    turns = [t for _, record in jsonl_records(text, start_line) if record and (t := conversation_turn(record))]
    return turns, total


def parse_transcript(raw: bytes | str, *, redact_secrets: bool = True) -> SessionDocument:
    """Turn JSONL transcript content into a `SessionDocument` (malformed lines are skipped and counted)."""
    lines: list[str] = []
    line_map: list[int] = []
    malformed = 0
    for line_no, record in jsonl_records(_decode(raw)):
        if record is None:
            malformed += 1
            continue
        text_line = _message_line(record, redact_secrets)
        if text_line is not None:
            lines.append(text_line)
            line_map.append(line_no)
    text = without_nul("\n".join(lines))  # a JSON "\u0000": every backend holds U+FFFD (text/bounds.py)
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    return SessionDocument(
        text=text, line_map=line_map, messages=len(lines), malformed=malformed, hash=hash_text(text), size=size
    )


def read_transcript(path: str | os.PathLike[str], *, redact_secrets: bool = True) -> SessionDocument:
    """Read and parse a transcript file."""
    with open(path, "rb") as handle:
        return parse_transcript(handle.read(), redact_secrets=redact_secrets)


def map_lines(doc: SessionDocument, start_line: int, end_line: int) -> tuple[int, int]:
    """Map a 1-based inclusive text line range (a chunk's) to the JSONL lines it came from.

    Out-of-range lines are clamped, so a chunk range is always citable.
    """
    if not doc.line_map:
        raise ValueError("the transcript has no messages, so no lines to map")
    last = len(doc.line_map)
    lo = min(max(start_line, 1), last)
    hi = min(max(end_line, lo), last)
    return doc.line_map[lo - 1], doc.line_map[hi - 1]


def transcript_text(raw: bytes | str, from_line: int | None = None, lines: int | None = None) -> str:
    """What `memory_get` returns for a transcript: its indexed text (`User: …` / `Assistant: …`, secrets masked),
    never the raw JSONL. `from_line`/`lines` are JSONL line numbers, as search results cite them: the messages
    of those lines are returned (tool output, metadata and malformed lines never are)."""
    doc = parse_transcript(raw, redact_secrets=True)
    if from_line is None and lines is None:
        return doc.text
    first = from_line or 1
    last = None if lines is None else first + lines - 1
    kept = [
        text
        for text, line_no in zip(doc.text.split("\n"), doc.line_map, strict=True)
        if line_no >= first and (last is None or line_no <= last)
    ]
    return "\n".join(kept)


# -- discovery ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionFile:
    """A transcript on disk; `path` is what the index stores and cites (`sessions/<name>`)."""

    path: str
    abs_path: Path
    size: int
    mtime_ms: int
    archived: bool


def is_archived_session_name(name: str) -> bool:
    """`<id>.jsonl.reset.<timestamp>`: a transcript closed by a session reset; it will not grow again."""
    return bool(_ARCHIVED_RE.fullmatch(name))


def is_session_name(name: str) -> bool:
    return name.endswith(".jsonl") or is_archived_session_name(name)


def list_session_files(
    sessions_dir: str | os.PathLike[str], skipped: list[tuple[str, str]] | None = None
) -> list[SessionFile]:
    """Transcripts directly in sessions_dir (live and archived), sorted by path; symlinks skipped.

    Names that are not valid UTF-8 cannot be stored or cited: they are reported in `skipped`, escaped.
    """
    root = Path(sessions_dir)
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    files: list[SessionFile] = []
    for entry in entries:
        if not is_session_name(entry.name):
            continue
        try:
            entry.name.encode("utf-8")
        except UnicodeEncodeError:
            if skipped is not None:
                shown = os.fsencode(entry.name).decode("utf-8", "backslashreplace")
                skipped.append((SESSIONS_PREFIX + shown, "file name is not valid UTF-8: skipped (rename it)"))
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        files.append(
            SessionFile(
                path=SESSIONS_PREFIX + entry.name,
                abs_path=root / entry.name,
                size=st.st_size,
                mtime_ms=int(st.st_mtime_ns // 1_000_000),
                archived=is_archived_session_name(entry.name),
            )
        )
    files.sort(key=lambda f: f.path)
    return files


def resolve_session_path(sessions_dir: str | os.PathLike[str], rel_path: str) -> Path:
    """`sessions/<name>` (as search cites it) to the transcript file, or PathRefusedError saying why."""
    from mdrecall.errors import PathRefusedError

    raw = (rel_path or "").strip()
    name = raw[len(SESSIONS_PREFIX) :]
    if not name or "/" in name or "\0" in name or name in (".", "..") or not is_session_name(name):
        raise PathRefusedError(f"path refused: {raw} is not a session transcript (sessions/<id>.jsonl)")
    path = Path(sessions_dir) / name
    if path.is_symlink():
        raise PathRefusedError(f"path refused: symlinks are not followed: {raw}")
    return path


# -- delta tracking ----------------------------------------------------------------------------------

TailReader = Callable[[int, int], bytes]


@dataclass
class SessionDelta:
    """Per-file state: what was seen, what is pending since the last sync, and whether a sync is forced."""

    last_size: int = 0
    pending_bytes: int = 0
    pending_messages: int = 0
    forced: bool = False
    archived: bool = False


def _key(path: str | os.PathLike[str]) -> str:
    """Watcher events, discovery and callers may spell a path differently; state is kept per absolute path."""
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def _file_reader(path: str | os.PathLike[str]) -> TailReader:
    def read(start: int, end: int) -> bytes:
        with open(path, "rb") as handle:
            handle.seek(start)
            return handle.read(max(0, end - start))

    return read


def _count_newlines(read_tail: TailReader, start: int, end: int) -> int:
    """Newlines in [start, end), read in bounded pieces so a huge first delta does not load the whole file."""
    count = 0
    pos = start
    while pos < end:
        piece = read_tail(pos, min(end, pos + _READ_CHUNK))
        if not piece:
            break
        count += piece.count(b"\n")
        pos += len(piece)
    return count


class SessionDeltaTracker:
    """Decides when a growing transcript has enough new content to be re-indexed.

    A file is due once `pending_bytes >= delta_bytes` or `pending_messages >= delta_messages` (messages are
    counted as newlines in the appended range, like the spec). A threshold of 0 makes every change due. A file
    that shrank (truncated or rotated) is due at once and its counts restart; archived transcripts
    (`*.jsonl.reset.*`) ignore thresholds and are due once when first seen or changed. A file never seen
    starts from size 0, so its whole content counts; seed known sizes with `mark_synced`. Paths are keyed by
    their normalised absolute form. Thread-safe.
    """

    def __init__(self, delta_bytes: int = 100_000, delta_messages: int = 50) -> None:
        if delta_bytes < 0 or delta_messages < 0:
            raise ValueError("delta thresholds must be >= 0")
        self.delta_bytes = delta_bytes
        self.delta_messages = delta_messages
        self._states: dict[str, SessionDelta] = {}
        self._lock = threading.RLock()

    def observe(
        self,
        path: str | os.PathLike[str],
        new_size: int | None = None,
        read_tail: TailReader | str | os.PathLike[str] | None = None,
        *,
        archived: bool | None = None,
    ) -> bool:
        """Record the file's current size, counting what was appended since last time; returns `due(path)`.

        new_size defaults to a stat of path (a vanished file is forgotten). read_tail reads bytes [start, end)
        of the file: a callable, or a path to read from (default: path itself).
        """
        key = _key(path)
        if new_size is None:
            try:
                new_size = os.stat(key).st_size
            except OSError:
                self.forget(key)
                return False
        reader = read_tail if callable(read_tail) else _file_reader(read_tail if read_tail is not None else key)
        is_archived = is_archived_session_name(os.path.basename(key)) if archived is None else archived
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = SessionDelta(archived=is_archived, forced=is_archived)
                if is_archived:
                    state.last_size = new_size
            if state.archived:
                self._observe_archived(state, new_size)
            else:
                self._observe_live(state, new_size, reader)
            return self._is_due(state)

    def _observe_archived(self, state: SessionDelta, new_size: int) -> None:
        if new_size != state.last_size:
            state.pending_bytes += abs(new_size - state.last_size)
            state.last_size = new_size
            state.forced = True

    def _observe_live(self, state: SessionDelta, new_size: int, reader: TailReader) -> None:
        if new_size < state.last_size:
            state.last_size = new_size
            state.pending_bytes = new_size
            state.pending_messages = 0
            state.forced = True
            return
        if new_size == state.last_size:
            return
        start, state.last_size = state.last_size, new_size
        state.pending_bytes += new_size - start
        if self._is_due(state):
            return  # the count would not change the decision; skip reading
        try:
            state.pending_messages += _count_newlines(reader, start, new_size)
        except OSError as err:
            logger.debug("could not read appended range of a session file: %s", err)

    def _is_due(self, state: SessionDelta) -> bool:
        if state.forced:
            return True
        if state.pending_bytes <= 0 and state.pending_messages <= 0:
            return False
        if self.delta_bytes == 0 or self.delta_messages == 0:
            return True
        return state.pending_bytes >= self.delta_bytes or state.pending_messages >= self.delta_messages

    def due(self, path: str | os.PathLike[str]) -> bool:
        """Is the file worth re-indexing now? (False for files never observed.)"""
        with self._lock:
            state = self._states.get(_key(path))
            return state is not None and self._is_due(state)

    def due_paths(self) -> list[str]:
        with self._lock:
            return sorted(key for key, state in self._states.items() if self._is_due(state))

    def mark_synced(
        self, path: str | os.PathLike[str], size: int | None = None, *, archived: bool | None = None
    ) -> None:
        """The file was indexed at `size` bytes (default: the last observed size): pending counts restart.

        Bytes appended while the sync ran are picked up by the next `observe`, which counts from `size`.
        """
        key = _key(path)
        with self._lock:
            state = self._states.get(key)
            if state is None:
                is_archived = is_archived_session_name(os.path.basename(key)) if archived is None else archived
                state = self._states[key] = SessionDelta(archived=is_archived)
            if size is not None:
                state.last_size = size
            state.pending_bytes = 0
            state.pending_messages = 0
            state.forced = False

    def forget(self, path: str | os.PathLike[str]) -> None:
        with self._lock:
            self._states.pop(_key(path), None)

    def state(self, path: str | os.PathLike[str]) -> SessionDelta | None:
        """A copy of the tracked state (for status output and tests)."""
        with self._lock:
            state = self._states.get(_key(path))
            return replace(state) if state is not None else None
