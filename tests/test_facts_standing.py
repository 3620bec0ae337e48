"""Standing statements the capture rules keep without a cue word (roles, team procedures, standing orders, plans
for one's own product, one's own setup), the near-misses they must leave alone, and the same through the hook
path (`auto_capture` on a real store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from facts_fixtures import hashing_provider, make_settings  # noqa: F401
from mdrecall.facts.capture import auto_capture
from mdrecall.facts.rules import extract_rules, passing, rule_candidate, standing_rule
from mdrecall.facts.store import FactStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("text", "reason", "category"),
    [
        # who does what
        ("Priya is our new designer.", "role", "entity"),
        ("Mara owns the billing service.", "role", "entity"),
        ("Approvals for budget changes go to Sofia's deputy.", "role", "entity"),
        ("O Bruno cuida dos pipelines de dados.", "role", "entity"),
        ("Andrés se encarga de las migraciones de base de datos.", "role", "entity"),
        ("Camille s'occupe du déploiement des applis mobiles.", "role", "entity"),
        ("Jonas ist für die Datenbank-Backups zuständig.", "role", "entity"),
        ("王磊是我们的架构师，架构问题找他。", "role", "entity"),
        ("田中さんがインフラの担当です。", "role", "entity"),
        ("박지훈 님이 배포 파이프라인을 담당하고 있어요.", "role", "entity"),
        ("Tom handles the iOS releases.", "role", "entity"),  # a platform named: still someone's role
        # how the team does things
        ("We roll back with `make rollback-prod`, never by hand.", "procedure", "fact"),
        ("To reset the cache, run `make flush-cache`.", "procedure", "fact"),
        ("Para reiniciar el worker, ejecuta `systemctl restart worker`.", "procedure", "fact"),
        ("PRs need two approvals before they can be merged.", "procedure", "fact"),
        # standing orders without "I prefer"
        ("Céntrate siempre en la seguridad antes que en el estilo.", "standing order", "preference"),
        ("Roda os testes sempre antes de fazer push.", "standing order", "preference"),
        ("Antworte grundsätzlich auf Deutsch.", "standing order", "preference"),
        ("Use tabs, never spaces.", "standing order", "preference"),
        ("Kurze Erklärungen, bitte.", "standing order", "preference"),
        ("Respuestas cortas, por favor.", "standing order", "preference"),
        ("Escreva os comentários em inglês.", "standing order", "preference"),
        ("Usa comillas simples en el código Python.", "standing order", "preference"),
        ("Name test files after the module they test.", "standing order", "preference"),
        ("Summary first, details after.", "standing order", "preference"),
        ("注释用英文写。", "standing order", "preference"),
        ("関数にはすべて型ヒントをつけること。", "standing order", "preference"),
        ("파이썬에서는 작은따옴표 쓰지 마세요.", "standing order", "preference"),
        # plans for one's own product
        ("On abandonne le support de Node 16 en juin.", "plan", "decision"),
        ("Die alte Login-Seite wird ab März nicht mehr unterstützt.", "plan", "decision"),
        ("The web app is being rewritten in Svelte.", "plan", "decision"),
        ("다음 달에 Jenkins를 GitHub Actions로 바꿉니다.", "plan", "decision"),
        # one's own machines, names and schedules
        ("Der Produktionsserver heißt prod-db-02.", "setup", "fact"),
        ("The nightly backup runs at 3am UTC.", "setup", "fact"),
        ("Our API runs on Kubernetes in Frankfurt.", "setup", "fact"),
        ("Auf meinem Laptop läuft Arch mit Sway.", "setup", "fact"),
    ],
)
def test_a_standing_statement_without_a_cue_word_is_kept(text: str, reason: str, category: str) -> None:
    candidate = rule_candidate(text)
    assert candidate is not None and (candidate.reason, candidate.category) == (reason, category)
    assert [c.text for c in extract_rules([text])] == [text]


@pytest.mark.parametrize(
    "text",
    [
        # a question, a hypothetical, a temporary state, a verdict, the task at hand
        "Is Priya our new designer?",
        "If Priya were our designer, the app would look better.",
        "Mara owns the billing service this week while Jon is on leave.",
        "A Joana é a gerente de produto desta sprint.",
        "Camille s'occupe de ça pour l'instant.",
        "Tom handles the edge case badly, look at line 40.",
        "Nobody owns the billing service and that worries me.",
        "She's the lead singer of the band.",
        # software, not someone's role; a pastime, not a duty
        "Redis runs the queue.",
        "Django handles the migrations automatically.",
        "Sarah runs the marathon every year.",
        # one-off commands
        "To see the output, run it again with -v.",
        "To fix it, run `npm install` in the root.",
        "This PR needs two approvals before merge.",
        "Run `make flush-cache` now, the page is stale.",
        # one-off requests and complaints that carry "always" or a style word
        "Run the linter again, it always fails on the first try.",
        "Revisa otra vez el test, siempre falla.",
        "Short answer please: does it compile?",
        "The answers you gave were too short.",
        "Respuestas demasiado largas, como siempre.",
        "Keep going and never give up!",
        "Mach immer so weiter!",
        "Write a function in Python that reverses a list.",
        "Usa comillas simples en este archivo.",
        "Escreva o comentário em inglês.",
        "这个注释用英文写。",
        # general knowledge, a move that is someone else's, a passing guess, a one-off event
        "Windows 10 wird ab Oktober 2025 nicht mehr unterstützt.",
        "On abandonne, c'est trop compliqué.",
        "Maybe the nightly backup runs at 3am, I'm not sure.",
        "The backup ran at 3am and failed.",
        "The build is at 80% now.",
        "My code runs on the first try, finally!",
        "We decided to use SQLite for now.",
    ],
)
def test_near_misses_are_not_standing_statements(text: str) -> None:
    assert rule_candidate(text) is None
    assert extract_rules([text]) == []


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Cuando te pida un commit, escribe el mensaje en inglés.", "preference"),
        ("Quando eu pedir um resumo, usa tópicos curtos.", "preference"),
        ("Quand je colle une stack trace, explique d'abord la cause.", "preference"),
        ("Wenn ich nach SQL frage, schreib die Schlüsselwörter groß.", "preference"),
        ("When you write SQL for me, uppercase the keywords.", "preference"),
        ("If the staging deploy fails, we roll back with `make rollback-staging`.", "fact"),
        ("When Sofia is out, approvals go to her deputy, Lena.", "fact"),
        ("If Kenji pings you about the pipeline, he's the ETL lead and his word is final.", "preference"),
    ],
)
def test_standing_conditionals_in_other_languages_and_with_a_role(text: str, category: str) -> None:
    assert standing_rule(text)
    candidate = rule_candidate(text)
    assert candidate is not None and candidate.reason == "standing rule" and candidate.category == category


@pytest.mark.parametrize(
    "text",
    [
        "When you're done, run the tests.",
        "If you can, uppercase the keywords.",
        "Cuando termines, ejecuta los tests.",
        "Si puedes, revisa el PR de Ana.",
        "Se puder, roda os testes de integração.",
        "Quand tu auras fini, lance les tests.",
        "Wenn du fertig bist, schick mir den Diff.",
        "Wenn du Zeit hast, prüfe den Branch von Jonas.",
    ],
)
def test_a_condition_that_only_says_when_to_do_a_one_off_task_is_not_standing(text: str) -> None:
    assert not standing_rule(text)
    assert extract_rules([text]) == []


def test_a_decision_taken_now_is_kept_but_a_temporary_one_is_not() -> None:
    assert rule_candidate("Decidimos largar o Trello; agora tudo fica no Jira.") is not None
    assert rule_candidate("We decided to use SQLite for now.") is None
    # a standing scope points without being about the task at hand
    assert rule_candidate("このプロジェクトではPython 3.8のサポートを打ち切ることにした。") is not None


class _Always:
    """A scorer that finds every statement worth keeping: what the classifier alone may keep is then decided
    by `passing` alone."""

    threshold = 0.5

    def __call__(self, texts: list[str]) -> list[tuple[float, str | None]]:
        return [(0.99, "fact") for _ in texts]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Camille s'occupe de ça pour l'instant.", False),
        ("The answers you gave were too short.", False),
        ("Give me three names for a coffee shop.", False),
        ("Apple announces new iPhones every September.", False),
        ("Relance les tests, ils échouent toujours au premier essai.", False),
        ("Jonas is on paternity leave until March.", True),
        ("Wir veröffentlichen nur noch einmal im Monat.", True),
    ],
)
def test_what_the_classifier_alone_may_not_keep(text: str, kept: bool) -> None:
    assert passing(text) is not kept
    assert bool(extract_rules([text], scorer=_Always())) is kept


@pytest.fixture
def store(tmp_path: Path, hashing_provider) -> Iterator[FactStore]:  # noqa: F811
    with FactStore(make_settings(tmp_path / "ws", tmp_path / "state"), hashing_provider) as fact_store:
        yield fact_store


def test_the_hook_path_stores_standing_statements_and_skips_near_misses(store: FactStore) -> None:
    turns = [
        {"role": "user", "content": "Priya is our new designer. Can you fix the header in this file?"},
        {"role": "assistant", "content": "Mara owns the billing service, I think."},
        {"role": "user", "content": "Mara owns the billing service this week while Jon is on leave."},
        {"role": "user", "content": "We roll back with `make rollback-prod`, never by hand."},
        {"role": "user", "content": "To fix it, run `npm install` in the root."},
        {"role": "user", "content": "Roda os testes sempre antes de fazer push."},
        {"role": "user", "content": "Roda os testes de novo, por favor."},
        {"role": "user", "content": "When you're done, run the tests."},
        {"role": "user", "content": "Der Produktionsserver heißt prod-db-02."},
    ]
    results = auto_capture(store, turns)
    stored = {f.text: f.category for f in store.list()}
    assert stored == {
        "Priya is our new designer.": "entity",
        "We roll back with `make rollback-prod`, never by hand.": "fact",
        "Roda os testes sempre antes de fazer push.": "preference",
        "Der Produktionsserver heißt prod-db-02.": "fact",
    }
    assert sorted(r["reason"] for r in results) == ["procedure", "role", "setup", "standing order"]


def test_the_standing_statement_set_floor() -> None:
    """capture_dev9.jsonl (roles, procedures, standing orders, plans, setups and their near-misses), rules alone."""
    path = ROOT / "bench" / "quality" / "capture_dev9.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert {r["lang"] for r in rows} >= {"en", "pt", "es", "fr", "de", "zh", "ja", "ko"}
    negatives = sum(1 for r in rows if not r["capture"])
    assert negatives >= len(rows) * 0.4
    got = [(r["capture"], bool(extract_rules([r["text"]], limit=1))) for r in rows]
    tp = sum(1 for want, found in got if want and found)
    fp = sum(1 for want, found in got if found and not want)
    assert fp == 0 and tp / sum(1 for want, _ in got if want) >= 0.9


@pytest.mark.parametrize(
    "text",
    [
        "A Carla cuida de toda a parte de pagamentos.",
        "Lucas is the point of contact for the Acme account.",
        "She's our product owner.",
        "Ingrid ist unsere neue Teamleiterin.",
        "Élodie est la responsable du support.",
        "Questions about invoices go to Marta.",
        "Um den Cache zu leeren, führe `make flush` aus.",
        "Every PR needs a linked ticket.",
        "Always squash commits before merging.",
        "Nunca uses print para depurar, usa logging.",
        "N'utilise jamais print.",
        "Schreib Commit-Messages immer auf Englisch.",
        "Antworten bitte kurz.",
        "Migrations go under db/migrations.",
        "提交信息统一用英文。",
        "コメントは英語で書いてください。",
        "모든 함수에 타입 힌트를 붙여 주세요.",
        "Our staging DB is called pg-stage-3.",
        "The weekly report goes out on Mondays at 9am.",
        "Meu notebook roda Ubuntu 24.04.",
        "我们打算下季度迁移到K8s。",
        "来年からGoに切り替えます。",
    ],
)
def test_more_phrasings_of_standing_statements(text: str) -> None:
    assert rule_candidate(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Always happy to help.",
        "Always look on the bright side.",
        "Never stop learning!",
        "Never seen that before.",
        "Never say never!",
        "N'abandonne jamais !",
        "Nunca me rindo.",
        "Please run the tests again, they always fail.",
        "Check line 12, it always breaks there.",
        "Summary first and the details after, just this time.",
        "Answers in English are fine for this one.",
        "Wir wechseln das Thema.",
        "The new version sort en mars, je crois.",
    ],
)
def test_chatter_with_always_or_never_is_not_a_standing_order(text: str) -> None:
    assert extract_rules([text]) == []
