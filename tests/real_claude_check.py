"""mdrecall under the real Claude Code CLI (`make test-claude` installs npm @anthropic-ai/claude-code into
.claude-real/ and runs this; `@openai/codex` goes there too, for the Codex check at the end).

Not collected by `make test` (the file name does not start with test_): each `claude -p` takes ~10 s.
Codex (`codex exec`) runs offline the same way, against a fake OpenAI Responses API
(tests/fake_openai_responses.py), once its hooks are trusted as a user would in Codex's /hooks review.
Everything runs offline: a temporary HOME, a fake Anthropic Messages API on 127.0.0.1 (tests/
fake_anthropic_server.py) that records what the model would receive, and a code repository (a temp git repo)
as the folder Claude Code runs in. What is checked:

- `mdrecall install claude-code` puts the server where Claude Code reads it: `claude mcp list` shows it
  connected;
- `claude -p` from the repository: the UserPromptSubmit hook's injection in the request holds the right
  memory and no unrelated one; the statement to remember is captured into the workspace's facts.md; the
  repository is left exactly as it was (no file created, changed or untracked);
- installed without a workspace, the hooks keep memory in the default memory home, not in the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_anthropic_server import FakeAnthropic
from fake_openai_responses import FakeResponses

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("MDRECALL_REAL_AGENTS", ROOT / ".claude-real"))
CLAUDE = REAL / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
CODEX_JS = REAL / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"

TABS = "I always use tabs for indentation in Python code."
DENTIST = "My dentist appointment is on Friday at 3pm."
CAT = "Our cat Miso only eats salmon-flavoured food."
PROMPT = (
    "Which indentation style should I use for this Python file? Also, I prefer pytest over unittest in every project."
)
UPS_MARKER = "UserPromptSubmit hook additional context:"


def _files(root: Path) -> dict[str, float]:
    """Every file under root (including ignored and hidden ones) with its mtime, .git's internals aside."""
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        out[rel.as_posix()] = path.stat().st_mtime
    return out


def _mdrecall(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mdrecall.cli", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[dict[str, object]]:
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code not installed at {CLAUDE}: run `make test-claude`")
    home, repo, state = tmp_path / "home", tmp_path / "repo", tmp_path / "st"
    home.mkdir()
    repo.mkdir()
    (repo / "app.py").write_text("def main():\n    return 1\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    api = FakeAnthropic(reply="Use tabs. Noted.").start()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-a-local-server",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "MDRECALL_STATE_DIR": str(state),  # only what install records may matter: see the assertions
    }
    yield {"home": home, "repo": repo, "state": state, "api": api, "env": env, "tmp": tmp_path}
    api.stop()


def _claude(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLAUDE), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=240)


def _injection(api: FakeAnthropic) -> str:
    """The UserPromptSubmit hook's block in the last request the model received."""
    assert api.requests, f"the fake API received no request (paths: {api.paths})"
    text = json.dumps(api.requests[-1], ensure_ascii=False)
    start = text.find(UPS_MARKER)
    assert start >= 0, "no UserPromptSubmit injection in the request"
    end = text.find("</relevant-memories>", start)
    assert end > start
    return json.loads(f'"{text[start:end]}"')  # undo the JSON escaping of the excerpt


def test_claude_code_with_a_workspace(sandbox: dict[str, object]) -> None:
    env, repo, state = sandbox["env"], sandbox["repo"], sandbox["state"]
    assert isinstance(env, dict) and isinstance(repo, Path) and isinstance(state, Path)
    ws = Path(str(sandbox["tmp"])) / "notes"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe billing service runs on Postgres.\n")
    for fact in (TABS, DENTIST, CAT):
        done = _mdrecall(["--workspace", str(ws), "--state-dir", str(state), "facts", "store", fact], env, ws)
        assert done.returncode == 0, done.stderr
    done = _mdrecall(["--workspace", str(ws), "--state-dir", str(state), "install", "claude-code"], env, repo)
    assert done.returncode == 0, done.stderr
    home = Path(env["HOME"])
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["mdrecall"]
    assert server["args"][server["args"].index("--workspace") + 1] == str(ws.resolve())

    listed = _claude(["mcp", "list"], env, repo)
    assert listed.returncode == 0, listed.stderr
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("mdrecall:")), "")
    assert "Connected" in line, listed.stdout

    before = _files(repo)
    env_without_state = {k: v for k, v in env.items() if k != "MDRECALL_STATE_DIR"}  # the hooks carry --state-dir
    run = _claude(["-p", PROMPT, "--debug"], env_without_state, repo)  # log: ~/.claude/debug
    assert run.returncode == 0, run.stderr + run.stdout
    injected = _injection(sandbox["api"])  # type: ignore[arg-type]
    assert "tabs for indentation" in injected
    assert "dentist" not in injected and "Miso" not in injected, injected

    facts = (ws / "memory" / "facts.md").read_text()
    assert "I prefer pytest over unittest in every project." in facts
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True)
    assert status.stdout == "", status.stdout
    assert _files(repo) == before
    assert not (repo / "memory").exists() and not (repo / "MEMORY.md").exists()


