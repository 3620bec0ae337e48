"""Never lose a file, never break on a name: foreign index files, symlinks, odd names, encodings, line ranges.

Driven through the CLI (in-process runner; keyword-only config so no model loads) as a user would.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import apsw
import pytest
from typer.testing import CliRunner

from mdrecall.cli.app import app
from mdrecall.storage.identity import APPLICATION_ID, header_application_id

from .conftest import trust_config, write

runner = CliRunner()


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "mdrecall.toml").write_text('provider = "none"\n')
    return workspace


def cli(ws: Path, state: Path, *args: str, db: Path | None = None):
    pre = ["--workspace", str(ws), "--state-dir", str(state)]
    if db is not None:
        pre += ["--db", str(db)]
    return runner.invoke(app, [*pre, *args])


def default_db(ws: Path, state: Path) -> Path:
    """Where the CLI puts the index of this workspace by default (keyed by agent and workspace)."""
    from mdrecall.config.settings import resolve_settings

    return resolve_settings(workspace=ws, state_dir=state).db_path


def one_line_error(result) -> str:
    """The run failed with exit 1 and exactly one line on stderr, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def _foreign_sqlite(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada')")
    conn.close()


FOREIGN_KINDS = ["sqlite", "sqlite-with-app-id", "text", "own-table-names"]


def _make_foreign(path: Path, kind: str) -> None:
    if kind == "sqlite":
        _foreign_sqlite(path)
    elif kind == "sqlite-with-app-id":
        conn = apsw.Connection(str(path))
        conn.execute("PRAGMA application_id = 1234; CREATE TABLE t (x)")
        conn.close()
    elif kind == "own-table-names":  # tables named like ours but no mdrecall meta row
        conn = apsw.Connection(str(path))
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT); CREATE TABLE files (path); CREATE TABLE chunks (id)")
        conn.close()
    else:
        path.write_text("my diary: do not delete\n" * 50)


@pytest.mark.parametrize("kind", FOREIGN_KINDS)
@pytest.mark.parametrize("via_symlink", [False, True], ids=["direct", "symlink"])
@pytest.mark.parametrize("command", [["index"], ["index", "--force"], ["search", "a828e60"], ["status"]])
def test_foreign_file_at_index_path_is_refused_byte_identical(
    ws: Path, tmp_path: Path, kind: str, via_symlink: bool, command: list[str]
) -> None:
    target = tmp_path / "users.db"
    _make_foreign(target, kind)
    before = target.read_bytes()
    db = target
    if via_symlink:
        db = default_db(ws, tmp_path / "state")
        db.parent.mkdir(parents=True)
        db.symlink_to(target)
        result = cli(ws, tmp_path / "state", *command)
    else:
        result = cli(ws, tmp_path / "state", *command, db=db)
    line = one_line_error(result)
    assert "refusing" in line and ("users.db" in line or db.name in line)
    assert target.read_bytes() == before
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("users.db"))
    assert leftovers == ["users.db"], "no -wal, -shm, .lock or temp file beside a foreign file"


def test_dangling_symlink_at_index_path_creates_nothing(ws: Path, tmp_path: Path) -> None:
    db = default_db(ws, tmp_path / "state")
    db.parent.mkdir(parents=True)
    outside = tmp_path / "elsewhere" / "created.sqlite"
    db.symlink_to(outside)
    line = one_line_error(cli(ws, tmp_path / "state", "index"))
    assert "dangling symlink" in line
    assert not outside.exists() and not outside.parent.exists()
    assert db.is_symlink()


