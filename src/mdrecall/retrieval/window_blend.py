"""Best-window blending: a chunk also scores by the few lines where meaning and keywords meet.

The chunk-level fusion adds a chunk's best window cosine to the bm25 of the whole chunk, so a chunk whose
keywords sit in one turn and whose closest meaning sits in another scores like a chunk where both sit in
the same turn. Here every window of the fused candidates is scored on both sides (its stored vector's
cosine; a bm25 over the candidates' windows, times the share of the query's keywords it holds), each side
min-max scaled, weighted like the fusion; a chunk's window score is its best window's. The final score is
`windowWeight * window score + (1 - windowWeight) * chunk score`, both min-max scaled over the candidates,
then put back on the fused scale (the best keeps its score) so minScore keeps its meaning.

Measured on LoCoMo dev with the default model (bench/quality/README.md): hit@1 .740 -> .759, evidence
recall@10 .917 -> .921 at weight 0.3 (overlapping chunks merged in both); Python docs R@5 .907 -> .923.

Windows are cut again from the chunk text exactly as at indexing (`chunk_windows`, the log's date as the
prefix). A chunk whose windows do not line up with its stored vectors (a heading context that changed the
cut, a vector filled later for the whole chunk) keeps its chunk-level score on this side.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mdrecall.documents.windows import WindowPlan, chunk_windows
from mdrecall.retrieval.ranking import minmax, minmax_scale, rrf_rescale
from mdrecall.text.fts_query import fold_term, indexed_tokens

if TYPE_CHECKING:
    import numpy as np


def window_bm25(windows: Sequence[set[str]], terms: Sequence[str]) -> list[float]:
    """bm25-like keyword score of each window among these windows: the idf of each query term it holds
    (idf over these windows, so no index-wide statistics are needed), times the share of terms it holds."""
    if not terms:
        return [0.0] * len(windows)
    count = len(windows)
    df = {t: sum(1 for w in windows if t in w) for t in terms}
    idf = {t: math.log(1.0 + (count - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    out = []
    for window in windows:
        held = [t for t in terms if t in window]
        out.append(sum(idf[t] for t in held) * len(held) / len(terms))
    return out


def whole_words_pattern(terms: Sequence[str]) -> re.Pattern[str]:
    r"""A regex finding any of these (non-empty) terms as a whole word, longest first, that matches exactly
    what `(?<!\w)(?:t1|t2|...)(?!\w)` matches, about twice as fast: it opens with the class of the terms'
    first characters, which the regex engine scans for, and checks the word start behind it."""
    firsts = "".join(re.escape(c) for c in dict.fromkeys(t[0] for t in terms))
    rests = "|".join(f"(?<={re.escape(t[0])}){re.escape(t[1:])}" for t in terms)
    return re.compile(rf"[{firsts}](?<!\w[{firsts}])(?:{rests})(?!\w)")


class TermFinder:
    """Which of the query's (folded) terms a text holds as whole indexed tokens.

    ASCII text (most of it) is searched with one regex of the terms, which is several times faster than
    cutting every window into tokens; other text goes through the index's own cutting (`indexed_tokens`:
    NFKC, accents, CJK bigrams)."""

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = set(terms)
        ascii_terms = sorted((t for t in self.terms if t and t.isascii()), key=len, reverse=True)
        self._pattern = whole_words_pattern(ascii_terms) if ascii_terms else None

    def __call__(self, text: str) -> set[str]:
        if not text.isascii():
            return indexed_tokens(text) & self.terms
        if self._pattern is None:
            return set()
        return set(self._pattern.findall(text.lower()))

    def in_windows(self, text: str, windows: Sequence[str]) -> list[set[str]]:
        """`[self(w) for w in windows]` for the windows of `text`, with less work (speed only, same sets).

        In ASCII, a term is matched whole within one line, so a window's terms are the union of its lines'
        terms: each distinct line is searched once (windows overlap by two thirds). A chunk holding none of
        the terms even as a substring gives every window an empty set without a search."""
        if self._pattern is None or not text.isascii() or not all(w.isascii() for w in windows):
            return [self(w) for w in windows]
        lowered = text.lower()
        if not any(t in lowered for t in self.terms if t.isascii()):
            return [set() for _ in windows]
        lines: dict[str, set[str]] = {}
        out = []
        for window in windows:
            held: set[str] = set()
            for line in window.split("\n"):
                found = lines.get(line)
                if found is None:
                    found = lines[line] = set(self._pattern.findall(line.lower()))
                held |= found
            out.append(held)
        return out


def best_window_scores(
    rows: Sequence[Any],
    vectors: dict[str, np.ndarray],
    query: np.ndarray,
    terms: Sequence[str],
    plan: WindowPlan,
    weights: tuple[float, float],
    prefix_of: Any,
    context_terms: dict[str, set[str]] | None = None,
    best_windows: dict[str, tuple[str, float]] | None = None,
) -> dict[str, float]:
    """chunk id -> its best window's fused score, for the chunks whose windows line up with their vectors.

    `context_terms` (chunk id -> folded query terms its indexed text holds, `Store.terms_held`) gives each
    window the terms its chunk holds only through its context (the headings above it): they are part of
    every window's indexed text at indexing time, but the chunk text alone does not say them.
    `best_windows`, when given, receives chunk id -> (its best window's text, cosine): the explanation and the
    snippet's focus (search.snippet_window)."""
    held = context_terms or {}
    folded = list(dict.fromkeys(fold_term(t) for t in terms))
    find = TermFinder(folded)
    owners: list[str] = []
    cosines: list[float] = []
    tokens: list[set[str]] = []
    window_texts: list[str] = []
    for row in rows:
        matrix = vectors.get(row.id)
        if matrix is None:
            continue
        prefix = prefix_of(row.path)
        texts = chunk_windows(row.text, plan, prefix)
        if len(texts) != len(matrix):
            continue
        context = (held.get(row.id, set()) - find(row.text)) | find(prefix)
        owners.extend([row.id] * len(texts))
        cosines.extend((matrix @ query).tolist())
        tokens.extend(found | context for found in find.in_windows(row.text, texts))
        if best_windows is not None:
            window_texts.extend(texts)
    if not owners:
        return {}
    keyword = window_bm25(tokens, folded)
    vector_weight, text_weight = weights
    fused = [
        vector_weight * v + (text_weight * k if max(keyword) > 0 else 0.0)
        for v, k in zip(minmax(cosines), minmax(keyword), strict=True)
    ]
    best: dict[str, float] = {}
    for owner, score in zip(owners, fused, strict=True):
        best[owner] = max(best.get(owner, score), score)
    if best_windows is not None:
        for i, (owner, score) in enumerate(zip(owners, fused, strict=True)):
            if score == best[owner] and owner not in best_windows:
                best_windows[owner] = (window_texts[i], cosines[i])
    return best


def keyword_focus(text: str, terms: Sequence[str]) -> str | None:
    """The window of `text` (cut as at indexing, `chunk_windows`) that holds the query's keywords best
    (window_bm25 among its windows), or None when it holds none: the snippet's focus when no vector scored
    the windows (keyword or vector mode, remote models)."""
    folded = tuple(dict.fromkeys(fold_term(t) for t in terms))
    if not folded:
        return None
    # the terms as TermFinder finds them, without compiling its regex (a search's one snippet focus would pay
    # more for the compile than for the search): whole ASCII words, or the index's own tokens in other text;
    # a term not even a substring of the chunk is not looked for in its ASCII lines
    lowered = text.lower()
    ascii_terms = [t for t in folded if t.isascii() and t in lowered]
    if not ascii_terms and text.isascii():
        return None
    windows = chunk_windows(text, WindowPlan())
    held = [
        set().union(
            *(
                _whole_words_in(unit.lower(), ascii_terms) if unit.isascii() else indexed_tokens(unit) & set(folded)
                for unit in window.split("\n")
            )
        )
        for window in windows
    ]
    if not any(held):
        return None
    scores = window_bm25(held, folded)
    return windows[max(range(len(windows)), key=scores.__getitem__)]


def _whole_words_in(line: str, terms: Sequence[str]) -> set[str]:
    """The (word) terms a lower-cased ASCII line holds as whole words, not inside a longer word, as
    TermFinder's regex finds them."""
    held = set()
    for term in terms:
        at = line.find(term)
        while at >= 0:
            end = at + len(term)
            if not (at and _word_char(line[at - 1])) and not (end < len(line) and _word_char(line[end])):
                held.add(term)
                break
            at = line.find(term, at + 1)
    return held


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def blend(chunk_scores: dict[str, float], window_scores: dict[str, float], weight: float) -> dict[str, float]:
    """weight * scaled window score + (1 - weight) * scaled chunk score, on the chunk scores' scale (the best
    blended chunk gets the best chunk score). A chunk without a window score uses its own chunk score."""
    if not chunk_scores:
        return {}
    chunk = minmax_scale(chunk_scores)
    window = minmax_scale({k: v for k, v in window_scores.items() if k in chunk_scores})
    mixed = {k: weight * window.get(k, chunk[k]) + (1.0 - weight) * chunk[k] for k in chunk}
    if max(mixed.values()) <= 0:
        return dict(chunk_scores)
    return rrf_rescale(mixed, max(chunk_scores.values()))
