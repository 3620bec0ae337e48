"""Files and folders mdrecall creates are user-only (0600 / 0700) whatever the umask; `install` keeps a settings
file's mode and gives its backup the same one."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from facts_fixtures import hashing_provider, make_settings  # noqa: F401
from mdrecall.cli.app import app

# An open umask: what mdrecall creates must still be user-only.
LOOSE_UMASK = 0o000


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(LOOSE_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def assert_private_tree(root: Path) -> None:
    """Every folder below `root` (and root) 0700, every file 0600."""
    assert mode(root) == 0o700, (root, oct(mode(root)))
    for path in root.rglob("*"):
        if path.is_symlink():
            continue
        want = 0o700 if path.is_dir() else 0o600
        assert mode(path) == want, (path, oct(mode(path)))


def cli(state: Path, *args: str, stdin: str = ""):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["--state-dir", str(state), *args], input=stdin)


def test_state_dir_and_index_files_are_user_only(tmp_path: Path, loose_umask: None) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "notes.md").write_text("# Notes\n\nThe gateway runs on the Mac Studio.\n")
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    state = tmp_path / "state"
    for args in (["index"], ["index", "--force"]):  # the first build, then a full rebuild through a temp index
        done = cli(state, "--workspace", str(ws), *args)
        assert done.exit_code == 0, done.stderr
    done = cli(state, "--workspace", str(ws), "search", "gateway")
    assert done.exit_code == 0 and "Mac Studio" in done.stdout
    index_files = list((state / "memory").iterdir())
    assert any(p.name.endswith(".sqlite") for p in index_files)
    assert_private_tree(state)


def test_an_existing_state_dir_keeps_its_mode_but_new_files_are_private(tmp_path: Path, loose_umask: None) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\nDana prefers metric units.\n")
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)  # the user's own folder: mdrecall does not change it
    assert cli(state, "--workspace", str(ws), "index").exit_code == 0
    assert mode(state) == 0o755
    assert_private_tree(state / "memory")


def test_fact_store_facts_md_and_hook_state_are_user_only(
    tmp_path: Path,
    loose_umask: None,
    hashing_provider,  # noqa: F811
) -> None:
    pytest.importorskip("lancedb")
    from mdrecall.agents.hooks import HookRunner

    ws, state = tmp_path / "ws", tmp_path / "state"
    settings = make_settings(ws, state)
    transcript = tmp_path / "t.jsonl"
    said = "From now on, release notes go in CHANGELOG.md, not the wiki."
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": said}}) + "\n")
    runner = HookRunner(settings, hashing_provider)
    try:
        runner.run("Stop", {"session_id": "s1", "cwd": str(ws), "transcript_path": str(transcript)})
        assert [f.text for f in runner.store.list()] == [said]
    finally:
        runner.close()
    facts_md = ws / "memory" / "facts.md"
    assert facts_md.is_file() and mode(facts_md) == 0o600
    assert mode(ws / "memory") == 0o700  # created by mdrecall
    assert_private_tree(state)


def test_a_users_own_facts_md_mode_is_kept(tmp_path: Path, loose_umask: None, hashing_provider) -> None:  # noqa: F811
    pytest.importorskip("lancedb")
    from mdrecall.facts.store import FactStore

    ws, state = tmp_path / "ws", tmp_path / "state"
    settings = make_settings(ws, state)
    with FactStore(settings, hashing_provider) as store:
        store.store("Dana prefers metric units.")
    facts_md = ws / "memory" / "facts.md"
    os.chmod(facts_md, 0o640)  # the user chose this mode: rewriting the file keeps it
    with FactStore(settings, hashing_provider) as store:
        store.store("The gateway runs on the Mac Studio.")
        [first] = [f for f in store.list() if f.text.startswith("Dana")]
        store.forget(first.id)
    assert "Dana" not in facts_md.read_text() and mode(facts_md) == 0o640


def test_session_memory_file_is_user_only(tmp_path: Path, loose_umask: None) -> None:
    from mdrecall.agents.session_hook import save_session_memory

    ws = tmp_path / "ws"
    ws.mkdir()
    transcript = [{"role": "user", "content": "We moved the standup to 9:30."}]
    path = save_session_memory(ws, transcript, session_id="s1", now=datetime(2026, 11, 25, 10, 0).astimezone())
    assert path is not None and mode(path) == 0o600 and mode(ws / "memory") == 0o700


@pytest.mark.parametrize("start_mode", [0o600, 0o644])
def test_install_keeps_the_settings_files_mode_and_its_backup_has_it_too(
    tmp_path: Path, loose_umask: None, start_mode: int
) -> None:
    settings_file = tmp_path / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps({"env": {"ANTHROPIC_API_KEY": "sk-ant-secret"}}))
    os.chmod(settings_file, start_mode)
    done = cli(tmp_path / "state", "install", "claude-code", "--settings", str(settings_file))
    assert done.exit_code == 0, done.stderr
    assert mode(settings_file) == start_mode
    [backup] = list(settings_file.parent.glob("settings.json.bak-*"))
    assert mode(backup) == start_mode
    assert json.loads(settings_file.read_text())["env"] == {"ANTHROPIC_API_KEY": "sk-ant-secret"}


def test_install_creates_a_new_settings_file_user_only(tmp_path: Path, loose_umask: None) -> None:
    settings_file = tmp_path / "new" / "settings.json"
    mcp_file = tmp_path / "proj" / ".mcp.json"
    mcp_file.parent.mkdir()
    done = cli(
        tmp_path / "state", "install", "claude-code", "--settings", str(settings_file), "--mcp-file", str(mcp_file)
    )
    assert done.exit_code == 0, done.stderr
    assert mode(settings_file) == 0o600 and mode(mcp_file) == 0o600
