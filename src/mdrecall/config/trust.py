"""Trust in a folder's own `mdrecall.toml`: a folder is not trusted by being opened.

Keys that run programs, load native code, send credentials or text to another host, or reach outside the
folder take effect from a workspace's own `mdrecall.toml` only after the user ran `mdrecall trust` for it,
which records the file's sha256 in `<state dir>/trusted-configs.json` (user-only), as direnv's `allow` does.
A changed file needs trusting again. Until then those keys keep their defaults and one line names them;
every other key applies. A config file the user names (`--config`) and OpenClaw's config are the user's own
and always apply.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from mdrecall.config.paths import resolve_extra_path
from mdrecall.files import make_private_dirs, write_atomic
from mdrecall.locks import file_lock

TRUST_FILE_NAME = "trusted-configs.json"
TrustStatus = Literal["trusted", "changed", "untrusted", "missing"]


def config_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def trust_file(state_dir: Path) -> Path:
    return state_dir / TRUST_FILE_NAME


def config_file_key(path: Path) -> Path:
    """How a config file is named in the trust file: its folder resolved, its own name kept (a symlinked
    `mdrecall.toml` in another folder is that folder's file, not the one it points to)."""
    path = Path(path).expanduser()
    return Path(os.path.realpath(path.parent)) / path.name


def _read_entries(state_dir: Path) -> dict[str, dict[str, Any]]:
    """The recorded files; a missing or unreadable trust file trusts nothing."""
    try:
        data = json.loads(trust_file(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = data.get("trusted") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(v, dict) and isinstance(v.get("sha256"), str)}


def _write_entries(state_dir: Path, entries: dict[str, dict[str, Any]]) -> None:
    body = json.dumps({"version": 1, "trusted": entries}, indent=2, sort_keys=True) + "\n"
    write_atomic(trust_file(state_dir), body.encode("utf-8"), mode=0o600)


def trust_status(state_dir: Path, path: Path, digest: str) -> TrustStatus:
    entry = _read_entries(state_dir).get(str(config_file_key(path)))
    if entry is None:
        return "untrusted"
    return "trusted" if entry["sha256"] == digest else "changed"


def record_trust(state_dir: Path, path: Path, digest: str) -> dict[str, Any]:
    key = str(config_file_key(path))
    entry = {"sha256": digest, "trustedAt": datetime.now(UTC).isoformat(timespec="seconds")}
    with _editing(state_dir) as entries:
        entries[key] = entry
    return {"path": key, **entry}


def revoke_trust(state_dir: Path, path: Path) -> bool:
    key = str(config_file_key(path))
    with _editing(state_dir) as entries:
        return entries.pop(key, None) is not None


@contextlib.contextmanager
def _editing(state_dir: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """Read-modify-write of the trust file under its lock (two `mdrecall trust` at once both count)."""
    make_private_dirs(state_dir)
    with file_lock(state_dir / (TRUST_FILE_NAME + ".lock")):
        entries = _read_entries(state_dir)
        before = dict(entries)
        yield entries
        if entries != before:
            _write_entries(state_dir, entries)


def list_trust(state_dir: Path) -> list[dict[str, Any]]:
    """Every recorded file with its status now: trusted, changed (since it was trusted) or missing."""
    out = []
    for key, entry in sorted(_read_entries(state_dir).items()):
        try:
            digest = config_digest(Path(key).read_bytes())
            status: TrustStatus = "trusted" if digest == entry["sha256"] else "changed"
        except OSError:
            status = "missing"
        out.append({"path": key, "sha256": entry["sha256"], "trustedAt": entry.get("trustedAt"), "status": status})
    return out


# ---------------------------------------------------------------------------------------------------------
# Which keys need trust
# ---------------------------------------------------------------------------------------------------------

# (name as written in the file, attribute path): any value other than the default needs trust.
NEEDS_TRUST: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("qmd.command", ("qmd", "command")),  # runs a program
    ("qmd.sessions.exportDir", ("qmd", "sessions", "export_dir")),  # writes transcripts there
    ("store.vector.extensionPath", ("store", "vector", "extension_path")),  # loads native code
    ("local.modelPath", ("local", "model_path")),  # loads a model (code, for some runtimes)
    ("local.modelCacheDir", ("local", "model_cache_dir")),  # writes downloads there
    ("remote.baseUrl", ("remote", "base_url")),  # sends notes (and a key) there
    ("remote.headers", ("remote", "headers")),
    ("remote.apiKeyEnv", ("remote", "api_key_env")),  # sends that variable
    *(
        (f"{name}.{key}", (name, attr))
        for name in ("openai", "gemini", "voyage")
        for key, attr in (("baseUrl", "base_url"), ("headers", "headers"), ("apiKeyEnv", "api_key_env"))
    ),
    ("facts.llm.baseUrl", ("facts", "llm", "base_url")),  # sends what the user said there
    ("query.rerank.baseUrl", ("query", "rerank", "base_url")),  # sends queries and notes there
    ("query.rerank.apiKeyEnv", ("query", "rerank", "api_key_env")),
    ("store.postgres.dsn", ("store", "postgres", "dsn")),  # sends notes (and credentials) to that server
    ("store.postgres.dsnEnv", ("store", "postgres", "dsn_env")),
    ("store.postgres.workspaceKey", ("store", "postgres", "workspace_key")),  # another workspace's rows
    ("redactMemory", ("redact_memory",)),  # false would index (and return) secrets unmasked
)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        obj = getattr(obj, part)
    return obj


def _set(obj: Any, path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        obj = getattr(obj, part)
    setattr(obj, path[-1], value)


def _inside(path: str | os.PathLike[str], folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def restrict_untrusted(config: Any, workspace: Path, state_dir: Path) -> tuple[Any, list[str]]:
    """A copy of a folder's config with every key that needs trust back at its default, and their names."""
    default = type(config)()
    safe = config.model_copy(deep=True)
    ignored: list[str] = []
    for name, path in NEEDS_TRUST:
        if _get(safe, path) != _get(default, path):
            _set(safe, path, _get(default, path))
            ignored.append(name)
    inside = [p for p in safe.extra_paths if _inside(resolve_extra_path(workspace, p), workspace)]
    if inside != safe.extra_paths:
        safe.extra_paths = inside
        ignored.append("extraPaths")
    kept = [p for p in safe.qmd.paths if _inside(resolve_extra_path(workspace, p.path), workspace)]
    if len(kept) != len(safe.qmd.paths):
        safe.qmd.paths = kept
        ignored.append("qmd.paths")
    if safe.store.path and not _inside(_store_path(safe.store.path, state_dir), state_dir):
        safe.store.path = None
        ignored.append("store.path")
    return safe, ignored


def _store_path(configured: str, state_dir: Path) -> Path:
    path = Path(configured.replace("{agentId}", "a").replace("{workspaceKey}", "w")).expanduser()
    return path if path.is_absolute() else state_dir / path


def untrusted_notice(config_path: Path, status: TrustStatus, keys: list[str]) -> str:
    why = "changed since it was trusted, so it is not trusted" if status == "changed" else "is not trusted"
    return (
        f"{config_path} {why}: ignoring {', '.join(keys)} (keys that run programs, send keys or text elsewhere "
        f"or reach outside the folder); run `mdrecall trust {shlex.quote(str(config_path.parent))}` to allow them"
    )
