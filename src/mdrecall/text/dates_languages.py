"""The times people say in German, Spanish, Portuguese, French, Japanese, Chinese and Korean: one table each.

English is read by `dates.py` itself; this module holds only data (words and patterns) and compiles it. A
table gives its month, weekday and season names, its number and unit words, and patterns, each with the kind
of time it names. `dates.py` turns a kind into day ranges against `today` with the same rules as English:

- fixed kinds: yesterday, day_before_yesterday, today, last_week, earlier_this_week, this_week, last_month,
  this_month, last_year, this_year
- ago (`<n> <unit>`, or a `<counted>` word such as Korean 이틀 "two days"), stretch (the last `<n> <unit>` up
  to today, as "the past 3 days"; without a number 3 days, 2 weeks or 3 months), weekend (the latest one),
  weekday (its latest past day, as "last Friday"), weekday_last_week (that day of the week before this one,
  as 先週の金曜日), last_month_name (the latest past such month before this one, as "last March"),
  month_last_year / month_this_year (去年の3月), season (the latest one begun: "in the spring"),
  season_ended (the latest one over: "last spring")
- date: an absolute date, month or year (`<year>`, `<month>` or `<m>`, `<day>`), as "8. Mai 2023",
  "8 de mayo de 2023", "2023年5月8日", "5월"; a month without a year is read in the year before, this one
  and the next, as English "in May" is.

Latin-script patterns are matched on the query lower-cased with accents taken off ("März" -> "marz",
"año" -> "ano"), as whole words. CJK has no spaces between words, so those patterns carry their own
guards instead (a bare 日 or 月 names no date: a number must stand before it). A month name that is also a
common word (French "mars", German "Mai") counts only after a preposition or next to a day or a year, as
English "May" does. Adding a language is adding a table to `LANGUAGES`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

from mdrecall.text.stopwords import BY_LANGUAGE, _words

FIXED_KINDS = frozenset(
    {
        "yesterday",
        "day_before_yesterday",
        "today",
        "last_week",
        "earlier_this_week",
        "this_week",
        "last_month",
        "this_month",
        "last_year",
        "this_year",
    }
)
RELATIVE_KINDS = FIXED_KINDS | {
    "ago",
    "stretch",
    "weekend",
    "weekday",
    "weekday_last_week",
    "last_month_name",
    "month_last_year",
    "month_this_year",
    "season",
    "season_ended",
}
KINDS = RELATIVE_KINDS | {"date"}

_CJK_DIGITS = "一二三四五六七八九十"
_CJK_NUMBER = r"[二三]?十[一二三四五六七八九]?|[一二两三四五六七八九]"


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    kind: str
    words: frozenset[str]  # a Latin-script match holds one of these words (none: any query is tried)


@dataclass(frozen=True)
class Language:
    code: str
    spaced: bool  # words between spaces (Latin script): patterns match whole words
    months: dict[str, int] = field(default_factory=dict)
    weekdays: dict[str, int] = field(default_factory=dict)
    seasons: dict[str, int] = field(default_factory=dict)  # name -> first month (meteorological)
    numbers: dict[str, int] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # word -> day | week | month
    counted: dict[str, tuple[str, int]] = field(default_factory=dict)  # 이틀 -> (day, 2)
    patterns: tuple[tuple[str, str], ...] = ()  # (pattern, kind)
    words: frozenset[str] = frozenset()  # other words that say when or "an event" (names_only_a_time)
    event_forms: str = ""  # a regex a whole word matches when it only says "an event" (Korean verb forms)
    # matches that are common words in another language (French "hier" is German "here"): such a time counts
    # only when the query reads as this language (`reads_as`); "avant-hier", "hier soir" always count
    ambiguous: frozenset[str] = frozenset()

    @functools.cached_property
    def rules(self) -> tuple[Rule, ...]:
        """Each pattern compiled, one per top-level alternative (a group name may appear in each)."""
        return tuple(
            Rule(self._compile(alternative), kind, self._words_of(alternative))
            for pattern, kind in self.patterns
            for alternative in _alternatives(pattern)
        )

    def _words_of(self, pattern: str) -> frozenset[str]:
        """The words a match of this pattern holds one of (Latin script), so most queries skip it unread."""
        if not self.spaced:
            return frozenset()
        names = {"<month>": self.months, "<weekday>": self.weekdays, "<season>": self.seasons}
        names |= {"<unit>": self.units, "<counted>": self.counted, "<n>": self.numbers}
        words = {word for token, table in names.items() if token in pattern for name in table for word in name.split()}
        words.update(re.findall(r"[a-z]{2,}", re.sub(r"<\w+>|\\[a-z]", " ", pattern)))
        return frozenset(words)

    @functools.cached_property
    def time_words(self) -> frozenset[str]:
        """Every word of this table: month, weekday, season, number and unit names and the listed words."""
        names = [*self.months, *self.weekdays, *self.seasons, *self.numbers, *self.units, *self.counted]
        return frozenset(piece for name in names for piece in re.split(r"[\s\-']+", name) if piece) | self.words

    def _alternation(self, names: dict) -> str:
        return "|".join(re.escape(name).replace(r"\ ", r"\s+") for name in sorted(names, key=len, reverse=True))

    def _compile(self, pattern: str) -> re.Pattern[str]:
        parts = {
            "<month>": rf"(?P<month>{self._alternation(self.months)})",
            "<weekday>": rf"(?P<weekday>{self._alternation(self.weekdays)})",
            "<season>": rf"(?P<season>{self._alternation(self.seasons)})",
            "<unit>": rf"(?P<unit>{self._alternation(self.units)})",
            "<counted>": rf"(?P<unit>{self._alternation(self.counted)})",
            "<n>": rf"(?P<n>\d{{1,3}}|{self._alternation(self.numbers)}{'|' + _CJK_NUMBER if not self.spaced else ''})",
            "<year>": r"(?<!\d)(?P<year>(?:19|20)\d{2})(?!\d)",
            "<m>": rf"(?<![\d{_CJK_DIGITS}])(?P<m>1[0-2]|0?[1-9]|十[一二]|[一二三四五六七八九十])",
            "<day>": rf"(?P<day>3[01]|[12]\d|0?[1-9]|{_CJK_NUMBER})(?!\d)"
            if not self.spaced
            else r"(?P<day>3[01]|[12]\d|0?[1-9])(?!\d)",
        }
        pattern = re.sub(r"(?<!\?P)<[a-z]+>", lambda m: parts.get(m[0], m[0]), pattern)  # not (?P<n>...)
        if self.spaced:
            pattern = rf"(?<!\w)(?:{pattern})(?!\w)"
        return re.compile(pattern)

    def number(self, word: str) -> int | None:
        word = " ".join(word.split())
        if word.isdigit():
            return int(word)
        return self.numbers.get(word) or cjk_number(word)

    def month(self, word: str) -> int | None:
        word = " ".join(word.split())
        return self.months.get(word) or (int(word) if word.isdigit() else cjk_number(word))


LATIN_CODES = ("en", "de", "es", "pt", "fr", "da", "nb", "sv")
# Question words and verb forms the stop-word lists leave out (they are not dropped from queries), counted
# when telling which language a query reads as.
QUESTION_WORDS = {
    "de": "welche welcher welches welchen wann wieso weshalb worüber worum womit wofür wozu wohin woher ihrer ihren"
    " seiner seinen dazu gibt gab geht wurden worden",
    "es": "cuánto cuánta cuántos cuántas cuáles quiénes hizo hicieron hace nuestra nuestro nuestros",
    "pt": "quanto quanta quantos quantas quais foi fez nossa nosso vai",
    "fr": "quoi combien pourquoi quand était ont notre nos",
}


@functools.cache
def stop_words_of(code: str) -> frozenset[str]:
    """A Latin-script language's stop words and question words, folded."""
    return frozenset(fold(word) for word in BY_LANGUAGE.get(code, frozenset()) | _words(QUESTION_WORDS.get(code, "")))


