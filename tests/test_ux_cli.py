"""What a new user meets on the command line: the index belongs to its workspace, output a person and a script
can trust, one-line failures with exit code 1, `--version`, `--json` everywhere, `auto` saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fake_embedding_server import FakeEmbeddingServer
from mdrecall import __version__
from mdrecall.cli.app import app
from mdrecall.retrieval.results import merge_overlapping_results as merge_overlapping
from mdrecall.retrieval.search import SearchResult

from .conftest import trust_config, write

runner = CliRunner()
KEYWORD_ONLY = 'provider = "none"\n'


def run(ws: Path, state: Path, *args: str, **kwargs):
    return runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), *args], **kwargs)


def mdrecall(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real console entry point in a child process, its output piped (not a terminal)."""
    code = "import sys; from mdrecall.cli.app import main; sys.argv[0] = 'mdrecall'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def kw(workspace: Path) -> Path:
    write(workspace, "mdrecall.toml", KEYWORD_ONLY)
    return workspace


# -- the index belongs to a workspace --------------------------------------------------------------------------


def test_another_folder_never_touches_the_index(kw: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert run(kw, state, "index").exit_code == 0
    other = tmp_path / "elsewhere"
    other.mkdir()
    result = run(other, state, "search", "a828e60")
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0  # one line
    assert "no MEMORY.md or memory/ found in" in result.stderr and str(other.resolve()) in result.stderr
    assert run(other, state, "index").exit_code == 1
    # the first workspace's index is intact: same file, same three notes, nothing resynced
    status = json.loads(run(kw, state, "status", "--json").stdout)
    assert status["files"] == 3 and status["dirty"] is False
    assert Path(status["dbPath"]).name.startswith("main-ws-")


def test_two_workspaces_get_two_indexes(kw: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    second = tmp_path / "second"
    write(second, "mdrecall.toml", KEYWORD_ONLY)
    write(second, "MEMORY.md", "The second workspace keeps the zeppelin notes.\n")
    first_db = json.loads(run(kw, state, "status", "--json").stdout)["dbPath"]
    second_db = json.loads(run(second, state, "status", "--json").stdout)["dbPath"]
    assert first_db != second_db
    assert json.loads(run(second, state, "search", "zeppelin", "--json").stdout)[0]["path"] == "MEMORY.md"
    assert json.loads(run(kw, state, "search", "zeppelin", "--json").stdout) == []


def test_an_index_file_shared_by_two_workspaces_is_refused_with_its_owner(kw: Path, tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite"
    assert run(kw, tmp_path / "s", "--db", str(db), "index").exit_code == 0
    second = tmp_path / "second"
    write(second, "MEMORY.md", "Other notes.\n")
    write(second, "mdrecall.toml", KEYWORD_ONLY)
    result = runner.invoke(app, ["--workspace", str(second), "--db", str(db), "search", "notes"])
    assert result.exit_code == 1
    assert f"belongs to workspace {kw.resolve()}" in result.stderr and "--workspace" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert json.loads(run(kw, tmp_path / "s", "--db", str(db), "status", "--json").stdout)["files"] == 3


def test_status_in_an_empty_workspace_says_where_it_looked(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run(empty, tmp_path / "s", "status")
    assert result.exit_code == 0
    assert "no MEMORY.md or memory/ found in" in result.stderr


# -- version, help ------------------------------------------------------------------------------------------


def test_version() -> None:
    result = mdrecall("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"mdrecall {__version__}"


def test_help_has_no_placeholders_for_flags() -> None:
    for command in ([], ["search"], ["status"], ["index"], ["mcp"], ["watch"], ["get"]):
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0, result.output
        assert "<bool>" not in result.stdout
    assert "--json" in runner.invoke(app, ["status", "--help"]).stdout


# -- output a person and a script can trust ---------------------------------------------------------------------


def test_markup_never_eats_text_and_piped_output_is_not_wrapped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY)
    long_line = "The [mcp] and [openai] sections stay [bold]literal[/bold] " + "padding " * 40 + "end-of-line-marker"
    write(ws, "MEMORY.md", f"# Notes\n\n{long_line}\n")
    result = mdrecall("--workspace", str(ws), "--state-dir", str(tmp_path / "s"), "search", "literal sections")
    assert result.returncode == 0, result.stderr
    assert "[mcp]" in result.stdout and "[openai]" in result.stdout and "[bold]literal[/bold]" in result.stdout
    shown = [line for line in result.stdout.splitlines() if "[mcp]" in line]
    assert len(shown) == 1 and shown[0].rstrip().endswith("end-of-line-marker")  # whole line, not wrapped at 80


def test_snippets_show_the_matched_line_whole(tmp_path: Path) -> None:
    """The demo's own case: an identifier deep inside a chunk was hidden by a ~300-character display cut."""
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY)
    filler = "\n".join(f"- routine note number {i} about nothing in particular" for i in range(7))
    write(ws, "memory/2026-11-09.md", f"# 2026-11-09\n\n{filler}\n- The deploy fix landed in c0ffee7 after review.\n")
    result = run(ws, tmp_path / "s", "search", "c0ffee7")
    assert result.exit_code == 0
    assert "- The deploy fix landed in c0ffee7 after review." in result.stdout


def test_overlapping_hits_of_one_file_are_merged() -> None:
    def hit(start: int, end: int, score: float, path: str = "memory/a.md") -> SearchResult:
        text = "\n".join(f"line {n}" for n in range(start, end + 1))
        return SearchResult(path, start, end, score, text, "memory")

    merged = merge_overlapping([hit(5, 9, 0.9), hit(1, 6, 0.7), hit(20, 22, 0.5), hit(8, 12, 0.4, "memory/b.md")])
    assert [(m.path, m.start_line, m.end_line) for m in merged] == [
        ("memory/a.md", 1, 9),
        ("memory/a.md", 20, 22),
        ("memory/b.md", 8, 12),
    ]
    assert merged[0].score == 0.9
    assert merged[0].snippet == "\n".join(f"line {n}" for n in range(1, 10))


def test_search_never_shows_two_overlapping_hits_of_one_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY + "[chunking]\ntokens = 40\noverlap = 20\n")
    lines = [f"- kestrel sighting {i}: the kestrel hovered over field {i}" for i in range(12)]
    write(ws, "memory/birds.md", "# Birds\n\n" + "\n".join(lines) + "\n")
    data = json.loads(run(ws, tmp_path / "s", "search", "kestrel", "--json", "-n", "10").stdout)
    assert data
    spans = sorted((d["startLine"], d["endLine"]) for d in data if d["path"] == "memory/birds.md")
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start > end, spans


# -- exit codes -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_exits_1_with_one_line(kw: Path, tmp_path: Path, query: str) -> None:
    result = run(kw, tmp_path / "s", "search", query)
    assert result.exit_code == 1
    assert "query is empty" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_usage_mistakes_exit_1_with_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """The console entry point (`main`), in-process: click's usage errors become one line and exit code 1."""
    from mdrecall.cli.app import main

    for args in (["search"], ["bogus"], ["search", "x", "--max-results", "many"]):
        monkeypatch.setattr(sys, "argv", ["mdrecall", *args])
        with pytest.raises(SystemExit) as exit_info:
            main()
        assert exit_info.value.code == 1, args
        stderr = capsys.readouterr().err
        assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
        assert stderr.startswith("error: ") and "--help" in stderr


def test_auto_says_what_it_picked_and_a_failed_deep_probe_exits_1(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeEmbeddingServer() as server:
        # a base URL of the user's choice (trusted), which OPENAI_API_KEY may go to because apiKeyEnv says so
        toml = f'provider = "auto"\n[remote]\nbaseUrl = "{server.openai_base}"\napiKeyEnv = "OPENAI_API_KEY"\n'
        write(workspace, "mdrecall.toml", toml)
        trust_config(workspace, tmp_path / "s")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        status = json.loads(run(workspace, tmp_path / "s", "status", "--deep", "--json").stdout)
        assert status["provider"] == "openai" and status["requestedProvider"] == "auto"
        assert "API key for openai" in status["providerReason"]
        assert status["probe"]["embeddings"]["ok"] is True
        table = run(workspace, tmp_path / "s", "status")
        assert "picked because" in table.stdout and "API key for openai" in table.stdout
    result = run(workspace, tmp_path / "s", "status", "--deep")  # the server is gone
    assert result.exit_code == 1
    assert "probe failed" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_keyword_only_by_choice_is_not_a_failed_probe(kw: Path, tmp_path: Path) -> None:
    result = run(kw, tmp_path / "s", "status", "--deep", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["probe"]["embeddings"]["skipped"] is True


# -- status --index / --verbose, --json everywhere ---------------------------------------------------------------


def test_status_reports_a_stale_index_and_index_flag_syncs_it(kw: Path, tmp_path: Path) -> None:
    state = tmp_path / "s"
    assert run(kw, state, "index").exit_code == 0
    write(kw, "memory/2026-11-04.md", "New note.\n")
    stale = json.loads(run(kw, state, "status", "--json", "--verbose").stdout)
    assert stale["dirty"] is True and stale["dirtyFiles"] == ["memory/2026-11-04.md"]
    verbose = run(kw, state, "status", "--verbose")
    assert "changed files" in verbose.stdout and "memory/2026-11-04.md" in verbose.stdout
    fresh = json.loads(run(kw, state, "status", "--index", "--json").stdout)
    assert fresh["dirty"] is False and fresh["files"] == 4


def test_index_verbose_names_each_file(kw: Path, tmp_path: Path) -> None:
    result = run(kw, tmp_path / "s", "index", "--verbose")
    assert result.exit_code == 0
    assert "MEMORY.md" in result.stderr and "memory/topics/infra.md" in result.stderr


def test_json_on_every_command(kw: Path, tmp_path: Path) -> None:
    state = tmp_path / "s"
    assert json.loads(run(kw, state, "index", "--json").stdout)["filesIndexed"] == 3
    assert json.loads(run(kw, state, "search", "a828e60", "--json").stdout)[0]["path"] == "MEMORY.md"
    assert json.loads(run(kw, state, "get", "MEMORY.md", "--json").stdout)["path"] == "MEMORY.md"
    assert json.loads(run(kw, state, "status", "--json").stdout)["files"] == 3
    code = "import sys; from mdrecall.cli.app import main; main()"
    args = ["--workspace", str(kw), "--state-dir", str(state), "watch", "--json", "--debounce-ms", "50"]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["reason"] == "watch-start"
        time.sleep(0.5)
        write(kw, "memory/2026-11-05.md", "Watched note.\n")
        second = json.loads(proc.stdout.readline())
        assert second["filesIndexed"] == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_piped_status_is_one_unwrapped_line_per_row(tmp_path: Path) -> None:
    ws = tmp_path / ("a-rather-long-folder-name-for-the-agent-notes-" * 3) / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY)
    write(ws, "MEMORY.md", "Note.\n")
    result = run(ws, tmp_path / "s", "status")
    assert result.exit_code == 0
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("workspace")]
    assert line.split(None, 1)[1] == str(ws.resolve())


def test_a_windowed_snippet_is_shown_as_whole_lines(tmp_path: Path) -> None:
    """A chunk longer than the 700-character snippet: the window starts mid-line; the CLI shows whole lines."""
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY)
    filler = [f"- routine note number {i} about nothing in particular at all" for i in range(20)]
    lines = ["# 2026-11-09", "", *filler, "- The deploy fix landed in c0ffee7 after review."]
    write(ws, "memory/2026-11-09.md", "\n".join(lines) + "\n")
    result = run(ws, tmp_path / "s", "search", "c0ffee7")
    assert result.exit_code == 0
    shown = [line.strip() for line in result.stdout.splitlines() if line.startswith("   ")]
    assert shown and shown[-1] == lines[-1]
    assert all(line in lines for line in shown), shown


# -- progress without a terminal ---------------------------------------------------------------------------------


def test_index_without_a_terminal_logs_progress_lines(tmp_path: Path, monkeypatch) -> None:
    from mdrecall.cli import app as cli

    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY)
    for day in range(1, 13):
        write(ws, f"memory/2026-01-{day:02d}.md", f"# Day {day}\n\n" + "- the rollout went fine\n" * 120)
    monkeypatch.setattr(cli, "LOG_PROGRESS_EVERY_SECONDS", 0.0)  # a line at every step instead of every 15 s
    result = run(ws, tmp_path / "s", "index")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("indexing: ")]
    assert lines and all("chunks (" in line and "eta " in line for line in lines)
    done_total = [tuple(map(int, line.split()[1].split("/"))) for line in lines]
    assert all(done < total for done, total in done_total) and done_total == sorted(done_total)
    quiet = run(ws, tmp_path / "s2", "index", "--quiet")
    assert quiet.exit_code == 0 and "indexing: " not in quiet.stderr


