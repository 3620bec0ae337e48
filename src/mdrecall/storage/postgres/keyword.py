"""The keyword side on PostgreSQL: the same tokens and the same BM25 as SQLite's FTS5, so fusion sees equal scores.

PostgreSQL's own parser splits text differently from FTS5's unicode61 tokenizer (hosts, file paths, hyphenated
words) and `ts_rank_cd` is not BM25. Both would change which chunks the keyword side returns and how the shared
fusion in `mdrecall.retrieval.search` weighs them. So the tokens are cut here, in Python, the way unicode61 cuts
`fts_text.index_text(chunk)` (letters and digits, case and accents folded), stored as a `tsvector` with
positions (GIN-indexed for matching), and the score is FTS5's bm25 (k1 = 1.2, b = 0.75, the same idf floor)
computed in SQL from term frequencies, document lengths and per-generation totals.

The queries `mdrecall.retrieval.search` builds are FTS5 MATCH strings; `translate` turns one into a `tsquery` (quoted
phrases, bare words, AND / OR / NOT, parentheses, implicit AND, `*` prefixes) plus the list of its terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field

from mdrecall.text.tokens import index_text

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_QUERY_TOKEN = re.compile(r'"((?:[^"]|"")*)"\*?|\(|\)|[^\s()"]+')
MAX_LEXEME_BYTES = 2000  # PostgreSQL refuses lexemes of 2 KiB and more
MAX_POSITIONS = 255  # PostgreSQL keeps at most 256 positions per lexeme
MAX_POSITION = 16383
BM25_K1 = 1.2
BM25_B = 0.75


def fold(token: str) -> str:
    """Lower case, diacritics removed (unicode61's remove_diacritics), recomposed so Hangul stays whole."""
    lowered = token.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped)


def tokenize(text: str) -> list[str]:
    """unicode61's tokens of already-indexed text: runs of letters and digits (underscore separates), folded."""
    return [fold(t) for t in _TOKEN.findall(text)]


def chunk_terms(text: str) -> tuple[str, int]:
    """A chunk's `tsvector` literal (lexemes with positions) and its length in tokens (BM25's |D|)."""
    tokens = tokenize(index_text(text))
    positions: dict[str, list[int]] = defaultdict(list)
    for index, token in enumerate(tokens, start=1):
        places = positions[token]
        if len(places) < MAX_POSITIONS:
            places.append(min(index, MAX_POSITION))
    parts = [
        f"'{lexeme}':{','.join(map(str, sorted(set(places))))}"
        for lexeme, places in positions.items()
        if len(lexeme.encode("utf-8")) < MAX_LEXEME_BYTES
    ]
    return " ".join(parts), len(tokens)


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass
class KeywordQuery:
    """A MATCH string translated: the `tsquery` text (None when nothing can match) and what BM25 scores, as
    FTS5 does: each phrase of the query is one unit (its own document frequency and hit count). `terms`
    are the one-word phrases, `phrases` the longer ones (their words, in order)."""

    tsquery: str | None
    terms: list[str] = field(default_factory=list)
    phrases: list[tuple[str, ...]] = field(default_factory=list)
    # one-word prefixes ("adopt"* of query.wordForms): one unit each, its hit count summed over every lexeme
    # that starts with it, as FTS5 counts a prefix phrase
    prefixes: list[str] = field(default_factory=list)
    # "or": an OR of its units only (one unit counts as one); "and": an AND of its units only; "" otherwise
    shape: str = ""

    @property
    def plain_words(self) -> bool:
        """An OR or an AND of single words and word prefixes: `BM25_POSTINGS_SQL` answers it from the postings
        alone (a prefix is one range of their term index)."""
        return self.shape in ("or", "and") and not self.phrases

    @property
    def units(self) -> int:
        """How many bm25 units the query has (an AND needs a chunk to hold every one)."""
        return len(self.terms) + len(self.phrases) + len(self.prefixes)

    @property
    def prefix_ends(self) -> list[str]:
        """For each prefix, the first string after every term that starts with it (the postings' terms are
        in byte order, schema 5): "adopt" -> "adopu"."""
        return [prefix[:-1] + chr(ord(prefix[-1]) + 1) for prefix in self.prefixes]

    @property
    def phrase_keys(self) -> list[str]:
        return [" ".join(words) for words in self.phrases]

    @property
    def phrase_tsqueries(self) -> list[str]:
        return [" <-> ".join(_lexeme(w) for w in words) for words in self.phrases]


