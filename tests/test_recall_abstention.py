"""Scores that mean something: with the default model a result's score is its estimated chance of holding the
answer, the same whatever else was asked or found; a question the memory cannot answer gets nothing and a
notice; a minScore the caller sets is a hard floor. Through the library, the CLI and the memory_search tool,
with the real default model (multilingual-e5-small)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdrecall.agents.tools import MEMORY_SEARCH, MemoryTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import create_provider
from mdrecall.retrieval.calibration import E5_CALIBRATION, Calibration, features, logit_fit, named_terms
from mdrecall.retrieval.results import Hit
from mdrecall.retrieval.search import NOTHING, run_search
from mdrecall.retrieval.tail import drop_tail
from mdrecall.storage.base import SearchRow

from .conftest import HashingProvider, search_with_default_floor, write

NOTES = {
    "MEMORY.md": (
        "# Team memory\n\n"
        "- Priya leads backend and owns the database migration.\n"
        "- Payroll vendor: we picked Remote over Deel because of the contractor support.\n"
        "- The staging database is reset every Sunday night.\n"
        "- Code review: two approvals on anything touching payments.\n"
    ),
    "memory/2026-06-10.md": "# 2026-06-10\n\n- Omar: release 4.2 ships on Thursday with the new export screen.\n",
    "memory/2026-06-12.md": "# 2026-06-12\n\n- Sofia: Acme renewed for 40 seats; the outage report goes out Monday.\n",
    "memory/2026-06-15.md": "# 2026-06-15\n\n- Lee: we made an offer to the backend candidate; start date July 1.\n",
    "memory/2026-06-16.md": (
        "# 2026-06-16\n\n- Dana: design review approved the onboarding flow with 4 steps.\n"
        "- Priya: the budget for cloud is capped at 9k a month.\n"
    ),
    "memory/2026-03-11.md": "# 2026-03-11\n\n- Priya: the budget review moved to Friday; cloud spend is up 12 %.\n",
    "memory/2026-04-20.md": "# 2026-04-20\n\n- Omar: the team offsite is in Lisbon, three days in May.\n",
}
NOW = datetime(2026, 6, 17, 12, tzinfo=timezone.utc)
OFF_TOPIC = ["how do I knit a scarf", "what is the capital of Peru", "best recipe for banana bread"]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, MemoryIndex]]:
    """A small team's notes indexed once with every default (the e5 model), for the whole module."""
    root = tmp_path_factory.mktemp("team")
    ws = root / "ws"
    for rel, text in NOTES.items():
        write(ws, rel, text)
    settings = resolve_settings(workspace=ws, state_dir=root / "state")
    index = MemoryIndex(settings, create_provider(parse_config({})))
    index.sync()
    assert index.store.read_meta()["model"] == "multilingual-e5-small"  # the calibrated default model
    yield ws, root / "state", index
    index.close()


def _search(index: MemoryIndex, query: str, n: int | None = None, min_score: float | None = None, **cfg: object):
    """What MemoryIndex.search answers (same defaults), at a fixed time; `cfg` overrides the query config."""
    query_cfg = index.config.query.model_copy(update=cfg) if cfg else index.config.query
    floor, source = index.effective_min_score(min_score)
    explicit = source in ("argument", "config")
    return run_search(
        index.store,
        index.provider,
        index.store.read_meta()["model"],
        query_cfg,
        query,
        index.config.sources,
        n,
        floor if explicit else None,
        now=NOW,
        default_min_score=None if explicit else floor,
    )


# -- library ------------------------------------------------------------------------------------------------


def test_a_score_does_not_depend_on_how_many_results_are_asked(team) -> None:
    _, _, index = team
    scores = {}
    for n in (1, 3, 6, 10):
        response = _search(index, "who owns the database migration", n)
        assert response.scoring == "calibrated"
        for r in response.results:
            scores.setdefault((r.path, r.start_line, r.end_line), set()).add(round(r.score, 9))
    assert scores and all(len(s) == 1 for s in scores.values()), scores
    top = _search(index, "who owns the database migration", 1).results[0]
    assert top.path == "MEMORY.md" and 0.3 < top.score <= 1.0