@functools.cache
def _languages_of_words() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for code in LATIN_CODES:
        for word in stop_words_of(code):
            out[word] = (*out.get(word, ()), code)
    return out


def language_counts(words: list[str]) -> dict[str, int]:
    """How many of the (folded) words are stop words of each Latin-script language."""
    counts = dict.fromkeys(LATIN_CODES, 0)
    languages_of = _languages_of_words()
    for word in words:
        for code in languages_of.get(word, ()):
            counts[code] += 1
    return counts


def reads_as(words: list[str], code: str) -> bool:
    """Whether a query's words (folded) hold more stop words of this language than of any other Latin-script
    one: French "qu'est-ce qu'on a fait hier" does, German "füge hier ein Logging hinzu" does not."""
    counts = language_counts(words)
    return counts.get(code, 0) > 0 and counts[code] >= max(counts.values())


def _alternatives(pattern: str) -> list[str]:
    """A pattern cut on its top-level "|" (not inside a group or a character class)."""
    parts, current, depth, in_class, escaped = [], "", 0, False, False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    return [*parts, current]


def cjk_number(word: str) -> int | None:
    """一 .. 九十九 (and 两) as a number; None for anything else."""
    values = {c: i + 1 for i, c in enumerate("一二三四五六七八九")} | {"两": 2}
    if not word or any(c not in values and c != "十" for c in word):
        return None
    if "十" not in word:
        return values.get(word) if len(word) == 1 else None
    tens, _, ones = word.partition("十")
    return values.get(tens, 1 if not tens else 0) * 10 + (values.get(ones, 0) if ones else 0)


@functools.cache
def _fold_char(ch: str) -> str:
    wide = unicodedata.normalize("NFKC", ch)
    ch = wide if len(wide) == 1 else ch
    if ord(ch) < 0x250 or 0x1E00 <= ord(ch) <= 0x1EFF:  # Latin: accents off
        ch = unicodedata.normalize("NFD", ch)[0]
    lower = ch.lower()
    return lower if len(lower) == 1 else ch