class _Parser:
    """Recursive descent over FTS5's query syntax; precedence NOT > AND > OR, as in FTS5 and tsquery."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.terms: list[str] = []
        self.phrases: list[tuple[str, ...]] = []
        self.prefixes: list[str] = []
        self.ops: set[str] = set()  # "or", "and", "not", "prefix": which shapes `KeywordQuery.shape` can take

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse_or(self) -> str | None:
        parts = [self.parse_and()]
        while self.peek() == "OR":
            self.take()
            parts.append(self.parse_and())
        kept = [p for p in parts if p]
        if len(kept) > 1:
            self.ops.add("or")
        return None if not kept else kept[0] if len(kept) == 1 else "(" + " | ".join(kept) + ")"

    def parse_and(self) -> str | None:
        parts = [self.parse_not()]
        while self.peek() not in (None, "OR", ")"):
            if self.peek() == "AND":
                self.take()
            parts.append(self.parse_not())
        kept = [p for p in parts if p]
        if len(kept) > 1:
            self.ops.add("and")
        return None if not kept else kept[0] if len(kept) == 1 else "(" + " & ".join(kept) + ")"

    def parse_not(self) -> str | None:
        left = self.parse_atom()
        while self.peek() == "NOT":
            self.take()
            right = self.parse_atom()
            if right and left:
                self.ops.add("not")
                left = f"({left} & !{right})"
        return left

    def parse_atom(self) -> str | None:
        token = self.peek()
        if token is None:
            return None
        self.take()
        if token == "(":
            inner = self.parse_or()
            if self.peek() == ")":
                self.take()
            return inner
        if token in (")", "AND", "OR", "NOT"):
            return None
        return self.phrase(token)

    def phrase(self, token: str) -> str | None:
        prefix = token.endswith("*")
        raw = token.rstrip("*")
        if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
            raw = raw[1:-1].replace('""', '"')
        words = tokenize(raw)
        words = [w for w in words if len(w.encode("utf-8")) < MAX_LEXEME_BYTES]
        if not words:
            return None
        if len(words) == 1 and prefix:
            self.prefixes.append(words[0])
        elif len(words) == 1:
            self.terms.append(words[0])
        else:
            self.phrases.append(tuple(words))
        lexemes = [_lexeme(w) for w in words]
        if prefix:
            if len(words) > 1:
                self.ops.add("prefix")  # a phrase ending in a prefix: only the per-row path scores it
            lexemes[-1] += ":*"
        return lexemes[0] if len(lexemes) == 1 else "(" + " <-> ".join(lexemes) + ")"


def translate(match: str) -> KeywordQuery:
    """FTS5 MATCH string -> tsquery text and the terms that BM25 scores."""
    parser = _Parser(_split(match))
    expression = parser.parse_or()
    ops = parser.ops
    shape = "or" if not ops - {"or"} else "and" if ops == {"and"} else ""
    return KeywordQuery(
        expression,
        list(dict.fromkeys(parser.terms)),
        list(dict.fromkeys(parser.phrases)),
        list(dict.fromkeys(parser.prefixes)),
        shape,
    )


def _split(match: str) -> list[str]:
    return [m.group(0) for m in _QUERY_TOKEN.finditer(match)]


# One statement, one snapshot: matches, document frequencies and totals are read together. Scores are FTS5's
# bm25() (negative, lower is better), so `mdrecall.retrieval.search.bm25_rank_to_score` maps them exactly as for SQLite.
# A phrase of several words is one unit, as in FTS5: its document frequency counts chunks holding the words
# adjacent, its hit count is `mdrecall_phrase_tf` (schema 3). A matched chunk's term frequencies are read for
# the query's one-word phrases only (`setweight` marks them, `ts_filter`
# keeps them: a lookup per term instead of unnesting every lexeme of the chunk; 1.5x faster at 30k chunks),
# and the text is fetched for the `limit` best rows only.
BM25_SQL = f"""
WITH q(key, tsq) AS MATERIALIZED (
  SELECT t, quote_literal(t)::tsquery FROM (SELECT DISTINCT unnest(%(terms)s::text[]) AS t) one
  UNION ALL
  SELECT k, t::tsquery FROM unnest(%(phrases)s::text[], %(phrase_tsq)s::text[]) AS many(k, t)
  UNION ALL
  SELECT p || '*', (quote_literal(p) || ':*')::tsquery FROM unnest(%(prefixes)s::text[]) AS pre(p)
),
stats AS MATERIALIZED (
  SELECT n_chunks::float8 AS n, CASE WHEN n_chunks > 0 THEN total_len::float8 / n_chunks ELSE 1 END AS avgdl
  FROM mdrecall_generations WHERE id = %(gen)s
),
df AS MATERIALIZED (
  SELECT q.key, (SELECT count(*) FROM mdrecall_chunks c
                 WHERE c.generation = %(gen)s AND c.tsv @@ q.tsq)::float8 AS hits
  FROM q
),
idf AS MATERIALIZED (
  SELECT df.key, GREATEST(ln((s.n - df.hits + 0.5) / (df.hits + 0.5)), 1e-6) AS idf FROM df, stats s
),
ranked AS (
  SELECT c.id,
    -(SELECT coalesce(sum(i.idf * (x.tf * {BM25_K1 + 1}) /
          (x.tf + {BM25_K1} * ({1 - BM25_B} + {BM25_B} * c.doc_len / s.avgdl))), 0)
      FROM (SELECT u.lexeme AS key, cardinality(u.positions)::float8 AS tf
            FROM unnest(ts_filter(setweight(c.tsv, 'A', %(terms)s::text[]), '{{a}}')) u
            UNION ALL
            SELECT p.key, mdrecall_phrase_tf(c.tsv, string_to_array(p.key, ' '))::float8
            FROM unnest(%(phrases)s::text[]) AS p(key)
            UNION ALL
            SELECT pre.p || '*', (SELECT sum(cardinality(u.positions)) FROM unnest(c.tsv) u
                                   WHERE starts_with(u.lexeme, pre.p))::float8
            FROM unnest(%(prefixes)s::text[]) AS pre(p)) x
      JOIN idf i ON i.key = x.key WHERE x.tf > 0) AS rank
  FROM mdrecall_chunks c, stats s
  WHERE c.generation = %(gen)s AND c.model = %(model)s AND c.source = ANY(%(sources)s)
    AND c.tsv @@ %(tsquery)s::tsquery
  ORDER BY rank ASC, c.id
  LIMIT %(limit)s
)
SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, r.rank
FROM ranked r JOIN mdrecall_chunks c ON c.generation = %(gen)s AND c.id = r.id
ORDER BY r.rank ASC, r.id
"""


# An OR or an AND of plain words (the keyword-only expanded query, the hybrid side's query, most identifiers):
# BM25 from `mdrecall_postings` alone, through its covering index (generation, term, rid) INCLUDE (tf,
# doc_len): document frequencies are the postings' counts, scores sum over each chunk's postings, an AND keeps
# the chunks holding every word. Only the best `k` chunks (and those tied with the k-th) are joined to
# `mdrecall_chunks`, for their text and the model / source filter; the last row carries how many chunks were
# scored, so the caller widens `k` when the filter left fewer than `limit` (`PgStore._postings_search`).
# Same scores and order as `BM25_SQL`.
BM25_POSTINGS_SQL = f"""
WITH p AS MATERIALIZED (
  SELECT term, rid, tf::float8 AS tf, doc_len FROM mdrecall_postings
  WHERE generation = %(gen)s AND term = ANY(%(terms)s::text[])
  UNION ALL
  SELECT pre.p || '*', m.rid, sum(m.tf)::float8, m.doc_len
  FROM unnest(%(prefixes)s::text[], %(prefix_ends)s::text[]) AS pre(p, e)
  JOIN mdrecall_postings m ON m.generation = %(gen)s AND m.term >= pre.p AND m.term < pre.e
  GROUP BY pre.p, m.rid, m.doc_len
),
stats AS MATERIALIZED (
  SELECT n_chunks::float8 AS n, CASE WHEN n_chunks > 0 THEN total_len::float8 / n_chunks ELSE 1 END AS avgdl
  FROM mdrecall_generations WHERE id = %(gen)s
),
idf AS MATERIALIZED (
  SELECT p.term, GREATEST(ln((s.n - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS idf
  FROM p, stats s GROUP BY p.term, s.n
),
scored AS MATERIALIZED (
  SELECT p.rid, -sum(i.idf * (p.tf * {BM25_K1 + 1}) /
                    (p.tf + {BM25_K1} * ({1 - BM25_B} + {BM25_B} * p.doc_len / s.avgdl))) AS rank
  FROM p JOIN idf i ON i.term = p.term, stats s
  GROUP BY p.rid
  HAVING NOT %(all_terms)s OR count(*) = %(units)s
),
cut AS (SELECT rank FROM scored ORDER BY rank ASC OFFSET %(k)s - 1 LIMIT 1),
picked AS (
  SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, t.rank
  FROM scored t JOIN mdrecall_chunks c ON c.rid = t.rid
  WHERE t.rank <= coalesce((SELECT rank FROM cut), 'infinity'::float8)
    AND c.generation = %(gen)s AND c.model = %(model)s AND c.source = ANY(%(sources)s)
  ORDER BY t.rank ASC, c.id
  LIMIT %(limit)s
)
SELECT * FROM (
  SELECT 0 AS part, id, path, source, start_line, end_line, text, rank, 0::bigint AS scored FROM picked
  UNION ALL
  SELECT 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, count(*) FROM scored
) answer
ORDER BY part, rank ASC, id
"""
