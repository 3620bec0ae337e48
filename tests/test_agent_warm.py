"""The warm path (mdrecall.agents.serve): a server keeps the index, model and fact store loaded and answers
hook and search requests over a private Unix socket; real `python -m mdrecall.cli` processes are answered by
it; without it the cold path imports only what the call needs."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from facts_fixtures import FIXTURES, hashing_provider, make_settings  # noqa: F401
from mdrecall.agents import serve
from mdrecall.agents.hooks import HookRunner
from mdrecall.backends.builtin import MemoryIndex


def _payload(name: str, cwd: Path, transcript: Path | str = "") -> dict[str, Any]:
    text = (FIXTURES / name).read_text().replace("__CWD__", str(cwd)).replace("__TRANSCRIPT__", str(transcript))
    return json.loads(text)


def _run(args: list[str], stdin: str = "", cwd: Path | None = None, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


@pytest.fixture
def warm(tmp_path: Path, hashing_provider) -> Iterator[tuple[serve.WarmServer, Any]]:  # noqa: F811
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "notes.md").write_text("# Notes\n\nThe billing service runs on Postgres 16.\n")
    settings = make_settings(ws, tmp_path / "st", {})
    index = MemoryIndex(settings, hashing_provider)
    server = serve.WarmServer(settings, index=index, log=lambda message: None)
    assert server.start(warm_up=False)
    yield server, settings
    server.stop()
    index.close()


def test_socket_is_private_and_served_by_one_process(warm: tuple[serve.WarmServer, Any]) -> None:
    server, settings = warm
    run_dir = server.path.parent
    assert run_dir == settings.state_dir / "run"
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(server.path.stat().st_mode) and stat.S_IMODE(server.path.stat().st_mode) == 0o600
    answer = serve.ping(server.identity)
    assert answer is not None and answer["pid"] == os.getpid()

    second = serve.WarmServer(settings, log=lambda message: None)
    assert second.start(warm_up=False) is False  # the first one holds the lock
    assert serve.ping(server.identity)["pid"] == os.getpid()

    left, right = socket.socketpair(socket.AF_UNIX)
    assert serve._peer_uid(left) == os.getuid()
    left.close()
    right.close()

    os.chmod(run_dir, 0o770)  # a directory others could write: the client will not trust its socket
    assert serve.ping(server.identity) is None
    os.chmod(run_dir, 0o700)

    other = {**server.identity, "workspace": "/somewhere/else"}
    assert server.handle({"op": "hook", "event": "Stop", "payload": {}, "identity": other})["fallback"] is True
    server.stop()
    assert not server.path.exists() and serve.ping(server.identity) is None


def test_real_hook_processes_are_answered_warm(warm: tuple[serve.WarmServer, Any], tmp_path: Path) -> None:
    server, settings = warm
    server.runner.store.store("We deploy the API on Fly.io in the Frankfurt region.", category="decision")
    base = ["-m", "mdrecall.cli", "--workspace", str(settings.workspace), "--state-dir", str(settings.state_dir)]
    repo = tmp_path / "repo"
    repo.mkdir()

    start = _run([*base, "hook", "SessionStart"], json.dumps(_payload("SessionStart.json", repo)))
    assert start.returncode == 0, start.stderr
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Fly.io in the Frankfurt region" in context
    assert server.served == 1  # answered by the server, not by a cold process

    payload = _payload("UserPromptSubmit.json", repo)
    prompt = _run([*base, "hook", "UserPromptSubmit"], json.dumps(payload))
    assert prompt.returncode == 0, prompt.stderr
    assert server.served == 2
    cold = HookRunner(settings, server.runner.store._provider_result).run("UserPromptSubmit", payload)
    assert prompt.stdout.strip() == cold.stdout.strip()  # the same answer as the cold path, same model

    found = _run([*base, "search", "billing Postgres", "--json"])
    assert found.returncode == 0, found.stderr
    assert server.served == 3
    results = json.loads(found.stdout)
    assert results and results[0]["path"] == "memory/notes.md"
    plain = _run([*base, "search", "billing Postgres"])
    assert "memory/notes.md:" in plain.stdout and "The billing service runs on Postgres 16." in plain.stdout
    assert server.served == 4
    assert not list(repo.iterdir())

    bad = _run([*base, "hook", "UserPromptSubmit"], "{not json")
    assert bad.returncode == 1 and bad.stderr.startswith("error: hook payload") and "Traceback" not in bad.stderr


def test_cold_hook_without_facts_imports_neither_lancedb_nor_numpy(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "notes.md").write_text("# Notes\n")
    payload = json.dumps(_payload("UserPromptSubmit.json", ws))
    args = ["-X", "importtime", "-m", "mdrecall.cli", "--workspace", str(ws), "--state-dir", str(tmp_path / "st")]
    done = _run([*args, "hook", "UserPromptSubmit"], payload)
    assert done.returncode == 0 and done.stdout == ""
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "mdrecall.agents.hooks" in imported  # the cold path ran
    for heavy in ("lancedb", "numpy", "pyarrow", "typer", "apsw", "mdrecall.facts.store"):
        assert heavy not in imported, heavy


BLOCK_LANCEDB = (
    "import sys; sys.modules['lancedb'] = None; sys.argv = ['mdrecall', *sys.argv[1:]]; "
    "from mdrecall.cli.fast import main; main()"
)


def test_without_the_facts_extra_hooks_say_so_and_still_work(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "st"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_transcript.jsonl").read_text())
    base = ["-c", BLOCK_LANCEDB, "--workspace", str(ws), "--state-dir", str(state), "hook"]
    start = _run([*base, "SessionStart"], json.dumps(_payload("SessionStart.json", ws, transcript)))
    assert start.returncode == 0, start.stderr
    assert start.stderr.strip() == (
        "mdrecall: no auto-recall or auto-capture: the fact store needs LanceDB: pip install 'mdrecall[facts]'"
    )
    stop = _run([*base, "Stop"], json.dumps(_payload("Stop.json", ws, transcript)))
    assert stop.returncode == 0, stop.stderr
    end = _run([*base, "SessionEnd"], json.dumps(_payload("SessionEnd.json", ws, transcript)))
    assert end.returncode == 0, end.stderr
    assert [p.name for p in (ws / "memory").glob("*.md")] != [] and not (ws / "memory" / "facts.md").exists()


def test_mdrecall_serve_answers_until_interrupted(tmp_path: Path) -> None:
    import signal
    import time

    ws, state = tmp_path / "ws", tmp_path / "st"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "notes.md").write_text("# Notes\n\nThe flamingo release ships on Thursday.\n")
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    base = [sys.executable, "-m", "mdrecall.cli", "--workspace", str(ws), "--state-dir", str(state)]
    server = subprocess.Popen([*base, "serve"], stderr=subprocess.PIPE, text=True)
    try:
        identity = serve.identity_for(ws, "main", state.resolve(), ws / "mdrecall.toml")
        deadline = time.monotonic() + 60
        while (answer := serve.ping(identity)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer is not None and answer["pid"] == server.pid
        second = _run(["-m", "mdrecall.cli", "--workspace", str(ws), "--state-dir", str(state), "serve"])
        assert second.returncode == 1 and "another process already serves" in second.stderr
        found = _run([*base[1:], "search", "flamingo", "--json"])
        assert found.returncode == 0 and json.loads(found.stdout)[0]["path"] == "memory/notes.md"
        assert serve.ping(identity)["served"] == 1
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0 and "stopping" in err
    assert not serve.socket_path(identity).exists()
