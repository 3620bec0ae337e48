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