def fold(text: str) -> str:
    """Lower case, Latin accents off, full-width digits as ASCII: one character for one (spans stay valid)."""
    if text.isascii():  # each ASCII character folds to itself lower-cased
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


# -- the tables ----------------------------------------------------------------------------------------------

_APOS = "['’]"

GERMAN = Language(
    code="de",
    spaced=True,
    months={
        "januar": 1,
        "janner": 1,
        "februar": 2,
        "marz": 3,
        "maerz": 3,
        "april": 4,
        "mai": 5,
        "juni": 6,
        "juli": 7,
        "august": 8,
        "september": 9,
        "oktober": 10,
        "november": 11,
        "dezember": 12,
    },
    weekdays={
        "montag": 0,
        "dienstag": 1,
        "mittwoch": 2,
        "donnerstag": 3,
        "freitag": 4,
        "samstag": 5,
        "sonnabend": 5,
        "sonntag": 6,
    },
    seasons={"fruhling": 3, "fruhjahr": 3, "sommer": 6, "herbst": 9, "winter": 12},
    numbers={
        "ein": 1,
        "einem": 1,
        "einer": 1,
        "zwei": 2,
        "drei": 3,
        "vier": 4,
        "funf": 5,
        "sechs": 6,
        "sieben": 7,
        "ein paar": 3,
        "einigen": 3,
        "wenigen": 3,
    },
    units={
        "tag": "day",
        "tage": "day",
        "tagen": "day",
        "woche": "week",
        "wochen": "week",
        "monat": "month",
        "monate": "month",
        "monaten": "month",
    },
    patterns=(
        (r"vorgestern", "day_before_yesterday"),
        (r"gestern(?:\s+(?:abend|morgen|fruh|nachmittag))?", "yesterday"),
        (r"heute(?:\s+(?:morgen|fruh|abend|nachmittag|mittag))?", "today"),
        (r"(?:letzte|letzten|letzter|vergangene|vergangenen|vorige|vorigen|voriger)\s+woche|vorwoche", "last_week"),
        (r"anfang\s+(?:dieser|der)\s+woche|fruher\s+(?:in\s+)?dieser\s+woche|zu\s+wochenbeginn", "earlier_this_week"),
        (r"(?:diese|dieser)\s+woche", "this_week"),
        (r"(?:letzten|letzter|vergangenen|vergangener|vorigen|voriger)\s+monat|vormonat", "last_month"),
        (r"(?:diesen|diesem|dieser)\s+monat", "this_month"),
        (r"(?:letztes|letzten|vergangenes|vergangenen|voriges|vorigen)\s+jahr(?:es)?|vorjahr", "last_year"),
        (r"(?:dieses|diesem)\s+jahr(?:es)?|heuer", "this_year"),
        (r"vor\s+<n>\s+<unit>", "ago"),
        (r"(?:in\s+den|die)\s+(?:letzten|vergangenen)\s+(?:<n>\s+)?<unit>(?!\s+(?:im|des|vor)\b)", "stretch"),
        (
            r"(?:am|ubers|uber\s+das|letztes|letzten|vergangenes|vergangenen|dieses|diesem|am\s+letzten"
            r"|am\s+vergangenen)\s+wochenende",
            "weekend",
        ),
        (
            r"(?:letzten|letzter|vergangenen|vergangener|vorigen|am\s+letzten|am\s+vergangenen|am)\s+<weekday>",
            "weekday",
        ),
        (r"(?:im\s+)?(?:letzten|vergangenen)\s+<month>", "last_month_name"),
        (r"(?:im\s+)?<month>\s+(?:letzten|vergangenen)\s+jahres", "month_last_year"),
        (r"(?:im\s+)?<month>\s+dieses\s+jahres", "month_this_year"),
        (r"(?:im|diesen|dieses|in\s+diesem|uber\s+den)\s+<season>", "season"),
        (
            r"(?:im\s+)?(?:letzten|letztes|vergangenen|vergangenes|vorigen|voriges)\s+<season>",
            "season_ended",
        ),
        (r"(?:am\s+)?<day>\.\s*<month>(?:\s+<year>)?", "date"),
        (r"<day>\.<m>\.<year>", "date"),
        (r"<month>\s+<year>", "date"),
        (r"(?:im|seit|bis|ab|anfang|ende|mitte|vor|nach)\s+<month>", "date"),
        (r"(?:im\s+jahre?|seit|anno)\s+<year>", "date"),
    ),
    words=_words(
        """
        gestern vorgestern heute morgen abend nachmittag mittag fruh woche wochen wochenende wochenbeginn monat
        monats jahr jahres jahre letzte letzten letzter letztes vergangene vergangenen vergangener vergangenes
        vorige vorigen voriger voriges diese dieser diesen diesem dieses vor anfang ende mitte fruher neulich
        kurzem vorwoche vormonat vorjahr heuer seit ab bis paar anno uber ubers
        passiert geschehen los gemacht getan machten taten beschlossen entschieden entscheidung entscheidungen
        besprochen diskutiert geredet gesagt erzahlt geschrieben notiert gearbeitet geplant gab gibt neu neues
        neuigkeiten hatten hatte war waren gewesen erledigt vereinbart festgelegt gelernt erwahnt gesprochen
        lief gelaufen ereignet wir
        """
    ),
)

