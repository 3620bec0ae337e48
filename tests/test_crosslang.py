"""Questions asked in another language than the notes: answered when the notes hold the answer, empty when
they do not, English questions scored exactly as before. Through the library and the CLI, with the real
default model (multilingual-e5-small) over English notes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.backends.builtin import MemoryIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import create_provider
from mdrecall.retrieval import calibration
from mdrecall.retrieval.search import NOTHING, run_search
from mdrecall.text.dates_languages import reads_as
from mdrecall.text.languages import function_word, other_language, query_languages, text_languages, time_word

from .conftest import write

NOTES = {
    "MEMORY.md": (
        "# Team memory\n\n"
        "- Priya leads backend and owns the database migration.\n"
        "- Payroll vendor: we picked Remote over Deel because of the contractor support.\n"
        "- The staging database is reset every Sunday night.\n"
    ),
    "memory/2026-03-11.md": "# 2026-03-11\n\n- Priya: the budget review moved to Friday; cloud spend is up 12 %.\n",
    "memory/2026-04-20.md": "# 2026-04-20\n\n- Omar: the team offsite is in Lisbon, three days in May.\n",
    "memory/2026-06-12.md": "# 2026-06-12\n\n- Sofia: Acme renewed for 40 seats; the outage report goes out Monday.\n",
    "memory/2026-06-16.md": (
        "# 2026-06-16\n\n- Dana: design review approved the onboarding flow with 4 steps.\n"
        "- Priya: the budget for cloud is capped at 9k a month.\n"
    ),
}
NOW = datetime(2026, 6, 17, 12, tzinfo=timezone.utc)
ANSWERED = [
    ("Was haben wir im Frühling zum Budget beschlossen?", "memory/2026-03-11.md"),
    ("¿Cuántas licencias renovó Acme?", "memory/2026-06-12.md"),
    ("Où a lieu l'offsite de l'équipe ?", "memory/2026-04-20.md"),
]
OFF_TOPIC = ["Wie stricke ich einen Schal?", "Was ist die Hauptstadt von Peru?", "¿Cómo tejo una bufanda?"]
ENGLISH = ["which payroll vendor did we pick", "how many seats did Acme renew", "how do I knit a scarf"]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, MemoryIndex]]:
    root = tmp_path_factory.mktemp("team")
    ws = root / "ws"
    for rel, text in NOTES.items():
        write(ws, rel, text)
    index = MemoryIndex(resolve_settings(workspace=ws, state_dir=root / "state"), create_provider(parse_config({})))
    index.sync()
    assert index.store.read_meta()["model"] == "multilingual-e5-small"
    yield ws, root / "state", index
    index.close()


def _search(index: MemoryIndex, query: str):
    """What MemoryIndex.search answers with every default, at a fixed time."""
    floor, _ = index.effective_min_score(None)
    model = index.store.read_meta()["model"]
    return run_search(
        index.store, index.provider, model, index.config.query, query, index.config.sources, now=NOW,
        default_min_score=floor,
    )  # fmt: skip


# -- telling the languages apart ---------------------------------------------------------------------------


def test_a_question_reads_as_the_language_of_its_stop_words() -> None:
    assert query_languages("Was haben wir im Frühling zu budget beschlossen?") == {"de"}
    assert query_languages("¿Qué decidimos sobre el budget?") == {"es"}
    assert "pt" in query_languages("O que a Caroline pesquisou?")  # Spanish ties: either way not English
    assert query_languages("Qui s'occupe du jury d'entretien ?") == {"fr"}  # "s'", "d'" are no English
    assert "en" in query_languages("what did we decide about the budget")
    assert "en" in query_languages("will it rain")  # "will" is German too: a tie keeps English
    assert query_languages("budget Q3") == frozenset()
    assert query_languages("OS upgrade plan") == query_languages("os.rename dir listing") == frozenset()
    assert "es" in query_languages("¿Qué investigó Caroline?") and "en" not in query_languages(
        "¿Qué investigó Caroline?"
    )
    # the same counts tell the date readers which language a query reads as
    assert reads_as(["qu", "est", "ce", "qu", "on", "a", "fait", "hier"], "fr")
    assert not reads_as(["fuge", "hier", "ein", "logging", "hinzu"], "fr")


def test_a_note_in_another_language_than_the_question() -> None:
    note = "- Priya: the budget for cloud is capped at 9k a month and we review it on Friday."
    assert text_languages(note) == {"en"}
    assert other_language(query_languages("Was haben wir zum Budget beschlossen?"), note)
    assert not other_language(query_languages("what did we decide about the budget"), note)
    assert not other_language(query_languages("budget Q3"), note)  # no language: nothing is assumed
    assert not other_language(query_languages("Was haben wir beschlossen?"), "Priya, Omar, 2026-06-12")
    assert text_languages("Decidimos que el presupuesto de la nube se queda en 9k al mes; Priya lo revisa.") == {"es"}
    # code is no language: its short names are stop words somewhere ("os" is Spanish, "dir" German)
    code = "if dir is None:\n    dir = os.path.join(os.getcwd(), pre)\nos.rename(pre_lock.name, f.name + '.lock')\n"
    assert text_languages(code) == frozenset()
    assert text_languages("dst = os.path.join(src, os.sep); os.rename(src, dst) if os.path.exists(src) else e") == set()


def test_function_and_time_words_of_the_question_language() -> None:
    assert function_word("hat", frozenset({"de"})) and not function_word("hat", frozenset({"en"}))
    assert time_word("Frühling", frozenset({"de"})) and time_word("Jahr", frozenset({"de"}))
    assert not time_word("Budget", frozenset({"de"}))


# -- through the library -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "path"), ANSWERED)
def test_a_question_in_another_language_is_answered(team, question: str, path: str) -> None:
    _, _, index = team
    response = _search(index, question)
    assert response.scoring == "calibrated" and response.notice is None, response.notice
    assert path in [r.path for r in response.results[:3]], response.results
    assert response.results[0].score >= calibration.E5_CALIBRATION.abstain_below


def test_without_the_cross_language_model_the_same_question_came_back_empty(team, monkeypatch) -> None:
    """The English model reads the absent German words as "not answered" (what the cross-language model fixes)."""
    _, _, index = team
    english_only = dataclasses.replace(calibration.E5_CALIBRATION, cross=None)
    monkeypatch.setitem(calibration.CALIBRATIONS, "multilingual-e5-small", english_only)
    response = _search(index, ANSWERED[0][0])
    assert response.results == [] and response.notice.startswith(NOTHING)


@pytest.mark.parametrize("question", OFF_TOPIC)
def test_an_off_topic_question_in_another_language_stays_empty(team, question: str) -> None:
    _, _, index = team
    response = _search(index, question)
    assert response.results == [], response.results
    assert response.notice and response.notice.startswith(NOTHING)


def test_english_questions_score_exactly_as_before(team, monkeypatch) -> None:
    _, _, index = team
    shipped = {q: [(r.path, r.start_line, r.score) for r in _search(index, q).results] for q in ENGLISH}
    english_only = dataclasses.replace(calibration.E5_CALIBRATION, cross=None)
    monkeypatch.setitem(calibration.CALIBRATIONS, "multilingual-e5-small", english_only)
    before = {q: [(r.path, r.start_line, r.score) for r in _search(index, q).results] for q in ENGLISH}
    assert shipped == before
    assert shipped[ENGLISH[0]] and shipped[ENGLISH[0]][0][0] == "MEMORY.md"
    assert shipped["how do I knit a scarf"] == []


# -- through the CLI ---------------------------------------------------------------------------------------


def test_cli_answers_a_german_question_and_not_an_off_topic_one(team) -> None:
    ws, state, _ = team
    runner = CliRunner()
    base = ["--workspace", str(ws), "--state-dir", str(state), "search"]
    result = runner.invoke(app, [*base, "Wer hat die Acme-Verlängerung über 40 Lizenzen gemacht?"])
    assert result.exit_code == 0, result.output
    assert "memory/2026-06-12.md" in result.stdout
    result = runner.invoke(app, [*base, "Wie stricke ich einen Schal?"])
    assert result.exit_code == 0, result.output
    assert "(nothing in memory matches" in result.stdout
    result = runner.invoke(app, [*base, "Wie stricke ich einen Schal?", "--json"])
    assert result.exit_code == 0 and result.stdout.strip() == "[]"


def test_the_notices_stay_english_for_other_languages(team) -> None:
    """Notices are read by agents: they stay English, whatever the question's language."""
    _, _, index = team
    response = _search(index, "Was haben wir im Jahr 2019 beschlossen?")
    assert response.results == [] and response.notice == "nothing in memory from 2019"
    response = _search(index, "¿Cómo tejo una bufanda?")
    assert response.notice.startswith(f"{NOTHING} (best estimated chance")


