"""A fact in a chunk's tail, past what the model reads of a whole chunk, is found by meaning (real models)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mdrecall.backends.builtin import MemoryIndex
from mdrecall.config.settings import LocalConfig
from mdrecall.embeddings.local import create_local_provider

from .conftest import write

FILLER = [
    "Priya: The farmers market had great tomatoes this morning, I bought way too many of them.",
    "Tom: Ha, you always do that. Are you going to make sauce again this weekend?",
    "Priya: Probably, and maybe some bruschetta for the neighbours who helped with the fence.",
    "Tom: The fence looks solid now. Did you end up painting it white or leaving the wood?",
    "Priya: We left the wood, it weathers nicely and painting every two years is a chore.",
    "Tom: Fair enough. My own garden is a mess, the zucchini took over the whole bed.",
    "Priya: Zucchini always does that. Give some away before they turn into baseball bats.",
    "Tom: I tried, but everyone on the street grows them too, nobody wants more squash.",
    "Priya: Then bake bread with it, zucchini bread freezes well and lasts for months.",
    "Tom: Good idea. Also the bike repair shop finally fixed my gears after three weeks.",
    "Priya: Three weeks is a long wait. Was it a part they had to order from abroad?",
    "Tom: Yes, a derailleur from Italy, apparently nobody stocks that model anymore.",
    "Priya: Classic. Anyway, the book club picked a long novel again, I am only halfway.",
    "Tom: Which one? I remember last month's was that thousand page saga about sailors.",
]
FACT = "Priya: Big news, my sister just adopted a three-legged greyhound from the shelter, she named him Biscuit."
QUERY = "Which relative of Priya took in a rescue animal?"


@pytest.fixture(scope="module")
def tail_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("tail") / "ws"
    write(ws, "memory/2024-03-01.md", "# 2024-03-01\n\n" + "\n".join(FILLER + [FACT]) + "\n")
    write(ws, "memory/2024-03-02.md", "# 2024-03-02\n\nTom: The quarterly tax forms are due on Friday.\n")
    write(ws, "memory/2024-03-03.md", "# 2024-03-03\n\nPriya: Our team moved the standup to 9:30.\n")
    # near misses for the whole-chunk vector: family and animals, but nobody adopts anything
    write(ws, "memory/2024-03-04.md", "# 2024-03-04\n\nTom: My aunt asks if a cat or a parrot suits her flat.\n")
    write(ws, "memory/2024-03-05.md", "# 2024-03-05\n\nPriya: My brother walks the neighbour's dogs on weekends.\n")
    return ws


@pytest.mark.parametrize("model", ["minilm", "e5-small"])
def test_fact_in_the_tail_is_found_by_meaning(
    tail_workspace: Path, tmp_path: Path, model: str, make_index: Callable[..., MemoryIndex]
) -> None:
    provider = create_local_provider(LocalConfig(model=model))
    index = make_index(tail_workspace, provider, {"local": {"model": model}})
    report = index.sync()
    chunks = index.store.conn.execute(
        "SELECT chunk_text(text) FROM chunks WHERE path = 'memory/2024-03-01.md'"
    ).fetchall()
    assert len(chunks) == 1 and FACT in chunks[0][0], "the fact must sit in the one chunk of its file"
    if model == "minilm":
        # the premise: MiniLM reads 256 word pieces of a whole chunk, and the fact lies beyond them
        provider._ensure_loaded()  # type: ignore[attr-defined]
        tokenizer = provider._tokenizer  # type: ignore[attr-defined]
        assert "greyhound" not in tokenizer.decode(tokenizer.encode(chunks[0][0]).ids)
    results = index.search(QUERY, mode="vector", min_score=0, max_results=3).results
    assert results[0].path == "memory/2024-03-01.md"
    assert len({(r.path, r.start_line) for r in results}) == len(results), "each chunk once"
    assert report.texts_embedded > report.chunks_indexed  # several windows for the long chunk
    # the window's score is what makes it: a query about the filler scores the same chunk too
    assert index.search("Who fixed the bike gears?", mode="vector", min_score=0).results[0].path.endswith("03-01.md")


def test_the_snippet_shows_the_best_window_not_the_chunk_start(
    tail_workspace: Path, tmp_path: Path, make_index: Callable[..., MemoryIndex]
) -> None:
    """The fact sits past the first 700 characters of its chunk: the snippet an agent reads still shows it (the
    chunk's best window, with the lines before it), in hybrid and in vector mode."""
    provider = create_local_provider(LocalConfig(model="e5-small"))
    index = make_index(tail_workspace, provider, {"local": {"model": "e5-small"}})
    index.sync()
    text = (tail_workspace / "memory/2024-03-01.md").read_text(encoding="utf-8")
    assert FACT not in text[:700], "the premise: the chunk's first 700 characters do not hold the fact"
    # "Priya" is the chunk's first word too: the snippet is placed by the best window, not the first match
    hybrid = index.search("What dog has Priya's sister adopted?", min_score=0, max_results=3).results[0]
    assert hybrid.path == "memory/2024-03-01.md"
    assert FACT in hybrid.snippet and len(hybrid.snippet) <= 700
    assert hybrid.snippet.split("\n")[0] in FILLER, "the snippet starts at a whole line"
    # vector mode scores no window for the snippet: the lines holding the query's words are shown
    vector = index.search("Biscuit the greyhound", mode="vector", min_score=0).results[0]
    assert vector.path == "memory/2024-03-01.md" and FACT in vector.snippet


def test_snippet_window_places_the_focus() -> None:
    from mdrecall.retrieval.search import snippet_window

    lines = [f"line {i:02d} " + "x" * 60 for i in range(30)]  # 70 characters a line, 2,129 in all
    text = "\n".join(lines)
    early = "\n".join(lines[2:5])
    assert snippet_window(text, 700, focus=early) == text[:700], "within the first 700: the chunk's start"
    deep = "\n".join(lines[20:23])
    shown = snippet_window(text, 700, focus=deep)
    assert deep in shown and len(shown) == 700 and shown.split("\n")[0] in lines, "whole lines before it"
    before, after = shown.split(deep)
    assert len(before) > len(after) > 0, "more of the room before it than after it"
    long_focus = "\n".join(lines[10:25])  # longer than a snippet: it starts the snippet
    assert snippet_window(text, 700, focus=long_focus) == text[text.index(lines[10]) :][:700]
    assert snippet_window(text, 700, ["17"], focus=long_focus).startswith(lines[17]), "its first matched word"
    # a focus that is not in the text (a joined result's other chunk): the keyword rule, then the start
    assert snippet_window(text, 700, ["line"], focus="not there") == text[:700]
