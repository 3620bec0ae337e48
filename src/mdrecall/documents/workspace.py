"""Which files are memory, and safe resolution of the paths agents ask to read.

Memory files are `MEMORY.md`, `memory.md`, `memory/**/*.md` and configured extra paths (files or
directories, absolute or relative to the workspace). Only `.md` files count, symlinks are never followed
(neither files nor directories), and files reached twice are deduplicated by real path.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from mdrecall.config.paths import resolve_extra_path
from mdrecall.errors import ConfigError, MdrecallError, PathRefusedError
from mdrecall.text.bounds import without_nul

ROOT_MEMORY_FILES = ("MEMORY.md", "memory.md")
MEMORY_DIR = "memory"
# Extra paths that would walk pseudo-filesystems or the whole machine.
SYSTEM_ROOTS = ("/proc", "/sys", "/dev")
Skipped = list[tuple[str, str]]


def escaped(name: str | os.PathLike[str]) -> str:
    """A file name as printable text: undecodable bytes shown as \\xNN (for warnings, never for opening)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def is_storable_name(name: str) -> bool:
    """Can this name be stored and cited as text? (False for names whose bytes are not valid UTF-8.)"""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def decode_text(raw: bytes) -> tuple[str, bool]:
    """File bytes as text: a UTF-8/UTF-16/UTF-32 BOM is honoured, else UTF-8 with undecodable bytes replaced.

    NUL characters become U+FFFD (PostgreSQL cannot hold them; every backend indexes the same text). The
    flag says whether any undecodable bytes were replaced.
    """
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            body = raw[len(bom) :]
            try:
                return without_nul(body.decode(codec)), False
            except UnicodeDecodeError:
                return without_nul(body.decode(codec, errors="replace")), True
    try:
        return without_nul(raw.decode("utf-8")), False
    except UnicodeDecodeError:
        return without_nul(raw.decode("utf-8", errors="replace")), True


def has_text_bom(raw: bytes) -> bool:
    """UTF-16/32 text has NUL bytes; its BOM tells it apart from binary content."""
    return raw.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"))


def line_range_text(
    raw: bytes, from_line: int | None = None, lines: int | None = None, mask: Callable[[str], str] | None = None
) -> str:
    """The file (decoded), or `lines` lines from 1-based `from_line`, numbered as the index does. `mask` (the
    secret redaction, which keeps every line break) is applied to the whole text before the range is cut, so
    a secret written over several lines is masked whole whatever range is asked."""
    text, _ = decode_text(raw)
    if mask is not None:
        text = mask(text)
    if from_line is None and lines is None:
        return text
    all_lines = split_lines(text)
    start = (from_line or 1) - 1
    end = len(all_lines) if lines is None else start + lines
    return "\n".join(all_lines[start:end])


# memory_get returns at most this much text per call; a longer file or range comes back cut, with `truncated`
# and the line to ask for next (docs/safety.md, "Bounds").
MAX_GET_BYTES = 1_000_000