def test_an_english_question_over_german_notes(tmp_path: Path) -> None:
    """The other way round: German notes, English questions."""
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Team\n\n- Priya leitet das Backend und ist für die Datenbankmigration zuständig.\n")
    write(
        ws,
        "memory/2026-06-12.md",
        "# 2026-06-12\n\n- Sofia: Acme hat für 40 Plätze verlängert; der Bericht zum Ausfall geht am Montag raus.\n",
    )
    index = MemoryIndex(resolve_settings(workspace=ws, state_dir=tmp_path / "state"), create_provider(parse_config({})))
    try:
        index.sync()
        answered = _search(index, "how many seats did Acme renew")
        assert answered.results and answered.results[0].path == "memory/2026-06-12.md", answered.notice
        assert _search(index, "how do I knit a scarf").results == []
    finally:
        index.close()


def test_dotted_names_are_found_as_before_at_word_starts_only() -> None:
    """The dotted-name pattern starts at word starts only (speed): the same text is left on random strings."""
    import random
    import re

    from mdrecall.text.languages import _DOTTED

    plain = re.compile(r"\w+(?:\.\w+)+")
    rnd = random.Random(7)
    for _ in range(5000):
        text = "".join(rnd.choice("ab.é _1\n.,ü") for _ in range(rnd.randint(0, 60)))
        assert _DOTTED.sub(" ", text) == plain.sub(" ", text)


