"""Times named in a query ("in May 2023", "on 8 May", "2023-05-08", "yesterday", "last week", "last March").

`date_ranges(query, today)` returns the day ranges the query points at; search gives the daily logs of those
days a boost (never a filter: the answer may sit in a note written later). Relative times are relative to
`today`, which callers pass (tests fix it); search passes `anchor_day(today, newest log)`, so in an archive
(no log for more than `ARCHIVE_AFTER_DAYS`) "yesterday" is the day before its newest log. A bare month name
counts only after a preposition or next to a day or year ("in May", "May 8", "May 2023"), so "May I ask..."
names no time.

Relative times understood: yesterday, last night, the day before yesterday, today (this morning, tonight),
this week, earlier this week, last week, this month, last month, this year, last year, this / last quarter,
N days / weeks / months ago (also "a couple of", "a few"), the past week / the past few days / the last 3 days
(up to today), since Monday (that day to today), over / last / this weekend, last Friday (any weekday: its
latest past day), last March (any month: its latest past month before this one), in / this / over the spring
(summer, fall / autumn, winter: the latest season begun, meteorological, northern hemisphere) and last spring
(the latest season ended). Read as dates are (their words stay keywords): Q3 (Q3 2025), the summer of 2023,
late 2024, mid-March, on the 3rd (the latest 3rd), at Christmas / over the holidays (20 December to 6 January).
`relative_spans` gives where the relative ones sit, so search can keep words like "last" and "week" out of the
keyword side.

The same times in German, Spanish, Portuguese, French, Japanese, Chinese and Korean ("letzte Woche",
"hace dos semanas", "8 de maio de 2023", "en mars dernier", "先週の金曜日", "上周", "2023년 5월 8일") come from
one table per language in `dates_languages.py`, read where English reads nothing, with the same meaning.
"""

from __future__ import annotations

import calendar
import functools
import itertools
import os
import re
from datetime import date, timedelta

from mdrecall.text.dates_languages import FIXED_KINDS, LANGUAGES, RELATIVE_KINDS, Language, Rule, fold, reads_as
from mdrecall.text.fts_query import indexed_tokens, strip_korean_particle
from mdrecall.text.keywords import split_on_stopwords
from mdrecall.text.stopwords import CHINESE_CHARS, CHINESE_WORDS, _words
from mdrecall.text.stopwords import ENGLISH as ENGLISH_STOPWORDS
from mdrecall.text.stopwords import JAPANESE as JAPANESE_STOPWORDS
from mdrecall.text.stopwords import KOREAN as KOREAN_STOPWORDS
from mdrecall.text.stopwords import LATIN as LATIN_STOPWORDS
from mdrecall.text.tokens import char_class, has_cjk

DateRange = tuple[date, date]  # inclusive

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"