def open_regular(path: Path, shown: str) -> Any:
    """`path` opened for reading in binary, if it is a regular file: a FIFO, socket or device is refused
    without being opened for reading (so nothing can block), a missing file is "memory file not found"."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise MdrecallError(f"memory file not found: {shown}") from None
    except OSError as err:
        raise PathRefusedError(f"path refused: {shown} cannot be read ({err.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise PathRefusedError(f"path refused: {shown} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise PathRefusedError(f"path refused: {shown} is not a regular file (a FIFO, socket or device)")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise MdrecallError(f"memory file not found: {shown}") from None
    except OSError as err:
        raise PathRefusedError(f"path refused: {shown} cannot be read ({err.strerror})") from None
    handle = open(fd, "rb", closefd=True)  # noqa: SIM115 - the caller closes it
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the stat
        handle.close()
        raise PathRefusedError(f"path refused: {shown} is not a regular file (a FIFO, socket or device)")
    return handle


def read_regular_bytes(path: Path, rel_path: str, max_bytes: int) -> bytes:
    """A whole regular file (see `open_regular`) of at most `max_bytes`; a larger one is refused in one line."""
    shown = rel_path.strip()
    with open_regular(path, shown) as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise MdrecallError(f"{shown} is larger than {max_bytes / 1e6:g} MB (maxFileBytes): it is not read whole")
    return raw


def bounded_text(text: str, max_bytes: int = MAX_GET_BYTES) -> dict[str, Any]:
    """`{text}`, or its first lines within `max_bytes` with `truncated` and a `notice` (ask for a line range)."""
    if len(text) <= max_bytes // 4 or len(text.encode("utf-8", "replace")) <= max_bytes:
        return {"text": text}
    cut = text.encode("utf-8", "replace")[:max_bytes].decode("utf-8", "ignore")
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    notice = f"cut at {max_bytes:,} bytes (the most memory_get returns at once): ask for a line range (from, lines)"
    return {"text": cut, "truncated": True, "notice": notice}


def read_memory_lines(
    path: Path,
    rel_path: str,
    from_line: int | None = None,
    lines: int | None = None,
    max_bytes: int = MAX_GET_BYTES,
    mask: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """What memory_get returns for a file: `{path, text}`, plus `truncated`, `nextFrom` and `notice` when the
    text was cut at `max_bytes`. Only regular files are read (`open_regular`), and never more than
    `max_bytes` plus one block of them. `mask` redacts secrets in what is returned (line numbers unchanged)."""
    shown = rel_path.strip()
    with open_regular(path, shown) as handle:
        head = handle.read(max_bytes + 1)
        if len(head) <= max_bytes:  # the usual case: the whole file, numbered exactly as the index numbers it
            result = {"path": shown, "text": line_range_text(head, from_line, lines, mask)}
            if from_line and from_line > 1 and not result["text"]:
                total = len(split_lines(decode_text(head)[0]))
                if from_line > total:  # an empty answer is not an empty range: say why
                    result["notice"] = (
                        f"{shown} has {total} line{'s' if total != 1 else ''}: line {from_line} is past its end"
                    )
            return result
        handle.seek(0)
        streamed = _stream_lines(handle, from_line or 1, lines, max_bytes)
        if mask is not None:
            streamed["text"] = mask(streamed["text"])
        return {"path": shown, **streamed}


def _stream_lines(handle: Any, first: int, count: int | None, max_bytes: int) -> dict[str, Any]:
    """Lines `first`.. of a file larger than `max_bytes`, read one line at a time (\\r\\n, \\r and \\n end a
    line, as `split_lines` says) and cut at `max_bytes` of text; a giant line is cut too, never read whole."""
    head = handle.read(4)
    codec, skip = "utf-8", 0
    for bom, name in _BOMS:
        if head.startswith(bom):
            codec, skip = name, len(bom)
            break
    handle.seek(skip)
    text = io.TextIOWrapper(handle, encoding=codec, errors="replace", newline=None)
    block = 65536
    out: list[str] = []
    used, number, cut = 0, 0, False
    while count is None or len(out) < count:
        piece = text.readline(block)
        if not piece:
            break
        number += 1
        keep = number >= first
        parts, size = ([piece] if keep else []), len(piece)
        while not piece.endswith("\n"):  # the rest of a long line: skipped, or kept only up to the bound
            if keep and size > max_bytes:
                break  # enough of it: the line is cut below, the rest is never read
            piece = text.readline(block)
            if not piece:
                break
            if keep and size <= max_bytes:
                parts.append(piece)
                size += len(piece)
        if not keep:
            continue
        line = without_nul("".join(parts).rstrip("\n"))
        encoded = line.encode("utf-8", "replace")
        if used + len(encoded) + 1 > max_bytes:
            if not out:  # one line longer than the bound: its start
                out.append(encoded[:max_bytes].decode("utf-8", "ignore"))
            cut = True
            break
        out.append(line)
        used += len(encoded) + 1
    text.detach()
    result: dict[str, Any] = {"text": "\n".join(out)}
    if cut:
        next_from = first + max(1, len(out))
        result.update(
            truncated=True,
            nextFrom=next_from,
            notice=f"cut at {max_bytes:,} bytes (the most memory_get returns at once): "
            f"call memory_get again with from={next_from} for more",
        )
    return result


def split_lines(text: str) -> list[str]:
    """Lines as the index numbers them: \\r\\n, \\r and \\n all end a line; a final newline adds no line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


class MemoryFile(NamedTuple):
    """A discovered memory file: its workspace-relative POSIX path (as stored and cited) and where it is.

    A named tuple rather than a frozen dataclass: discovery builds one per file on every sync and search.
    """

    path: str
    location: str  # the absolute (or workspace-joined) path as a string: a Path per file is costly at 10k
    mtime_ms: int
    size: int

    @property
    def abs_path(self) -> Path:
        return Path(self.location)