SPANISH = Language(
    code="es",
    spaced=True,
    months={
        "enero": 1,
        "febrero": 2,
        "marzo": 3,
        "abril": 4,
        "mayo": 5,
        "junio": 6,
        "julio": 7,
        "agosto": 8,
        "septiembre": 9,
        "setiembre": 9,
        "octubre": 10,
        "noviembre": 11,
        "diciembre": 12,
    },
    weekdays={"lunes": 0, "martes": 1, "miercoles": 2, "jueves": 3, "viernes": 4, "sabado": 5, "domingo": 6},
    seasons={"primavera": 3, "verano": 6, "otono": 9, "invierno": 12},
    numbers={
        "un": 1,
        "una": 1,
        "uno": 1,
        "dos": 2,
        "tres": 3,
        "cuatro": 4,
        "cinco": 5,
        "seis": 6,
        "siete": 7,
        "un par de": 2,
        "unos": 3,
        "unas": 3,
        "unos pocos": 3,
        "unas pocas": 3,
        "algunos": 3,
        "algunas": 3,
        "pocos": 3,
    },
    units={"dia": "day", "dias": "day", "semana": "week", "semanas": "week", "mes": "month", "meses": "month"},
    patterns=(
        (r"anteayer|antier|antes\s+de\s+ayer", "day_before_yesterday"),
        (r"ayer|anoche", "yesterday"),
        (r"hoy|esta\s+manana|esta\s+tarde|esta\s+noche", "today"),
        (r"(?:la\s+)?semana\s+pasada|la\s+semana\s+anterior|la\s+pasada\s+semana", "last_week"),
        (
            r"(?:a\s+)?(?:principios|comienzos)\s+de\s+(?:esta\s+)?semana|al\s+principio\s+de\s+(?:esta|la)\s+semana"
            r"|antes\s+esta\s+semana",
            "earlier_this_week",
        ),
        (r"esta\s+semana", "this_week"),
        (r"(?:el\s+)?mes\s+pasado|el\s+mes\s+anterior|el\s+pasado\s+mes", "last_month"),
        (r"este\s+mes", "this_month"),
        (r"(?:el\s+)?ano\s+pasado|el\s+ano\s+anterior|el\s+pasado\s+ano", "last_year"),
        (r"este\s+ano", "this_year"),
        (r"hace\s+<n>\s+<unit>", "ago"),
        (r"(?:en\s+)?(?:los|las)\s+(?:ultimos|ultimas)\s+(?:<n>\s+)?<unit>(?!\s+(?:de|del)\b)", "stretch"),
        (
            r"(?:el|este|del|durante\s+el|en\s+el)\s+(?:fin\s+de\s+semana|finde)(?:\s+pasado)?"
            r"|el\s+pasado\s+fin\s+de\s+semana",
            "weekend",
        ),
        (r"(?:el\s+)?<weekday>\s+pasado|el\s+pasado\s+<weekday>|el\s+<weekday>", "weekday"),
        (r"(?:en\s+)?(?:el\s+)?<month>\s+pasado|el\s+pasado\s+<month>", "last_month_name"),
        (r"(?:en\s+)?<month>\s+(?:del|de)\s+ano\s+pasado", "month_last_year"),
        (r"(?:en\s+)?<month>\s+de\s+este\s+ano", "month_this_year"),
        (r"(?:en\s+(?:la\s+|el\s+)?|esta\s+|este\s+|durante\s+(?:la\s+|el\s+)?)<season>", "season"),
        (
            r"(?:(?:en\s+)?(?:la|el)\s+)?<season>\s+pasad[oa]|(?:la|el)\s+pasad[oa]\s+<season>"
            r"|(?:la|el)\s+<season>\s+del\s+ano\s+pasado",
            "season_ended",
        ),
        (r"<day>\s+de\s+<month>(?:\s+(?:de|del)\s+<year>)?", "date"),
        (r"<month>\s+(?:de\s+|del\s+)?<year>", "date"),
        (
            r"(?:en|desde|hasta|durante|(?:a\s+)?(?:principios|finales|mediados|fines)\s+de|antes\s+de|despues\s+de"
            r"|a\s+partir\s+de)\s+<month>",
            "date",
        ),
        (r"(?:en|desde|hasta|durante|en\s+el|en\s+el\s+ano|del\s+ano)\s+<year>", "date"),
    ),
    words=_words(
        """
        ayer anoche anteayer antier hoy manana tarde noche semana semanas mes meses ano anos pasado pasada anterior este
        esta principios comienzos principio finales mediados fines hace fin finde durante par pocos desde hasta
        paso pasaron ocurrio sucedio hicimos hice hizo hecho hicieron decidimos decidio decidido decidieron
        decision decisiones hablamos hablado discutimos dijimos dijo hubo nuevo nueva nuevas novedades
        trabajamos planeamos escribimos anotamos acordamos aprendimos mencionamos cosa cosas que
        """
    ),
)

