"""Times named in a query ("in May 2023", "on 8 May", "2023-05-08", "yesterday", "last week", "last month").

`date_ranges(query, today)` returns the day ranges the query points at; search gives the daily logs of those
days a boost (never a filter: the answer may sit in a note written later). Relative times are relative to
`today`, which callers pass (tests fix it). A bare month name counts only after a preposition or next to a
day or year ("in May", "May 8", "May 2023"), so "May I ask..." names no time.
"""

from __future__ import annotations

import calendar
import os
import re
from datetime import date, timedelta

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
    re.compile(rf"\b(?:in|during|of|since|until|before|after|early|late|mid|mid-)\s+{_MONTH}\b(?!\s+\d)", re.I),
    re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I),
]
_DAYS_AGO = re.compile(
    r"\b(?P<n>\d{1,3}|a|one|two|three|four|five|six|seven)\s+(?P<unit>days?|weeks?|months?)\s+ago\b", re.I
)
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def _month_range(year: int, month: int) -> DateRange:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _day(year: int, month: int, day: int) -> DateRange | None:
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return d, d


def _absolute(query: str, today: date) -> list[DateRange]:
    out: list[DateRange] = []
    taken: list[tuple[int, int]] = []  # spans already read by a more specific pattern
    for pattern in _PATTERNS:
        for m in pattern.finditer(query):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append(m.span())
            groups = m.groupdict()
            month = int(groups["m"]) if groups.get("m") else _MONTHS.get((groups.get("month") or "").lower())
            year = int(groups["year"]) if groups.get("year") else None
            day = int(groups["day"]) if groups.get("day") else None
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


def _months_back(today: date, n: int) -> DateRange:
    month_index = today.year * 12 + today.month - 1 - n
    return _month_range(month_index // 12, month_index % 12 + 1)


def _relative(query: str, today: date) -> list[DateRange]:
    q = query.lower()
    out: list[DateRange] = []
    monday = today - timedelta(days=today.weekday())
    if re.search(r"\bday before yesterday\b", q):
        out.append((today - timedelta(days=2),) * 2)  # type: ignore[arg-type]
    elif re.search(r"\byesterday\b", q):
        out.append((today - timedelta(days=1),) * 2)  # type: ignore[arg-type]
    if re.search(r"\b(today|this morning|tonight|this evening)\b", q):
        out.append((today, today))
    if re.search(r"\blast week\b", q):
        out.append((monday - timedelta(days=7), monday - timedelta(days=1)))
    if re.search(r"\bthis week\b", q):
        out.append((monday, today))
    if re.search(r"\blast month\b", q):
        out.append(_months_back(today, 1))
    if re.search(r"\bthis month\b", q):
        out.append((today.replace(day=1), today))
    if re.search(r"\blast year\b", q):
        out.append((date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)))
    for m in _DAYS_AGO.finditer(q):
        n = int(m["n"]) if m["n"].isdigit() else _NUMBERS[m["n"]]
        unit = m["unit"].rstrip("s")
        if unit == "day":
            d = today - timedelta(days=n)
            out.append((d - timedelta(days=1), d + timedelta(days=1)))
        elif unit == "week":
            d = today - timedelta(weeks=n)
            out.append((d - timedelta(days=3), d + timedelta(days=3)))
        else:
            out.append(_months_back(today, n))
    return out


def date_ranges(query: str, today: date) -> list[DateRange]:
    """Day ranges the query names (absolute dates first, then relative ones); [] when it names none."""
    return _absolute(query or "", today) + _relative(query or "", today)


def in_ranges(day: date | None, ranges: list[DateRange]) -> bool:
    return day is not None and any(start <= day <= end for start, end in ranges)


# A YYYY-MM-DD date anywhere in a file name, but not glued to other digits ("ticket-92025-06-15" is no date).
_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


EVERGREEN_NAMES = frozenset({"memory.md"})


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