_PATTERNS = [
    re.compile(r"\b(?P<year>\d{4})-(?P<m>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!:)", re.I),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I),
    re.compile(rf"\b(?:(?:in|during|of|since|until|before|after|early|late|mid)\s+|mid-){_MONTH}\b(?!\s+\d)", re.I),
    re.compile(rf"\b(?:(?:in|during|of|since|early|late|mid)\s+|mid-){_YEAR}\b", re.I),
]
# a season of a named year ("the summer of 2023", "spring 2024"), and a quarter ("Q3", "Q3 2025")
_SEASON_OF_YEAR = re.compile(rf"\b(?P<season>spring|summer|fall|autumn|winter)\s+(?:of\s+|in\s+)?{_YEAR}\b", re.I)
_QUARTER = re.compile(rf"\bQ(?P<quarter>[1-4])(?:\s+{_YEAR})?\b", re.I)
# "on the 3rd": the latest 3rd of a month on or before today (the suffix is needed: "on the 2 servers")
_NTH_DAY = re.compile(r"\bon\s+the\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b", re.I)
_DAYS_AGO = re.compile(
    r"\b(?P<n>\d{1,3}|a|one|two|three|four|five|six|seven|a\s+couple\s+of|a\s+few|few)\s+(?P<unit>days?|weeks?|months?)"
    r"\s+ago\b",
    re.I,
)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "few": 3}
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_LAST_WEEKDAY = re.compile(r"\b(?:last|on|this\s+past|past)\s+(?P<day>" + "|".join(_WEEKDAYS) + r")\b", re.I)
_LAST_MONTH_NAME = re.compile(
    r"\blast\s+(?P<month>" + "|".join(name.lower() for name in calendar.month_name if name) + r")\b", re.I
)
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month (meteorological)
_SEASON = re.compile(
    r"\b(?P<which>in\s+the|from\s+the|this\s+past|this|over\s+the|during\s+the|last)\s+(?P<season>spring|summer|fall|autumn|winter)\b"
    r"(?!\s+(?:of\s+|in\s+)?(?:19|20)\d{2}\b)",  # not "in the summer of 2023": a date (`_SEASON_OF_YEAR`)
    re.I,
)
# the last stretch of days up to today: "the past week", "in the past few days", "over the last 3 weeks"
_STRETCH = re.compile(
    r"\b(?:(?:this\s+|the\s+)?past\s+(?P<n>\d{1,3}\s+|a\s+couple\s+of\s+|couple\s+of\s+|few\s+|two\s+|three\s+)?"
    r"|(?:the\s+)?last\s+(?P<m>\d{1,3}|a\s+couple\s+of|couple\s+of|few|two|three)\s+)(?P<unit>days?|weeks?|months?)\b",
    re.I,
)
_SINCE_WEEKDAY = re.compile(r"\bsince\s+(?:last\s+)?(?P<day>" + "|".join(_WEEKDAYS) + r")\b", re.I)
# the days around Christmas: "at Christmas", "over the holidays" (the latest ones begun, read as a date is)
_CHRISTMAS = re.compile(
    r"\b(?:christmas|xmas)\b|\b(?:over|during|at|for|before|after|since)\s+the\s+(?:christmas\s+)?holidays\b", re.I
)
_WEEKEND = re.compile(r"\b(?:over|on|during|at)\s+the\s+weekend\b|\b(?:last|this|past)\s+weekend\b", re.I)
ARCHIVE_AFTER_DAYS = 30
# Every English pattern above holds a digit or, as a whole word, a month, weekday or season name or one of
# the other words below, matched with the same case folding: a query holding none names no English time, and
# the ~20 pattern scans are skipped (most queries: `_english_hint`). tests/test_latency_search_call.py checks
# that the answers equal those of the full scans.
_HINT_WORDS = frozenset({*_MONTHS, *_WEEKDAYS, *_SEASONS, "ago", "yesterday", "today", "tonight", "morning", "evening"})
_HINT_WORDS |= {"afternoon", "night", "day", "days", "week", "weeks", "weekend", "month", "months", "year", "quarter"}
_HINT_WORDS |= {"christmas", "xmas", "holidays"}
_ENGLISH_HINT = re.compile(r"\d|\b(?:" + "|".join(sorted(_HINT_WORDS, key=len, reverse=True)) + r")\b", re.I)


@functools.lru_cache(maxsize=256)  # a search reads its query's times 3-5 times
def _english_hint(query: str) -> bool:
    """Whether the query may name a time in English (False: none of the English patterns can match it). An
    ASCII query's whole words are its indexed tokens (lower-cased runs of word characters): a set lookup."""
    if query.isascii():
        return _DIGIT.search(query) is not None or not _HINT_WORDS.isdisjoint(indexed_tokens(query))
    return _ENGLISH_HINT.search(query) is not None


_DIGIT = re.compile(r"\d")


def _month_range(year: int, month: int) -> DateRange:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _day(year: int, month: int, day: int) -> DateRange | None:
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return d, d


def _date_ranges(year: int | None, month: int | None, day: int | None, today: date) -> list[DateRange]:
    """A day, a month or a year; without a year, in the year before this one, this one and the next."""
    out: list[DateRange] = []
    years = [year] if year else [today.year - 1, today.year, today.year + 1]
    for y in years:
        if month and day:
            found = _day(y, month, day)
            if found:
                out.append(found)
        elif month:
            out.append(_month_range(y, month))
        elif year:
            out.append((date(y, 1, 1), date(y, 12, 31)))
    return out


