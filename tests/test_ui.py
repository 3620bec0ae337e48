"""`mdrecall ui`: the inspector's JSON endpoints over real backends, and its guard (token, Host, Origin, CSRF,
paths). The page itself is clicked through in a real browser by `make test-ui` (tests/ui_browser_check.py)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mdrecall.agents.hooks import HookRunner
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.facts.store import FactStore
from mdrecall.ui.inspector import Inspector
from mdrecall.ui.server import TOKEN_HEADER, build_app, cookie_name

from .conftest import HashingProvider, write
from .qmd_helpers import fake_qmd, make_qmd, qmd_workspace  # noqa: F401

PORT = 8767
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "t0ken-for-tests-only"
AUTH = {TOKEN_HEADER: TOKEN}


def _settings(ws: Path, tmp_path: Path, config: dict[str, Any] | None = None) -> Any:
    cfg = {"facts": {"enabled": True}, **(config or {})}
    return resolve_settings(workspace=ws, state_dir=tmp_path / "state", config=parse_config(cfg))


@contextlib.contextmanager
def _client(tmp_path: Path, workspace: Path, config: dict[str, Any] | None = None) -> Iterator[TestClient]:
    """A client of the inspector over a builtin index (hashing vectors: fast, deterministic)."""
    settings = _settings(workspace, tmp_path, config)
    backend = MemoryIndex(settings, ProviderResult(HashingProvider(), requested="test"))
    backend.sync()
    inspector = Inspector(settings, backend)
    try:
        with TestClient(build_app(inspector, TOKEN, PORT), base_url=BASE) as client:
            client.inspector = inspector  # type: ignore[attr-defined]
            client.workspace = workspace  # type: ignore[attr-defined]
            yield client
    finally:
        inspector.close()


@pytest.fixture
def ui(tmp_path: Path, workspace: Path) -> Iterator[TestClient]:
    with _client(tmp_path, workspace) as client:
        yield client


def post(client: TestClient, path: str, body: dict[str, Any], **headers: str) -> Any:
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json", **headers})


# ---------------------------------------------------------------------------------------------------------
# the guard
# ---------------------------------------------------------------------------------------------------------


def test_every_request_needs_the_token(ui):
    for path in ("/", "/static/app.js", "/api/status", "/api/search?q=deploy", "/api/file?path=MEMORY.md"):
        assert ui.get(path).status_code == 401, path
        assert ui.get(path, headers={TOKEN_HEADER: "wrong"}).status_code == 401, path
    assert ui.get("/api/status", headers=AUTH).status_code == 200
    assert ui.get(f"/api/status?token={TOKEN}").status_code == 200


def test_the_address_token_becomes_a_strict_cookie(ui):
    first = ui.get(f"/?token={TOKEN}", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"].lower()
    assert cookie.startswith(f"{cookie_name(PORT)}={TOKEN}".lower())
    assert "httponly" in cookie and "samesite=strict" in cookie
    ui.cookies.set(cookie_name(PORT), TOKEN)
    page = ui.get("/")
    assert page.status_code == 200 and f'content="{TOKEN}"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert ui.get("/static/app.js").status_code == 200
    ui.cookies.set(cookie_name(PORT), "nope")
    assert ui.get("/").status_code == 401


def test_foreign_host_and_origin_are_refused(ui):
    for host in ("evil.example:8767", "127.0.0.1:9999", "attacker.127.0.0.1.nip.io:8767"):
        response = ui.get("/api/status", headers={**AUTH, "host": host})
        assert response.status_code == 403 and "Host" in response.json()["error"], host
    for origin in ("http://evil.example", f"http://127.0.0.1:{PORT + 1}", "null"):
        assert ui.get("/api/status", headers={**AUTH, "origin": origin}).status_code == 403
        assert post(ui, "/api/reindex", {}, **AUTH, origin=origin).status_code == 403
    assert ui.get("/api/status", headers={**AUTH, "origin": BASE}).status_code == 200
    assert ui.get("/api/status", headers={**AUTH, "host": f"localhost:{PORT}"}).status_code == 200


def test_writes_need_the_header_token_not_the_cookie(ui):
    fact_id = _stored_fact(ui, "Dana prefers tea over coffee in the morning.")
    ui.cookies.set(cookie_name(PORT), TOKEN)
    refused = post(ui, "/api/facts/forget", {"id": fact_id})  # what a cross-site form would send
    assert refused.status_code == 401
    cross = post(ui, "/api/facts/forget", {"id": fact_id}, **AUTH, **{"sec-fetch-site": "cross-site"})
    assert cross.status_code == 403
    as_form = ui.post("/api/facts/forget", data={"id": fact_id}, headers=AUTH)
    assert as_form.status_code == 415
    assert fact_id in (ui.workspace / "memory/facts.md").read_text()
    assert ui.request("DELETE", "/api/facts/forget", headers=AUTH).status_code == 405


def test_paths_stay_in_the_workspace(ui, tmp_path):
    write(tmp_path, "secret.md", "# Secret\n\nthe password is hunter2\n")
    (ui.workspace / "memory" / "link.md").symlink_to(tmp_path / "secret.md")
    outside = ("../secret.md", str(tmp_path / "secret.md"), "memory/../../secret.md", "memory/link.md", "/etc/passwd")
    for path in outside:
        response = ui.get("/api/file", params={"path": path}, headers=AUTH)
        assert response.status_code in (403, 404), path
        assert "hunter2" not in response.text
    assert ui.get("/static/../server.py", headers=AUTH).status_code == 404
    assert ui.get("/static/%2e%2e%2fserver.py", headers=AUTH).status_code == 404
    assert ui.get("/static/index.html", headers=AUTH).status_code == 404  # only the page route serves it


# ---------------------------------------------------------------------------------------------------------
# search and explain
# ---------------------------------------------------------------------------------------------------------


def test_search_explains_each_result(ui):
    data = ui.get("/api/search", params={"q": "which deploy fix landed in a828e60"}, headers=AUTH).json()
    assert data["mode"] == "hybrid" and data["backend"] == "builtin"
    top = data["results"][0]
    assert top["path"] == "MEMORY.md" and "a828e60" in top["snippet"]
    explain = top["explain"]
    assert explain["vector"]["cosine"] > 0 and explain["keyword"]["coverage"] > 0
    stages = [step["stage"] for step in explain["steps"]]
    assert stages[0] == "fusion" and "identifier" in stages and stages[-1] == "final"
    boost = next(s for s in explain["steps"] if s["stage"] == "identifier")
    assert boost["delta"] > 0 and "a828e60" in boost["detail"]
    assert explain["steps"][-1]["score"] == pytest.approx(top["score"], abs=1e-6)


def test_search_defaults_match_the_library(ui):
    inspector = ui.inspector
    plain = inspector.backend.search("gateway office closet")
    assert all(getattr(r, "explain", None) is None for r in plain.results)  # explain costs nothing when off
    shown = ui.get("/api/search", params={"q": "gateway office closet"}, headers=AUTH).json()["results"]
    assert [(r["path"], r["startLine"], r["score"]) for r in shown] == [
        (r.path, r.start_line, round(r.score, 6)) for r in plain.results
    ]


def test_an_empty_answer_says_so(ui):
    data = ui.get("/api/search", params={"q": "zqxjv", "mode": "keyword"}, headers=AUTH).json()
    assert data["results"] == [] and data["message"].startswith("no results for 'zqxjv'")
    bad = ui.get("/api/search", params={"q": "x", "mode": "psychic"}, headers=AUTH)
    assert bad.status_code == 400 and "mode" in bad.json()["error"]
    assert ui.get("/api/search", params={"q": "  "}, headers=AUTH).status_code == 400
    assert ui.get("/api/search", params={"q": "x", "n": "many"}, headers=AUTH).status_code == 400


def test_decay_and_date_boost_are_explained(tmp_path, workspace):
    write(workspace, "memory/2026-11-03.md", "# 2026-11-03\n\n- The gateway restart took four minutes.\n")
    with _client(tmp_path, workspace, {"query": {"temporalDecay": {"enabled": True}}}) as ui:
        found = ui.get(
            "/api/search", params={"q": "gateway restart on 2026-11-03", "minScore": 0}, headers=AUTH
        ).json()["results"]
    daily = next(r for r in found if r["path"] == "memory/2026-11-03.md")
    evergreen = next(r for r in found if r["path"] == "memory/topics/infra.md")
    assert {s["stage"]: s for s in evergreen["explain"]["steps"]}["decay"]["detail"] == "evergreen note: no decay"
    stages = {s["stage"]: s for s in daily["explain"]["steps"]}
    assert stages["date"]["delta"] > 0
    assert "decay" in stages and stages["decay"]["delta"] <= 0 and "days old" in stages["decay"]["detail"]


# ---------------------------------------------------------------------------------------------------------
# browse
# ---------------------------------------------------------------------------------------------------------


def test_browse_lists_files_and_renders_one_with_its_chunks(ui):
    write(ui.workspace, "memory/notes.md", "# Notes\n\n<script>alert(1)</script>\n\n- [a link](javascript:alert(2))\n")
    files = ui.get("/api/files", headers=AUTH).json()
    by_path = {f["path"]: f for f in files["files"]}
    assert by_path["MEMORY.md"]["chunks"] >= 1 and by_path["memory/topics/infra.md"]["chunks"] >= 1
    assert by_path["memory/notes.md"]["chunks"] == 0  # written after the last sync: not in the index yet
    page = ui.get("/api/file", params={"path": "MEMORY.md", "from": 3, "to": 4}, headers=AUTH).json()
    assert page["highlight"] == {"from": 3, "to": 4}
    assert '<p data-lines="3-4">Dana prefers metric units.' in page["html"]
    assert page["chunks"] and page["chunks"][0]["startLine"] == 1
    notes = ui.get("/api/file", params={"path": "memory/notes.md"}, headers=AUTH).json()
    assert "<script>" not in notes["html"] and "&lt;script&gt;" in notes["html"]
    assert "javascript:" not in notes["html"].replace("(javascript:alert(2))", "")
    missing = ui.get("/api/file", params={"path": "memory/none.md"}, headers=AUTH)
    assert missing.status_code == 404


# ---------------------------------------------------------------------------------------------------------
# facts
# ---------------------------------------------------------------------------------------------------------


def _stored_fact(client: TestClient, text: str, source: str = "cli") -> str:
    inspector = client.inspector  # type: ignore[attr-defined]
    with FactStore(inspector.settings, lambda: inspector.backend.provider_result) as store:
        result = store.store(text, category="preference", source=source)
    assert result.stored, result.message
    return result.fact.id


def test_facts_list_edit_and_forget_keep_facts_md_the_truth(ui):
    kept = _stored_fact(ui, "Dana prefers metric units in every report.", source="tool")
    edited = _stored_fact(ui, "The team standup is at nine every weekday.", source="capture")
    facts_md = ui.workspace / "memory/facts.md"
    listed = {f["id"]: f for f in ui.get("/api/facts", headers=AUTH).json()["facts"]}
    assert listed[kept]["source"] == "tool" and listed[edited]["source"] == "hook"
    assert listed[kept]["category"] == "preference" and listed[kept]["date"]

    change = {"id": edited, "text": "The standup moved to ten.", "category": "decision"}
    changed = post(ui, "/api/facts/edit", change, **AUTH)
    assert changed.status_code == 200 and changed.json()["fact"]["text"] == "The standup moved to ten."
    text = facts_md.read_text()
    assert f"- [{edited}] (decision, " in text and "The standup moved to ten." in text and "nine" not in text
    listed = {f["id"]: f for f in ui.get("/api/facts", headers=AUTH).json()["facts"]}
    assert listed[edited]["source"] == "edited in the inspector" and listed[edited]["category"] == "decision"
    with FactStore(ui.inspector.settings, lambda: ui.inspector.backend.provider_result) as store:
        assert store.recall("standup ten")[0].fact.id == edited  # the fact store follows the edit

    facts_md.write_text(text.replace("metric units in every report", "metric units, always"), encoding="utf-8")
    listed = {f["id"]: f for f in ui.get("/api/facts", headers=AUTH).json()["facts"]}
    assert listed[kept]["source"] == "hand edit" and listed[kept]["text"] == "Dana prefers metric units, always."

    gone = post(ui, "/api/facts/forget", {"id": edited}, **AUTH).json()
    assert [f["id"] for f in gone["deleted"]] == [edited]
    assert edited not in facts_md.read_text() and kept in facts_md.read_text()
    assert [f["id"] for f in ui.get("/api/facts", headers=AUTH).json()["facts"]] == [kept]
    unknown = post(ui, "/api/facts/edit", {"id": "fnothere1234", "text": "x y z"}, **AUTH)
    assert unknown.status_code == 404


# ---------------------------------------------------------------------------------------------------------
# activity and health
# ---------------------------------------------------------------------------------------------------------


def test_activity_shows_what_the_hooks_captured_and_recalled(ui, tmp_path):
    transcript = tmp_path / "t.jsonl"
    said = "Remember that I prefer dark mode in every editor."
    turns = [{"type": "user", "message": {"role": "user", "content": said}}]
    transcript.write_text("\n".join(json.dumps(t) for t in turns) + "\n", encoding="utf-8")
    runner = HookRunner(ui.inspector.settings, ui.inspector.backend.provider_result)
    try:
        runner.run("Stop", {"session_id": "s1", "transcript_path": str(transcript)})
        runner.run("UserPromptSubmit", {"session_id": "s1", "prompt": "which editor theme do I prefer, dark mode?"})
    finally:
        runner.close()
    activity = ui.get("/api/activity", headers=AUTH).json()
    events = {e["event"]: e for e in activity["events"]}
    captured = events["Stop"]["facts"]
    assert captured and captured[0]["kind"] == "captured" and "dark mode" in captured[0]["text"]
    recalled = events["UserPromptSubmit"]["facts"]
    assert recalled and recalled[0]["kind"] == "recalled" and recalled[0]["id"] == captured[0]["id"]
    assert activity["sessions"][0]["session"] == "s1" and activity["sessions"][0]["captured"] == 1
    facts = {f["id"]: f for f in ui.get("/api/facts", headers=AUTH).json()["facts"]}
    assert facts[captured[0]["id"]]["source"] == "hook"


def test_status_and_reindex_with_progress(ui):
    status = ui.get("/api/status", headers=AUTH).json()
    assert status["backend"] == "builtin" and status["files"] == 3 and status["chunks"] >= 3
    assert status["provider"] == "test-hash" and status["dirty"] is False
    write(ui.workspace, "memory/later.md", "# Later\n\nA note written after the index.\n")
    assert ui.get("/api/status", headers=AUTH).json()["dirty"] is True
    started = post(ui, "/api/reindex", {"force": True}, **AUTH).json()
    assert started["started"] is True
    progress = _wait_for_reindex(ui)
    assert progress["report"]["filesIndexed"] == 4 and progress["total"] == 4 and progress["done"] == 4
    assert progress["report"]["fullReindex"] is True
    after = ui.get("/api/status", headers=AUTH).json()
    assert after["files"] == 4 and after["dirty"] is False


def _wait_for_reindex(client: TestClient) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = client.get("/api/reindex", headers=AUTH).json()
        if not progress["running"]:
            assert "error" not in progress, progress
            return progress
        time.sleep(0.05)
    raise AssertionError("reindex did not finish")


# ---------------------------------------------------------------------------------------------------------
# other backends through the protocol
# ---------------------------------------------------------------------------------------------------------


def test_postgres_backend(pg_server, monkeypatch, tmp_path, workspace):
    from mdrecall.backends.postgres import PostgresIndex

    monkeypatch.setenv("MDRECALL_POSTGRES_DSN", pg_server.dsn)
    settings = _settings(workspace, tmp_path, {"store": {"driver": "postgres"}})
    backend = PostgresIndex(settings, ProviderResult(HashingProvider(), requested="test"))
    backend.sync()
    inspector = Inspector(settings, backend)
    try:
        with TestClient(build_app(inspector, TOKEN, PORT), base_url=BASE) as client:
            data = client.get("/api/search", params={"q": "deploy fix a828e60"}, headers=AUTH).json()
            assert data["backend"] == "postgres" and data["results"][0]["path"] == "MEMORY.md"
            assert any(s["stage"] == "identifier" for s in data["results"][0]["explain"]["steps"])
            files = {f["path"]: f["chunks"] for f in client.get("/api/files", headers=AUTH).json()["files"]}
            assert files["MEMORY.md"] >= 1
            page = client.get("/api/file", params={"path": "MEMORY.md"}, headers=AUTH).json()
            assert page["chunks"][0]["startLine"] == 1
            assert client.get("/api/status", headers=AUTH).json()["backend"] == "postgres"
            assert post(client, "/api/reindex", {"force": True}, **AUTH).json()["started"]
            assert _wait_for_reindex(client)["report"]["filesIndexed"] == 3
    finally:
        inspector.close()


def test_qmd_backend_with_its_fallback(fake_qmd, make_qmd):  # noqa: F811
    backend = make_qmd()
    inspector = Inspector(backend.settings, backend)
    try:
        with TestClient(build_app(inspector, TOKEN, PORT), base_url=BASE) as client:
            data = client.get("/api/search", params={"q": "flamingo"}, headers=AUTH).json()
            assert data["backend"] == "qmd" and data["results"]
            assert data["results"][0]["explain"] is None  # qmd does not say why; the page says so
            fake_qmd.set(search="fail")
            fallback = client.get("/api/search", params={"q": "flamingo"}, headers=AUTH).json()
            assert fallback["backend"] == "builtin" and fallback["backendFallback"]["from"] == "qmd"
            assert fallback["results"][0]["explain"]["steps"][-1]["stage"] == "final"
            files = {f["path"] for f in client.get("/api/files", headers=AUTH).json()["files"]}
            assert "MEMORY.md" in files
            assert client.get("/api/file", params={"path": "../secret.md"}, headers=AUTH).status_code == 403
            assert client.get("/api/status", headers=AUTH).json()["backend"] == "qmd"
    finally:
        inspector.close()


# ---------------------------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------------------------


def test_ui_command_on_a_taken_port_says_so_in_one_line(tmp_path, workspace):
    import socket

    from typer.testing import CliRunner

    from mdrecall.cli.app import app

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        args = ["--workspace", str(workspace), "--state-dir", str(tmp_path / "s"), "ui", "--port", str(port)]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert result.output.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_facts_edit_command(tmp_path, workspace):
    from typer.testing import CliRunner

    from mdrecall.cli.app import app

    base = ["--workspace", str(workspace), "--state-dir", str(tmp_path / "s")]
    cfg = tmp_path / "keyword.toml"
    cfg.write_text('provider = "none"\n', encoding="utf-8")
    base += ["--config", str(cfg)]
    runner = CliRunner()
    stored = runner.invoke(app, [*base, "facts", "store", "Dana drinks tea at four.", "--json"])
    fact_id = json.loads(stored.output)["fact"]["id"]
    edited = runner.invoke(app, [*base, "facts", "edit", fact_id, "Dana drinks coffee at four.", "-c", "preference"])
    assert edited.exit_code == 0 and edited.output.strip() == f"edited {fact_id} (preference)"
    assert f"- [{fact_id}] (preference, " in (workspace / "memory/facts.md").read_text()
    assert "coffee" in (workspace / "memory/facts.md").read_text()
    missing = runner.invoke(app, [*base, "facts", "edit", "fmissing0000", "text"])
    assert missing.exit_code == 1 and "not found" in missing.output
    nothing = runner.invoke(app, [*base, "facts", "edit", fact_id])
    assert nothing.exit_code == 1 and "give the new text" in nothing.output


def test_search_command_explains_too(tmp_path, workspace):
    from typer.testing import CliRunner

    from mdrecall.cli.app import app

    cfg = tmp_path / "keyword.toml"
    cfg.write_text('provider = "none"\n', encoding="utf-8")
    base = ["--workspace", str(workspace), "--state-dir", str(tmp_path / "s"), "--config", str(cfg), "search"]
    shown = CliRunner().invoke(app, [*base, "deploy fix a828e60", "--explain"])
    assert shown.exit_code == 0
    why = [line.strip() for line in shown.output.splitlines() if line.strip().startswith("why:")]
    assert why and "identifier boost" in why[0] and why[0].endswith(tuple("0123456789"))
    as_json = json.loads(CliRunner().invoke(app, [*base, "deploy fix a828e60", "--explain", "--json"]).output)
    assert as_json[0]["explain"]["steps"][-1]["score"] == pytest.approx(as_json[0]["score"], abs=1e-6)
    plain = json.loads(CliRunner().invoke(app, [*base, "deploy fix a828e60", "--json"]).output)
    assert "explain" not in plain[0]
