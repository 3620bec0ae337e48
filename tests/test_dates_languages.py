"""The dates people say in German, Spanish, Portuguese, French, Japanese, Chinese and Korean: read as English
ones are (against today, or the newest log in an archive), kept off the keyword side, and a question only
about a time answered from the logs of that time. Through the date reader, the library and the CLI."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.cli.app import app
from mdrecall.text.dates import date_ranges, names_only_a_time, relative_spans, without_relative_times
from mdrecall.text.fts_query import expand_query_terms

from .conftest import write

WED = date(2026, 6, 17)  # a Wednesday
YESTERDAY = (date(2026, 6, 16), date(2026, 6, 16))
BEFORE_YESTERDAY = (date(2026, 6, 15), date(2026, 6, 15))
TODAY = (WED, WED)
LAST_WEEK = (date(2026, 6, 8), date(2026, 6, 14))
THIS_WEEK = (date(2026, 6, 15), WED)
EARLIER_THIS_WEEK = (date(2026, 6, 15), date(2026, 6, 16))
THIS_MONTH = (date(2026, 6, 1), WED)
LAST_MONTH = (date(2026, 5, 1), date(2026, 5, 31))
MARCH = (date(2026, 3, 1), date(2026, 3, 31))
MARCH_2025 = (date(2025, 3, 1), date(2025, 3, 31))
SPRING = (date(2026, 3, 1), date(2026, 5, 31))
LAST_SUMMER = (date(2025, 6, 1), date(2025, 8, 31))
WINTER = (date(2025, 12, 1), date(2026, 2, 28))
TWO_WEEKS_AGO = (date(2026, 5, 31), date(2026, 6, 6))
THREE_DAYS_AGO = (date(2026, 6, 13), date(2026, 6, 15))
THREE_MONTHS_AGO = MARCH
WEEKEND = (date(2026, 6, 13), date(2026, 6, 14))
FRIDAY = (date(2026, 6, 12), date(2026, 6, 12))
YEAR_2024 = (date(2024, 1, 1), date(2024, 12, 31))
LAST_YEAR = (date(2025, 1, 1), date(2025, 12, 31))
THIS_YEAR = (date(2026, 1, 1), WED)
MAY_8_2023 = (date(2023, 5, 8), date(2023, 5, 8))
MAY_2023 = (date(2023, 5, 1), date(2023, 5, 31))
PAST_3_DAYS = (date(2026, 6, 14), WED)  # the last few days up to today
PAST_2_WEEKS = (date(2026, 6, 3), WED)
ANY_MAY = [(date(y, 5, 1), date(y, 5, 31)) for y in (2025, 2026, 2027)]
ANY_MARCH = [(date(y, 3, 1), date(y, 3, 31)) for y in (2025, 2026, 2027)]

CASES = {
    "de": [
        ("Was haben wir gestern beschlossen?", YESTERDAY),
        ("vorgestern", BEFORE_YESTERDAY),
        ("Budget heute Morgen", TODAY),
        ("was haben wir letzte Woche beschlossen", LAST_WEEK),
        ("in der vergangenen Woche", LAST_WEEK),
        ("diese Woche", THIS_WEEK),
        ("Anfang dieser Woche", EARLIER_THIS_WEEK),
        ("diesen Monat", THIS_MONTH),
        ("letzten Monat", LAST_MONTH),
        ("im letzten März", MARCH),
        ("im Frühling", SPRING),
        ("letzten Sommer", LAST_SUMMER),
        ("im Winter", WINTER),
        ("vor zwei Wochen", TWO_WEEKS_AGO),
        ("vor ein paar Tagen", THREE_DAYS_AGO),
        ("vor drei Monaten", THREE_MONTHS_AGO),
        ("am Wochenende", WEEKEND),
        ("letzten Freitag", FRIDAY),
        ("im Jahr 2024", YEAR_2024),
        ("letztes Jahr", LAST_YEAR),
        ("dieses Jahr", THIS_YEAR),
        ("am 8. Mai 2023", MAY_8_2023),
        ("08.05.2023", MAY_8_2023),
        ("Mai 2023", MAY_2023),
    ],
    "es": [
        ("¿qué pasó ayer?", YESTERDAY),
        ("anteayer", BEFORE_YESTERDAY),
        ("¿qué pasó anoche?", YESTERDAY),
        ("hoy", TODAY),
        ("la semana pasada", LAST_WEEK),
        ("esta semana", THIS_WEEK),
        ("a principios de esta semana", EARLIER_THIS_WEEK),
        ("este mes", THIS_MONTH),
        ("el mes pasado", LAST_MONTH),
        ("el pasado marzo", MARCH),
        ("en primavera", SPRING),
        ("el verano pasado", LAST_SUMMER),
        ("en invierno", WINTER),
        ("hace dos semanas", TWO_WEEKS_AGO),
        ("hace unos días", THREE_DAYS_AGO),
        ("el fin de semana", WEEKEND),
        ("el viernes pasado", FRIDAY),
        ("en 2024", YEAR_2024),
        ("el año pasado", LAST_YEAR),
        ("8 de mayo de 2023", MAY_8_2023),
        ("mayo de 2023", MAY_2023),
    ],
    "pt": [
        ("o que aconteceu ontem", YESTERDAY),
        ("anteontem", BEFORE_YESTERDAY),
        ("hoje", TODAY),
        ("na semana passada", LAST_WEEK),
        ("esta semana", THIS_WEEK),
        ("este mês", THIS_MONTH),
        ("no mês passado", LAST_MONTH),
        ("em março passado", MARCH),
        ("na primavera", SPRING),
        ("no verão passado", LAST_SUMMER),
        ("no inverno", WINTER),
        ("há duas semanas", TWO_WEEKS_AGO),
        ("três dias atrás", THREE_DAYS_AGO),
        ("o que fizemos no fim de semana", WEEKEND),
        ("na sexta-feira passada", FRIDAY),
        ("em 2024", YEAR_2024),
        ("no ano passado", LAST_YEAR),
        ("8 de maio de 2023", MAY_8_2023),
    ],
    "fr": [
        ("qu'est-ce qu'on a fait hier", YESTERDAY),
        ("avant-hier", BEFORE_YESTERDAY),
        ("aujourd'hui", TODAY),
        ("la semaine dernière", LAST_WEEK),
        ("cette semaine", THIS_WEEK),
        ("en début de semaine", EARLIER_THIS_WEEK),
        ("ce mois-ci", THIS_MONTH),
        ("le mois dernier", LAST_MONTH),
        ("qu'avons-nous décidé en mars dernier", MARCH),
        ("au printemps", SPRING),
        ("l'été dernier", LAST_SUMMER),
        ("en hiver", WINTER),
        ("il y a deux semaines", TWO_WEEKS_AGO),
        ("il y a quelques jours", THREE_DAYS_AGO),
        ("pendant le week-end", WEEKEND),
        ("vendredi dernier", FRIDAY),
        ("en 2024", YEAR_2024),
        ("l'année dernière", LAST_YEAR),
        ("le 8 mai 2023", MAY_8_2023),
    ],
    "ja": [
        ("昨日何があった", YESTERDAY),
        ("一昨日", BEFORE_YESTERDAY),
        ("今日の予定", TODAY),
        ("先週決めたこと", LAST_WEEK),
        ("今週", THIS_WEEK),
        ("今週の初め", EARLIER_THIS_WEEK),
        ("今月", THIS_MONTH),
        ("先月", LAST_MONTH),
        ("今年の3月", MARCH),
        ("去年の3月", MARCH_2025),
        ("春に", SPRING),
        ("去年の夏", LAST_SUMMER),
        ("2週間前", TWO_WEEKS_AGO),
        ("数日前", THREE_DAYS_AGO),
        ("3か月前", THREE_MONTHS_AGO),
        ("週末に", WEEKEND),
        ("先週の金曜日", FRIDAY),
        ("2024年に", YEAR_2024),
        ("去年", LAST_YEAR),
        ("2023年5月8日", MAY_8_2023),
        ("2023年5月", MAY_2023),
    ],
    "zh": [
        ("昨天发生了什么", YESTERDAY),
        ("前天", BEFORE_YESTERDAY),
        ("今天", TODAY),
        ("上周我们决定了什么", LAST_WEEK),
        ("这周", THIS_WEEK),
        ("这个月", THIS_MONTH),
        ("上个月", LAST_MONTH),
        ("今年三月", MARCH),
        ("去年三月", MARCH_2025),
        ("春天", SPRING),
        ("去年夏天", LAST_SUMMER),
        ("冬天", WINTER),
        ("两周前", TWO_WEEKS_AGO),
        ("几天前", THREE_DAYS_AGO),
        ("周末", WEEKEND),
        ("上周五", FRIDAY),
        ("2024年", YEAR_2024),
        ("去年", LAST_YEAR),
        ("2023年5月8日", MAY_8_2023),
        ("2023年5月8号", MAY_8_2023),
    ],
    "ko": [
        ("어제 뭐 했지", YESTERDAY),
        ("그저께", BEFORE_YESTERDAY),
        ("오늘", TODAY),
        ("지난주에 뭐 했지", LAST_WEEK),
        ("이번 주", THIS_WEEK),
        ("이번 주 초", EARLIER_THIS_WEEK),
        ("이번 달", THIS_MONTH),
        ("지난달", LAST_MONTH),
        ("지난 3월", MARCH),
        ("작년 3월", MARCH_2025),
        ("봄에", SPRING),
        ("작년 여름", LAST_SUMMER),
        ("겨울에", WINTER),
        ("2주 전", TWO_WEEKS_AGO),
        ("며칠 전", THREE_DAYS_AGO),
        ("세 달 전", THREE_MONTHS_AGO),
        ("주말에", WEEKEND),
        ("지난 금요일", FRIDAY),
        ("지난주 금요일", FRIDAY),
        ("2024년에", YEAR_2024),
        ("작년", LAST_YEAR),
        ("2023년 5월 8일", MAY_8_2023),
    ],
}


@pytest.mark.parametrize(
    ("query", "expected"), [case for cases in CASES.values() for case in cases], ids=lambda v: str(v)[:30]
)
def test_the_times_people_say_in_each_language(query: str, expected: tuple[date, date]) -> None:
    assert date_ranges(query, WED) == [expected]


@pytest.mark.parametrize("query", ["im Mai", "en mayo", "em maio", "en mai", "5月に", "5월에"])
def test_a_month_without_a_year_is_read_in_three_years(query: str) -> None:
    assert date_ranges(query, WED) == ANY_MAY


def test_last_week_s_friday_is_not_the_latest_friday_on_a_saturday() -> None:
    saturday = date(2026, 6, 20)
    assert date_ranges("先週の金曜日", saturday) == [FRIDAY]  # the Friday of last week
    assert date_ranges("上周五", saturday) == [FRIDAY]
    assert date_ranges("letzten Freitag", saturday) == [(date(2026, 6, 19), date(2026, 6, 19))]  # as "last Friday"


@pytest.mark.parametrize(
    "query",
    [
        "Mars rover landing notes",  # the planet, not French "mars"
        "die Mars-Mission",
        "Mai Tai recipe",
        "May I ask about Mai",
        "Füge hier ein Logging hinzu",  # German "hier" (here) is not French "hier" (yesterday)
        "Was ist hier passiert?",
        "o marco do projeto",  # Portuguese "marco" (milestone) is "março" only after a preposition
        "il a été dernier",  # French "été" (been) is the summer only after a preposition
        "日本の会議",  # a bare 日 or 月 is no date
        "毎日の作業",
        "月曜の定例",
        "リリースは毎月第一火曜日になりました",  # every first Tuesday: no one day
        "一周一次的例会",  # once a week: no Monday
        "봄이 좋아",
        "오늘날의 기술",  # nowadays
        "세일 전에 뭐 샀지",  # before the sale, not "three days ago"
        "きょうりょくしてください",  # 協力 in kana, not 今日
    ],
)
def test_look_alikes_name_no_time(query: str) -> None:
    assert date_ranges(query, WED) == []


def test_english_reading_is_unchanged() -> None:
    assert date_ranges("what did we decide about the budget last week", WED) == [LAST_WEEK]
    assert date_ranges("May I ask", WED) == [] and date_ranges("the last step", WED) == []
    assert date_ranges("deploy notes from 8 May 2023", WED) == [MAY_8_2023]
    assert relative_spans("hier is the plan for the hierarchy") == []


def test_a_time_word_glued_into_a_longer_one_is_read_once() -> None:
    assert date_ranges("上周一起吃饭", WED) == [LAST_WEEK]  # "last week, together": not last Monday
    assert date_ranges("지난주 금요일", WED) == [FRIDAY]  # not last week and a Friday


@pytest.mark.parametrize(
    ("query", "rest"),
    [
        ("was haben wir letzte Woche zum Budget beschlossen", "was haben wir zum Budget beschlossen"),
        ("¿qué pasó ayer con el presupuesto?", "¿qué pasó con el presupuesto?"),
        ("qu'avons-nous décidé pour le budget la semaine dernière", "qu'avons-nous décidé pour le budget"),
        ("上周预算讨论了什么", "预算讨论了什么"),
        ("先週の予算会議", "の予算会議"),
        ("지난주 예산 회의", "예산 회의"),
        ("Budget am 8. Mai 2023", "Budget am 8. Mai 2023"),  # a date stays: logs carry it as text
    ],
)
def test_time_words_are_kept_off_the_keyword_side(query: str, rest: str) -> None:
    assert without_relative_times(query) == rest


@pytest.mark.parametrize(
    ("query", "only_a_time"),
    [
        ("Was ist gestern passiert?", True),
        ("was haben wir letzte Woche beschlossen", True),
        ("Was haben wir letzte Woche zum Budget beschlossen?", False),
        ("¿Qué pasó ayer?", True),
        ("¿Qué hicimos la semana pasada?", True),
        ("¿Qué pasó ayer con el presupuesto?", False),
        ("O que aconteceu ontem?", True),
        ("o que fizemos no fim de semana", True),
        ("O que decidimos sobre o orçamento ontem?", False),
        ("qu'avons-nous décidé en mars dernier", True),
        ("Qu'est-ce qui s'est passé hier ?", True),
        ("qu'avons-nous décidé pour le budget hier", False),
        ("昨日何があった", True),
        ("先週何を決めましたか", True),
        ("昨日の会議で何を決めた", False),
        ("上周我们决定了什么", True),
        ("昨天发生了什么事", True),
        ("上周预算讨论了什么", False),
        ("지난주에 뭐 했지", True),
        ("어제 무슨 일이 있었나요?", True),
        ("지난주 예산 회의에서 뭐 했지", False),
        ("what happened on Mars yesterday", False),
    ],
)
def test_a_question_only_about_a_time(query: str, only_a_time: bool) -> None:
    assert names_only_a_time(expand_query_terms(query), query) is only_a_time


def _logs(ws: Path, newest: date) -> None:
    """Budget talk on many days in German and Chinese, and other talk, as a team writing in two languages."""
    write(ws, f"memory/{newest.isoformat()}.md", "# Standup\n\n- Budget: Cloud-Kosten bei 9k gedeckelt\n")
    write(ws, f"memory/{(newest - timedelta(days=1)).isoformat()}.md", "- Budget: Reisekosten für 3 Leute genehmigt\n")
    write(ws, f"memory/{(newest - timedelta(days=2)).isoformat()}.md", "- 预算：云服务每月上限九千\n")
    write(ws, f"memory/{(newest - timedelta(days=3)).isoformat()}.md", "- 预算：差旅费批准三人\n")
    for back in (9, 16, 40, 75):
        day = newest - timedelta(days=back)
        text = f"- Budget: {back} Dienste auf Sampling umgestellt\n- 预算：日志费用降低\n"
        write(ws, f"memory/{day.isoformat()}.md", text)
    for back in (5, 12, 20, 30):  # other talk, so that the topic says something
        day = newest - timedelta(days=back)
        write(ws, f"memory/{day.isoformat()}.md", f"- Release {back}.1 erscheint mit dem Export\n- 发布{back}.1版本\n")
    write(ws, "memory/people.md", "# Leute\n\n- Die Übergabe passiert jeden Montag in #ops.\n")


def test_the_logs_of_that_time_come_first_through_the_library(tmp_path: Path, make_index) -> None:
    from mdrecall.retrieval.search import run_search

    ws = tmp_path / "ws"
    newest = date(2026, 6, 17)
    _logs(ws, newest)
    index = make_index(ws, None)
    index.sync()

    def search(query: str, now: date):
        at = datetime(now.year, now.month, now.day, 12, tzinfo=timezone.utc)
        return run_search(index.store, None, "fts-only", index.config.query, query, ["memory"], 3, 0.0, now=at)

    for now in (newest, date(2027, 2, 3)):  # own notes, then the same notes long after (an archive)
        assert search("Was haben wir gestern zum Budget beschlossen?", now).results[0].path == "memory/2026-06-16.md"
        assert search("Budget letzte Woche", now).results[0].path == "memory/2026-06-08.md"
        assert search("前天关于预算决定了什么？", now).results[0].path == "memory/2026-06-15.md"
        assert search("上周的预算", now).results[0].path in ("memory/2026-06-08.md", "memory/2026-06-14.md")

    later = date(2026, 6, 27)  # ten days after the newest log: no log of yesterday
    for question in ("Was ist gestern passiert?", "昨天发生了什么", "¿Qué pasó ayer?", "어제 무슨 일이 있었나요?"):
        empty = search(question, later)
        assert empty.results == [] and empty.notice == "nothing in memory from 2026-06-26", question
    assert search("was haben wir im Januar 2026 gemacht", later).notice == "nothing in memory from January 2026"
    # a time with a log answers from that log only (not people.md's "passiert")
    answer = search("Was ist gestern passiert?", date(2026, 6, 18))
    assert [r.path for r in answer.results] == ["memory/2026-06-17.md"]
    answer = search("昨日何があった", date(2026, 6, 16))
    assert [r.path for r in answer.results] == ["memory/2026-06-15.md"]
    # German "hier" (here) names no time: the question is searched, never "nothing in memory from ..."
    assert "nothing in memory from" not in (search("Was ist hier passiert?", later).notice or "")


def _cli(tmp_path: Path, ws: Path, query: str) -> tuple[int, str]:
    args = ["--workspace", str(ws), "--state-dir", str(tmp_path / "state")]
    result = CliRunner().invoke(app, [*args, "search", query, "--json"])
    return result.exit_code, result.output


def test_cli_reads_german_and_chinese_times(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    today = date.today()
    _logs(ws, today)
    write(ws, "mdrecall.toml", 'provider = "none"\n')
    for query, back in (("Was haben wir gestern zum Budget beschlossen?", 1), ("前天关于预算决定了什么？", 2)):
        code, output = _cli(tmp_path, ws, query)
        assert code == 0, output
        assert json.loads(output)[0]["path"] == f"memory/{(today - timedelta(days=back)).isoformat()}.md", query


def test_cli_says_nothing_from_a_time_without_logs_in_japanese_and_spanish(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _logs(ws, date.today() - timedelta(days=10))
    write(ws, "mdrecall.toml", 'provider = "none"\n')
    args = ["--workspace", str(ws), "--state-dir", str(tmp_path / "state")]
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    for query in ("昨日何があった", "¿Qué pasó ayer?"):
        result = CliRunner().invoke(app, [*args, "search", query])
        assert result.exit_code == 0, result.output
        assert f"nothing in memory from {yesterday}" in result.output, query


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("was haben wir in den letzten drei Tagen gemacht", PAST_3_DAYS),
        ("was ist in den letzten Wochen passiert", PAST_2_WEEKS),
        ("qué hicimos en los últimos días", PAST_3_DAYS),
        ("¿qué pasó en las últimas dos semanas?", PAST_2_WEEKS),
        ("o que fizemos nos últimos dias", PAST_3_DAYS),
        ("qu'avons-nous fait ces derniers jours", PAST_3_DAYS),
        ("les deux dernières semaines", PAST_2_WEEKS),
        ("ここ数日何があった", PAST_3_DAYS),
        ("過去3日間", PAST_3_DAYS),
        ("最近三天发生了什么", PAST_3_DAYS),
        ("这几天我们做了什么", PAST_3_DAYS),
        ("지난 며칠 동안 뭐 했지", PAST_3_DAYS),
        ("최근 2주", PAST_2_WEEKS),
    ],
)
def test_the_last_days_up_to_today_in_each_language(query: str, expected: tuple[date, date]) -> None:
    assert date_ranges(query, WED) == [expected]
    assert names_only_a_time(expand_query_terms(query), query)


@pytest.mark.parametrize(
    "query",
    ["les derniers jours de mars", "los últimos días de marzo", "die letzten Änderungen", "os últimos commits"],
)
def test_the_last_days_of_a_month_or_the_last_things_are_no_stretch(query: str) -> None:
    assert all(end < WED for _, end in date_ranges(query, WED)), date_ranges(query, WED)
