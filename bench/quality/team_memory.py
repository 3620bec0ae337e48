"""A small team's memory, written for this repo: dated logs, questions with the dates people say, off-topic questions.

`build(out)` writes `out/MEMORY.md` and `out/memory/YYYY-MM-DD.md` (about 90 daily logs of a five-person team from
October 2024 to June 2026) and returns the questions:

- `dated_questions(today)`: "what did we decide about the database migration last week?" and the like, with
  the logs that answer (every log of the named time that discusses the named topic). Each topic is discussed
  in many logs, so only the date tells the right one; logs outside the range also say "last week",
  "yesterday", "over the weekend" in passing, as real notes do.
- `ONTOPIC`: questions without dates whose answer is in MEMORY.md or a log (path given).
- `OFFTOPIC`: questions about things the team never wrote down ("how do I knit a scarf").

Deterministic (fixed seed); `NOW` is the team's today (the newest log's day). The same set asked long after
(`ARCHIVE_NOW`) is an archive: relative dates are then read against the newest log.
"""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

NOW = date(2026, 6, 17)  # a Wednesday; also the newest log
ARCHIVE_NOW = date(2027, 2, 3)
PEOPLE = ["Priya", "Omar", "Dana", "Lee", "Sofia"]

TOPICS: dict[str, list[str]] = {
    "database migration": [
        "we move the orders table to Postgres {n} in the {w} window",
        "the database migration pauses until the index rebuild finishes ({n} hours estimated)",
        "the migration dry run found {n} rows with bad timestamps; {p} writes the fix",
        "we keep the old MySQL replica for {n} more days after the migration",
    ],
    "release": [
        "release {n}.{m} ships on {w} with the new export screen",
        "the release is held back: {n} failing checks in the payment flow",
        "{p} cuts the release branch for {n}.{m}; the changelog is in the wiki",
        "the hotfix {n}.{m}.1 goes out first, the feature release after",
    ],
    "hiring": [
        "we make an offer to the backend candidate from round {n}; {p} calls them",
        "the frontend role stays open; {n} interviews booked for next sprint",
        "{p} joins the interview panel; take-home task cut to {n} hours",
        "we pause hiring for the data role until the budget review",
    ],
    "Acme account": [
        "Acme asks for SSO by {w}; {p} scopes it at {n} days",
        "Acme's renewal is signed for {n} seats",
        "the Acme outage report goes out on {w}; root cause was the cache eviction",
        "Acme wants a dedicated support channel; {p} owns it",
    ],
    "budget": [
        "the cloud budget is capped at {n}k a month; {p} tracks it",
        "we cut the logging bill by moving {n} services to sampling",
        "travel budget approved for {n} people to the conference",
        "the budget review moves to {w}; {p} prepares the sheet",
    ],
    "offsite": [
        "the team offsite is in Lisbon, {n} days, {p} books the venue",
        "offsite agenda: roadmap morning, {n} workshops in the afternoon",
        "the offsite moves to {w} because of the release",
        "{p} collects dietary needs for the offsite dinner",
    ],
    "on-call": [
        "{p} takes the on-call rotation from {w}; pager tested",
        "on-call handover notes move to the runbook, {n} alerts silenced",
        "we add a secondary on-call for weekends; {p} first",
        "the on-call page for disk space fired {n} times; threshold raised",
    ],
    "design review": [
        "design review of the search page: {p} wants {n} fewer filters",
        "the design review approves the new onboarding flow with {n} steps",
        "design review: dark mode postponed, contrast fixes first",
        "{p} presents the billing redesign at the design review; {n} open questions",
    ],
}
ASIDES = [
    "(follow-up from last week)",
    "as discussed yesterday",
    "{p} worked on it over the weekend",
    "we said this month would be quiet",
    "last night's build was green",
    "two weeks ago this looked easier",
    "same as in the spring",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def log_days() -> list[date]:
    """The days with a log: weekly-ish until March 2026, then about every other weekday (plus two weekends)."""
    rng = random.Random(11)
    days: list[date] = []
    d = date(2024, 10, 1)
    while d < date(2026, 3, 1):
        days.append(d)
        d += timedelta(days=rng.choice([5, 6, 7, 8, 9]))
    d = date(2026, 3, 2)
    while d <= NOW:
        if d.weekday() < 5 and (rng.random() < 0.55 or d >= NOW - timedelta(days=9)):
            days.append(d)
        d += timedelta(days=1)
    days += [date(2026, 6, 13), date(2026, 5, 23)]  # weekend logs
    return sorted(set(days))


@dataclass
class Log:
    day: date
    topics: list[str]
    text: str

    @property
    def path(self) -> str:
        return f"memory/{self.day.isoformat()}.md"


def make_logs() -> list[Log]:
    rng = random.Random(7)
    names = list(TOPICS)
    logs = []
    for i, day in enumerate(log_days()):
        topics = rng.sample(names, 2)
        lines = [f"# {day.isoformat()}", "", "## Standup", ""]
        for topic in topics:
            for _ in range(2):
                template = rng.choice(TOPICS[topic])
                fill = {"n": rng.randint(2, 9), "m": i % 10, "p": rng.choice(PEOPLE), "w": rng.choice(WEEKDAYS)}
                line = f"- {rng.choice(PEOPLE)}: {topic}: {template.format(**fill)}"
                if rng.random() < 0.35:
                    line += " " + rng.choice(ASIDES).format(p=rng.choice(PEOPLE))
                lines.append(line)
        logs.append(Log(day, topics, "\n".join(lines) + "\n"))
    return logs


MEMORY_MD = """# Team memory

## People
- Priya leads backend and owns the database migration.
- Omar runs releases and the on-call rotation schedule.
- Dana is the designer; design reviews are on Thursdays.
- Lee handles hiring and the interview panel.
- Sofia manages the Acme account and the budget sheet.

## Decisions that hold
- Payroll vendor: we picked Remote over Deel in 2025 because of the contractor support.
- Code review: two approvals on anything touching payments.
- The staging database is reset every Sunday night.
- Status updates go in the #team-status channel, not in direct messages.
- Our laptops are MacBook Pro 14 with 32 GB; requests go through Sofia.
"""

ONTOPIC = [
    ("which payroll vendor did we pick", "MEMORY.md"),
    ("who owns the database migration", "MEMORY.md"),
    ("how many approvals does a payments change need", "MEMORY.md"),
    ("when is the staging database reset", "MEMORY.md"),
    ("where should status updates be posted", "MEMORY.md"),
    ("what laptop do we use", "MEMORY.md"),
    ("who is our designer", "MEMORY.md"),
    ("who handles the interview panel", "MEMORY.md"),
    ("where is the team offsite", None),
    ("what was the root cause of the Acme outage", None),
    ("how many seats did Acme renew", None),
    ("why was the on-call disk space threshold raised", None),
]
OFFTOPIC = [
    "how do I knit a scarf",
    "what is the capital of Peru",
    "best recipe for banana bread",
    "how do I change a bike tire",
    "what's the weather tomorrow in Oslo",
    "who won the 1998 football world cup",
    "how many moons does Jupiter have",
    "how do I train my puppy to sit",
    "translate good morning into Japanese",
    "what is the boiling point of water at altitude",
    "recommend a sci-fi novel",
    "how long should I boil an egg",
    "what are the symptoms of the flu",
    "how do I fix a leaking tap",
    "what's a good stretching routine for runners",
    "how to grow tomatoes on a balcony",
    "when was the Eiffel Tower built",
    "what is the plot of Hamlet",
    "how do I tie a bow tie",
    "explain the rules of cricket",
]


def _month(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def relative_ranges(today: date) -> list[tuple[str, tuple[date, date]]]:
    """(phrase, inclusive day range) for the times people say, read against `today`."""
    monday = today - timedelta(days=today.weekday())
    saturday = monday - timedelta(days=2)
    last_month = _month(today.year - (today.month == 1), (today.month - 2) % 12 + 1)
    last_march = _month(today.year if today.month > 3 else today.year - 1, 3)
    spring_year = today.year if today.month >= 6 else today.year - 1
    friday = monday - timedelta(days=3)
    two_weeks = today - timedelta(days=14)
    return [
        ("yesterday", (today - timedelta(days=1),) * 2),
        ("today", (today, today)),
        ("the day before yesterday", (today - timedelta(days=2),) * 2),
        ("last week", (monday - timedelta(days=7), monday - timedelta(days=1))),
        ("this week", (monday, today)),
        ("this month", (today.replace(day=1), today)),
        ("last month", last_month),
        ("last March", last_march),
        ("in the spring", (date(spring_year, 3, 1), date(spring_year, 5, 31))),
        ("two weeks ago", (two_weeks - timedelta(days=3), two_weeks + timedelta(days=3))),
        ("over the weekend", (saturday, saturday + timedelta(days=1))),
        ("last Friday", (friday, friday)),
        ("in 2024", (date(2024, 1, 1), date(2024, 12, 31))),
        ("last year", (date(today.year - 1, 1, 1), date(today.year - 1, 12, 31))),
        ("in the winter", (date(today.year - 1, 12, 1), date(today.year, 2, 28))),
    ]


# The same questions in the other languages mdrecall reads times in: three ways to ask, and each English phrase
# of `relative_ranges` as people say it (the topic keeps the team's English name for the workstream).
PHRASINGS: dict[str, tuple[list[str], dict[str, str]]] = {
    "de": (
        ["Was haben wir {r} zu {t} beschlossen?", "{R}, was ist mit {t} passiert?", "{t}: Was wurde {r} gesagt?"],
        {
            "yesterday": "gestern",
            "today": "heute",
            "the day before yesterday": "vorgestern",
            "last week": "letzte Woche",
            "this week": "diese Woche",
            "this month": "diesen Monat",
            "last month": "letzten Monat",
            "last March": "im letzten März",
            "in the spring": "im Frühling",
            "two weeks ago": "vor zwei Wochen",
            "over the weekend": "am Wochenende",
            "last Friday": "letzten Freitag",
            "in 2024": "im Jahr 2024",
            "last year": "letztes Jahr",
            "in the winter": "im Winter",
        },
    ),
    "es": (
        ["¿Qué decidimos sobre {t} {r}?", "{R}, ¿qué pasó con {t}?", "{t}: ¿qué se dijo {r}?"],
        {
            "yesterday": "ayer",
            "today": "hoy",
            "the day before yesterday": "anteayer",
            "last week": "la semana pasada",
            "this week": "esta semana",
            "this month": "este mes",
            "last month": "el mes pasado",
            "last March": "el pasado marzo",
            "in the spring": "en primavera",
            "two weeks ago": "hace dos semanas",
            "over the weekend": "el fin de semana",
            "last Friday": "el viernes pasado",
            "in 2024": "en 2024",
            "last year": "el año pasado",
            "in the winter": "en invierno",
        },
    ),
    "pt": (
        ["O que decidimos sobre {t} {r}?", "{R}, o que aconteceu com {t}?", "{t}: o que foi dito {r}?"],
        {
            "yesterday": "ontem",
            "today": "hoje",
            "the day before yesterday": "anteontem",
            "last week": "na semana passada",
            "this week": "esta semana",
            "this month": "este mês",
            "last month": "no mês passado",
            "last March": "em março passado",
            "in the spring": "na primavera",
            "two weeks ago": "há duas semanas",
            "over the weekend": "no fim de semana",
            "last Friday": "na sexta-feira passada",
            "in 2024": "em 2024",
            "last year": "no ano passado",
            "in the winter": "no inverno",
        },
    ),
    "fr": (
        [
            "Qu'avons-nous décidé pour {t} {r} ?",
            "{R}, que s'est-il passé avec {t} ?",
            "{t} : qu'est-ce qui a été dit {r} ?",
        ],
        {
            "yesterday": "hier",
            "today": "aujourd'hui",
            "the day before yesterday": "avant-hier",
            "last week": "la semaine dernière",
            "this week": "cette semaine",
            "this month": "ce mois-ci",
            "last month": "le mois dernier",
            "last March": "en mars dernier",
            "in the spring": "au printemps",
            "two weeks ago": "il y a deux semaines",
            "over the weekend": "pendant le week-end",
            "last Friday": "vendredi dernier",
            "in 2024": "en 2024",
            "last year": "l'année dernière",
            "in the winter": "en hiver",
        },
    ),
    "ja": (
        [
            "{r}、{t} について何を決めましたか？",
            "{r}、{t} はどうなりましたか？",
            "{t} について、{r}何が話されましたか？",
        ],
        {
            "yesterday": "昨日",
            "today": "今日",
            "the day before yesterday": "一昨日",
            "last week": "先週",
            "this week": "今週",
            "this month": "今月",
            "last month": "先月",
            "last March": "今年の3月",
            "in the spring": "春に",
            "two weeks ago": "2週間前に",
            "over the weekend": "週末に",
            "last Friday": "先週の金曜日に",
            "in 2024": "2024年に",
            "last year": "去年",
            "in the winter": "冬に",
        },
    ),
    "zh": (
        ["{r}我们关于 {t} 决定了什么？", "{r}，{t} 发生了什么？", "{t}：{r}说了什么？"],
        {
            "yesterday": "昨天",
            "today": "今天",
            "the day before yesterday": "前天",
            "last week": "上周",
            "this week": "这周",
            "this month": "这个月",
            "last month": "上个月",
            "last March": "今年三月",
            "in the spring": "春天",
            "two weeks ago": "两周前",
            "over the weekend": "周末",
            "last Friday": "上周五",
            "in 2024": "2024年",
            "last year": "去年",
            "in the winter": "冬天",
        },
    ),
    "ko": (
        ["{r} {t}에 대해 뭘 결정했나요?", "{r}, {t}는 어떻게 됐어요?", "{t}: {r} 무슨 얘기를 했나요?"],
        {
            "yesterday": "어제",
            "today": "오늘",
            "the day before yesterday": "그저께",
            "last week": "지난주",
            "this week": "이번 주",
            "this month": "이번 달",
            "last month": "지난달",
            "last March": "지난 3월",
            "in the spring": "봄에",
            "two weeks ago": "2주 전",
            "over the weekend": "주말에",
            "last Friday": "지난 금요일",
            "in 2024": "2024년에",
            "last year": "작년",
            "in the winter": "겨울에",
        },
    ),
}


def dated_questions(logs: list[Log], today: date = NOW, language: str = "en") -> list[dict]:
    """Questions naming a topic and a time, asked on `today`'s memory (anchor = the newest log's day); in
    English, or the same questions in one of `PHRASINGS`' languages (same topics, logs and right answers)."""
    out = []
    forms = ["What did we decide about the {t} {r}?", "{R}, what happened with the {t}?", "{t}: what was said {r}?"]
    said: dict[str, str] = {}
    if language != "en":
        forms, said = PHRASINGS[language]
    for k, (phrase, (start, end)) in enumerate(relative_ranges(NOW)):
        in_range = [log for log in logs if start <= log.day <= end]
        topics = sorted({t for log in in_range for t in log.topics})
        for j, topic in enumerate(topics[:3]):
            right = [log.path for log in in_range if topic in log.topics]
            outside = [log for log in logs if topic in log.topics and not start <= log.day <= end]
            if not outside:
                continue
            form = forms[(k + j) % len(forms)]
            words = said.get(phrase, phrase)
            text = form.format(t=topic, r=words, R=words[0].upper() + words[1:])
            out.append({"question": text, "phrase": phrase, "topic": topic, "paths": right})
    return out


def build(out: Path) -> tuple[list[Log], list[dict]]:
    """Write the workspace under `out`; return the logs and the dated questions."""
    logs = make_logs()
    (out / "memory").mkdir(parents=True, exist_ok=True)
    (out / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    for log in logs:
        (out / log.path).write_text(log.text, encoding="utf-8")
    return logs, dated_questions(logs)


def open_index(cache: Path, state: Path) -> tuple[Any, list[Log]]:
    """The team's workspace written under `cache` and indexed with every default (the index file is kept in
    `cache`, so the evals that ask it share one; `state` is a scratch state dir): the index and the logs."""
    from mdrecall.backends.builtin import MemoryIndex
    from mdrecall.config.settings import parse_config, resolve_settings
    from mdrecall.embeddings.factory import create_provider

    logs, _ = build(cache / "workspace")
    parsed = parse_config({})
    settings = resolve_settings(
        workspace=cache / "workspace", state_dir=state, config=parsed, db_path=cache / "team.sqlite"
    )
    index = MemoryIndex(settings, create_provider(parsed))
    index.sync()
    return index, logs


def ask(index: Any, question: str, today: date = NOW) -> Any:
    """What `MemoryIndex.search` answers on the team's index with every default (the model's default floor
    included), asked at 18:00 UTC on `today`: the SearchResponse."""
    from datetime import datetime, timezone

    from mdrecall.retrieval import search as search_module

    return search_module.run_search(
        index.store,
        index.provider,
        index.store.read_meta()["model"],
        index.config.query,
        question,
        index.config.sources,
        now=datetime(today.year, today.month, today.day, 18, tzinfo=timezone.utc),
        default_min_score=index.effective_min_score()[0],
    )


if __name__ == "__main__":
    import json
    import sys

    logs, questions = build(Path(sys.argv[1]))
    print(json.dumps({"logs": len(logs), "dated": len(questions)}))
    for q in questions:
        print(q["question"], q["paths"])