def test_index_path_that_is_a_directory_leaves_no_lock(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "dir.sqlite"
    db.mkdir()
    line = one_line_error(cli(ws, tmp_path / "state", "index", db=db))
    assert "is a directory" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.sqlite", "ws"]


def test_index_path_name_too_long(ws: Path, tmp_path: Path) -> None:
    line = one_line_error(cli(ws, tmp_path / "state", "index", db=tmp_path / ("x" * 300 + ".sqlite")))
    assert "longer than the system allows" in line


def test_own_index_is_marked_and_legacy_index_is_adopted(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "idx.sqlite"
    assert cli(ws, tmp_path / "s", "index", db=db).exit_code == 0
    assert header_application_id(db.read_bytes()[:100]) == APPLICATION_ID
    conn = apsw.Connection(str(db))  # an index written before the id existed: same tables, meta row, id 0
    conn.execute("PRAGMA application_id = 0")
    conn.close()
    result = cli(ws, tmp_path / "s", "index", "--force", db=db)
    assert result.exit_code == 0, result.output
    assert header_application_id(db.read_bytes()[:100]) == APPLICATION_ID
    assert json.loads(cli(ws, tmp_path / "s", "search", "a828e60", "--json", db=db).stdout)


def test_stale_temp_files_removed_at_next_start_but_foreign_ones_kept(ws: Path, tmp_path: Path) -> None:
    state = tmp_path / "s"
    assert cli(ws, state, "index").exit_code == 0
    memdir = state / "memory"
    name = default_db(ws, state).name
    dead = memdir / f"{name}.tmp-{'ab' * 16}"
    conn = apsw.Connection(str(dead))
    conn.execute("PRAGMA journal_mode=WAL; CREATE TABLE x (y); INSERT INTO x VALUES (1)")
    (memdir / f"{dead.name}-shm").write_bytes(b"\0" * 10)
    user_file = memdir / f"{name}.tmp-notes"
    user_file.write_text("keep me")
    conn.close()
    assert cli(ws, state, "search", "a828e60").exit_code == 0  # a plain search (no sync needed) cleans up
    assert sorted(p.name for p in memdir.glob(f"{name}.tmp-*")) == [f"{name}.tmp-notes"]
    assert user_file.read_text() == "keep me"


# -- names -------------------------------------------------------------------------------------------


def test_undecodable_file_name_is_skipped_with_escaped_warning(ws: Path, tmp_path: Path) -> None:
    bad = os.path.join(os.fsencode(ws / "memory"), b"caf\xe9-\xff.md")
    with open(bad, "wb") as handle:
        handle.write(b"latin-1 named note about the zebra\n")
    result = cli(ws, tmp_path / "s", "index")
    assert result.exit_code == 0, result.output
    assert "caf\\xe9-\\xff.md" in result.stderr and "not valid UTF-8" in result.stderr
    for _ in range(2):  # every later sync and search keeps working
        found = json.loads(cli(ws, tmp_path / "s", "search", "a828e60", "--json").stdout)
        assert found[0]["path"] == "MEMORY.md"
    assert cli(ws, tmp_path / "s", "index").exit_code == 0


ODD_NAMES = [
    "memory/back\\slash.md",
    "memory/100%25 done %.md",
    "memory/" + "long" * 60 + ".md",
    "memory/ space & 'quote\" #hash?.md",
    "memory/emoji 🦙 ünï.md",
]


@pytest.mark.parametrize("name", ODD_NAMES, ids=range(len(ODD_NAMES)))
def test_every_path_search_cites_can_be_opened_by_get(ws: Path, tmp_path: Path, name: str) -> None:
    write(ws, name, "line one\nthe quokka line\n")
    found = json.loads(cli(ws, tmp_path / "s", "search", "quokka", "--json").stdout)
    assert found and found[0]["path"] == name
    got = cli(ws, tmp_path / "s", "get", found[0]["path"], "--from", str(found[0]["startLine"]), "--json")
    assert got.exit_code == 0, got.output
    assert "quokka" in json.loads(got.stdout)["text"]


def test_session_transcript_paths_open_with_get(ws: Path, tmp_path: Path) -> None:
    (ws / "mdrecall.toml").write_text('provider = "none"\nsources = ["memory", "sessions"]\n')
    sessions = tmp_path / "s" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    lines = [
        {"type": "message", "message": {"role": "user", "content": f"message {i} about wombats"}} for i in range(3)
    ]
    (sessions / "odd%name\\x.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    bad = os.path.join(os.fsencode(sessions), b"\xff.jsonl")
    with open(bad, "wb") as handle:
        handle.write(b"{}\n")
    result = cli(ws, tmp_path / "s", "index")
    assert result.exit_code == 0 and "sessions/\\xff.jsonl" in result.stderr
    found = json.loads(cli(ws, tmp_path / "s", "search", "wombats", "--json").stdout)
    assert found[0]["path"] == "sessions/odd%name\\x.jsonl" and found[0]["endLine"] <= 3
    got = cli(ws, tmp_path / "s", "get", found[0]["path"], "--from", "2", "--lines", "1", "--json")
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["text"] == "User: message 1 about wombats"  # the indexed text of JSONL line 2
    refused = cli(ws, tmp_path / "s", "get", "sessions/../MEMORY.md")
    assert "refused" in one_line_error(refused)


# -- smaller items -----------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", ["/", "/proc", "/sys/kernel", "/dev", "../../../../../../../../.."])
def test_extra_paths_covering_system_roots_are_refused(ws: Path, tmp_path: Path, extra: str) -> None:
    (ws / "mdrecall.toml").write_text(f'provider = "none"\nextraPaths = ["{extra}"]\n')
    trust_config(ws, tmp_path / "s")  # a folder's paths outside it count only once trusted; then still refused
    line = one_line_error(cli(ws, tmp_path / "s", "index"))
    assert "extraPaths" in line and "refused" in line


def test_size_limit_is_configurable_and_warned(ws: Path, tmp_path: Path) -> None:
    write(ws, "memory/big.md", "platypus " * 3000)
    (ws / "mdrecall.toml").write_text('provider = "none"\nmaxFileBytes = 10000\n')
    result = cli(ws, tmp_path / "s", "index")
    assert result.exit_code == 0 and "memory/big.md" in result.stderr and "too large" in result.stderr
    assert json.loads(cli(ws, tmp_path / "s", "search", "platypus", "--json").stdout) == []
    (ws / "mdrecall.toml").write_text('provider = "none"\n')  # default 10 MB: indexed
    assert cli(ws, tmp_path / "s", "index", "--force").exit_code == 0
    assert json.loads(cli(ws, tmp_path / "s", "search", "platypus", "--json").stdout)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig", "utf-32"])
def test_bom_encoded_files_are_decoded(ws: Path, tmp_path: Path, encoding: str) -> None:
    text = "# Notes\n\nThe narwhal café meeting is on Tuesday.\n"
    raw = text.encode(encoding)
    if encoding == "utf-16-be":
        raw = b"\xfe\xff" + raw
    (ws / "memory" / "enc.md").write_bytes(raw)
    result = cli(ws, tmp_path / "s", "index")
    assert result.exit_code == 0 and "enc.md" not in result.stderr, result.output
    found = json.loads(cli(ws, tmp_path / "s", "search", "narwhal", "--json").stdout)
    assert found[0]["path"] == "memory/enc.md" and "café" in found[0]["snippet"]
    assert json.loads(cli(ws, tmp_path / "s", "get", "memory/enc.md", "--from", "3", "--json").stdout)["text"] == (
        "The narwhal café meeting is on Tuesday."
    )


def test_cr_only_line_endings_split_and_end_line_within_file(ws: Path, tmp_path: Path) -> None:
    (ws / "mdrecall.toml").write_text('provider = "none"\n[chunking]\ntokens = 8\noverlap = 0\n')
    body = "".join(f"line {i} ibex{i}\r" for i in range(1, 41))
    (ws / "memory" / "mac.md").write_bytes(body.encode())
    write(ws, "memory/trailing.md", "alpha\nbeta gazelle\n")
    assert cli(ws, tmp_path / "s", "index").exit_code == 0
    hit = json.loads(cli(ws, tmp_path / "s", "search", "ibex30", "--json").stdout)[0]
    assert hit["path"] == "memory/mac.md" and hit["startLine"] <= 30 <= hit["endLine"] < 40
    got = json.loads(cli(ws, tmp_path / "s", "get", "memory/mac.md", "--from", "30", "--lines", "1", "--json").stdout)
    assert got["text"] == "line 30 ibex30"
    hits = json.loads(cli(ws, tmp_path / "s", "search", "gazelle", "--json").stdout)
    assert hits[0]["path"] == "memory/trailing.md" and hits[0]["endLine"] == 2  # the file has 2 lines


def test_query_after_double_dash_is_not_an_option(ws: Path, tmp_path: Path) -> None:
    write(ws, "memory/flags.md", "run it with --dry-run first\n")
    result = cli(ws, tmp_path / "s", "search", "--json", "--", "--dry-run")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["path"] == "memory/flags.md"


def test_openclaw_config_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.json"
    config.write_bytes(b'{"agents": {"defaults": {"workspace": "caf\xe9"}}}')
    result = runner.invoke(app, ["--openclaw", "--config", str(config), "status"])
    line = one_line_error(result)
    assert "not UTF-8" in line and "openclaw.json" in line
