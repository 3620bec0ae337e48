"""Auto-capture: the rules (several languages, never assistant text / injected memories / secrets / questions),
the per-conversation cap, the optional LLM extractor against a local OpenAI-compatible server, and the
labelled set's size and measured precision/recall floors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from facts_fixtures import hashing_provider, make_settings  # noqa: F401
from mdrecall.facts.capture import LlmExtractor, auto_capture, dropped_by_cap
from mdrecall.facts.rules import extract_rules, reject_reason, rule_candidate, text_features
from mdrecall.facts.store import FactStore

ROOT = Path(__file__).resolve().parents[1]
CAPTURE_SET = ROOT / "bench" / "quality" / "capture_set.jsonl"


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("I prefer dark mode in every editor I use.", "preference"),
        ("We decided to deploy the API on Fly.io instead of Heroku.", "decision"),
        ("My manager is Priya Raman.", "entity"),
        ("You can reach Marco at +44 20 7946 0958.", "entity"),
        ("Remember that the staging database is reset every Sunday night.", "fact"),
        ("Eu prefiro respostas curtas e diretas.", "preference"),
        ("Decidimos migrar el frontend a React 19.", "decision"),
        ("Je m'appelle Hugo et je suis développeur mobile.", "entity"),
        ("Merk dir, dass der Testserver jeden Montag neu startet.", "fact"),
        ("我们决定下个月迁移到阿里云。", "decision"),
        ("私は東京に住んでいます。", "entity"),
        ("저는 짧은 답변을 좋아해요.", "preference"),
    ],
)
def test_rules_capture_memorable_statements(text: str, category: str) -> None:
    candidate = rule_candidate(text)
    assert candidate is not None and candidate.category == category


@pytest.mark.parametrize(
    "text",
    [
        "Can you fix the failing test in test_sync.py?",
        "What do I prefer for indentation?",
        "Thanks, that worked!",
        "If I prefer tabs, how should I configure black?",
        "My API key is sk-proj-AbCdEf1234567890abcdef1234567890, use it for the calls.",
        "<relevant-memories>\n1. [preference] I prefer dark mode\n</relevant-memories>",
        "你能帮我修复这个错误吗？",
        "¿Puedes arreglar el test que falla?",
    ],
)
def test_rules_reject_chatter_questions_secrets_and_injected_text(text: str) -> None:
    assert rule_candidate(text) is None


def test_reject_reasons_are_specific() -> None:
    assert reject_reason("Remember my password=Hunter2Secret!") == "contains a secret"
    assert reject_reason("<relevant-memories>I prefer tea</relevant-memories>") == "injected memories"
    assert reject_reason("Which editor do I prefer?") == "question"
    assert reject_reason("x" * 600) == "too long"


@pytest.fixture
def store(tmp_path: Path, hashing_provider) -> Iterator[FactStore]:  # noqa: F811
    with FactStore(make_settings(tmp_path / "ws", tmp_path / "state"), hashing_provider) as fact_store:
        yield fact_store


def test_auto_capture_takes_user_turns_only_and_respects_the_cap(store: FactStore) -> None:
    turns = [
        {"role": "assistant", "content": "I prefer to answer in bullet points; we decided that long ago."},
        {"role": "user", "content": "<relevant-memories>\n1. [preference] I prefer tea\n</relevant-memories>\nok"},
        {"role": "user", "content": "I prefer short answers without a summary."},
        {"role": "user", "content": "My API key is sk-proj-AbCdEf1234567890abcdef1234567890 for the calls."},
        {"role": "user", "content": "We decided to use pnpm in every frontend repo."},
        {"role": "user", "content": "My wife Ana is a pediatric nurse."},
        {"role": "user", "content": "I always use metric units."},
    ]
    results = auto_capture(store, turns, limit=3)
    texts = [f.text for f in store.list()]
    assert len(texts) == 3 and [r["stored"] for r in results] == [True, True, True, False]
    assert dropped_by_cap(results) == ["I always use metric units."]  # over the cap: reported, not lost
    assert texts[0] == "I prefer short answers without a summary."
    assert not any("bullet" in t or "tea" in t or "sk-proj" in t or "metric" in t for t in texts)
    assert auto_capture(store, turns, limit=3)[0]["stored"] is False  # the same statements again: duplicates


def test_long_message_yields_its_memorable_sentence() -> None:
    message = (
        "Let me give you some context before we start on the parser rewrite today, it is a long story. "
        "The old one was written in a hurry years ago and nobody understands it anymore. "
        "By the way, we decided to keep the public API unchanged. Anyway, start with the tokenizer."
    )
    [candidate] = extract_rules([message])
    assert candidate.category == "decision" and candidate.text.startswith("By the way, we decided")


class _FakeChat(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/chat/completions that answers with scripted memories."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _FakeChat.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        memories = [
            {"text": "Prefers answers in Portuguese.", "category": "preference", "importance": 0.9},
            {"text": "The deploy key is sk-proj-AbCdEf1234567890abcdef1234567890", "category": "fact"},
            {"text": "Works with Priya on the billing team.", "category": "bogus"},
        ]
        content = "Here you go:\n" + json.dumps({"memories": memories})
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeChat.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_llm_extractor_through_an_openai_compatible_endpoint(store: FactStore, chat_server: str) -> None:
    extractor = LlmExtractor(chat_server, "tiny-model", api_key="k-123")
    turns = [
        {"role": "assistant", "content": "ASSISTANT TEXT MUST NOT BE SENT"},
        {"role": "user", "content": "Prefiro respostas em português. My token is sk-proj-AbCdEf1234567890abcdef12345"},
    ]
    results = auto_capture(store, turns, limit=3, extractor=extractor)
    [request] = _FakeChat.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-123"
    sent = json.dumps(request["body"])
    assert "ASSISTANT TEXT" not in sent and "AbCdEf1234567890abcdef12345" not in sent
    assert request["body"]["model"] == "tiny-model"
    stored = {f.text: f.category for f in store.list()}
    assert stored == {"Prefers answers in Portuguese.": "preference", "Works with Priya on the billing team.": "other"}
    assert len(results) == 2


def test_labelled_set_and_measured_precision_recall() -> None:
    rows = [json.loads(line) for line in CAPTURE_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    positives = [r for r in rows if r["capture"]]
    negatives = [r for r in rows if not r["capture"]]
    assert len(rows) >= 200 and len(negatives) >= len(rows) / 2 - 5
    assert {r["lang"] for r in rows} >= {"en", "pt", "es", "fr", "de", "zh", "ja", "ko"}
    tp = sum(1 for r in positives if extract_rules([r["text"]], limit=1))
    fp = sum(1 for r in negatives if extract_rules([r["text"]], limit=1))
    precision, recall = tp / max(1, tp + fp), tp / len(positives)
    assert precision >= 0.95 and recall >= 0.9, (precision, recall)


@pytest.mark.parametrize(
    "text",
    [
        "Remember to handle the None case in this branch.",
        "Can you remember to check the logs later?",
        "Remember to update the changelog in this PR.",
        "Denk daran, in diesem Zweig den None-Fall zu behandeln.",
        "记得在这个分支里处理空值的情况。",
        "このブランチでNoneの場合を処理するのを忘れないで。",
        "이 브랜치에서 None 경우를 처리하는 거 잊지 마.",
        "이번 PR에서 마이그레이션 파일 추가하는 거 잊지 마.",  # "don't forget to add ...": a reminder, not a memory
        "マイグレーションファイルを追加するのを忘れないで。",
        "I prefer not to answer that right now.",
    ],
)
def test_rules_leave_requests_about_the_task_at_hand_to_the_classifier(text: str) -> None:
    """'remember to X' and any rule hit about this branch / this function / now / today are requests about
    the current work: the rules do not take them (the classifier decides, with deixis as a feature)."""
    assert rule_candidate(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "Remember: the guest wifi is called Orchard-Guest.",
        "Apunta: la clave del portal de proveedores la tiene Inés.",
        "À retenir : le parking visiteur est au niveau -2.",
        "메모해 줘: 회의실 C의 모니터가 고장났어.",
        "メモ：来客用駐車場は地下1階です。",
        "잊지 마: 회의실 C의 모니터가 고장났어.",
        "忘れないで、請求書は25日までに送る必要があります。",
        "From now on, release notes go in CHANGELOG.md, not the wiki.",  # standing, not deixis
        "A partir de agora, todos os PRs precisam de dois revisores.",
    ],
)
def test_rules_take_explicit_notes_and_standing_rules(text: str) -> None:
    assert rule_candidate(text) is not None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Note for later: our public API is versioned by date.", "remember"),
        ("Keep this in your notes: staging is refreshed every Sunday.", "remember"),
        ("Guarda isso: o sistema legado ainda depende do Java 8.", "remember"),
        ("Apúntalo: el servidor de pruebas se reinicia cada lunes.", "remember"),
        ("Note bien : la base de recette est vidée chaque vendredi.", "remember"),
        ("Merk dir das: die Testdatenbank wird jeden Montag zurückgesetzt.", "remember"),
        ("覚えといて：ステージングは毎週月曜にリセットされます。", "remember"),
        ("기억해 놔: 스테이징 DB는 매주 월요일에 초기화돼요.", "remember"),
        ("You can call me Sam.", "address"),
        ("Pode me chamar de Dani.", "address"),
        ("Puedes llamarme Lupe.", "address"),  # not a question: no question mark
        ("Tu peux m'appeler Loulou.", "address"),
        ("Du kannst mich Jo nennen.", "address"),
        ("叫我小王就行。", "address"),
        ("ケンって呼んでください。", "address"),
        ("저를 부를 때는 민준 님이라고 해 주세요.", "address"),
    ],
)
def test_rules_take_explicit_notes_and_forms_of_address_in_eight_languages(text: str, reason: str) -> None:
    candidate = rule_candidate(text)
    assert candidate is not None and candidate.reason == reason


@pytest.mark.parametrize(
    "text",
    [
        "Call me when the deploy is done.",
        "Can you call me Sam?",
        "Me chama quando o build terminar.",
        "Llámame cuando termine la migración.",
        "Appelle-moi quand les tests sont finis.",
        "Ruf mich an, wenn der Build fertig ist.",
        "部署完了叫我一声。",
        "終わったら呼んでください。",
        "배포 끝나면 불러 줘.",
        "Imagine a user said: call me Sam.",
        "For example, a config like retries=3 works.",
    ],
)
def test_rules_leave_calls_and_examples_alone(text: str) -> None:
    assert rule_candidate(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Our Postgres is stuck on 12 because of an extension.", {"setup"}),
        ("Uso Windows 11 con WSL2 y VS Code.", {"setup"}),
        ("Unser Build-Server läuft noch auf Debian 10.", {"setup"}),
        ("本番環境はさくらのクラウドで動いています。", {"setup"}),
        ("저는 우분투 22.04에서 Neovim 써요.", {"setup"}),
        ("Antworte diesmal nur mit dem Code, ohne Erklärung.", {"once"}),
        ("今回の回答だけ箇条書きにしてください。", {"once"}),
        ("이번만 코드만 보여 주세요.", {"once"}),
        ("Esta vez, dame solo la lista.", {"once"}),
        ("Cette fois, réponds seulement avec le diff.", {"once"}),
        # own products and plans are not `public`, though they name one
        ("The mobile app will drop Android 8 support in March.", set()),
        ("Vamos descontinuar o suporte ao Windows 7 no próximo trimestre.", set()),
        ("Apple announces new iPhones every September.", {"public"}),
    ],
)
def test_text_features_for_setups_one_offs_and_own_products(text: str, expected: set[str]) -> None:
    names = ("setup", "once", "plan", "public")
    got = {n for n, v in zip(names, text_features(text, names), strict=True) if v}
    assert got == expected


def test_text_features_mark_one_off_requests_and_standing_rules() -> None:
    names = ("deixis", "habit", "task", "people", "style", "hedge")

    def on(text: str) -> set[str]:
        return {n for n, v in zip(names, text_features(text, names), strict=True) if v}

    assert on("Run the migrations on the staging database.") >= {"task"}
    assert "deixis" not in on("Run the migrations on the staging database.")
    assert "task" not in on("Write docstrings in the Google style.")  # no definite object: a standing rule
    assert on("Remember to close the file handle in this function.") >= {"deixis"}
    assert "deixis" not in on("We'll use pnpm for every frontend repo from now on.")
    assert "deixis" not in on("Dejamos de dar soporte a Internet Explorer este año.")
    assert on("Always answer in British English.") >= {"habit", "style"}
    assert on("I think the bug is in the cache layer.") >= {"hedge", "people"}
    assert on("Kubernetes uses etcd to store cluster state.") == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Rust was first released in 2015 by Mozilla.", {"knowledge", "public"}),
        ("O Git foi criado pelo Linus Torvalds.", {"knowledge", "public"}),
        ("Kotlin wird von JetBrains entwickelt.", {"knowledge"}),
        ("Goには1.18でジェネリクスが入りました。", {"knowledge"}),
        ("Just for this answer, put it in a bullet list.", {"once"}),
        ("No olvides añadir la migración en este PR.", {"once"}),
        ("이번 PR에서 마이그레이션 파일 추가하는 거 잊지 마.", {"once"}),
        ("今ビルド中です。", {"status"}),
        ("Tests are running now, should take a few minutes.", {"status"}),
        ("Prefer early returns over deeply nested ifs.", {"prefer"}),
        ("Bevorzuge frühe Returns statt tief verschachtelter ifs.", {"prefer"}),
        ("Tutoie-moi, c'est plus simple.", {"address"}),
        ("田中さんがフロントエンドのリードです。", {"role"}),
        ("Die alte REST-API wird Ende des Jahres abgeschaltet.", {"plan"}),
        ("레거시 PHP 서비스는 연말에 종료합니다.", {"plan"}),
        # public products and people, nobody's own world: `public`, and role / plan / prefer do not count
        ("Linus Torvalds leitet die Entwicklung des Linux-Kernels.", {"public"}),
        ("Windows 10 wird im Oktober 2025 eingestellt.", {"public"}),
        ("Most style guides prefer spaces over tabs.", {"public"}),
        # ... but with someone's own world they do
        ("We move our Windows build agents to Linux next month.", {"plan"}),
        ("Call me when the build finishes.", set()),
        ("Du kannst mich duzen.", {"address"}),
    ],
)
def test_text_features_for_general_knowledge_one_offs_and_plans(text: str, expected: set[str]) -> None:
    names = ("knowledge", "once", "status", "prefer", "address", "role", "plan", "public")
    got = {n for n, v in zip(names, text_features(text, names), strict=True) if v}
    assert got == expected


def test_held_out_set_floors() -> None:
    """The second held-out set (docs/facts.md: P 0.975, R 0.780 when measured): guard against regressions."""
    path = ROOT / "bench" / "quality" / "capture_heldout2.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    got = [(r["capture"], bool(extract_rules([r["text"]], limit=1))) for r in rows]
    tp = sum(1 for want, found in got if want and found)
    fp = sum(1 for want, found in got if found and not want)
    assert tp / max(1, tp + fp) >= 0.95 and tp / sum(1 for want, _ in got if want) >= 0.75


def test_hooks_use_the_llm_extractor_when_configured(tmp_path: Path, chat_server: str, hashing_provider) -> None:  # noqa: F811
    from mdrecall.agents.hooks import HookRunner

    config = {"facts": {"capture": "llm", "llm": {"baseUrl": chat_server, "model": "tiny", "apiKey": "k-9"}}}
    settings = make_settings(tmp_path / "ws", tmp_path / "state", config)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "Fale português."}}))
    runner = HookRunner(settings, hashing_provider)
    result = runner.run("Stop", {"session_id": "s", "transcript_path": str(transcript), "stop_hook_active": True})
    texts = {f.text for f in runner.store.list()}
    runner.close()
    assert _FakeChat.requests and _FakeChat.requests[0]["auth"] == "Bearer k-9"
    assert "Prefers answers in Portuguese." in texts and "captured 2" in " ".join(result.actions or [])


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Remember: the release freeze starts 2024-06-01.", "fact"),
        ("Note for later: the audit is on 2025-03-14 at 10:00", "fact"),
        ("Remember that build 2024.06.01 broke the CI", "fact"),
        ("Remember: my phone is +1 415 555 0100", "entity"),
        ("Remember: Dana (555) 123-4567", "entity"),
    ],
)
def test_a_date_or_a_version_is_not_a_phone_number(text: str, category: str) -> None:
    from mdrecall.facts.rules import rule_candidate

    candidate = rule_candidate(text)
    assert candidate is not None and candidate.category == category


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("If billing breaks, page Okonkwo; he has write access to the prod ledger.", "fact"),
        ("If I ask for a summary, keep it to five bullet points.", "preference"),
        ("When I paste a stack trace, explain the root cause before proposing a fix.", "preference"),
        ("If I'm on vacation, Marco handles the releases.", "preference"),
        ("If a test is flaky, never just retry it.", "fact"),
        ("Wenn ich nach Code frage, bitte immer mit Typannotationen.", "preference"),
        ("Si te pido un resumen, siempre en español.", "preference"),
        ("Se o deploy falhar, sempre avise a Ana primeiro.", "fact"),
        ("If the pager fires at night, Dana is first on call.", "fact"),
        ("if a PR touches the billing module it needs sign-off from Priya before merge", "fact"),
        ("In case the nightly export is empty, flag it in #data.", "fact"),
        ("Si le disque de prod dépasse 80 %, c'est Mathieu qu'il faut prévenir.", "fact"),
        ("If I'm asking about Python, assume 3.11 unless I say otherwise", "preference"),
    ],
)
def test_a_standing_conditional_rule_is_kept(text: str, category: str) -> None:
    assert reject_reason(text) is None
    candidate = rule_candidate(text)
    assert candidate is not None and candidate.reason == "standing rule" and candidate.category == category
    assert [c.text for c in extract_rules([text])] == [text]


@pytest.mark.parametrize(
    "text",
    [
        "If we moved to Kubernetes, the ops load would probably double.",
        "If I were you, I'd rewrite the parser.",
        "If the tests pass, we can merge this branch.",
        "If that fails, try restarting the container.",
        "If this works, great; otherwise try the other flag.",
        "If the API returns 500, retry this request once for now.",
        "If you look at line 40, the loop never ends.",
        "If I prefer tabs, how should I configure black?",
        "Wenn wir mehr Leute hätten, könnten wir das schneller bauen.",
        "Si tuviéramos otro servidor, siempre iría más rápido.",
        "Si on avait plus de temps, on pourrait toujours tout refaire.",
    ],
)
def test_a_hypothetical_or_one_off_conditional_is_not_a_standing_rule(text: str) -> None:
    from mdrecall.facts.rules import standing_rule

    assert not standing_rule(text)
    assert rule_candidate(text) is None


def test_english_words_are_not_read_as_romance_subjunctives() -> None:
    from mdrecall.facts.rules import standing_rule

    # "Maria", "wait", "criteria" end like es/fr/pt conditional forms; only a Romance "si"/"se" reads those
    assert standing_rule("If Maria wants to wait on the criteria, always ask her first.")
    assert not standing_rule("Si Maria tuviera tiempo, siempre ayudaría.")
