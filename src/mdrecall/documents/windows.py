"""Windows of a chunk: the short texts that are embedded, so every line of a chunk is read by the model.

A chunk is ~400 tokens (the spec's size, kept for snippets and line ranges), but all-MiniLM-L6-v2 reads 256
word pieces: on conversational logs 85 % of chunks had an unembedded tail. And one vector for 30 chat turns
is a blur; a question is about one or two turns. So each chunk gets one vector per window of a few
consecutive lines (turns), and a chunk scores as its best window (the store takes the max).

Rules, all measured on the LoCoMo dev half (see README "Retrieval quality"):
- a window is `lines` consecutive non-blank lines (more when they are short: a window holds at least
  `min_tokens`), and the next one starts `stride`/`lines` of a window later (stride == lines: no overlap);
- a window never exceeds the model's input: a window is cut short at the token budget, and a single
  line longer than the budget is split into pieces, so no text goes unembedded;
- windows always cover every non-blank line (a short window moves the next start back);
- a chunk that fits in one window is embedded whole, as before;
- the chunk's context (the log's date, heading path) leads every window (the caller adds it, the budget
  counts it), so "what did Dave do in May 2023" can meet the right turn by meaning too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_WINDOW_LINES = 3
DEFAULT_WINDOW_STRIDE = 3
DEFAULT_MIN_TOKENS = 64
DEFAULT_WHOLE = False
# Tokens kept free for special tokens and the "passage: " prefix.
RESERVED_TOKENS = 16
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@dataclass(frozen=True)
class WindowPlan:
    """How a provider's input is cut: lines per window, stride, and the token budget of one window."""

    lines: int = DEFAULT_WINDOW_LINES
    stride: int = DEFAULT_WINDOW_STRIDE
    max_tokens: int = 256
    # short lines (bullets, headings) are grouped until a window holds this many (estimated) tokens
    min_tokens: int = DEFAULT_MIN_TOKENS
    # also embed the whole chunk (as far as the model reads it) as one more window: keeps the topic of a
    # long note, which short windows lose
    whole: bool = DEFAULT_WHOLE

    def budget(self, prefix: str) -> int:
        """Tokens left for the lines once the prefix and special tokens are counted (at least 32)."""
        return max(32, self.max_tokens - RESERVED_TOKENS - estimate_tokens(prefix))


def estimate_tokens(text: str) -> int:
    """A safe over-estimate of sub-word tokens: ~3 ASCII characters per token, 1 per other character.

    WordPiece and SentencePiece give ~4 characters per English token and at most one token per CJK
    character (MiniLM maps each one to a token), so a window under this estimate is never truncated.
    """
    other = 0 if text.isascii() else len(_NON_ASCII.findall(text))  # isascii: no regex pass for most lines
    return (len(text) - other + 2) // 3 + other


def split_long_line(line: str, budget: int) -> list[str]:
    """Pieces of one line, each within `budget` tokens, cut at spaces where possible; nothing dropped."""
    if estimate_tokens(line) <= budget:
        return [line]
    pieces: list[str] = []
    rest = line
    while rest:
        cut = _fit(rest, budget)
        if cut < len(rest):
            space = rest.rfind(" ", cut // 2, cut)
            if space > 0:
                cut = space
        pieces.append(rest[:cut])
        rest = rest[cut:].lstrip(" ")
    return [p for p in pieces if p.strip()]


def _fit(text: str, budget: int) -> int:
    """Longest prefix length of `text` within `budget` tokens (at least one character)."""
    lo, hi = 1, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def chunk_windows(text: str, plan: WindowPlan, prefix: str = "") -> list[str]:
    """The windows of one chunk, in order; their union holds every non-blank line of `text`.

    `prefix` (the chunk's context) only counts against the budget: the caller puts it in front of each
    window (`with_context`), so that the whole text stays within the model's input.
    """
    budget = plan.budget(prefix)
    units: list[str] = []
    for line in text.splitlines():
        if line.strip():
            units.extend(split_long_line(line.rstrip(), budget))
    if not units:
        return [text.strip()]
    costs = [estimate_tokens(u) + 1 for u in units]
    if len(units) <= plan.lines and sum(costs) <= budget:
        return [text.strip()]
    windows: list[str] = []
    start, lines = 0, max(1, plan.lines)
    while True:
        end, used = start, 0
        while end < len(units) and (end == start or used + costs[end] <= budget):
            if end - start >= lines and used >= plan.min_tokens:
                break
            used += costs[end]
            end += 1
        windows.append("\n".join(units[start:end]))
        if end >= len(units):
            return [text.strip(), *windows] if plan.whole else windows
        # stride as a share of the window: stride == lines tiles the chunk, stride 1 of 3 moves a third
        step = max(1, ((end - start) * min(plan.stride, lines)) // lines)
        start = start + step
