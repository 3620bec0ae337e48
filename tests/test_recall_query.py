"""Recall: how a question becomes a keyword query, which tokens count as identifiers, which times it names."""

from __future__ import annotations

from datetime import date

import pytest

from mdrecall.text.dates import date_ranges, in_ranges
from mdrecall.text.fts_query import (
    build_fts_query,
    build_keyword_query,
    expand_query_terms,
    holds_identifier,
    identifier_phrase,
    query_identifiers,
)

TODAY = date(2024, 3, 13)  # a Wednesday


def test_question_keywords_drop_stop_words_and_are_or_joined() -> None:
    assert expand_query_terms("What did Caroline paint in the summer?") == ["caroline", "paint", "summer"]
    assert build_keyword_query("What did Caroline paint in the summer?") == '"caroline" OR "paint" OR "summer"'


def test_the_spec_and_query_keeps_every_word() -> None:
    assert build_fts_query("what did Caroline paint") == '"what" AND "did" AND "Caroline" AND "paint"'


def test_a_query_of_stop_words_only_still_searches_them() -> None:
    assert expand_query_terms("what is it") == ["what", "is", "it"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where did a828e60 land", ["a828e60"]),
        ("set query.hybrid.vectorWeight to 0.6", ["query.hybrid.vectorWeight"]),
        ("who owns INC-4211?", ["INC-4211"]),
        ("what does max_results do", ["max_results"]),
        ("the vectorWeight key", ["vectorWeight"]),
        ("what did Melanie paint in 2022", []),
        ("notes from 2023-05-08", []),  # a date is the date boost's business
    ],
)
def test_identifiers_in_a_query(query: str, expected: list[str]) -> None:
    assert query_identifiers(query) == expected


def test_identifier_phrase_and_verbatim_check() -> None:
    assert identifier_phrase("query.hybrid.vectorWeight") == '"query hybrid vectorWeight"'
    assert holds_identifier("Set Query.Hybrid.VectorWeight = 0.6", "query.hybrid.vectorWeight")
    assert not holds_identifier("query and hybrid vectorWeight", "query.hybrid.vectorWeight")


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("what did Dave open in May 2023", date(2023, 5, 20), date(2023, 6, 1)),
        ("what happened on 8 May 2023", date(2023, 5, 8), date(2023, 5, 9)),
        ("what happened on May 8th, 2023", date(2023, 5, 8), date(2023, 5, 7)),
        ("notes of 2023-05-08", date(2023, 5, 8), date(2023, 5, 9)),
        ("what did we decide yesterday", date(2024, 3, 12), date(2024, 3, 13)),
        ("what did we ship last week", date(2024, 3, 4), date(2024, 3, 11)),
        ("what did we ship last week", date(2024, 3, 10), date(2024, 3, 3)),
        ("budget talk last month", date(2024, 2, 29), date(2024, 3, 1)),
        ("the call two days ago", date(2024, 3, 11), date(2024, 3, 5)),
        ("anything in March?", date(2024, 3, 2), date(2024, 4, 2)),
    ],
)
def test_dates_a_query_names(query: str, inside: date, outside: date) -> None:
    ranges = date_ranges(query, TODAY)
    assert in_ranges(inside, ranges) and not in_ranges(outside, ranges)


@pytest.mark.parametrize("query", ["May I ask about the deploy?", "how did the march go", "release 3.11 notes", ""])
def test_no_date_named(query: str) -> None:
    assert date_ranges(query, TODAY) == []
