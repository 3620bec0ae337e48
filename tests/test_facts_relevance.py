"""Which facts recall ranks first and auto-recall injects (real e5 model, real LanceDB), the per-model
calibration, and the capture classifier shipped beside the rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from facts_fixtures import hashing_provider, local_provider, make_settings  # noqa: F401
from mdrecall.facts.capture import extract_rules
from mdrecall.facts.classifier import classifier_for, scorer_for
from mdrecall.facts.relevance import CALIBRATIONS, calibration_for
from mdrecall.facts.store import FactStore, auto_recall

ROOT = Path(__file__).resolve().parents[1]

FACTS = [
    "I prefer tabs over spaces.",
    "My dentist appointment is on the 14th at 9:30.",
    "Sam is allergic to walnuts.",
    "We use pnpm in every frontend repo.",
    "The staging API token is [REDACTED] for the deploy script.",
    "We decided to deploy the API on Fly.io instead of Heroku.",
    "I use Neovim for everything.",
    "Meine Schwester Anja wohnt in Hamburg.",
]


@pytest.fixture(scope="module")
def e5_store(tmp_path_factory: pytest.TempPathFactory, local_provider) -> Iterator[FactStore]:  # noqa: F811
    root = tmp_path_factory.mktemp("relevance")
    with FactStore(make_settings(root / "ws", root / "state"), local_provider) as store:
        for text in FACTS:
            assert store.store(text).stored
        yield store


def test_the_default_model_is_calibrated(e5_store: FactStore) -> None:
    calibration = e5_store.calibration()
    assert calibration is not None and calibration.model == "multilingual-e5-small"
    assert e5_store.min_score() == calibration.min_score == CALIBRATIONS["multilingual-e5-small"].min_score


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("what can't my partner eat", "Sam is allergic to walnuts."),
        ("which indentation do I use", "I prefer tabs over spaces."),
    ],
)
def test_recall_ranks_meaning_above_stray_shared_words(e5_store: FactStore, query: str, first: str) -> None:
    hits = e5_store.recall(query, limit=5, min_score=-1.0)
    assert hits[0].fact.text == first, [(h.fact.text, round(h.score, 3)) for h in hits]


@pytest.mark.parametrize(
    "prompt",
    [
        "Can you refactor the webhook handler in src/payments.py?",
        "What is the capital of Australia?",
        "Thanks, that worked!",
        "Explique-moi la photosynthèse.",
    ],
)
def test_unrelated_prompts_get_nothing_injected(e5_store: FactStore, prompt: str) -> None:
    assert auto_recall(e5_store, prompt) == ""


@pytest.mark.parametrize(
    ("prompt", "fact"),
    [
        ("Which indentation style do I like, tabs or spaces?", "I prefer tabs over spaces."),
        ("When is my dentist appointment?", "My dentist appointment is on the 14th at 9:30."),
        ("Where do we deploy the API?", "Fly.io"),
    ],
)
def test_questions_about_a_fact_get_it_injected(e5_store: FactStore, prompt: str, fact: str) -> None:
    block = auto_recall(e5_store, prompt)
    assert fact in block


@pytest.mark.parametrize(
    ("prompt", "fact"),
    [
        ("¿A qué es alérgica Sam?", "Sam is allergic to walnuts."),
        ("Quel éditeur de texte j'utilise ?", "I use Neovim for everything."),
        ("Where does my sister live?", "Meine Schwester Anja wohnt in Hamburg."),
    ],
)
def test_a_question_in_another_language_than_the_fact_gets_it_first(
    e5_store: FactStore, prompt: str, fact: str
) -> None:
    # the language is taken out of the vectors: a question does not land on a fact for sharing its language
    hits = e5_store.recall(prompt, limit=5, min_score=-1.0)
    assert hits[0].fact.text == fact, [(h.fact.text, round(h.score, 3)) for h in hits]


@pytest.mark.parametrize(
    ("prompt", "fact"),
    [
        ("¿A qué es alérgica Sam?", "walnuts"),
        ("Where does my sister live?", "Hamburg"),
        ("Wo hosten wir die API?", "Fly.io"),
    ],
)
def test_a_question_in_another_language_gets_the_fact_injected(e5_store: FactStore, prompt: str, fact: str) -> None:
    assert fact in auto_recall(e5_store, prompt)


@pytest.mark.parametrize("prompt", ["Was ist der Unterschied zwischen TCP und UDP?", "Danke, das hat geholfen!"])
def test_a_prompt_sharing_only_the_language_of_a_fact_gets_nothing(e5_store: FactStore, prompt: str) -> None:
    assert auto_recall(e5_store, prompt) == ""


def test_the_prompt_hook_injects_across_languages_and_not_for_chat(tmp_path: Path, local_provider) -> None:  # noqa: F811
    """The UserPromptSubmit hook (what Claude Code calls before every prompt), real e5 model and LanceDB."""
    from facts_fixtures import FIXTURES
    from mdrecall.agents.hooks import HookRunner

    settings = make_settings(tmp_path / "ws", tmp_path / "state")
    with FactStore(settings, local_provider) as store:
        for text in FACTS:
            store.store(text)
    payload = json.loads((FIXTURES / "UserPromptSubmit.json").read_text().replace("__CWD__", str(tmp_path)))

    def context(prompt: str) -> str:
        runner = HookRunner(settings, local_provider)
        try:
            out = runner.run("UserPromptSubmit", {**payload, "prompt": prompt}).stdout
        finally:
            runner.close()
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    assert "Meine Schwester Anja wohnt in Hamburg." in context("Where does my sister live?")
    assert "walnuts" in context("¿A qué es alérgica Sam?")
    assert context("Danke, das hat geholfen!") == ""
    assert context("Thanks, that worked!") == ""


def test_e5_facts_are_stored_as_passages_and_as_queries(tmp_path: Path, local_provider) -> None:  # noqa: F811
    settings = make_settings(tmp_path / "ws", tmp_path / "state")
    with FactStore(settings, local_provider) as store:
        assert store.calibration().query_view
        store.store("The office wifi network is called Bluefin-5G.")
        table = store._open_table()
        assert {"vector", "qvector"} <= set(table.schema.names)
        [row] = table.to_arrow().to_pylist()
        assert row["vector"] != row["qvector"]  # "passage: ..." and "query: ..." differ
        assert "Bluefin-5G" in auto_recall(store, "Which network do I join at work?")
        # a table written before the query view (its meta has no queryView) is rebuilt from facts.md
        meta = json.loads(store._meta_path().read_text())
        del meta["queryView"]
        store._meta_path().write_text(json.dumps(meta))
    with FactStore(settings, local_provider) as store:
        assert "Bluefin-5G" in auto_recall(store, "Which network do I join at work?")
        assert store.rebuilt_reason == "queryView changed"
        assert "qvector" in store._open_table().schema.names


def test_a_configured_threshold_wins(e5_store: FactStore, tmp_path: Path, local_provider) -> None:  # noqa: F811
    question = "Is there anything Sam can't eat?"
    assert "walnuts" in auto_recall(e5_store, question)  # the model's threshold
    settings = make_settings(tmp_path / "ws", tmp_path / "state", {"facts": {"recallMinScore": 0.9}})
    with FactStore(settings, local_provider) as store:
        store.store("Sam is allergic to walnuts.")
        assert auto_recall(store, question) == ""


def test_an_uncalibrated_model_keeps_the_weighted_score(tmp_path: Path, hashing_provider) -> None:  # noqa: F811
    with FactStore(make_settings(tmp_path / "ws", tmp_path / "state"), hashing_provider) as store:
        assert store.calibration() is None and store.min_score() == 0.1
        store.store("We decided to deploy the API on Fly.io instead of Heroku.")
        [hit] = store.recall("deploy the API on Fly.io")
        # weighted like query.hybrid (0.5 / 0.5): keyword share 1.0 -> at least 0.5
        assert hit.text_score == 1.0 and hit.score >= 0.5
    assert calibration_for(None) is None


def test_the_capture_classifier_loads_and_classifies(local_provider) -> None:  # noqa: F811
    classifier = classifier_for("multilingual-e5-small")
    assert classifier is not None and classifier.dims == 384 and 0.3 < classifier.threshold < 0.95
    assert classifier_for("all-MiniLM-L6-v2") is None  # no weights for it: the rules alone
    scorer = scorer_for(local_provider.provider)
    assert scorer is not None
    keep = ["Keep commit messages in the imperative mood.", "Marco from the data team owns the nightly ETL."]
    chatter = ["Make the button red.", "Thanks, that worked!"]
    probabilities = np.array([p for p, _ in scorer(keep + chatter)])
    assert np.all(probabilities[:2] >= classifier.threshold) and np.all(probabilities[2:] < classifier.threshold)
    # beside the rules: found with the classifier, missed without it; questions stay rejected
    found = extract_rules(keep + chatter + ["Who owns the nightly ETL?"], None, scorer=scorer)
    assert [c.text for c in found] == keep and {c.reason for c in found} == {"classifier"}
    assert [c.category for c in found] == ["preference", "entity"]  # the category heads
    assert extract_rules(keep, None) == []


def test_memory_recall_applies_the_same_threshold(e5_store: FactStore) -> None:
    from mdrecall.agents.fact_tools import FactTools

    tools = FactTools(e5_store)
    unrelated = tools.call("memory_recall", {"query": "Can you refactor the webhook handler in src/payments.py?"})
    assert unrelated["results"] == [] and unrelated["context"] == ""
    related = tools.call("memory_recall", {"query": "Is there anything Sam can't eat?"})
    assert related["results"][0]["text"] == "Sam is allergic to walnuts."


def test_the_capture_classifier_needs_the_texts_for_its_text_features() -> None:
    classifier = classifier_for("multilingual-e5-small")
    assert classifier is not None and "deixis" in classifier.features
    with pytest.raises(ValueError, match="texts"):
        classifier.probabilities(np.zeros((1, classifier.dims)))


def test_capture_tells_standing_rules_from_one_off_requests(local_provider) -> None:  # noqa: F811
    """The kinds a blind held-out set got wrong before (these statements are in the dev sets it was trained on:
    a guard against losing them, not a measure of generalisation)."""
    scorer = scorer_for(local_provider.provider)
    keep = [
        "Keep commit messages in the imperative mood.",
        "We are dropping support for Python 3.9.",
        "커밋 메시지는 영어로 써 주세요.",
        "Los nombres de variables, en inglés.",
        "Remember: the wifi is called Orchard-Guest.",
    ]
    drop = [
        "Run the migrations on the staging database.",
        "Write an e-mail to the customer apologising.",
        "Kubernetes uses etcd to store cluster state.",
        "Remember to handle the None case in this branch.",
        "I think the bug is in the cache layer.",
    ]
    found = {c.text for c in extract_rules(keep + drop, None, scorer=scorer)}
    assert found == set(keep)


def test_capture_drops_general_knowledge_and_keeps_plans_and_people(local_provider) -> None:  # noqa: F811
    """What the blind capture_heldout4 set got wrong (now in the training sets: a guard against losing them, not a
    measure of generalisation), and public names without anyone's own world."""
    scorer = scorer_for(local_provider.provider)
    keep = [
        "田中さんがフロントエンドのリードです。",
        "Die alte REST-API wird Ende des Jahres abgeschaltet.",
        "레거시 PHP 서비스는 연말에 종료합니다.",
        "Prefer early returns over deeply nested ifs.",
        "Tutoie-moi, c'est plus simple.",
    ]
    drop = [
        "Revert the last commit and force-push to my branch",
        "Just for this answer, put it in a bullet list",
        "Goには1.18でジェネリクスが入りました。",
        "O Git foi criado pelo Linus Torvalds.",
        "今ビルド中です。",
        "이번 PR에서 마이그레이션 파일 추가하는 거 잊지 마.",
        "Linus Torvalds leads Linux kernel development.",
        "Windows 10 wird im Oktober 2025 eingestellt.",
    ]
    found = {c.text for c in extract_rules(keep + drop, None, scorer=scorer)}
    assert found == set(keep)