def test_the_fused_score_of_the_spec_stays_reachable(team) -> None:
    _, _, index = team
    fused = {n: _search(index, "budget for cloud", n, 0.0, scoring="fused") for n in (2, 10)}
    assert fused[2].scoring == fused[10].scoring == "fused"
    assert fused[2].results[0].fused_score is None  # the score itself is the fused one
    calibrated = _search(index, "budget for cloud", 2)
    assert calibrated.results[0].fused_score is not None


@pytest.mark.parametrize("question", OFF_TOPIC)
def test_a_question_memory_cannot_answer_gets_nothing_and_says_so(team, question: str) -> None:
    _, _, index = team
    response = _search(index, question)
    assert response.results == []
    assert response.notice and response.notice.startswith(NOTHING)
    assert not response.relaxed


def test_questions_the_notes_answer_are_answered(team) -> None:
    _, _, index = team
    for question, path in [
        ("which payroll vendor did we pick", "MEMORY.md"),
        ("where is the team offsite", "memory/2026-04-20.md"),
        ("how many seats did Acme renew", "memory/2026-06-12.md"),
    ]:
        response = _search(index, question)
        assert response.results and response.results[0].path == path, (question, response.results)
        assert response.notice is None


def test_a_question_about_someone_the_memory_never_mentions_scores_lower(team) -> None:
    _, _, index = team
    known = _search(index, "which payroll vendor did Priya pick", 1, 0.0).results[0]
    unknown = _search(index, "which payroll vendor did Gertrude pick", 1, 0.0).results[0]
    assert known.path == unknown.path == "MEMORY.md" and unknown.score < known.score
    response = _search(index, "which cake recipe did Gertrude bake for her birthday")
    assert response.results == [] and response.notice.startswith(NOTHING)


def test_an_explicit_min_score_is_a_hard_floor(team) -> None:
    _, _, index = team
    loose = _search(index, "budget for cloud", 6, 0.0)
    assert loose.results and not loose.relaxed
    best = max(r.score for r in loose.results)
    strict = _search(index, "budget for cloud", 6, min(1.0, best + 0.01))
    assert strict.results == [] and not strict.relaxed
    assert strict.notice == f"{NOTHING} minScore {min(1.0, best + 0.01):g} (best estimated chance {best:.3f})"
    some = _search(index, "budget for cloud", 6, best)
    assert some.results and all(r.score >= best for r in some.results)


def test_a_min_score_set_in_the_config_is_a_hard_floor_too(workspace: Path, make_index) -> None:
    """Fused scores (a model without a calibration): the never-empty rule relaxes the model's default floor
    only; `query.minScore` in the config, like a caller's minScore, is never relaxed."""
    loose = make_index(workspace, HashingProvider())
    loose.sync()
    relaxed = search_with_default_floor(loose, "a828e60")
    assert relaxed.scoring == "fused" and relaxed.relaxed and relaxed.results
    configured = make_index(workspace, HashingProvider(), {"query": {"minScore": 0.99}}, workspace / "other.sqlite")
    configured.sync()
    strict = configured.search("a828e60")
    assert strict.results == [] and not strict.relaxed and strict.notice.startswith(NOTHING)


def test_a_relaxed_answer_says_so(team) -> None:
    """With no minScore set, a question below the answer floor whose every keyword sits in one note still
    shows that note, and the notice says the floor was relaxed."""
    _, _, index = team
    response = _search(index, "Sunday", abstain_below=1.0)
    assert response.relaxed and response.results[0].path == "MEMORY.md"
    assert response.notice.startswith("no result reached the answer floor 1;") and "relaxed" in response.notice
    strict = _search(index, "Sunday", None, 1.0)
    assert not strict.relaxed and (not strict.results or all(r.score >= 1.0 for r in strict.results))


# -- calibration unit ---------------------------------------------------------------------------------------