def _is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def _walk_markdown(root: Path, skipped: Skipped | None = None) -> Iterator[tuple[str, os.stat_result | None]]:
    """(path, lstat) of every .md regular file under root, never descending into symlinked directories.

    os.scandir gives each entry's type without a system call and its lstat with one, so a no-op sync of a
    large tree costs about what `os.walk` + `stat` cost. Unreadable directories are reported in `skipped`
    (escaped), never fatal; an entry whose lstat fails comes back with None (the caller reports it).
    A generator: the caller keeps what it needs of each lstat, so 100k stat results are never held at once
    (~35 MB of a 100k-file sync's peak when they were listed first).
    """
    try:
        root_st = root.lstat()
    except OSError:
        return
    if not stat.S_ISDIR(root_st.st_mode):
        return
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:  # order does not matter: the caller sorts by path
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
                            continue
                        if not entry.name.lower().endswith(".md") or not entry.is_file(follow_symlinks=False):
                            continue
                    except OSError:
                        continue
                    try:
                        found: os.stat_result | None = entry.stat(follow_symlinks=False)
                    except OSError:
                        found = None
                    yield entry.path, found
        except OSError as err:
            if skipped is not None:
                skipped.append((escaped(directory), f"directory not readable: {err.strerror or err}"))


def display_path(abs_path: Path, workspace: Path) -> str:
    """Workspace-relative POSIX path; files outside the workspace (extra paths) get a `../` path."""
    return Path(os.path.relpath(abs_path, workspace)).as_posix()


def check_extra_path(workspace: Path, extra: str) -> Path:
    """The resolved extra path, or ConfigError when it covers / or a pseudo-filesystem (/proc, /sys, /dev)."""
    target = resolve_extra_path(workspace, extra)
    for candidate in {target, Path(os.path.realpath(target))}:
        text = candidate.as_posix()
        covers_system = any(
            text == root or text.startswith(root + "/") or root.startswith(text.rstrip("/") + "/")
            for root in SYSTEM_ROOTS
        )
        if candidate == Path(candidate.anchor) or covers_system:
            raise ConfigError(
                f"extraPaths entry {extra!r} refused: it covers {text} (the file system root or /proc, /sys, /dev)"
            )
    return target


def _display(path: str, workspace_prefix: str, workspace: Path) -> str:
    """display_path without its cost for the usual case, a file below the workspace (a string slice)."""
    if path.startswith(workspace_prefix):
        rel = path[len(workspace_prefix) :]
        return rel if os.sep == "/" else rel.replace(os.sep, "/")
    return display_path(Path(path), workspace)


def _candidates(
    workspace: Path, extra_paths: list[str], skipped: Skipped | None = None
) -> Iterator[tuple[str, os.stat_result | None]]:
    """Every place a memory file may be, with its lstat when the directory walk already has it (streamed)."""
    targets = [check_extra_path(workspace, extra) for extra in extra_paths]  # a refused path fails before any walk
    for name in ROOT_MEMORY_FILES:
        yield str(workspace / name), None
    yield from _walk_markdown(workspace / MEMORY_DIR, skipped)
    for target in targets:
        if target.is_symlink():
            continue
        if target.is_dir():
            yield from _walk_markdown(target, skipped)
        elif _is_markdown(target.name):
            yield str(target), None


def list_memory_files(
    workspace: Path, extra_paths: list[str] | None = None, skipped: Skipped | None = None
) -> list[MemoryFile]:
    """Discover the memory files of a workspace, sorted by path, symlinks skipped, deduplicated.

    A file reached twice (overlapping extra paths, a hard link, a symlinked ancestor of an extra path) is
    kept once: duplicates are recognised by device and inode, which the lstat already gave. Files whose
    names cannot be stored as text (bytes that are not UTF-8) or that cannot be inspected (path too long)
    are left out and reported in `skipped` with an escaped name, so one odd file never breaks a sync or a
    search.
    """
    files = list(iter_memory_files(workspace, extra_paths, skipped))
    files.sort(key=lambda f: f.path)
    return files