def _absolute_matches(query: str, today: date) -> list[tuple[tuple[int, int], list[DateRange]]]:
    out: list[tuple[tuple[int, int], list[DateRange]]] = []
    if not _english_hint(query):
        return out
    taken: list[tuple[int, int]] = []  # spans already read by a more specific pattern
    for m in _SEASON_OF_YEAR.finditer(query):
        taken.append(m.span())
        out.append((m.span(), [_season(int(m["year"]), _SEASONS[m["season"].lower()])]))
    for m in _QUARTER.finditer(query):
        taken.append(m.span())
        years = [int(m["year"])] if m["year"] else [today.year - 1, today.year, today.year + 1]
        out.append((m.span(), [_quarter(year, int(m["quarter"])) for year in years]))
    for m in _CHRISTMAS.finditer(query):  # absolute, so "Christmas" stays a keyword ("the Christmas party")
        taken.append(m.span())
        out.append((m.span(), [_christmas(today)]))
    for m in _NTH_DAY.finditer(query):
        found = _nth_day(today, int(m["day"]))
        if found is not None:
            taken.append(m.span())
            out.append((m.span(), [found]))
    for pattern in _PATTERNS:
        for m in pattern.finditer(query):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append(m.span())
            groups = m.groupdict()
            month = int(groups["m"]) if groups.get("m") else _MONTHS.get((groups.get("month") or "").lower())
            year = int(groups["year"]) if groups.get("year") else None
            day = int(groups["day"]) if groups.get("day") else None
            out.append((m.span(), _date_ranges(year, month, day, today)))
    return out


def _absolute(query: str, today: date) -> list[DateRange]:
    return [rng for _, ranges in _absolute_matches(query, today) for rng in ranges]


def _months_back(today: date, n: int) -> DateRange:
    month_index = today.year * 12 + today.month - 1 - n
    return _month_range(month_index // 12, month_index % 12 + 1)


def _season(year: int, first_month: int) -> DateRange:
    """The season starting in `first_month` of `year` (winter runs into the next year)."""
    if first_month == 12:
        return date(year, 12, 1), date(year + 1, 3, 1) - timedelta(days=1)
    return date(year, first_month, 1), _month_range(year, first_month + 2)[1]


def _latest_season(today: date, first_month: int, ended: bool) -> DateRange:
    """The latest season of that name begun on or before today (`ended`: the latest one over before today)."""
    for year in (today.year, today.year - 1, today.year - 2):
        start, end = _season(year, first_month)
        if (end < today) if ended else (start <= today):
            return start, end
    return _season(today.year - 2, first_month)


def _weekday_before(today: date, weekday: int) -> date:
    return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)


_SIMPLE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b", re.I), "day_before_yesterday"),
    (re.compile(r"\byesterday\b", re.I), "yesterday"),
    (re.compile(r"\b(?:today|this\s+morning|tonight|this\s+evening|this\s+afternoon)\b", re.I), "today"),
    (re.compile(r"\blast\s+night\b", re.I), "yesterday"),
    (re.compile(r"\blast\s+week\b|\bthe\s+week\s+before\b", re.I), "last_week"),
    (re.compile(r"\bearlier\s+this\s+week\b", re.I), "earlier_this_week"),
    (re.compile(r"\bthis\s+week\b", re.I), "this_week"),
    (re.compile(r"\blast\s+month\b", re.I), "last_month"),
    (re.compile(r"\bthis\s+month\b", re.I), "this_month"),
    (re.compile(r"\blast\s+year\b", re.I), "last_year"),
    (re.compile(r"\bthis\s+year\b", re.I), "this_year"),
    (re.compile(r"\b(?:last|the\s+previous)\s+quarter\b", re.I), "last_quarter"),
    (re.compile(r"\bthis\s+quarter\b", re.I), "this_quarter"),
]


