"""Recall: the log's date and the heading path are embedded and keyword-indexed with each chunk, while the
stored text, snippet and line range stay the file's own."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np

from mdrecall.documents.context import CONTEXT_VERSION, chunk_prefixes, context_prefix, date_phrase, heading_paths
from mdrecall.indexing.sync import expected_meta, full_reindex_reason

from .conftest import HashingProvider, write

LOG = "# 2023-05-08\n\n## 13:56 Ana and Ben\n\nAna: I adopted a kitten.\nBen: lovely!\n"


class RecordingProvider(HashingProvider):
    """Keeps every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed_batch(texts)


def test_date_phrase_spells_the_day_out() -> None:
    assert date_phrase(date(2023, 5, 8)) == "2023-05-08 Monday 8 May 2023"


def test_heading_paths_follow_levels_and_skip_code_fences() -> None:
    text = "# A\n\n## B\n\n```\n# not a heading\n```\n### C\n## D\ntext\n"
    paths = heading_paths(text)
    assert paths[0] == ("# A",) and paths[3] == ("# A", "## B") and paths[5] == ("# A", "## B")
    assert paths[7] == ("# A", "## B", "### C") and paths[9] == ("# A", "## D")


def test_prefix_of_a_daily_log_and_of_an_evergreen_note() -> None:
    assert chunk_prefixes("memory/2023-05-08.md", LOG, [5]) == [
        "2023-05-08 Monday 8 May 2023\n## 13:56 Ana and Ben"
    ]  # the "# 2023-05-08" heading only repeats the date
    assert context_prefix("memory/topics/infra.md", ["# Infra"]) == "# Infra"
    assert context_prefix("MEMORY.md", []) == ""


def test_context_is_embedded_and_keyword_indexed_not_shown(tmp_path: Path, make_index) -> None:
    ws = tmp_path / "ws"
    filler = "".join(f"Ben: small talk line number {i} about nothing much.\n" for i in range(8))
    write(ws, "memory/2023-05-08.md", LOG + filler + "Ana: the kitten is called Miso.\n")
    provider = RecordingProvider()
    index = make_index(ws, provider, {"chunking": {"tokens": 16, "overlap": 0}})
    index.sync()
    assert len(provider.seen) > 3 and all(t.startswith("2023-05-08 Monday 8 May 2023\n") for t in provider.seen)
    assert provider.seen[-1].startswith("2023-05-08 Monday 8 May 2023\n## 13:56 Ana and Ben\n\n")
    for query in ("Monday Miso", "Miso in May 2023", "Ana and Ben Miso"):
        results = index.search(query, mode="keyword", min_score=0).results
        assert results and "Miso" in results[0].snippet, query
    result = index.search("Miso", mode="keyword", min_score=0).results[0]
    assert "Monday" not in result.snippet and "13:56" not in result.snippet
    lines = (ws / "memory/2023-05-08.md").read_text().split("\n")
    assert "Miso" in "\n".join(lines[result.start_line - 1 : result.end_line])
    stored = {row[0] for row in index.store.conn.execute("SELECT chunk_text(text) FROM chunks")}
    assert not any("Monday" in text for text in stored)


def test_a_new_context_format_forces_a_reindex() -> None:
    from mdrecall.config.settings import parse_config

    meta = expected_meta(None, parse_config({}))
    assert meta["chunkContext"] == CONTEXT_VERSION
    assert "chunk context" in (full_reindex_reason({**meta, "chunkContext": "none"}, meta) or "")