def test_the_probability_rises_with_cosine_and_coverage() -> None:
    low = E5_CALIBRATION.probability(features(0.70, 0.2, False, False))
    more_cosine = E5_CALIBRATION.probability(features(0.85, 0.2, False, False))
    more_words = E5_CALIBRATION.probability(features(0.70, 1.0, False, False))
    assert 0.0 <= low < more_cosine <= 1.0 and low < more_words
    assert E5_CALIBRATION.probability(features(0.85, 1.0, True, False)) < E5_CALIBRATION.probability(
        features(0.85, 1.0, False, False)
    )


def test_logit_fit_recovers_a_known_model() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.normal(size=(4000, 2))
    p = 1 / (1 + np.exp(-(-1.0 + 2.0 * x[:, 0] - 0.5 * x[:, 1])))
    y = (rng.random(4000) < p).astype(float)
    beta = logit_fit(x.tolist(), y.tolist(), [1.0] * 4000)
    assert abs(beta[0] + 1.0) < 0.2 and abs(beta[1] - 2.0) < 0.25 and abs(beta[2] + 0.5) < 0.15
    model = Calibration(beta[0], {"cosine": beta[1], "coverage": beta[2]}, 0.1)
    assert 0.0 < model.probability({"cosine": 0.0, "coverage": 0.0}) < 0.5


def test_named_terms_are_the_capitalised_keywords_past_the_first_word() -> None:
    assert named_terms("What did Caroline research?", ["caroline", "research"]) == ["caroline"]
    assert named_terms("Caroline research", ["caroline", "research"]) == []
    assert named_terms("how do I configure Nginx", ["configure", "nginx"]) == ["nginx"]


# -- CLI and the memory_search tool -------------------------------------------------------------------------


def test_cli_says_nothing_in_memory_matches(team) -> None:
    ws, state, _ = team
    runner = CliRunner()
    result = runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), "search", "how do I knit a scarf"])
    assert result.exit_code == 0, result.output
    assert "no results for 'how do I knit a scarf' (nothing in memory matches" in result.stdout
    result = runner.invoke(
        app, ["--workspace", str(ws), "--state-dir", str(state), "search", "how do I knit a scarf", "--json"]
    )
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    result = runner.invoke(
        app,
        ["--workspace", str(ws), "--state-dir", str(state), "search", "payroll vendor", "--min-score", "0.999"],
    )
    assert result.exit_code == 0 and "nothing in memory matches minScore 0.999" in result.stdout
    result = runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), "search", "payroll vendor"])
    assert result.exit_code == 0 and "MEMORY.md" in result.stdout
    result = runner.invoke(app, ["--workspace", str(ws), "--state-dir", str(state), "status"])
    assert "calibrated (chance a result holds the answer" in result.stdout


def test_memory_search_tool_reads_as_no_memory_not_an_error(team) -> None:
    _, _, index = team
    tools = MemoryTools(index)
    out = tools.call(MEMORY_SEARCH, {"query": "how do I knit a scarf"})
    assert "error" not in out and out["results"] == []
    assert out["notice"].startswith(NOTHING)
    out = tools.call(MEMORY_SEARCH, {"query": "which payroll vendor did we pick", "minScore": 0.999})
    assert "error" not in out and out["results"] == [] and "minScore 0.999" in out["notice"]
    answered = tools.call(MEMORY_SEARCH, {"query": "which payroll vendor did we pick"})
    assert answered["results"] and answered["results"][0]["path"] == "MEMORY.md"


def test_a_query_in_another_script_keeps_the_fused_score(team) -> None:
    """The calibration was fitted on English questions: a CJK or Cyrillic query keeps the fused score and the
    model's floor (never the English answer floor)."""
    _, _, index = team
    assert _search(index, "予算はいくらですか").scoring == "fused"
    assert _search(index, "Какой бюджет?").scoring == "fused"
    assert _search(index, "café budget für Zürich").scoring == "calibrated"


# -- the tail floor -----------------------------------------------------------------------------------------


