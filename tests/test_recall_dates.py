"""The dates people say: relative times resolved against today for one's own notes and against the newest log
for an archive; the logs of that time come first. Through the date reader, the library and the CLI."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.cli.app import app
from mdrecall.text.dates import anchor_day, date_ranges, relative_spans, without_relative_times

from .conftest import write

WED = date(2026, 6, 17)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did we decide yesterday", (date(2026, 6, 16), date(2026, 6, 16))),
        ("what happened today", (WED, WED)),
        ("the day before yesterday", (date(2026, 6, 15), date(2026, 6, 15))),
        ("what did we do last week", (date(2026, 6, 8), date(2026, 6, 14))),
        ("earlier this week", (date(2026, 6, 15), date(2026, 6, 16))),
        ("budget this month", (date(2026, 6, 1), WED)),
        ("what did we decide last March", (date(2026, 3, 1), date(2026, 3, 31))),
        ("plans in the spring", (date(2026, 3, 1), date(2026, 5, 31))),
        ("what we did last summer", (date(2025, 6, 1), date(2025, 8, 31))),
        ("notes from the winter", (date(2025, 12, 1), date(2026, 2, 28))),
        ("two weeks ago", (date(2026, 5, 31), date(2026, 6, 6))),
        ("a couple of weeks ago", (date(2026, 5, 31), date(2026, 6, 6))),
        ("a few days ago", (date(2026, 6, 13), date(2026, 6, 15))),
        ("what happened over the weekend", (date(2026, 6, 13), date(2026, 6, 14))),
        ("last Friday", (date(2026, 6, 12), date(2026, 6, 12))),
        ("in 2024", (date(2024, 1, 1), date(2024, 12, 31))),
        ("last year", (date(2025, 1, 1), date(2025, 12, 31))),
        ("what happened last night", (date(2026, 6, 16), date(2026, 6, 16))),
        ("what did we do in the past week", (date(2026, 6, 10), WED)),
        ("the past few days", (date(2026, 6, 14), WED)),
        ("what did we do in the past days", (date(2026, 6, 14), WED)),
        ("over the last couple of weeks", (date(2026, 6, 3), WED)),
        ("in the last 3 days", (date(2026, 6, 14), WED)),
        ("what did we do since Monday", (date(2026, 6, 15), WED)),
        ("since last Friday", (date(2026, 6, 12), WED)),
        ("what did we ship last quarter", (date(2026, 1, 1), date(2026, 3, 31))),
        ("goals this quarter", (date(2026, 4, 1), WED)),
        ("revenue in Q3 2025", (date(2025, 7, 1), date(2025, 9, 30))),
        ("the summer of 2023", (date(2023, 6, 1), date(2023, 8, 31))),
        ("spring 2024 trip", (date(2024, 3, 1), date(2024, 5, 31))),
        ("what did we plan for late 2024", (date(2024, 1, 1), date(2024, 12, 31))),
        ("what happened on the 3rd", (date(2026, 6, 3), date(2026, 6, 3))),
        ("what happened on the 30th", (date(2026, 5, 30), date(2026, 5, 30))),
        ("what did we do over the holidays", (date(2025, 12, 20), date(2026, 1, 6))),
    ],
)
def test_the_times_people_say(query: str, expected: tuple[date, date]) -> None:
    assert date_ranges(query, WED) == [expected]


def test_last_march_in_march_is_a_year_ago_and_weekends_from_a_sunday() -> None:
    assert date_ranges("last March", date(2026, 3, 20)) == [(date(2025, 3, 1), date(2025, 3, 31))]
    assert date_ranges("over the weekend", date(2026, 6, 14)) == [(date(2026, 6, 13), date(2026, 6, 14))]
    assert date_ranges("last weekend", date(2026, 6, 15)) == [(date(2026, 6, 13), date(2026, 6, 14))]
    assert date_ranges("May I ask", WED) == [] and date_ranges("the last step", WED) == []


def test_months_and_quarters_without_a_year_are_read_in_three_years() -> None:
    assert date_ranges("what did we decide in mid-March", WED) == [
        (date(y, 3, 1), date(y, 3, 31)) for y in (2025, 2026, 2027)
    ]
    assert date_ranges("the Q3 roadmap", WED) == [(date(y, 7, 1), date(y, 9, 30)) for y in (2025, 2026, 2027)]


def test_look_alikes_of_the_newer_times_name_none() -> None:
    look_alikes = ("on the 2 servers", "the last step", "past tense rules", "Q5 plans", "the Q4_report file")
    for query in (*look_alikes, "on the 0th"):
        assert date_ranges(query, WED) == [], query
    # a day no month before today has
    assert date_ranges("on the 31st", date(2026, 3, 1)) == [(date(2026, 1, 31), date(2026, 1, 31))]


def test_christmas_stays_a_keyword_and_a_stretch_does_not() -> None:
    assert without_relative_times("the Christmas party menu") == "the Christmas party menu"
    assert without_relative_times("what did we decide in the past few days") == "what did we decide in"
    assert date_ranges("at Christmas", date(2026, 12, 24)) == [(date(2026, 12, 20), date(2027, 1, 6))]


def test_relative_words_are_kept_off_the_keyword_side() -> None:
    assert without_relative_times("what did we decide about the budget last week?") == (
        "what did we decide about the budget ?"
    )
    assert without_relative_times("deploy notes from 2023-05-08") == "deploy notes from 2023-05-08"
    assert relative_spans("the day before yesterday") == [(0, 24)]


def test_an_archive_is_read_against_its_newest_log() -> None:
    assert anchor_day(WED, date(2026, 6, 16)) == WED  # own notes: today
    assert anchor_day(date(2027, 2, 3), date(2026, 6, 16)) == date(2026, 6, 16)  # an archive: its newest log
    assert anchor_day(WED, None) == WED


def _team_logs(ws: Path, newest: date) -> None:
    """Budget talk on many days; each log also says a time word in passing, as real notes do."""
    write(ws, f"memory/{newest.isoformat()}.md", "# standup\n\n- the budget review: cloud capped at 9k\n")
    write(ws, f"memory/{(newest - timedelta(days=1)).isoformat()}.md", "- budget: travel approved for 3 people\n")
    for back in (9, 16, 40, 75, 120):
        day = newest - timedelta(days=back)
        write(ws, f"memory/{day.isoformat()}.md", f"- budget: {back} services moved to sampling, as said last week\n")
    for back in (3, 5, 12, 20, 30, 50, 60, 90):  # other talk, so that "budget" says something
        day = newest - timedelta(days=back)
        write(ws, f"memory/{day.isoformat()}.md", f"- release {back}.1 ships today with the export screen\n")


def test_yesterday_and_last_week_find_their_logs_in_an_archive(tmp_path: Path, make_index) -> None:
    from mdrecall.retrieval.search import run_search

    ws = tmp_path / "ws"
    newest = date(2026, 6, 17)
    _team_logs(ws, newest)
    index = make_index(ws, None)
    index.sync()

    def top(query: str, now: date) -> str:
        at = datetime(now.year, now.month, now.day, 12, tzinfo=timezone.utc)
        response = run_search(index.store, None, "fts-only", index.config.query, query, ["memory"], 3, 0.0, now=at)
        return response.results[0].path

    for now in (newest, date(2027, 2, 3)):  # own notes, then the same notes months later (an archive)
        assert top("what did we decide about the budget yesterday", now) == "memory/2026-06-16.md"
        assert top("budget notes from last week", now) == "memory/2026-06-08.md"
        assert top("the budget today", now) == "memory/2026-06-17.md"


def test_last_night_the_past_days_and_last_quarter_find_their_logs(tmp_path: Path, make_index) -> None:
    from mdrecall.retrieval.search import run_search

    ws = tmp_path / "ws"
    newest = date(2026, 6, 17)
    _team_logs(ws, newest)
    index = make_index(ws, None)
    index.sync()
    at = datetime(2026, 6, 17, 12, tzinfo=timezone.utc)

    def paths(query: str) -> list[str]:
        response = run_search(index.store, None, "fts-only", index.config.query, query, ["memory"], 10, now=at)
        return [r.path for r in response.results]

    assert paths("what happened last night") == ["memory/2026-06-16.md"]
    # the logs of the last few days (14-17 June) and nothing older
    recent = {"memory/2026-06-14.md", "memory/2026-06-16.md", "memory/2026-06-17.md"}
    assert set(paths("what happened in the past few days")) == recent
    assert paths("the budget in the past week")[0] in ("memory/2026-06-16.md", "memory/2026-06-17.md")
    # the first quarter of 2026: the logs of 17 February and 19 March
    assert sorted(paths("what happened last quarter")) == ["memory/2026-02-17.md", "memory/2026-03-19.md"]


def test_cli_what_did_we_decide_yesterday(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    today = date.today()
    _team_logs(ws, today)
    write(ws, "mdrecall.toml", 'provider = "none"\n')
    runner = CliRunner()
    args = ["--workspace", str(ws), "--state-dir", str(tmp_path / "state")]
    result = runner.invoke(app, [*args, "search", "what did we decide about the budget yesterday", "--json"])
    assert result.exit_code == 0, result.output
    import json

    paths = [r["path"] for r in json.loads(result.stdout)]
    assert paths[0] == f"memory/{(today - timedelta(days=1)).isoformat()}.md"


def test_a_question_only_about_a_time_with_no_log_of_it_says_nothing(tmp_path: Path, make_index) -> None:
    from mdrecall.retrieval.search import run_search
    from mdrecall.text.dates import names_only_a_time
    from mdrecall.text.fts_query import expand_query_terms

    assert names_only_a_time(expand_query_terms("what happened yesterday"))
    assert names_only_a_time(expand_query_terms("what did we decide in March"))
    assert not names_only_a_time(expand_query_terms("what did we decide about the budget yesterday"))

    ws = tmp_path / "ws"
    _team_logs(ws, date(2026, 6, 17))
    write(ws, "memory/people.md", "# People\n\n- The on-call handover happens every Monday in #ops.\n")
    index = make_index(ws, None)
    index.sync()

    def search(query: str, now: date):
        at = datetime(now.year, now.month, now.day, 12, tzinfo=timezone.utc)
        return run_search(index.store, None, "fts-only", index.config.query, query, ["memory"], 3, 0.0, now=at)

    later = date(2026, 6, 27)  # ten days after the newest log: own notes, no log of yesterday
    empty = search("what happened yesterday", later)
    assert empty.results == [] and empty.notice == "nothing in memory from 2026-06-26"
    assert search("what did we do in January 2026", later).notice == "nothing in memory from January 2026"
    # a topic is still searched for; a time with a log is answered by it
    assert search("what happened to the budget yesterday", later).results
    answer = search("what happened yesterday", date(2026, 6, 18))
    assert [r.path for r in answer.results] == ["memory/2026-06-17.md"]  # not people.md's "happens"


def test_cli_says_nothing_from_a_time_without_logs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _team_logs(ws, date.today() - timedelta(days=10))
    write(ws, "mdrecall.toml", 'provider = "none"\n')
    args = ["--workspace", str(ws), "--state-dir", str(tmp_path / "state")]
    result = CliRunner().invoke(app, [*args, "search", "what did we do yesterday"])
    assert result.exit_code == 0, result.output
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    assert f"nothing in memory from {yesterday}" in result.output
