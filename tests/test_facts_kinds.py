"""Kinds of statement the capture rules keep however they are phrased (one's own health and diet, an event moved to a
date, who approves what said casually, a team's procedure as a command, a standing contingency without a comma or
in zh/ja/ko, a negative standing order), their near-misses, and what is never kept even by the classifier: a
question about what is remembered, an order scoped to the question at hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from facts_fixtures import local_provider  # noqa: F401
from mdrecall.facts.classifier import scorer_for
from mdrecall.facts.rules import extract_rules, passing, reject_reason, rule_candidate

ROOT = Path(__file__).resolve().parents[1]


class _Always:
    """A scorer that finds every statement worth keeping: what is still left out is left out by the rules'
    rejects or by `passing`, whatever the classifier says."""

    threshold = 0.5

    def __call__(self, texts: list[str]) -> list[tuple[float, str | None]]:
        return [(0.99, "fact") for _ in texts]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # one's own health and diet
        ("I'm lactose intolerant", "health"),
        ("I've got celiac disease", "health"),
        ("soy intolerante a la lactosa", "health"),
        ("tenho diabetes tipo 1, então cuidado com sugestões de dieta", "health"),
        ("je suis daltonien donc les courbes rouge/vert je les distingue pas", "health"),
        ("ich habe Typ-1-Diabetes", "health"),
        ("我有糖尿病，推荐食谱要注意", "health"),
        ("喘息持ちです", "health"),
        ("나 땅콩 알레르기 있어", "health"),
        ("我不喝咖啡,推荐饮品的时候别推咖啡", "preference"),
        ("no bebo alcohol", "preference"),
        ("저는 술 안 마셔요", "preference"),
        # an event moved to or fixed on a date
        ("the launch moved to May 3, marketing confirmed this morning", "date"),
        ("Der Umzug ins neue Büro ist jetzt fix auf den 1. September verschoben", "date"),
        ("产品发布会定在10月18号,已经跟老板确认过了", "date"),
        ("el lanzamiento se movió al 3 de mayo", "date"),
        ("リリースは5月10日に延期になりました", "date"),
        ("출시는 6월 3일로 연기됐어요", "date"),
        # who approves what, said casually
        ("quem aprova reembolso acima de 500 reais é a Sônia Prado, da diretoria financeira", "role"),
        ("whoever signs off on refunds over $500 is Dana Whitfield", "role"),
        ("c'est Mathieu qui valide les congés", "role"),
        ("wer Urlaub genehmigt, ist Frau Becker aus der Personalabteilung", "role"),
        ("合同审批要先过法务的陈律师,然后才能给老板签字", "role"),
        ("田中さんは経理部の部長で、経費の承認は全部田中さん経由です", "role"),
        ("휴가 승인은 김민수 팀장님이 해요", "role"),
        # a team's procedure as a command, said casually
        ("our staging deploy is `make deploy-stg ENV=eu`", "procedure"),
        ("Chez nous les tests d'intégration se lancent avec `make itest`, Docker doit tourner", "procedure"),
        ("bei uns läuft das Deployment über `make ship`", "procedure"),
        ("nuestro deploy a producción se hace con `make release`", "procedure"),
        ("うちの本番デプロイは `./scripts/deploy.sh prod` で実行します", "procedure"),
        ("우리 회사 배포는 `make release TAG=vX.Y` 로 해요", "procedure"),
        ("我们的部署都用 `make release` 跑", "procedure"),
        # standing contingencies: no comma before the order, or in zh / ja / ko
        ("si falla el deploy avísale primero a Lucía antes de tocar nada", "standing rule"),
        ("wenn ich nach Code frage bitte immer mit Typannotationen, untypisiertes Python nervt mich", "standing rule"),
        ("ビルドが落ちたら、まず佐藤さんにSlackで連絡するようにして", "standing rule"),
        ("部署失败的话先通知小李", "standing rule"),
        ("배포가 실패하면 먼저 민수 님한테 연락해 주세요", "standing rule"),
        # negative standing orders with their own verb
        ("nunca sugira push direto na main, aqui tudo passa por PR", "standing order"),
        ("não use nunca var em JavaScript", "standing order"),
        ("never suggest force-pushing to main", "standing order"),
        ("ne propose jamais de push direct sur main", "standing order"),
        ("永远不要建议直接推到main分支", "standing order"),
        ("絶対にmainへの直接プッシュを提案しないで", "standing order"),
        # a shared thing of one's own place that only works one way
        ("a impressora do escritório só funciona pela rede Convidados, a outra rede bloqueia", "setup"),
        ("der Drucker im Büro geht nur über VPN", "setup"),
        ("사무실 프린터는 게스트 와이파이에서만 돼요", "setup"),
    ],
)
def test_each_kind_is_kept_however_it_is_phrased(text: str, reason: str) -> None:
    candidate = rule_candidate(text)
    assert candidate is not None and candidate.reason == reason
    assert [c.text for c in extract_rules([text])] == [text]


@pytest.mark.parametrize(
    "text",
    [
        # health: general knowledge, a question, the moment
        "Type 1 diabetes is an autoimmune condition.",
        "la celiaquía no tiene cura",
        "¿tengo diabetes si me sale 130 en ayunas?",
        "我今天不喝咖啡了",
        "오늘은 술 안 마셔",
        # dates: a guess, a question, a time of day, a day relative to now
        "the launch might move to May 3",
        "el lanzamiento se movió al 3 de mayo, creo",
        "did the launch move to May 3?",
        "the meeting moved to 3pm",
        "회의는 내일로 미뤄졌어요",
        "Das Meeting ist auf morgen verschoben.",
        # approvals: a question, someone's one-off act
        "quem aprova reembolso acima de 500 reais?",
        "Dana signed off on the refund yesterday",
        "Marta aprobó mis vacaciones",
        "Frau Becker hat den Urlaub genehmigt.",
        "whoever approves this PR, thanks!",
        # commands: a one-off run, a failure
        "our staging deploy failed after `make deploy-stg`",
        "run `make deploy-stg` now please",
        "デプロイは `make deploy` で失敗しました",
        # conditions: a one-off "when you're done", a complaint, an explanation
        "cuando termines avísame",
        "si la prod tombe encore je démissionne",
        "if I always use tabs the linter complains",
        "終わったら教えて",
        "ビルドが落ちたら、たぶん環境のせいです",
        "배포가 실패하면 어떡하죠?",
        # negative orders about the thing at hand, chatter
        "never suggest that again, it broke prod",
        "ne propose jamais ça, c'est nul",
        "nunca sugieras eso otra vez",
        "je n'ai jamais vu ça",
        "이번엔 그거 추천하지 마세요",
        # found by probing the first version: an idiom, a failing command, a cancelled date, a one-off refusal
        "I'm deaf to your excuses lol",
        "our build is `make all` but it keeps failing",
        "the review got moved to May 5 but then cancelled",
        "Apple's keynote is set for June 5",
        "我不喝了",
        "それは食べません",
        "배불러서 안 먹어",
        "my code only works on my machine lol",
        "the printer only works on the guest wifi today",
    ],
)
def test_near_misses_of_each_kind_are_not_kept(text: str) -> None:
    assert rule_candidate(text) is None
    assert extract_rules([text]) == []


@pytest.mark.parametrize(
    "text",
    [
        "Type 1 diabetes is an autoimmune condition.",
        "la celiaquía no tiene cura",
        "o diabetes tipo 1 é autoimune",
        "회의는 내일로 미뤄졌어요",
        "Das Meeting ist auf morgen verschoben.",
        "Dana signed off on the refund yesterday",
        "Marta aprobó mis vacaciones",
        "Frau Becker hat den Urlaub genehmigt.",
        "合同审批通过了",
        "ne propose jamais ça, c'est nul",
        "je n'ai jamais vu ça",
    ],
)
def test_near_misses_the_classifier_alone_may_not_keep(text: str) -> None:
    """General knowledge about a condition, an event moved to tomorrow, someone's one-off act, an exclamation:
    they look like the kinds above to a classifier on sentence vectors, so `passing` leaves them out."""
    assert passing(text)
    assert extract_rules([text], scorer=_Always()) == []


@pytest.mark.parametrize(
    "text",
    [
        "do you remember my dog's name?",
        "Do you still remember what we decided about the cache?",
        "você lembra o nome do meu cachorro?",
        "¿te acuerdas de cómo se llama mi jefa?",
        "tu te souviens du nom de mon chat ?",
        "Erinnerst du dich an den Namen meiner Tochter?",
        "你还记得我们测试环境的地址吗",
        "私の犬の名前、覚えてる？",
        "우리 테스트 서버 주소 기억나?",
    ],
)
def test_a_question_about_what_is_remembered_is_a_question(text: str) -> None:
    assert reject_reason(text) == "question"
    assert extract_rules([text], scorer=_Always()) == []


def test_remember_said_as_an_order_is_still_kept() -> None:
    assert rule_candidate("Remember that my dog's name is Rex.") is not None
    assert rule_candidate("记住，我们测试环境的地址是 10.0.0.5") is not None


@pytest.mark.parametrize(
    ("one_off", "standing"),
    [
        (
            "for this question, always check utils.py first before you answer",
            "always check utils.py first before you answer questions about this repo",
        ),
        ("이번 답변만 반말로 해줘", "앞으로는 반말로 해줘"),
        ("In this conversation, answer in French.", None),
        ("para esta pregunta, contesta solo con código", None),
        ("pour cette question, réponds uniquement en anglais", None),
        ("Bei dieser Aufgabe bitte keine Tests schreiben.", None),
        ("这个问题用英文回答就行", None),
        ("この質問だけは英語で答えて", None),
    ],
)
def test_an_order_scoped_to_the_question_at_hand_is_never_kept(one_off: str, standing: str | None) -> None:
    assert passing(one_off)
    assert extract_rules([one_off], scorer=_Always()) == []
    if standing is not None:
        assert [c.text for c in extract_rules([standing])] == [standing]


def test_the_kinds_set_floor() -> None:
    """capture_dev10.jsonl (these kinds and their near-misses, eight languages), rules alone: no false capture."""
    path = ROOT / "bench" / "quality" / "capture_dev10.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert {r["lang"] for r in rows} >= {"en", "pt", "es", "fr", "de", "zh", "ja", "ko"}
    assert sum(1 for r in rows if not r["capture"]) >= len(rows) * 0.4
    got = [(r["capture"], bool(extract_rules([r["text"]], limit=1))) for r in rows]
    tp = sum(1 for want, found in got if want and found)
    fp = sum(1 for want, found in got if found and not want)
    assert fp == 0 and tp / sum(1 for want, _ in got if want) >= 0.95


def test_with_the_real_classifier_questions_and_one_off_scopes_are_left_out(local_provider) -> None:  # noqa: F811
    """The false captures of capture_heldout7 (rules + the shipped classifier on the real model's vectors), beside
    the kinds it missed: a guard against regressions on a set the rules were fitted on, not a blind measure."""
    scorer = scorer_for(local_provider.provider)
    assert scorer is not None
    drop = [
        "for this question, always check utils.py first before you answer",
        "你还记得我们测试环境的地址吗",
        "do you remember my dog's name?",
        "이번 답변만 반말로 해줘",
        "Dana signed off on the refund yesterday",
        "Type 1 diabetes is an autoimmune condition.",
    ]
    keep = [
        "soy intolerante a la lactosa",
        "the launch moved to May 3, marketing confirmed this morning",
        "quem aprova reembolso acima de 500 reais é a Sônia Prado, da diretoria financeira",
        "our staging deploy is `make deploy-stg ENV=eu`",
        "ビルドが落ちたら、まず佐藤さんにSlackで連絡するようにして",
        "nunca sugira push direto na main, aqui tudo passa por PR",
    ]
    found = {c.text for c in extract_rules(drop + keep, None, scorer=scorer)}
    assert found == set(keep)


@pytest.mark.parametrize(
    "text",
    [
        "I'm allergic to meetings lol",
        "haha my code only works on my machine",
        "jaja soy alérgico a los lunes",
        "je suis allergique aux réunions mdr",
        "회의 알레르기 있어 ㅋㅋ",
        "我对开会过敏哈哈",
        "we always ship on Fridays 😂",
    ],
)
def test_a_joke_is_never_kept_even_by_the_classifier(text: str) -> None:
    assert reject_reason(text) == "joking"
    assert extract_rules([text], limit=1, scorer=_Always()) == []


def test_the_same_statement_without_laughter_is_kept() -> None:
    assert extract_rules(["I'm allergic to penicillin"], limit=1)
    assert reject_reason("Sasha owns the billing service") is None  # a name holding "sha"/"ha" is no laugh
    assert reject_reason("our docs are at www.example.org") is None


def test_always_inside_a_condition_without_a_comma_is_a_saying() -> None:
    assert extract_rules(["si siempre con prisa nada sale bien"], limit=1) == []
    assert extract_rules(["when I paste a stack trace always explain the cause first"], limit=1)
    assert extract_rules(["Si te pido un resumen, siempre en español y corto."], limit=1)