PORTUGUESE = Language(
    code="pt",
    spaced=True,
    months={
        "janeiro": 1,
        "fevereiro": 2,
        "marco": 3,
        "abril": 4,
        "maio": 5,
        "junho": 6,
        "julho": 7,
        "agosto": 8,
        "setembro": 9,
        "outubro": 10,
        "novembro": 11,
        "dezembro": 12,
    },
    weekdays={"segunda": 0, "terca": 1, "quarta": 2, "quinta": 3, "sexta": 4, "sabado": 5, "domingo": 6},
    seasons={"primavera": 3, "verao": 6, "outono": 9, "inverno": 12},
    numbers={
        "um": 1,
        "uma": 1,
        "dois": 2,
        "duas": 2,
        "tres": 3,
        "quatro": 4,
        "cinco": 5,
        "seis": 6,
        "sete": 7,
        "alguns": 3,
        "algumas": 3,
        "uns": 3,
        "umas": 3,
        "poucos": 3,
        "poucas": 3,
    },
    units={"dia": "day", "dias": "day", "semana": "week", "semanas": "week", "mes": "month", "meses": "month"},
    patterns=(
        (r"anteontem|antes\s+de\s+ontem", "day_before_yesterday"),
        (r"ontem(?:\s+a\s+noite)?", "yesterday"),
        (r"hoje(?:\s+de\s+manha|\s+a\s+noite|\s+cedo)?|(?:esta|nesta)\s+manha", "today"),
        (r"(?:na\s+|a\s+)?semana\s+passada|(?:na|a)\s+ultima\s+semana", "last_week"),
        (
            r"(?:no\s+)?(?:inicio|comeco)\s+(?:desta|da|dessa)\s+semana|mais\s+cedo\s+(?:nesta|esta)\s+semana",
            "earlier_this_week",
        ),
        (r"(?:esta|nesta|essa|nessa)\s+semana", "this_week"),
        (r"(?:o\s+|no\s+)?mes\s+passado|(?:no|o)\s+ultimo\s+mes", "last_month"),
        (r"(?:este|neste|esse|nesse)\s+mes", "this_month"),
        (r"(?:o\s+|no\s+)?ano\s+passado|(?:no|o)\s+ultimo\s+ano", "last_year"),
        (r"(?:este|neste|esse|nesse)\s+ano", "this_year"),
        (r"(?:ha|faz)\s+<n>\s+<unit>(?:\s+atras)?|<n>\s+<unit>\s+atras", "ago"),
        (r"(?:nos|nas|os|as)\s+(?:ultimos|ultimas)\s+(?:<n>\s+)?<unit>(?!\s+(?:de|do|da)\b)", "stretch"),
        (
            r"(?:no|neste|nesse|este|esse|o|durante\s+o)\s+(?:fim|final)\s+de\s+semana(?:\s+passado)?"
            r"|(?:no\s+)?(?:ultimo|passado)\s+(?:fim|final)\s+de\s+semana",
            "weekend",
        ),
        (
            r"(?:na\s+|no\s+)?<weekday>(?:-feira)?\s+passad[oa]|(?:na|no)\s+(?:ultim[oa]|passad[oa])\s+<weekday>"
            r"(?:-feira)?|(?:na|no)\s+<weekday>-feira|no\s+<weekday>",
            "weekday",
        ),
        (r"(?:em\s+)?<month>\s+passado", "last_month_name"),
        (r"(?:em\s+)?<month>\s+do\s+ano\s+passado", "month_last_year"),
        (r"(?:em\s+)?<month>\s+(?:deste|desse)\s+ano", "month_this_year"),
        (r"(?:na|no|nesta|neste|nessa|nesse|durante\s+[oa])\s+<season>", "season"),
        (
            r"(?:(?:na|no|a|o)\s+)?<season>\s+passad[oa]|(?:na|no|a|o)\s+ultim[oa]\s+<season>"
            r"|(?:na|no|a|o)\s+<season>\s+do\s+ano\s+passado",
            "season_ended",
        ),
        (r"<day>\s+de\s+<month>(?:\s+de\s+<year>)?", "date"),
        (r"<month>\s+(?:de\s+)?<year>", "date"),
        (
            r"(?:em|desde|ate|durante|(?:no\s+)?(?:inicio|fim|final)\s+de|(?:em\s+)?meados\s+de|antes\s+de"
            r"|depois\s+de|a\s+partir\s+de)\s+<month>",
            "date",
        ),
        (r"(?:em|desde|ate|durante|no\s+ano\s+de)\s+<year>", "date"),
    ),
    words=_words(
        """
        ontem anteontem hoje manha noite cedo semana semanas mes meses ano anos passado passada ultimo ultima
        este esta neste nesta esse essa nesse nessa inicio comeco fim final meados ha atras durante feira desde
        ate mais aconteceu aconteceram acontecido fizemos fez feito fizeram decidimos decidiu decidido
        decidiram decisao decisoes falamos falado discutimos dissemos disse houve novo nova novidades
        trabalhamos planejamos escrevemos anotamos combinamos aprendemos mencionamos rolou coisa coisas que
        """
    ),
)

