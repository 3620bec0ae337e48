"""Chunk invariants: every non-blank line covered, ranges ordered and 1-based, size bound, overlap."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mdrecall.documents.chunking import chunk_markdown, hash_text, max_chunk_chars

line = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=300)
documents = st.lists(line, max_size=60).map("\n".join)


def _assert_invariants(text: str, tokens: int, overlap: int) -> None:
    chunks = chunk_markdown(text, tokens, overlap)
    lines = text.split("\n")
    limit = max_chunk_chars(tokens)
    covered: set[int] = set()
    previous_start = 0
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.start_line >= previous_start, "chunks must come in line order"
        previous_start = chunk.start_line
        assert len(chunk.text) <= limit
        assert chunk.hash == hash_text(chunk.text)
        assert chunk.text.strip()
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, content in enumerate(lines, 1):
        if content.strip():
            assert number in covered, f"line {number} not in any chunk"


@settings(max_examples=150, deadline=None)
@given(documents, st.integers(min_value=1, max_value=120), st.integers(min_value=0, max_value=119))
def test_invariants_hold_for_any_text(text: str, tokens: int, overlap: int) -> None:
    _assert_invariants(text, tokens, min(overlap, tokens - 1))


def test_defaults_are_400_tokens_80_overlap_1600_chars() -> None:
    text = "\n".join(f"line {i} " + "x" * 90 for i in range(200))
    chunks = chunk_markdown(text)
    assert all(len(c.text) <= 1600 for c in chunks)
    assert len(chunks) > 10
    # the next chunk starts with the whole trailing lines (~320 chars) of the previous one
    for first, second in zip(chunks, chunks[1:], strict=False):
        assert second.start_line <= first.end_line
        carried = first.end_line - second.start_line + 1
        assert 3 <= carried <= 5


def test_long_line_is_split_into_segments_of_the_limit() -> None:
    text = "short\n" + "y" * 5000 + "\nend"
    chunks = chunk_markdown(text, tokens=100, overlap=0)
    assert all(len(c.text) <= 400 for c in chunks)
    assert sum(c.text.count("y") for c in chunks) == 5000
    assert {c.start_line for c in chunks if "y" in c.text} == {2}


def test_line_numbers_are_one_based_and_exact() -> None:
    text = "alpha\nbeta\n\ngamma"
    [chunk] = chunk_markdown(text)
    assert (chunk.start_line, chunk.end_line) == (1, 4)
    assert chunk.text == text


def test_blank_documents_give_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("\n\n   \n") == []


def test_no_overlap_means_disjoint_ranges() -> None:
    text = "\n".join("z" * 50 for _ in range(100))
    chunks = chunk_markdown(text, tokens=50, overlap=0)
    for first, second in zip(chunks, chunks[1:], strict=False):
        assert second.start_line == first.end_line + 1


def test_minimum_chunk_size_is_32_chars() -> None:
    chunks = chunk_markdown("a" * 100, tokens=1, overlap=0)
    assert max(len(c.text) for c in chunks) == 32