def test_the_english_shortcut_never_hides_another_language() -> None:
    """`may_read_as_other_than_english` False must mean `text_languages` is empty or holds English: checked on
    notes, code and random mixes of every Latin-script language's stop words with English ones."""
    import random

    from mdrecall.text.dates_languages import LATIN_CODES, stop_words_of
    from mdrecall.text.languages import may_read_as_other_than_english

    rnd = random.Random(11)
    pools = {code: sorted(stop_words_of(code)) for code in LATIN_CODES}
    texts = [
        "Priya leads backend and owns the database migration. The staging database is reset every Sunday.",
        "Wir haben beschlossen, das Budget für die Cloud auf 9k im Monat zu begrenzen.",
        "Decidimos que el presupuesto de la nube se queda en 9k al mes.",
        "import os\nif dir is None:\n    os.rename(a, b)\n",
    ]
    for _ in range(4000):
        words = [rnd.choice(pools[rnd.choice(LATIN_CODES)]) for _ in range(rnd.randint(0, 12))]
        words += [rnd.choice(pools["en"]) for _ in range(rnd.randint(0, 12))] + ["budget", "Acme", "x"]
        rnd.shuffle(words)
        texts.append(" ".join(words))
    skipped = 0
    for text in texts:
        if not may_read_as_other_than_english(text):
            skipped += 1
            languages = text_languages(text)
            assert not languages or "en" in languages, text
            assert not other_language(frozenset({"en"}), text)
    assert skipped > 200  # the shortcut is taken (the English note among them)
    assert not may_read_as_other_than_english(texts[0]) and may_read_as_other_than_english(texts[1])


def test_a_nordic_genitive_name_is_held_without_its_s(tmp_path: Path, monkeypatch) -> None:
    """Swedish, Danish and Norwegian write "Tims och Johns" for Tim's and John's: the names are in the notes
    without the s, so the question is not about someone the memory never heard of."""
    from mdrecall.retrieval import crossing

    ws = tmp_path / "ws"
    write(
        ws,
        "memory/2026-06-02.md",
        "# 2026-06-02\n\n- Tim and John agree their favourite basketball player is LeBron.\n",
    )
    write(ws, "memory/2026-06-03.md", "# 2026-06-03\n\n- Dana: the onboarding flow keeps four steps.\n")
    index = MemoryIndex(resolve_settings(workspace=ws, state_dir=tmp_path / "state"), create_provider(parse_config({})))
    index.sync()
    try:
        question = "Vem är Tims och Johns favoritspelare i basket?"
        assert query_languages(question) == {"sv"}
        response = _search(index, question)
        assert [r.path for r in response.results][:1] == ["memory/2026-06-02.md"], response.notice
        monkeypatch.setattr(crossing, "GENITIVE_S", frozenset())  # as before: "Tims" read as a name not held
        assert _search(index, question).results == []
    finally:
        index.close()