def _simple_range(kind: str, today: date) -> DateRange:
    monday = today - timedelta(days=today.weekday())
    if kind == "day_before_yesterday":
        return today - timedelta(days=2), today - timedelta(days=2)
    if kind == "yesterday":
        return today - timedelta(days=1), today - timedelta(days=1)
    if kind == "today":
        return today, today
    if kind == "last_week":
        return monday - timedelta(days=7), monday - timedelta(days=1)
    if kind == "earlier_this_week":
        return monday, max(monday, today - timedelta(days=1))
    if kind == "this_week":
        return monday, today
    if kind == "last_month":
        return _months_back(today, 1)
    if kind == "this_month":
        return today.replace(day=1), today
    if kind == "last_year":
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    if kind == "this_quarter":
        return _quarter(today.year, (today.month - 1) // 3 + 1)[0], today
    if kind == "last_quarter":
        start = _quarter(today.year, (today.month - 1) // 3 + 1)[0] - timedelta(days=1)
        return _quarter(start.year, (start.month - 1) // 3 + 1)
    return date(today.year, 1, 1), today  # this_year


def _quarter(year: int, quarter: int) -> DateRange:
    return date(year, 3 * quarter - 2, 1), _month_range(year, 3 * quarter)[1]


# "the last days", "die letzten Wochen": a stretch said without a number
STRETCH_WITHOUT_NUMBER = {"day": 3, "week": 2, "month": 3}


def _stretch(today: date, n: int, unit: str) -> DateRange:
    """The last n days, weeks or months (a month counted as 30 days) up to today."""
    return today - timedelta(days=n * {"day": 1, "week": 7}.get(unit, 30)), today


def _christmas(today: date) -> DateRange:
    """The days around the latest Christmas begun: 20 December to 6 January."""
    year = today.year if today >= date(today.year, 12, 20) else today.year - 1
    return date(year, 12, 20), date(year + 1, 1, 6)


def _nth_day(today: date, day: int) -> DateRange | None:
    """The latest `day`th of a month on or before today (None for a day no month has)."""
    if day < 1:
        return None
    year, month = today.year, today.month
    for _ in range(13):
        if day <= calendar.monthrange(year, month)[1] and date(year, month, day) <= today:
            return date(year, month, day), date(year, month, day)
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return None


def _ago(today: date, n: int, unit: str) -> DateRange:
    """N days (a day either side), weeks (three days either side) or months ago."""
    if unit == "day":
        d = today - timedelta(days=n)
        return d - timedelta(days=1), d + timedelta(days=1)
    if unit == "week":
        d = today - timedelta(weeks=n)
        return d - timedelta(days=3), d + timedelta(days=3)
    return _months_back(today, n)


def _weekend(today: date) -> DateRange:
    """The latest weekend: this one when today is a Saturday or a Sunday."""
    saturday = _weekday_before(today + timedelta(days=1), 5)  # today when it is a Saturday
    if today.weekday() == 6:
        saturday = today - timedelta(days=1)
    return saturday, saturday + timedelta(days=1)


def _last_month_named(today: date, month: int) -> DateRange:
    """The month of that name people mean by "last March": the latest one before this month."""
    return _month_range(today.year if month < today.month else today.year - 1, month)


def _spoken_count(said: str) -> int:
    """ "3", "two", "a", "a few" (3), "a couple of" (2, as any count word not in `_NUMBERS`)."""
    word = " ".join(said.lower().split())
    return int(word) if word.isdigit() else _NUMBERS.get(word.removeprefix("a ").removesuffix(" of"), 2)


def _relative_matches(query: str, today: date) -> list[tuple[tuple[int, int], DateRange]]:
    """Each relative time of the query: (its span in the query, its day range). A span inside a longer one
    ("the day before yesterday" holds "yesterday") is read once, as the longer one."""
    found: list[tuple[tuple[int, int], DateRange]] = []
    if not _english_hint(query):
        return found

    def add(span: tuple[int, int], rng: DateRange) -> None:
        if any(s <= span[0] and span[1] <= e for (s, e), _ in found):
            return
        found.append((span, rng))

    for pattern, kind in _SIMPLE:
        for m in pattern.finditer(query):
            add(m.span(), _simple_range(kind, today))
    for m in _DAYS_AGO.finditer(query):
        add(m.span(), _ago(today, _spoken_count(m["n"]), m["unit"].lower().rstrip("s")))
    for m in _STRETCH.finditer(query):
        unit, said, plural = m["unit"].lower().rstrip("s"), m["n"] or m["m"], m["unit"].lower().endswith("s")
        # no number: "the past week" is one; "the past days" as other languages read it
        n = _spoken_count(said) if said else (STRETCH_WITHOUT_NUMBER[unit] if plural else 1)
        add(m.span(), _stretch(today, n, unit))
    for m in _SINCE_WEEKDAY.finditer(query):
        add(m.span(), (_weekday_before(today, _WEEKDAYS[m["day"].lower()]), today))
    for m in _WEEKEND.finditer(query):
        add(m.span(), _weekend(today))
    for m in _LAST_WEEKDAY.finditer(query):
        day = _weekday_before(today, _WEEKDAYS[m["day"].lower()])
        add(m.span(), (day, day))
    for m in _LAST_MONTH_NAME.finditer(query):
        add(m.span(), _last_month_named(today, _MONTHS[m["month"].lower()]))
    for m in _SEASON.finditer(query):
        which = " ".join(m["which"].lower().split())
        ended = which in ("last", "this past")  # "last spring": the latest one over; "in the spring": begun
        add(m.span(), _latest_season(today, _SEASONS[m["season"].lower()], ended))
    return found


def _relative(query: str, today: date) -> list[DateRange]:
    return [rng for _, rng in _relative_matches(query, today)]


_ANY_DAY = date(2000, 6, 15)  # where a time sits in a query does not depend on the day it is read against
_BY_CODE: dict[str, Language] = {language.code: language for language in LANGUAGES}
# (span, language code, kind, the pattern's groups that matched)
_Said = tuple[tuple[int, int], str, str, tuple[tuple[str, str], ...]]


@functools.lru_cache(maxsize=1024)
def _other_languages(query: str) -> tuple[_Said, ...]:
    """The times the query says in the other languages (`dates_languages`), where English said none: the
    longest reading wins where two overlap ("上周五" is last week's Friday, not last week)."""
    folded = fold(query)
    words = set(re.findall(r"\w+", folded))
    found: list[_Said] = []
    cjk = has_cjk(folded)
    guard, unguarded = _spaced_rule_guard()
    if not cjk and guard.isdisjoint(words) and not any(rule.pattern.search(folded) for rule in unguarded):
        return ()  # every rule below is skipped by its words or finds nothing (most queries)
    for language in LANGUAGES:
        if not (language.spaced or cjk):
            continue
        for rule in language.rules:
            if rule.words and rule.words.isdisjoint(words):
                continue
            for m in rule.pattern.finditer(folded):
                if m[0] in language.ambiguous and not reads_as(re.findall(r"\w+", folded), language.code):
                    continue  # French "hier" alone, in a query that does not read as French
                groups = tuple(sorted((k, v) for k, v in m.groupdict().items() if v is not None))
                found.append((m.span(), language.code, rule.kind, groups))
    if not found:  # most queries: no need to read the English times
        return ()
    found.sort(key=lambda said: (said[0][0] - said[0][1], said[0][0]))
    taken = [span for span, _ in _absolute_matches(query, _ANY_DAY)]
    taken += [span for span, _ in _relative_matches(query, _ANY_DAY)]
    out: list[_Said] = []
    for said in found:
        (start, end), _, _, _ = said
        if end > start and not any(start < e and s < end for s, e in taken):
            taken.append((start, end))
            out.append(said)
    return tuple(sorted(out))


@functools.cache
def _spaced_rule_guard() -> tuple[frozenset[str], tuple[Rule, ...]]:
    """(every word that lets a rule of a Latin-script language be tried (`Rule.words`), the rules tried on every
    query): a query holding none of the words, no CJK and no match of those rules says no time in another
    language."""
    rules = [rule for language in LANGUAGES if language.spaced for rule in language.rules]
    words = frozenset().union(*(rule.words for rule in rules))
    return words, tuple(rule for rule in rules if not rule.words)


def _read(code: str, kind: str, groups: dict[str, str], today: date) -> list[DateRange]:
    """The day ranges one time said in another language names, read as English reads the same time."""
    language = _BY_CODE[code]
    if kind in FIXED_KINDS:
        return [_simple_range(kind, today)]
    if kind in ("ago", "stretch"):  # "vor zwei Wochen"; "in den letzten drei Tagen", "最近三天", "지난 며칠"
        word = " ".join(groups["unit"].split())
        unit, n = language.counted.get(word) or (language.units[word], None)
        if "n" in groups:
            n = language.number(groups["n"]) or n
        if kind == "ago":
            return [_ago(today, n or 1, unit)]
        return [_stretch(today, n or STRETCH_WITHOUT_NUMBER[unit], unit)]
    if kind == "weekend":
        return [_weekend(today)]
    if kind in ("weekday", "weekday_last_week"):
        weekday = language.weekdays[groups["weekday"]]
        if kind == "weekday":
            day = _weekday_before(today, weekday)
        else:
            day = today - timedelta(days=today.weekday() + 7 - weekday)
        return [(day, day)]
    if kind == "season" or kind == "season_ended":
        return [_latest_season(today, language.seasons[groups["season"]], ended=kind == "season_ended")]
    month = language.month(groups.get("month") or groups.get("m") or "")
    if month is not None and not 1 <= month <= 12:
        return []
    if kind == "date":
        year = int(groups["year"]) if "year" in groups else None
        day = language.number(groups["day"]) if "day" in groups else None
        return _date_ranges(year, month, day, today)
    if month is None:
        return []
    if kind == "last_month_name":
        return [_last_month_named(today, month)]
    if kind == "month_last_year":
        return [_month_range(today.year - 1, month)]
    if kind == "month_this_year":
        return [_month_range(today.year, month)]
    return []


def _other_language_ranges(query: str, today: date, relative: bool) -> list[DateRange]:
    return [
        rng
        for _, code, kind, groups in _other_languages(query)
        if (kind in RELATIVE_KINDS) == relative
        for rng in _read(code, kind, dict(groups), today)
    ]


def relative_spans(query: str) -> list[tuple[int, int]]:
    """Where the query's relative times sit (their words say when, not what: search keeps them off the
    keyword side). Absolute dates stay: indexed logs carry their date as text."""
    spans = [span for span, _ in _relative_matches(query or "", _ANY_DAY)]
    spans += [span for span, _, kind, _ in _other_languages(query or "") if kind in RELATIVE_KINDS]
    return sorted(spans)


def without_relative_times(query: str) -> str:
    """The query with its relative times cut out ("what did we decide last week" -> "what did we decide")."""
    out, last = [], 0
    for start, end in relative_spans(query):
        out.append(query[last:start])
        last = end
    out.append(query[last:])
    return " ".join("".join(out).split())


def anchor_day(today: date, newest_log: date | None) -> date:
    """The day relative times are read against: today, or the newest daily log's day in an archive (no log
    written in the last ARCHIVE_AFTER_DAYS days, as a finished project or an imported chat history)."""
    if newest_log is not None and (today - newest_log).days > ARCHIVE_AFTER_DAYS:
        return newest_log
    return today


def date_ranges(query: str, today: date) -> list[DateRange]:
    """Day ranges the query names (absolute dates first, then relative ones); [] when it names none."""
    query = query or ""
    absolute = _absolute(query, today) + _other_language_ranges(query, today, relative=False)
    return absolute + _relative(query, today) + _other_language_ranges(query, today, relative=True)


def in_ranges(day: date | None, ranges: list[DateRange]) -> bool:
    return day is not None and any(start <= day <= end for start, end in ranges)


# A YYYY-MM-DD date anywhere in a file name, but not glued to other digits ("ticket-92025-06-15" is no date).
_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


EVERGREEN_NAMES = frozenset({"memory.md"})


@functools.lru_cache(maxsize=8192)  # asked for every candidate of every search: the same paths come back
def file_date(path: str) -> date | None:
    """The date a daily note's file name carries, or None (evergreen). Impossible dates are no date."""
    name = os.path.basename(path.replace("\\", "/"))
    if name.lower() in EVERGREEN_NAMES:
        return None
    for match in _DATE_IN_NAME.finditer(name):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            continue
    return None


# Words that name a time or say nothing beyond "an event": a question made only of them and a time ("what
# happened yesterday", "what did we decide in March") asks for the logs of that time and nothing else.
_TIME_WORDS = _words(
    "today yesterday tonight tomorrow morning afternoon evening night day days week weeks weekend month months "
    "year years ago last past this next earlier recently recent before after since until during couple few "
    "spring summer autumn fall winter season quarter q1 q2 q3 q4 christmas xmas holidays one two three four five six "
    "seven eight nine ten"
)
_EVENT_WORDS = _words(
    "happen happened happening happens do did done doing new news decide decided decision decisions discuss "
    "discussed discussion talk talked say said tell told work worked working plan planned plans go went going "
    "get got make made anything something everything stuff thing things note notes log logs write wrote written "
    "record recorded learn learned mention mentioned ask asked up on there"
)


_LATIN_SAYS_NOTHING = frozenset(fold(word) for word in LATIN_STOPWORDS) | _TIME_WORDS | _EVENT_WORDS
_CJK_SAYS_NOTHING = (
    JAPANESE_STOPWORDS
    | CHINESE_WORDS
    | CHINESE_CHARS
    | frozenset(word for language in LANGUAGES if not language.spaced for word in language.time_words)
)
_EVENT_FORMS = [re.compile(language.event_forms) for language in LANGUAGES if language.event_forms]


def _word_says_nothing(cls: str, run: str, latin: frozenset[str]) -> bool:
    """Whether one piece of a query (after its times are cut out) is a stop word, a time or "an event"."""
    if cls == "hangul":
        stem = strip_korean_particle(run)
        return (
            run in KOREAN_STOPWORDS
            or stem in KOREAN_STOPWORDS
            or stem in _CJK_SAYS_NOTHING
            or any(forms.fullmatch(run) or forms.fullmatch(stem) for forms in _EVENT_FORMS)
        )
    if cls == "cjk":  # what stop, time and event words leave: single kana at most (た, ね)
        return all(
            len(piece) == 1 and char_class(piece) == "hiragana" for piece in split_on_stopwords(run, _CJK_SAYS_NOTHING)
        )
    return run.isdigit() or len(run) == 1 or run in latin or run in _MONTHS or run in _WEEKDAYS


def _says_only_a_time(query: str) -> bool:
    """`names_only_a_time` for a query that says a time in another language: read on the query itself (CJK
    keywords are cut into pairs of characters, which no word list can judge)."""
    said = _other_languages(query)
    spans = [span for span, _ in _absolute_matches(query, _ANY_DAY)] + [
        span for span, _ in _relative_matches(query, _ANY_DAY)
    ]
    spans += [span for span, _, _, _ in said]
    codes = {code for _, code, _, _ in said}
    latin = _LATIN_SAYS_NOTHING.union(*(_BY_CODE[code].time_words for code in codes if _BY_CODE[code].spaced))
    text = list(fold(query))
    for start, end in spans:
        text[start:end] = " " * (end - start)
    for word in re.findall(r"\w+", "".join(text)):
        for cls, run in itertools.groupby(word, key=lambda ch: _script(char_class(ch))):
            if not _word_says_nothing(cls, "".join(run), latin):
                return False
    return True


def _script(cls: str) -> str:
    return cls if cls in ("hangul", "other") else "cjk"


def names_only_a_time(terms: list[str], query: str | None = None) -> bool:
    """Whether a query's keywords (stop words already out) say nothing but a time and "an event": then only
    the logs of that time can answer it. Month and weekday names, years and day numbers count as time; no
    keyword at all ("what did we do yesterday": all stop words) says nothing either. With the `query`, a time
    said in another language is read too ("was ist gestern passiert", "昨日何があった")."""
    if query is not None and _other_languages(query):
        return _says_only_a_time(query)
    for term in terms:
        word = term.lower().strip(".")
        if word in ENGLISH_STOPWORDS or word in _TIME_WORDS or word in _EVENT_WORDS:
            continue
        if word in _MONTHS or word in _WEEKDAYS:
            continue
        if word.isdigit() or re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)|\d{4}-\d{1,2}-\d{1,2}", word):
            continue
        return False
    return True


def describe_ranges(ranges: list[DateRange]) -> str:
    """A day range as people read it: "2026-11-24", "March 2026", "2026-11-16 to 2026-11-22"."""

    def one(start: date, end: date) -> str:
        if start == end:
            return start.isoformat()
        last = calendar.monthrange(start.year, start.month)[1]
        if start.day == 1 and end == date(start.year, start.month, last):
            return f"{calendar.month_name[start.month]} {start.year}"
        if (start.month, start.day, end.month, end.day) == (1, 1, 12, 31) and start.year == end.year:
            return str(start.year)
        return f"{start.isoformat()} to {end.isoformat()}"

    return " or ".join(one(start, end) for start, end in ranges)