def test_results_far_below_the_best_are_not_listed(team) -> None:
    """With every default, a result whose chance is under 1 % of the best one's is not listed (tail.py); the
    rule is off with relativeFloor 0 and with an explicit minScore (which alone decides then)."""
    _, _, index = team
    every = _search(index, "budget for cloud", 6, relative_floor=0.0)
    assert len(every.results) == 6
    best = max(r.score for r in every.results)
    assert any(r.score < 0.01 * best for r in every.results)  # a tail the floor has to drop
    shown = _search(index, "budget for cloud", 6)
    assert [r.path for r in shown.results] == [r.path for r in every.results if r.score >= 0.01 * best]
    assert {r.path for r in shown.results} == {"memory/2026-06-16.md", "memory/2026-03-11.md"}
    assert shown.notice is None
    assert len(_search(index, "budget for cloud", 6, 0.0).results) == 6  # minScore 0: every result
    assert len(_search(index, "budget for cloud", 6, 0.0, relative_floor=0.01).results) == 2  # unless set too
    one = _search(index, "which payroll vendor did we pick", 6)
    assert [r.path for r in one.results] == ["MEMORY.md"]
    # a question only about a time lists every log of that time, however low their chances
    month = _search(index, "what did we do this month", 6)
    assert sorted(r.path for r in month.results) == [f"memory/2026-06-{d}.md" for d in (10, 12, 15, 16)]


def test_the_tail_floor_keeps_the_order_and_the_first_result() -> None:
    def hit(score: float) -> Hit:
        return Hit(SearchRow(str(score), "a.md", "memory", 1, 1, "x", score, {}), score=score)

    hits = [hit(0.002), hit(0.5), hit(0.004), hit(0.006), hit(0.3)]
    assert [h.score for h in drop_tail(hits, 0.01)] == [0.002, 0.5, 0.006, 0.3]
    assert [h.score for h in drop_tail(hits, 0.0)] == [0.002, 0.5, 0.004, 0.006, 0.3]
    assert drop_tail([], 0.01) == [] and len(drop_tail(hits[:1], 1.0)) == 1


def test_cli_lists_no_tail_and_status_says_the_floor(team, tmp_path: Path) -> None:
    ws, state, _ = team
    runner = CliRunner()
    base = ["--workspace", str(ws), "--state-dir", str(state)]
    result = runner.invoke(app, [*base, "search", "budget for cloud", "-n", "6", "--json"])
    assert result.exit_code == 0, result.output
    assert {r["path"] for r in json.loads(result.stdout)} == {"memory/2026-06-16.md", "memory/2026-03-11.md"}
    config = tmp_path / "every.toml"
    config.write_text("[query]\nrelativeFloor = 0\n", encoding="utf-8")
    result = runner.invoke(app, [*base, "--config", str(config), "search", "budget for cloud", "-n", "6", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 6
    result = runner.invoke(app, [*base, "status", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["query"]["relativeFloor"] == 0.01


@pytest.mark.parametrize("query", ["what is it", "and the", "???!!!", "🦓🦓"])
def test_a_query_without_a_keyword_finds_nothing(team, query: str) -> None:
    """Stop words alone, punctuation or symbols name nothing a note could hold: before, every chunk "held all
    the query's keywords" (coverage 1.0), so such a query listed notes at chances up to 0.55, or came back
    through the never-empty rule as matches of "and" and "the"."""
    ws, state, index = team
    response = _search(index, query, 6)
    assert response.results == [] and not response.relaxed
    assert response.notice is not None and response.notice.startswith(NOTHING)
    result = CliRunner().invoke(app, ["--workspace", str(ws), "--state-dir", str(state), "search", query, "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    # a keyword still answers, and a stop word next to it changes nothing
    assert _search(index, "the payroll vendor", 6).results[0].path == "MEMORY.md"


def test_a_long_query_with_no_result_is_not_printed_back_whole(team) -> None:
    ws, state, _ = team
    query = "scarf " * 3000
    result = CliRunner().invoke(app, ["--workspace", str(ws), "--state-dir", str(state), "search", query])
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[0]
    assert line.startswith("no results for 'scarf scarf") and "cut to its first 32 words" in line
    assert len(line) < 600 and line.count("scarf") == 32