def test_progress_line_reads_like_a_person_wrote_it() -> None:
    from mdrecall.cli.app import _progress_line

    assert _progress_line(0, 200, 0.0) == "indexing: 0/200 chunks (0%)"
    assert _progress_line(50, 200, 10.0) == "indexing: 50/200 chunks (25%), 5 chunks/s, eta 30s"
    assert _progress_line(1200, 16669, 26.7).endswith("45 chunks/s, eta 5m44s")
    assert _progress_line(10, 100_000, 10.0).endswith("eta 27h46m")


def test_the_snippet_shows_the_lines_holding_the_query_words_best(tmp_path: Path) -> None:
    """A query word also sits at the top of the chunk, but one line deep in it holds all of them: the snippet
    shows that line (not the first place a word appears)."""
    ws = tmp_path / "ws"
    write(ws, "mdrecall.toml", KEYWORD_ONLY)
    filler = [f"- routine note number {i} about nothing in particular at all" for i in range(20)]
    answer = "- The deploy fix for the billing export landed after review."
    lines = ["# 2026-11-09", "", "- deploy window moved to Tuesday.", *filler, answer, *filler[:3]]
    write(ws, "memory/2026-11-09.md", "\n".join(lines) + "\n")
    result = run(ws, tmp_path / "s", "search", "billing export deploy fix", "--json")
    assert result.exit_code == 0, result.output
    snippet = json.loads(result.stdout)[0]["snippet"]
    assert answer in snippet and "deploy window moved" not in snippet