def test_capture_floors_on_the_newest_dev_sets(local_provider) -> None:  # noqa: F811
    """docs/facts.md: rules + classifier on the newest sets it was trained on (capture_heldout4 P 1.000 / R 0.944,
    capture_heldout5 P 1.000 / R 0.946, capture_dev6 P 0.986 / R 0.973, capture_dev7 P 1.000 / R 0.885,
    capture_dev8 P 1.000 / R 1.000): a guard against regressions."""
    import json

    scorer = scorer_for(local_provider.provider)
    quality = Path(__file__).resolve().parents[1] / "bench" / "quality"
    sets = ("capture_heldout4", "capture_heldout5", "capture_dev6", "capture_dev7", "capture_dev8")
    for name in (f"{s}.jsonl" for s in sets):
        rows = [json.loads(line) for line in (quality / name).read_text(encoding="utf-8").splitlines() if line]
        texts = [r["text"] for r in rows]
        found = {c.text for c in extract_rules(texts, None, scorer=scorer)}
        tp = sum(1 for r in rows if r["capture"] and r["text"] in found)
        fp = sum(1 for r in rows if not r["capture"] and r["text"] in found)
        positives = sum(1 for r in rows if r["capture"])
        assert tp / max(1, tp + fp) >= 0.97 and tp / positives >= 0.85, (name, tp, fp, positives)