def test_claude_code_without_a_workspace_uses_the_memory_home(sandbox: dict[str, object]) -> None:
    env, repo, state = sandbox["env"], sandbox["repo"], sandbox["state"]
    assert isinstance(env, dict) and isinstance(repo, Path) and isinstance(state, Path)
    done = _mdrecall(["--state-dir", str(state), "install", "claude-code"], env, repo)
    assert done.returncode == 0, done.stderr
    home_ws = state / "workspace"
    assert "default memory home" in done.stdout and str(home_ws) in done.stdout
    before = _files(repo)
    run = _claude(["-p", "Please note that our release train leaves every second Tuesday."], env, repo)
    assert run.returncode == 0, run.stderr + run.stdout
    assert "second Tuesday" in (home_ws / "memory" / "facts.md").read_text()
    assert _files(repo) == before
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True)
    assert status.stdout == ""
    # the session-memory file of SessionEnd went to the memory home too
    assert [p for p in (home_ws / "memory").glob("*.md") if p.name != "facts.md"]


def _codex_bin() -> Path | None:
    base = REAL / "node_modules" / "@openai"
    found = sorted(base.glob("codex-*/vendor/*/bin/codex"))
    return found[0] if found else None


def test_codex_registers_the_server(sandbox: dict[str, object]) -> None:
    """`install codex` writes config.toml and hooks.json that the real Codex CLI reads (`codex mcp list`)."""
    codex = _codex_bin()
    if codex is None:
        pytest.fail(f"Codex not installed under {REAL}: run `make test-claude`")
    env, repo, state = sandbox["env"], sandbox["repo"], sandbox["state"]
    assert isinstance(env, dict) and isinstance(repo, Path) and isinstance(state, Path)
    ws = Path(str(sandbox["tmp"])) / "notes"
    (ws / "memory").mkdir(parents=True)
    done = _mdrecall(["--workspace", str(ws), "--state-dir", str(state), "install", "codex"], env, repo)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [str(codex), "mcp", "list", "--json"], env=env, cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    servers = {s["name"]: s for s in json.loads(listed.stdout)}
    assert "mdrecall" in servers, listed.stdout
    transport = servers["mdrecall"]["transport"]
    assert transport["command"] == sys.executable and transport["args"][-1] == "mcp"
    assert re.search(r"--workspace", " ".join(transport["args"]))


def _trust_codex_hooks(codex_home: Path) -> None:
    """What a user does once in Codex's /hooks review: record each hook's trusted hash in config.toml.

    Codex trusts an unmanaged hook when `hooks.state."<file>:<event>:<group>:<handler>".trusted_hash` equals
    `sha256:` + SHA-256 of the compact, key-sorted JSON of its normalized declaration."""
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    lines = []
    for event, groups in hooks.items():
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()
        for gi, group in enumerate(groups):
            for hi, hook in enumerate(group["hooks"]):
                handler = {"async": False, "command": hook["command"], "timeout": hook["timeout"], "type": "command"}
                identity: dict[str, object] = {"event_name": snake, "hooks": [handler]}
                if "matcher" in group:
                    identity["matcher"] = group["matcher"]
                canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                digest = hashlib.sha256(canonical.encode()).hexdigest()
                key = f"{codex_home / 'hooks.json'}:{snake}:{gi}:{hi}"
                lines.append(f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "sha256:{digest}"\n')
    with (codex_home / "config.toml").open("a") as handle:
        handle.write("\n" + "\n".join(lines))


def test_codex_exec_runs_the_hooks(sandbox: dict[str, object]) -> None:
    """`codex exec` from a repository, against a fake Responses API: recall injected, capture stored, repo clean."""
    codex = _codex_bin()
    if codex is None:
        pytest.fail(f"Codex not installed under {REAL}: run `make test-claude`")
    env, repo, state = sandbox["env"], sandbox["repo"], sandbox["state"]
    assert isinstance(env, dict) and isinstance(repo, Path) and isinstance(state, Path)
    ws = Path(str(sandbox["tmp"])) / "notes"
    (ws / "memory").mkdir(parents=True)
    for fact in (TABS, DENTIST, CAT):
        done = _mdrecall(["--workspace", str(ws), "--state-dir", str(state), "facts", "store", fact], env, ws)
        assert done.returncode == 0, done.stderr
    api = FakeResponses(reply="Use tabs. Noted.").start()
    try:
        codex_home = Path(env["HOME"]) / ".codex"
        codex_home.mkdir()
        provider = (
            'model = "fake-model"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{api.url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n'
        )
        (codex_home / "config.toml").write_text(provider)
        done = _mdrecall(["--workspace", str(ws), "--state-dir", str(state), "install", "codex"], env, repo)
        assert done.returncode == 0, done.stderr
        _trust_codex_hooks(codex_home)
        before = _files(repo)
        run = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", PROMPT],
            env={**env, "FAKE_OPENAI_KEY": "sk-fake"},
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert "hook: UserPromptSubmit Completed" in run.stderr, run.stderr[-2000:]
        assert api.requests, api.paths
        text = json.dumps(api.requests[-1], ensure_ascii=False)
        blocks = re.findall(r"<relevant-memories>(.*?)</relevant-memories>", text)
        recalled = [b for b in blocks if "(score " in b]  # UserPromptSubmit's block; SessionStart's has no scores
        assert recalled and "tabs for indentation" in recalled[-1]
        assert "dentist" not in recalled[-1] and "Miso" not in recalled[-1], recalled[-1]
    finally:
        api.stop()
    assert "I prefer pytest over unittest in every project." in (ws / "memory" / "facts.md").read_text()
    assert _files(repo) == before
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True)
    assert status.stdout == ""