def iter_memory_files(
    workspace: Path, extra_paths: list[str] | None = None, skipped: Skipped | None = None
) -> Iterator[MemoryFile]:
    """The memory files of `list_memory_files`, streamed in walk order: a sync that writes as it walks holds
    no list of every file (~300 B a file: 39 MB at 100k files).

    Only files that can be reached twice are remembered for deduplication: root files (`MEMORY.md` and
    `memory.md` are one file on a case-insensitive disk), hard links, and everything when extra paths are
    configured (they may overlap the walk). A plain file under `memory/` has one route: the walk never
    follows a symlink.
    """
    seen: set[int] = set()  # (device, inode) as one int: a third of a tuple's memory at 100k files
    track_all = bool(extra_paths)
    prefix = str(workspace).rstrip(os.sep) + os.sep
    for candidate, known in _candidates(workspace, extra_paths or [], skipped):
        if known is None and not _is_markdown(os.path.basename(candidate)):
            continue  # (a walked entry is a .md file already: checking it again was a tenth of a no-op sync)
        rel = _display(candidate, prefix, workspace)
        if not rel.isascii() and not is_storable_name(rel):
            if skipped is not None:
                skipped.append((escaped(rel), "file name is not valid UTF-8: skipped (rename the file to index it)"))
            continue
        st = known
        if st is None:
            try:
                st = os.lstat(candidate)
            except FileNotFoundError:
                continue
            except OSError as err:
                if skipped is not None:
                    skipped.append((escaped(rel), f"skipped: {err.strerror or err}"))
                continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if track_all or known is None or st.st_nlink > 1:
            identity = (st.st_dev << 64) | st.st_ino
            if identity in seen:
                continue
            seen.add(identity)
        yield MemoryFile(rel, candidate, int(st.st_mtime_ns // 1_000_000), st.st_size)


class MemoryWalk:
    """`iter_memory_files` that walks again on each iteration (a sync walks a second time only to find
    vanished files); only the first walk reports skipped names, so none is reported twice."""

    def __init__(self, workspace: Path, extra_paths: list[str] | None = None, skipped: Skipped | None = None) -> None:
        self.workspace, self.extra_paths, self.skipped = workspace, extra_paths, skipped
        self.walks = 0

    def __iter__(self) -> Iterator[MemoryFile]:
        self.walks += 1
        return iter_memory_files(self.workspace, self.extra_paths, self.skipped if self.walks == 1 else None)


def _has_symlink_component(path: Path, stop_at: Path) -> bool:
    """True if path or any parent below stop_at is a symlink."""
    current = path
    while True:
        if current.is_symlink():
            return True
        if current == stop_at or current.parent == current:
            return False
        current = current.parent


def _is_memory_location(abs_path: Path, workspace: Path, extra_paths: list[str]) -> bool:
    """Is abs_path (normalised, links not resolved) one of the places memory files live?"""
    if abs_path.parent == workspace and abs_path.name in ROOT_MEMORY_FILES:
        return True
    if abs_path.is_relative_to(workspace / MEMORY_DIR):
        return True
    for extra in extra_paths:
        root = resolve_extra_path(workspace, extra)
        if abs_path == root or abs_path.is_relative_to(root):
            return True
    return False


def _link_root(abs_path: Path, workspace: Path, extra_paths: list[str]) -> Path:
    """The directory below which every component must be a real (non-symlink) entry."""
    if abs_path.is_relative_to(workspace):
        return workspace
    for extra in extra_paths:
        root = resolve_extra_path(workspace, extra)
        if abs_path == root or abs_path.is_relative_to(root):
            return root.parent
    return Path(abs_path.anchor)


def resolve_memory_path(workspace: Path, rel_path: str, extra_paths: list[str] | None = None) -> Path:
    """Map a path an agent asked for onto a memory file, or raise PathRefusedError saying why.

    Accepted: workspace-relative POSIX paths to `.md` files that are memory files (including the `../`
    paths that search results give for extra paths outside the workspace). `%` and `\\` are ordinary
    characters of a file name on POSIX (never decoded, never separators), so every path search cites can
    be opened. Refused: empty, absolute or NUL paths, anything outside the memory locations, symlinks
    anywhere on the way, and non-markdown files.
    """
    extras = extra_paths or []
    raw = (rel_path or "").strip()
    if not raw:
        raise PathRefusedError("path is required (e.g. MEMORY.md or memory/2026-01-31.md)")
    if "\0" in raw:
        raise PathRefusedError("path refused: contains a NUL byte")
    if "\\" in raw and os.sep == "\\":
        raise PathRefusedError(f"path refused: use '/' separators, not '\\': {raw}")
    if raw.startswith("/") or raw.startswith("~") or (len(raw) > 1 and raw[1] == ":"):
        raise PathRefusedError(f"path refused: give a path relative to the workspace, not an absolute one: {raw}")
    normalized = posixpath.normpath(raw)
    abs_path = Path(os.path.normpath(workspace / normalized))
    if not _is_memory_location(abs_path, workspace, extras):
        raise PathRefusedError(
            f"path refused: {raw} is not a memory file (allowed: MEMORY.md, memory.md, memory/**/*.md"
            + (", extra paths" if extras else "")
            + ")"
        )
    if not _is_markdown(abs_path.name):
        raise PathRefusedError(f"path refused: only .md files can be read: {raw}")
    if _has_symlink_component(abs_path, _link_root(abs_path, workspace, extras)):
        raise PathRefusedError(f"path refused: symlinks are not followed: {raw}")
    return abs_path


MEMORY_SOURCE = "memory"


SESSIONS_SOURCE = "sessions"