def test_capture_keeps_notes_names_setups_and_team_decisions_in_eight_languages(local_provider) -> None:  # noqa: F811
    """Kinds the blind capture_heldout5 set missed (these statements are in the training sets now: a guard against
    losing them, not a measure of generalisation), beside one-off requests in the same languages."""
    scorer = scorer_for(local_provider.provider)
    keep = [
        "Guarda isso: o sistema legado ainda depende do Java 8.",
        "Note for later: our public API is versioned by date, e.g. 2024-06-01.",
        "Pode me chamar de Dani.",
        "저를 부를 때는 민준 님이라고 해 주세요.",
        "Uso Windows 11 con WSL2 y VS Code.",
        "저는 우분투 22.04에서 Neovim 써요.",
        "Benoît Lemarchand gère tout ce qui touche à l'authentification.",
        "Vamos migrar do Oracle para o PostgreSQL até o fim do ano.",
        "우리 팀은 이제 Redux 대신 Zustand를 씁니다.",
        "团队已经决定把日志系统从 ELK 换成 Loki。",
    ]
    drop = [
        "Antworte diesmal nur mit dem Code, ohne Erklärung.",
        "今回の回答だけ箇条書きにしてください。",
        "Desta vez, responde só com o código.",
        "Cette fois, réponds seulement avec le diff.",
        "이번만 코드만 보여 주세요.",
        "Me chama quando o build terminar.",
        "Llámame cuando termine la migración.",
        "部署完了叫我一声。",
    ]
    found = {c.text for c in extract_rules(keep + drop, None, scorer=scorer)}
    assert found == set(keep)


