"""`--json` is for scripts: stdout holds one JSON document whatever happens. A failure is `{"error": ...}` on
stdout as well as its one line on stderr and exit code 1; without --json stdout stays empty on failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import trust_config, write

ENTRY = "import sys; from mdrecall.cli.fast import main; sys.argv[0] = 'mdrecall'; main()"  # the console script


def mdrecall(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )


def one_error(result: subprocess.CompletedProcess, needle: str) -> str:
    """The error of a failed --json run: exit 1, one line on stderr, the same message as JSON on stdout."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error: ")
    answer = json.loads(result.stdout)
    assert set(answer) == {"error"} and needle in answer["error"]
    assert result.stderr.strip() == f"error: {answer['error']}"
    return answer["error"]


@pytest.fixture
def kw(workspace: Path) -> Path:
    write(workspace, "mdrecall.toml", 'provider = "none"\n')
    return workspace


@pytest.mark.parametrize("command", [["search", "deploy"], ["status"], ["index"], ["get", "MEMORY.md"]])
def test_a_missing_workspace_is_json_on_stdout(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nowhere"
    result = mdrecall("--workspace", str(missing), "--state-dir", str(tmp_path / "s"), *command, "--json")
    one_error(result, f"workspace not found: {missing}")


def test_bad_config_refused_path_and_usage_mistakes_are_json(kw: Path, tmp_path: Path) -> None:
    base = ["--workspace", str(kw), "--state-dir", str(tmp_path / "s")]
    one_error(mdrecall(*base, "get", "/etc/passwd", "--json"), "path refused")
    one_error(mdrecall(*base, "search", "x", "-n", "0", "--json"), "--max-results")
    one_error(mdrecall(*base, "trust", "--revoke", "--json"), "is not trusted")
    write(kw, "mdrecall.toml", "provider = \n[[[")
    one_error(mdrecall(*base, "status", "--json"), "not valid TOML")
    write(kw, "mdrecall.toml", "[query]\nmaxResults = 'six'\n")
    one_error(mdrecall(*base, "search", "deploy", "--json"), "query.maxResults")


def test_a_config_value_of_the_wrong_type_is_one_line_not_a_coercion(kw: Path, tmp_path: Path) -> None:
    base = ["--workspace", str(kw), "--state-dir", str(tmp_path / "s")]
    write(kw, "mdrecall.toml", 'provider = "none"\n[query]\nmaxResults = true\n')
    one_error(mdrecall(*base, "search", "deploy", "--json"), "query.maxResults: expected an integer, got true")
    write(kw, "mdrecall.toml", 'provider = "none"\nenabled = "yes"\n')
    result = mdrecall(*base, "status")
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f'error: invalid config {kw / "mdrecall.toml"}: enabled: expected true or false, got "yes" (a string)'
    ]


def test_trusting_a_path_that_does_not_exist_says_so(tmp_path: Path) -> None:
    state = ["--state-dir", str(tmp_path / "s")]
    missing = tmp_path / "nowhere"
    result = mdrecall(*state, "trust", str(missing))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: {missing} does not exist"]
    one_error(mdrecall(*state, "trust", str(missing / "mdrecall.toml"), "--json"), f"{missing}/mdrecall.toml does not")
    (tmp_path / "empty").mkdir()  # a folder that exists but holds no config: that is what the error says
    one_error(mdrecall(*state, "trust", str(tmp_path / "empty"), "--json"), "no mdrecall.toml to trust")
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").rglob("*trust*"))


def test_without_json_a_failure_leaves_stdout_empty_and_a_query_named_json_is_a_query(kw: Path, tmp_path: Path) -> None:
    base = ["--workspace", str(kw), "--state-dir", str(tmp_path / "s")]
    result = mdrecall(*base, "get", "/etc/passwd")
    assert result.returncode == 1 and result.stdout == "" and "path refused" in result.stderr
    literal = mdrecall(*base, "search", "--", "--json")  # after `--`, --json is the query
    assert literal.returncode == 0 and literal.stdout.startswith("no results for '--json'")


def test_a_printed_answer_is_not_followed_by_a_second_document(kw: Path, tmp_path: Path) -> None:
    """`status --deep --json` with a failed probe prints the status (with the probe) and exits 1: one document."""
    write(kw, "mdrecall.toml", 'provider = "openai"\n[remote]\nbaseUrl = "http://127.0.0.1:9/v1"\n')

    trust_config(kw, tmp_path / "s")
    env_key = {"OPENAI_API_KEY": "sk-test"}
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "--workspace", str(kw), "--state-dir", str(tmp_path / "s"), "status"]
        + ["--deep", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env_key},
    )
    assert result.returncode == 1
    status = json.loads(result.stdout)  # one document: raises on a second one
    assert status["probe"]["embeddings"]["ok"] is False


def test_an_empty_fact_recall_is_refused_like_an_empty_search(kw: Path, tmp_path: Path) -> None:
    result = mdrecall("--workspace", str(kw), "--state-dir", str(tmp_path / "s"), "facts", "recall", "  ", "--json")
    one_error(result, "the query is empty")
