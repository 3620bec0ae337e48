"""`make test-ui`: the memory inspector clicked through in a real browser (Debian's chromium, headless, driven by
Playwright's Python package), on a copy of the example workspace, with the real default embedding model.

Not part of `make test` (it needs chromium and takes ~1 min). It starts `mdrecall ui` as a user would, reads
the address it prints, then searches, opens an explanation, opens the cited range in its file, edits and
forgets a fact, and reindexes with progress; it saves a screenshot of each step in a temporary folder, or in
the folder $MDRECALL_SCREENSHOTS names (`make screenshots` renews docs/images/ui-*.png that way).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "workspace"
IMAGES = Path(os.environ.get("MDRECALL_SCREENSHOTS") or Path(tempfile.gettempdir()) / "mdrecall-ui-screenshots")
CHROMIUM = os.environ.get("MDRECALL_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
URL_RE = re.compile(r"(http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]+)")


def _mdrecall(*args: str, ws: Path, state: Path, stdin: str | None = None) -> str:
    command = [sys.executable, "-m", "mdrecall.cli", "--workspace", str(ws), "--state-dir", str(state), *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=300, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """`mdrecall ui` on a copy of the example workspace, with two facts and one hook capture recorded."""
    root = tmp_path_factory.mktemp("ui")
    ws, state = root / "example-workspace", root / "state"
    shutil.copytree(EXAMPLE, ws)
    _mdrecall("index", "--quiet", ws=ws, state=state)
    for text, category in (
        ("Dana prefers metric units in every report.", "preference"),
        ("The team standup is at nine every weekday.", "fact"),
    ):
        _mdrecall("facts", "store", text, "--category", category, ws=ws, state=state)
    transcript = root / "transcript.jsonl"
    turn = {"type": "user", "message": {"role": "user", "content": "Remember that I always deploy on Tuesdays."}}
    transcript.write_text(json.dumps(turn) + "\n", encoding="utf-8")
    payload = json.dumps({"session_id": "demo-session", "transcript_path": str(transcript), "cwd": str(ws)})
    _mdrecall("hook", "Stop", ws=ws, state=state, stdin=payload)
    command = [sys.executable, "-m", "mdrecall.cli", "--workspace", str(ws), "--state-dir", str(state)]
    command += ["ui", "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = None
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline and url is None:
        line = proc.stdout.readline()
        if not line:
            break
        found = URL_RE.search(line)
        url = found.group(1) if found else None
    assert url, "mdrecall ui did not print its address"
    try:
        yield {"url": url, "ws": ws, "proc": proc}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def page(served: dict[str, object]) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (make test-ui does it)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context(viewport={"width": 1200, "height": 820}, device_scale_factor=1)
        tab = context.new_page()
        tab.goto(str(served["url"]))
        tab.wait_for_selector("body[data-ready=search]")
        yield tab
        context.close()
        browser.close()


def shot(page: object, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / f"ui-{name}.png"), full_page=False)  # type: ignore[attr-defined]


def test_the_token_left_the_address_bar(page):
    assert "token=" not in page.url


def test_search_and_explain(page):
    page.focus("#tab-search")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("which database do we use for the vector index")
    page.keyboard.press("Enter")
    page.wait_for_selector("#results[data-query='which database do we use for the vector index'] li.result")
    first = page.locator("#results li.result").first
    assert "infrastructure.md" in first.locator("a.open-cited").inner_text() or first.locator(".snippet").inner_text()
    assert "hybrid" in page.locator("#search-meta").inner_text()
    shot(page, "search")
    first.locator("summary").click()
    table = first.locator(".explain table")
    table.wait_for()
    text = table.inner_text()
    assert "vector (cosine)" in text and "keyword (bm25)" in text and "final" in text
    shot(page, "explain")


def test_an_empty_answer_says_so(page):
    page.fill("#q", "zqxjvw")
    page.select_option("#mode", "keyword")
    page.click("#search-form button")
    page.wait_for_selector("#no-results")
    assert "no results for 'zqxjvw'" in page.inner_text("#no-results")
    page.select_option("#mode", "hybrid")


def test_open_a_cited_range_in_place(page):
    page.fill("#q", "a828e60")
    page.click("#search-form button")
    page.wait_for_selector("#results[data-query=a828e60] li.result")
    link = page.locator("#results li.result a.open-cited").first
    cited = link.inner_text()
    link.click()
    page.wait_for_selector("body[data-ready=browse]")
    page.wait_for_selector("#rendered .cited")
    assert cited.split(":")[0] in page.inner_text("#file-view h1")
    assert page.locator("#rendered .cited", has_text="a828e60").count() >= 1
    assert page.locator("#file-list a[aria-current=true]").count() == 1
    page.locator(".chunks button").first.click()
    assert page.locator("#rendered .in-chunk").count() >= 1
    shot(page, "browse")
    page.click("#toggle-raw")
    assert page.locator("#raw div.cited").count() >= 1


def test_edit_and_forget_a_fact(page, served):
    facts_md = Path(str(served["ws"])) / "memory" / "facts.md"
    page.click("#tab-facts")
    page.wait_for_selector("body[data-ready=facts]")
    page.wait_for_selector("#facts-table tbody tr[data-id]")
    sources = page.locator("#facts-table tbody tr[data-id] td:nth-child(4)").all_inner_texts()
    assert "cli" in sources and "hook" in sources
    shot(page, "facts")
    row = page.locator("#facts-table tbody tr[data-id]", has_text="standup is at nine")
    fact_id = row.get_attribute("data-id")
    row.locator("button.edit").click()
    page.fill("textarea.edit-text", "The team standup moved to ten.")
    page.select_option("select.edit-category", "decision")
    page.click("button.save")
    page.wait_for_selector("#facts-table tbody tr[data-id] >> text=The team standup moved to ten.")
    assert f"- [{fact_id}] (decision, " in facts_md.read_text() and "moved to ten" in facts_md.read_text()
    forget = page.locator(f"#facts-table tbody tr[data-id='{fact_id}'] button.forget")
    forget.click()
    assert forget.inner_text() == "Really forget?"
    forget.click()
    page.wait_for_selector(f"#facts-table tbody tr[data-id='{fact_id}']", state="detached")
    assert fact_id not in facts_md.read_text()


def test_activity_health_and_reindex(page):
    page.click("#tab-health")
    page.wait_for_selector("body[data-ready=health]")
    status = page.inner_text("#status")
    assert "builtin" in status and "files" in status
    assert "Stop" in page.inner_text("#events") and "captured" in page.inner_text("#events")
    page.click("#reindex")
    page.wait_for_selector("#reindex-msg:has-text('reindexed:')", timeout=120000)
    assert re.search(r"reindexed: \d+ files", page.inner_text("#reindex-msg"))
    shot(page, "health")


def test_readable_in_a_narrow_window(page):
    page.set_viewport_size({"width": 390, "height": 820})
    page.goto(page.url.split("#")[0] + "#search?q=vector+index+database&mode=hybrid")
    page.wait_for_selector("#results[data-query='vector index database'] li.result")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways at 390 px ({width} px wide)"
    shot(page, "narrow")