def test_chat_lines_do_not_land_on_a_style_fact(tmp_path: Path, local_provider) -> None:  # noqa: F811
    """Short chat lines ("keep going" in several languages) scored above the threshold against "Keep commit
    messages in the imperative mood." before the chat penalty; a question about that fact still gets it."""
    settings = make_settings(tmp_path / "ws", tmp_path / "state")
    with FactStore(settings, local_provider) as store:
        for text in [*FACTS, "Keep commit messages in the imperative mood."]:
            store.store(text)
        for chat in ["Keep going.", "De acuerdo, sigue.", "Parfait, on continue.", "Va bene, continua pure."]:
            assert auto_recall(store, chat) == "", chat
        assert "imperative mood" in auto_recall(store, "How should I phrase my commit messages?")


def test_the_chat_penalty_moves_a_prompt_never_the_order_of_its_facts(local_provider) -> None:  # noqa: F811
    from mdrecall.facts.relevance import background, chat_penalty, language_free, relevance_scores

    calibration = calibration_for(local_provider.provider)
    assert calibration is not None and calibration.chat_weight > 0
    bg = background(calibration.file)
    assert bg is not None and bg.everyday is not None and bg.statements is not None
    provider = local_provider.provider
    facts = np.asarray(provider.embed_batch(FACTS), np.float32)
    as_queries = np.stack([np.asarray(provider.embed_query(t), np.float32) for t in FACTS])

    def penalty(prompt: str) -> float:
        return chat_penalty(language_free(np.asarray(provider.embed_query(prompt)), bg.language)[0], bg)

    question = np.asarray(provider.embed_query("Where does my sister live?"), np.float32)
    plain = relevance_scores(question, facts, bg, as_queries)
    penalised = relevance_scores(question, facts, bg, as_queries, calibration.chat_weight)
    shift = plain - penalised
    assert np.allclose(shift, shift[0], atol=1e-5) and np.argmax(plain) == np.argmax(penalised)
    # chatter sits nearer the everyday prompts than a question about something the user said
    assert penalty("Okay, keep going.") > penalty("Where does my sister live?") + 0.02