FRENCH = Language(
    code="fr",
    spaced=True,
    months={
        "janvier": 1,
        "fevrier": 2,
        "mars": 3,
        "avril": 4,
        "mai": 5,
        "juin": 6,
        "juillet": 7,
        "aout": 8,
        "septembre": 9,
        "octobre": 10,
        "novembre": 11,
        "decembre": 12,
    },
    weekdays={"lundi": 0, "mardi": 1, "mercredi": 2, "jeudi": 3, "vendredi": 4, "samedi": 5, "dimanche": 6},
    seasons={"printemps": 3, "ete": 6, "automne": 9, "hiver": 12},
    numbers={
        "un": 1,
        "une": 1,
        "deux": 2,
        "trois": 3,
        "quatre": 4,
        "cinq": 5,
        "six": 6,
        "sept": 7,
        "quelques": 3,
    },
    units={"jour": "day", "jours": "day", "semaine": "week", "semaines": "week", "mois": "month"},
    patterns=(
        (r"avant[-\s]hier", "day_before_yesterday"),
        (r"hier(?:\s+(?:soir|matin))?", "yesterday"),
        (rf"aujourd{_APOS}\s*hui|ce\s+matin|ce\s+soir|cet\s+apres[-\s]midi", "today"),
        (rf"(?:la\s+)?semaine\s+(?:derniere|passee)|la\s+semaine\s+d{_APOS}\s*avant", "last_week"),
        (
            r"(?:plus\s+tot|au\s+debut\s+de)\s+cette\s+semaine|en\s+debut\s+de\s+semaine|au\s+debut\s+de\s+la\s+semaine",
            "earlier_this_week",
        ),
        (r"cette\s+semaine", "this_week"),
        (r"(?:le\s+)?mois\s+(?:dernier|passe)", "last_month"),
        (r"ce\s+mois(?:[-\s]ci)?", "this_month"),
        (rf"l{_APOS}\s*(?:annee\s+(?:derniere|passee)|an\s+dernier)", "last_year"),
        (r"cette\s+annee", "this_year"),
        (r"il\s+y\s+a\s+<n>\s+<unit>", "ago"),
        (r"(?:ces|les|au\s+cours\s+des)\s+(?:<n>\s+)?(?:derniers|dernieres)\s+<unit>(?!\s+(?:de|du|d)\b)", "stretch"),
        (
            r"(?:ce|le|du|pendant\s+le|au\s+cours\s+du)\s+week[-\s]?end(?:\s+dernier)?"
            r"|le\s+week[-\s]?end\s+(?:dernier|passe)",
            "weekend",
        ),
        (r"(?:le\s+)?<weekday>\s+(?:dernier|passe)", "weekday"),
        (r"(?:en\s+)?<month>\s+dernier", "last_month_name"),
        (rf"(?:en\s+)?<month>\s+de\s+l{_APOS}\s*annee\s+(?:derniere|passee)", "month_last_year"),
        (r"(?:en\s+)?<month>\s+de\s+cette\s+annee", "month_this_year"),
        (rf"(?:(?:au|en|ce|cet|cette|pendant\s+le|durant\s+le)\s+|(?:pendant|durant)\s+l{_APOS}\s*)<season>", "season"),
        (rf"(?:l{_APOS}\s*|le\s+)<season>\s+(?:dernier|passe)", "season_ended"),
        (r"(?:le\s+)?<day>(?:er)?\s+<month>(?:\s+<year>)?", "date"),
        (r"<month>\s+<year>", "date"),
        (
            rf"(?:(?:en|depuis|jusqu{_APOS}\s*en|debut|fin|courant|avant|apres|au\s+mois\s+de)\s+|mi-"
            rf"|au\s+mois\s+d{_APOS}\s*)<month>",
            "date",
        ),
        (rf"(?:en|depuis|jusqu{_APOS}\s*en|courant)\s+<year>", "date"),
    ),
    words=_words(
        """
        hier avant aujourd hui matin soir apres midi semaine semaines mois annee annees an ans jour jours derniere
        dernier passe passee cette ce cet debut fin mi plus tot il y a week end courant pendant durant depuis
        jusqu ci arrive arrivee decide decidee decidees decides decision decisions fait faites fais avons avez ont
        discute parle dit ecrit note travaille prevu nouveau nouvelle nouvelles nouveautes eu appris mentionne
        convenu quoi chose choses
        """
    ),
    ambiguous=frozenset({"hier"}),
)

_JA_WEEKDAYS = {f"{c}曜日": i for i, c in enumerate("月火水木金土日")} | {
    f"{c}曜": i for i, c in enumerate("月火水木金土日")
}
_CJK_SEASON_GUARD = r"(?<![\u3400-\u4dbf\u4e00-\u9fff])"

