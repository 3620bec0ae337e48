"""The session-memory hook: on `/new`, save the ending session's recent turns as `memory/YYYY-MM-DD-<slug>.md`.

Secrets in the turns are masked with mdrecall's one redaction before anything is written (or handed to the
slug function), and the saved turns start at a user turn. The file becomes an ordinary memory file, so the
next sync indexes it and `memory_search` can find the conversation later. Files are created with O_EXCL and
never overwritten: a second save with the same slug gets `-2`, `-3`, ... The slug comes from a
caller-supplied function (typically a small LLM call that names the conversation); when there is none, it
fails or gives nothing usable, the time (HHMMSS) is used.
Dates and times are local unless `now` carries another timezone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mdrecall.documents.sessions import conversation_turn, transcript_turns
from mdrecall.errors import MdrecallError
from mdrecall.files import create_private, make_private_dirs
from mdrecall.text.redact import redact

DEFAULT_MESSAGE_COUNT = 15
MAX_SLUG_CHARS = 60
MAX_SUFFIX = 1000

SlugFn = Callable[[str], str | None]
Transcript = str | os.PathLike[str] | Iterable[Mapping[str, Any]]


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    text: str


def _entries_turns(transcript: Transcript) -> list[Turn]:
    """The conversation turns of a JSONL file or an in-memory list of entries, secrets masked (the file is
    written as the index would show it)."""
    if isinstance(transcript, str | os.PathLike):
        pairs, _ = transcript_turns(transcript)
    else:
        pairs = [t for e in transcript if isinstance(e, Mapping) and (t := conversation_turn(e))]
    return [Turn(role, redact(text)) for role, text in pairs]


def recent_turns(transcript: Transcript, message_count: int = DEFAULT_MESSAGE_COUNT) -> list[Turn]:
    """The last `message_count` user/assistant turns of a transcript, starting at a user turn.

    Assistant turns at the start of the window (their question was cut off) are dropped; when the window holds
    no user turn at all, it starts at the last user turn before it and keeps `message_count` turns from there.
    """
    turns = _entries_turns(transcript)
    if message_count <= 0 or not turns:
        return []
    start = max(0, len(turns) - message_count)
    first_user = next((i for i in range(start, len(turns)) if turns[i].role == "user"), None)
    if first_user is None:
        first_user = next((i for i in range(start - 1, -1, -1) if turns[i].role == "user"), None)
        if first_user is None:
            return []
        return turns[first_user : first_user + message_count]
    return turns[first_user:]


def sanitize_slug(raw: str | None) -> str:
    """Lowercase `[a-z0-9-]`, runs of anything else become one `-`, at most MAX_SLUG_CHARS; may be ""."""
    slug = re.sub(r"[^a-z0-9]+", "-", (raw or "").lower()).strip("-")
    return slug[:MAX_SLUG_CHARS].rstrip("-")


def _conversation_text(turns: list[Turn]) -> str:
    return "\n\n".join(f"{t.role}: {t.text}" for t in turns)


def _choose_slug(turns: list[Turn], slugify: SlugFn | None, now: datetime) -> str:
    if slugify is not None:
        try:
            slug = sanitize_slug(slugify(_conversation_text(turns)))
        except Exception:  # a failing namer must not lose the session
            slug = ""
        if slug:
            return slug
    return now.strftime("%H%M%S")


def render_session_memory(
    turns: list[Turn],
    now: datetime,
    session_id: str | None = None,
    session_key: str | None = None,
    source: str | None = None,
) -> str:
    """The markdown saved for a session: metadata, then the recent turns."""
    lines = [f"# Session: {now.strftime('%Y-%m-%d %H:%M:%S %Z').strip()}", ""]
    lines.append(f"- **Date**: {now.date().isoformat()}")
    if session_key:
        lines.append(f"- **Session Key**: {session_key}")
    if session_id:
        lines.append(f"- **Session ID**: {session_id}")
    if source:
        lines.append(f"- **Source**: {source}")
    lines += ["", "## Conversation", "", _conversation_text(turns) if turns else "(no messages)", ""]
    return "\n".join(lines)


def _create_exclusive(directory: Path, stem: str, content: bytes) -> Path:
    """Create `<stem>.md`, else `<stem>-2.md`, ...; never opens an existing file (O_EXCL); user-only (0600)."""
    for n in range(1, MAX_SUFFIX + 1):
        path = directory / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
        try:
            create_private(path, content)
        except FileExistsError:
            continue
        return path
    raise MdrecallError(f"too many session files named {stem}*.md in {directory}")


def save_session_memory(
    workspace: str | os.PathLike[str],
    transcript: Transcript,
    *,
    session_id: str | None = None,
    session_key: str | None = None,
    source: str | None = "session-memory hook (/new)",
    now: datetime | None = None,
    message_count: int = DEFAULT_MESSAGE_COUNT,
    slugify: SlugFn | None = None,
    write_empty: bool = False,
) -> Path | None:
    """Write the session's recent turns to `memory/YYYY-MM-DD-<slug>.md`; returns the path.

    Returns None (and writes nothing) when the transcript has no user/assistant text, unless `write_empty`
    (the agent hooks set it: the spec's hook records that a session happened even when it was empty).
    """
    turns = recent_turns(transcript, message_count)
    if not turns and not write_empty:
        return None
    when = now or datetime.now().astimezone()
    memory_dir = Path(workspace) / "memory"
    if memory_dir.is_symlink():
        raise MdrecallError(f"refusing to write through a symlinked memory folder: {memory_dir}")
    make_private_dirs(memory_dir)
    stem = f"{when.date().isoformat()}-{_choose_slug(turns, slugify, when)}"
    content = render_session_memory(turns, when, session_id, session_key, source).encode("utf-8")
    return _create_exclusive(memory_dir, stem, content)