def test_recall_eval_scores_a_set_written_later(tmp_path: Path) -> None:
    """bench/quality/recall_eval.py --extra: a later set joins the measured prompts under its own split, never the
    tuning splits; a missing file is one clear line."""
    import subprocess
    import sys

    sys.path.insert(0, str(ROOT / "bench" / "quality"))
    import recall_eval

    extra = tmp_path / "later.jsonl"
    rows = [
        {"kind": "question", "lang": "en", "text": "Which nut is Sam allergic to?", "fact": "f01", "split": "heldout6"},
        {"kind": "unrelated", "lang": "en", "text": "Sort this list in Python.", "split": "heldout6"},
    ]
    extra.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    facts, prompts = recall_eval.load_set([extra])
    later = [p for p in prompts if p["split"] == "heldout6"]
    assert [p["kind"] for p in later] == ["question", "unrelated"]
    assert "heldout6" not in recall_eval.TUNING_SPLITS and "heldout5" in recall_eval.TUNING_SPLITS
    assert any(f["id"] == "f01" for f in facts)
    missing = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "quality" / "recall_eval.py"), "--extra", str(tmp_path / "none.jsonl")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0 and "no such set file" in missing.stderr


def test_a_prompt_that_asks_gains_the_question_weight_on_every_fact(e5_store: FactStore) -> None:
    """A question mark adds the calibration's question weight to every score (the order of the facts stays);
    an explicit lookup (asking=True) gets it without one; a short question reaches the threshold its
    statement form would miss."""
    from mdrecall.facts.relevance import asks

    calibration = e5_store.calibration()
    assert calibration is not None and calibration.question_weight > 0
    assert asks("Where does Sam live?") and asks("¿Dónde vive Sam") and asks("サムはどこ？") and not asks("Keep going.")
    plain = e5_store.recall("what can't my partner eat", limit=5, min_score=-1.0)
    asked = e5_store.recall("what can't my partner eat?", limit=5, min_score=-1.0)
    looked_up = e5_store.recall("what can't my partner eat", limit=5, min_score=-1.0, asking=True)
    # (recall keeps positive scores only: the lookup, scoring higher, can keep more facts)
    assert plain and [h.fact.text for h in plain] == [h.fact.text for h in looked_up][: len(plain)]
    for a, b in zip(plain, looked_up, strict=False):
        assert b.score - a.score == pytest.approx(calibration.question_weight, abs=1e-5)
    assert asked[0].fact.text == plain[0].fact.text == "Sam is allergic to walnuts."
    assert asked[0].score > plain[0].score + calibration.question_weight / 2


def test_capture_with_the_classifier_keeps_standing_statements_and_drops_passing_ones(local_provider) -> None:  # noqa: F811
    """Standing statements without a cue word (roles, procedures, standing orders, plans, setups) and what the
    classifier alone used to keep though it is temporary, a verdict, a counted request or public knowledge."""
    scorer = scorer_for(local_provider.provider)
    keep = [
        "Mara owns the billing service.",
        "We roll back with `make rollback-prod`, never by hand.",
        "Roda os testes sempre antes de fazer push.",
        "Escreva os commits em inglês.",
        "回答请用简体中文。",
        "Die alte Login-Seite wird ab März nicht mehr unterstützt.",
        "The nightly backup runs at 3am UTC.",
    ]
    drop = [
        "Camille s'occupe de ça pour l'instant.",
        "Mara owns the billing service this week while Jon is on leave.",
        "The answers you gave were too short.",
        "Respuestas demasiado largas, como siempre.",
        "Give me three names for a coffee shop.",
        "Apple announces new iPhones every September.",
        "とりあえず田中さんが担当です。",
        "To fix it, run `npm install` in the root.",
    ]
    found = {c.text for c in extract_rules(keep + drop, None, scorer=scorer)}
    assert found == set(keep)