JAPANESE = Language(
    code="ja",
    spaced=False,
    weekdays=_JA_WEEKDAYS,
    seasons={"春": 3, "夏": 6, "秋": 9, "冬": 12},
    numbers={"数": 3},
    units={
        "日": "day",
        "週間": "week",
        "週": "week",
        "か月": "month",
        "ヶ月": "month",
        "カ月": "month",
        "ヵ月": "month",
    },
    patterns=(
        (r"一昨日|おととい|おとつい", "day_before_yesterday"),
        (r"昨日|きのう|昨晩|昨夜", "yesterday"),
        (r"今日|今朝|今晩|今夜|本日", "today"),  # not きょう: 協力, 教育, 兄弟 in kana
        (r"先週|前の週", "last_week"),
        (r"今週の初め|今週初め|週の初め|今週前半|週明け", "earlier_this_week"),
        (r"今週", "this_week"),
        (r"先月|前月", "last_month"),
        (r"今月", "this_month"),
        (r"去年|昨年", "last_year"),
        (r"今年|本年", "this_year"),
        (r"<n>\s*<unit>\s*前", "ago"),
        (r"(?:ここ|この|過去|最近)<n>\s*<unit>(?:間)?(?!\s*前)", "stretch"),
        (r"先週末|この週末|今週末|週末", "weekend"),
        (r"先週の?<weekday>", "weekday_last_week"),
        (r"(?:この前の|前の)<weekday>|(?<!毎週)(?<!毎週の)(?<!第[一二三四1-4])<weekday>(?=に)", "weekday"),
        (r"(?:去年|昨年)の?<m>\s*月", "month_last_year"),
        (r"今年の?<m>\s*月", "month_this_year"),
        (rf"(?:この|今年の|今年)<season>|{_CJK_SEASON_GUARD}<season>(?=に|の間|頃|ごろ)", "season"),
        (r"(?:去年|昨年)の?<season>|この前の<season>", "season_ended"),
        (r"<year>\s*年\s*<m>\s*月\s*<day>\s*日", "date"),
        (r"<m>\s*月\s*<day>\s*日", "date"),
        (r"<year>\s*年\s*<m>\s*月", "date"),
        (r"<m>\s*月(?![曜])", "date"),
        (r"<year>\s*年", "date"),
    ),
    words=_words(
        """
        何 何が 何を 起きた 起き 起こった 起こっ 発生 発生した あった ありました あったっけ 決めた 決め
        決まった 決めました 決定 決定した 話した 話し 話し合った 話しました 議論 議論した やった やりました
        した しました 作業 出来事 事 こと っけ 進んだ 書いた 言った 記録
        私たち 僕たち 僕ら 我々 みんな ね か た の に で は が を
        """
    ),
)

_ZH_WEEKDAYS = {f"{prefix}{c}": i for prefix in ("周", "星期", "礼拜") for i, c in enumerate("一二三四五六日")} | {
    "星期天": 6,
    "礼拜天": 6,
    "周天": 6,
}
_ZH_NOT_A_DAY = "(?![起样直些下点次切共])"  # 上周一起 is "last week, together", not last Monday
_ZH_SEASONS = {f"{s}{suffix}": m for s, m in zip("春夏秋冬", (3, 6, 9, 12), strict=True) for suffix in ("天", "季")}

CHINESE = Language(
    code="zh",
    spaced=False,
    weekdays=_ZH_WEEKDAYS,
    seasons=_ZH_SEASONS,
    numbers={"几": 3},
    units={
        "天": "day",
        "周": "week",
        "个星期": "week",
        "星期": "week",
        "个礼拜": "week",
        "礼拜": "week",
        "个月": "month",
    },
    patterns=(
        (r"前天", "day_before_yesterday"),
        (r"昨天|昨日|昨晚|昨夜", "yesterday"),
        (r"今天(?:早上|上午|下午|晚上)?|今早|今晚", "today"),
        (r"上周|上星期|上个星期|上礼拜|上个礼拜|上一周", "last_week"),
        (r"(?:本周|这周)(?:早些时候|初|前半)", "earlier_this_week"),
        (r"本周|这周|这个星期|这星期|这礼拜|这个礼拜|这一周", "this_week"),
        (r"上个月|上月|上一个月", "last_month"),
        (r"这个月|本月|这月", "this_month"),
        (r"去年|上一年", "last_year"),
        (r"今年|本年", "this_year"),
        (r"<n>\s*<unit>\s*(?:之前|以前|前)", "ago"),
        (r"(?:最近|过去)<n>\s*<unit>(?!\s*(?:之前|以前|前))|这几\s*<unit>", "stretch"),
        (r"上个?周末|这个?周末|(?<![上这个])周末", "weekend"),
        (rf"上个?<weekday>{_ZH_NOT_A_DAY}", "weekday_last_week"),
        (rf"(?<![每这下上个])<weekday>{_ZH_NOT_A_DAY}", "weekday"),
        (r"去年<m>\s*月", "month_last_year"),
        (r"今年<m>\s*月", "month_this_year"),
        (r"(?:今年的?|这个)?<season>", "season"),
        (r"(?:去年的?|上个)<season>", "season_ended"),
        (r"<year>\s*年\s*<m>\s*月\s*<day>\s*[日号]", "date"),
        (r"<m>\s*月\s*<day>\s*[日号]", "date"),
        (r"<year>\s*年\s*<m>\s*月", "date"),
        (r"<m>\s*月(?!份?\s*[曜])", "date"),
        (r"<year>\s*年", "date"),
    ),
    words=_words(
        """
        发生 发生了 了 过 什么 什么事 啥 事 事情 做 干 干了 做了 决定 决定了 讨论 讨论了 聊 聊了 说 说了
        谈 谈了 有 有什么 进展 新 记录 写 都 在 呢 吗 哪些 些 咱们 大家 我们 份 的 时候 期间 里
        """
    ),
)

