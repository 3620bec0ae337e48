"""Chunk windows: every non-blank line is embedded, no window exceeds the model's input, short chunks stay whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mdrecall.documents.windows import RESERVED_TOKENS, WindowPlan, chunk_windows, estimate_tokens, split_long_line

LINE = st.text(alphabet=st.sampled_from(list("abcdef xyz.,:-") + ["数", "据", "é"]), min_size=0, max_size=400)


def _words(text: str) -> list[str]:
    return text.split()


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(LINE, min_size=0, max_size=40),
    per=st.integers(1, 5),
    stride=st.integers(1, 5),
    max_tokens=st.sampled_from([64, 128, 256, 512]),
    prefix=st.sampled_from(["", "2023-05-08 Monday 8 May 2023", "# Infra > ## Hosts"]),
)
def test_windows_cover_every_line_within_the_budget(
    lines: list[str], per: int, stride: int, max_tokens: int, prefix: str
) -> None:
    text = "\n".join(lines)
    plan = WindowPlan(per, stride, max_tokens)
    windows = chunk_windows(text, plan, prefix)
    assert windows
    joined = "\n".join(windows)
    # every word of every line is in some window (long lines are split at spaces, never dropped)
    for word in _words(text):
        assert word in joined
    assert sum(len(_words(w)) for w in windows) >= len(_words(text))
    if len(windows) > 1:
        # the prefix is counted: prefix + window fit in the model's input (rounding: one token per line)
        assert plan.budget(prefix) <= max(32, max_tokens - RESERVED_TOKENS - estimate_tokens(prefix))
        for window in windows:
            assert estimate_tokens(window) <= plan.budget(prefix) + window.count("\n") + 1


def test_short_chunk_is_one_window_equal_to_its_text() -> None:
    text = "# Infra\n\nThe gateway runs on the Mac Studio.\n"
    assert chunk_windows(text, WindowPlan(3, 3, 256)) == [text.strip()]


def test_chat_turns_become_windows_of_three_turns() -> None:
    turns = [f"Speaker{i % 2}: this is turn number {i} of a long chat about many things today" for i in range(9)]
    windows = chunk_windows("\n".join(turns), WindowPlan(3, 3, 512))
    assert [w.splitlines() for w in windows] == [turns[0:3], turns[3:6], turns[6:9]]
    overlapping = chunk_windows("\n".join(turns), WindowPlan(3, 1, 512))
    assert overlapping[0].splitlines() == turns[0:3] and overlapping[1].splitlines() == turns[1:4]
    assert overlapping[-1].splitlines()[-1] == turns[-1]


def test_a_line_longer_than_the_model_input_is_split_not_cut() -> None:
    line = " ".join(f"word{i}" for i in range(600))
    pieces = split_long_line(line, 100)
    assert len(pieces) > 1 and " ".join(pieces).split() == line.split()
    assert all(estimate_tokens(p) <= 100 for p in pieces)


def test_cjk_counts_one_token_per_character() -> None:
    assert estimate_tokens("数据库") == 3 and estimate_tokens("abcdef") == 2
