"""What goes into the FTS5 index for a chunk's text, and what a query's tokens look like.

Kept apart from the store so that language-specific segmentation (e.g. CJK bigrams) can change the
indexed text without touching storage: snippets always come from the `chunks` table, never from FTS.
"""

from __future__ import annotations


def index_text(text: str) -> str:
    """Text stored in chunks_fts for a chunk (identity for now)."""
    return text