_KO_WEEKDAYS = {f"{c}요일": i for i, c in enumerate("월화수목금토일")}

KOREAN = Language(
    code="ko",
    spaced=False,
    weekdays=_KO_WEEKDAYS,
    seasons={"봄": 3, "여름": 6, "가을": 9, "겨울": 12},
    numbers={"한": 1, "두": 2, "세": 3, "네": 4, "몇": 3},
    units={"일": "day", "주일": "week", "주": "week", "달": "month", "개월": "month"},
    counted={
        "하루": ("day", 1),
        "이틀": ("day", 2),
        "사흘": ("day", 3),
        "나흘": ("day", 4),
        "며칠": ("day", 3),
        "일주일": ("week", 1),
    },
    patterns=(
        (r"(?<![가-힣])(?:그저께|그제|엊그제)", "day_before_yesterday"),
        (r"(?<![가-힣])(?:어제|어젯밤)", "yesterday"),
        (r"(?<![가-힣])오늘(?!날)", "today"),  # 오늘날: nowadays
        (r"(?<![가-힣])(?:지난|저번)\s*주(?!말|일)", "last_week"),
        (r"(?<![가-힣])이번\s*주\s*초(?:반)?|(?<![가-힣])주초", "earlier_this_week"),
        (r"(?<![가-힣])이번\s*주(?!말|일)", "this_week"),
        (r"(?<![가-힣])(?:지난|저번)\s*달", "last_month"),
        (r"(?<![가-힣])(?:이번\s*달|이달)", "this_month"),
        (r"(?<![가-힣])(?:작년|지난\s*해)", "last_year"),
        (r"(?<![가-힣])(?:올해|금년)", "this_year"),
        # days by number only: native numbers go with weeks and months (세일 전 is "before the sale")
        (r"(?<![가-힣])(?P<n>\d{1,3})\s*<unit>\s*전", "ago"),
        (r"(?<![가-힣])(?P<n>한|두|세|네|몇)\s*(?P<unit>주일|주|달|개월)\s*전", "ago"),
        (r"(?<![가-힣])<counted>\s*전", "ago"),
        (r"(?<![가-힣])(?:최근|지난)\s*(?P<n>\d{1,3})\s*<unit>(?!\s*전)", "stretch"),
        (r"(?<![가-힣])(?:최근|지난)\s*<counted>(?!\s*전)", "stretch"),
        (r"(?<![가-힣])(?:(?:지난|저번|이번)\s*)?주말", "weekend"),
        (r"(?<![가-힣])(?:지난|저번)\s*주\s*<weekday>", "weekday_last_week"),
        (r"(?<![가-힣])(?:지난|저번)\s*<weekday>|(?<![가-힣])(?<!매주 )<weekday>(?=에|날)", "weekday"),
        (r"(?<![가-힣])작년\s*<m>\s*월", "month_last_year"),
        (r"(?<![가-힣])올해\s*<m>\s*월", "month_this_year"),
        (r"(?<![가-힣])(?:지난|저번)\s*<m>\s*월", "last_month_name"),
        (r"(?<![가-힣])(?:올|이번\s*|올해\s*)<season>|(?<![가-힣])<season>(?=에|철|동안|방학|휴가)", "season"),
        (r"(?<![가-힣])(?:지난|작년|저번)\s*<season>", "season_ended"),
        (r"<year>\s*년\s*<m>\s*월\s*<day>\s*일", "date"),
        (r"<m>\s*월\s*<day>\s*일", "date"),
        (r"<year>\s*년\s*<m>\s*월", "date"),
        (r"<m>\s*월(?!\s*\d)", "date"),
        (r"<year>\s*년", "date"),
    ),
    words=_words("전 동안 때 무슨 뭘 뭐가 무엇을 어떤 우리 우리가 우리는 저희 저희가 일 일이 일은 것 거 게 있었던"),
    event_forms=(
        r"(?:무슨|뭘|뭐|어떤|우리|저희|일|것|거|한|했|하|있었|있|일어났|일어난|생겼|생긴|결정|정했|논의|얘기|이야기|말|"
        r"나눴|진행|작업|발생|됐|되었)"
        r"(?:했|한|하|된|됐|었|였|났|겼|던|는|은|을|를|이|가|어|지|나|요|니|습|까|다|죠|냐|게|고|\?)*"
    ),
)

LANGUAGES: tuple[Language, ...] = (GERMAN, SPANISH, PORTUGUESE, FRENCH, JAPANESE, CHINESE, KOREAN)
