"""The optional rerank stage (`query.rerank`) against a local fake server speaking Cohere v2, Voyage and Jina.

Covers: the three wire formats (request fields, response parsing), the reorder a server asks for (unit and
through `MemoryIndex.search` and the CLI), faults that keep the fused order with a one-line notice (429 with
retries, 5xx, timeouts, bad JSON, wrong count or indices, refused connections), the key never shown, the
stage off by default, and one-line config errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fake_rerank_server import FakeRerankServer, Reply, refused_url
from mdrecall.cli.app import app
from mdrecall.config.settings import MemoryConfig, RerankConfig, parse_config
from mdrecall.errors import ConfigError
from mdrecall.retrieval import rerank
from mdrecall.retrieval.rerank import WIRE_FORMATS, RerankError, blend_order, parse_scores, rerank_hits
from mdrecall.retrieval.search import Hit
from mdrecall.storage.sqlite import SearchRow

from .conftest import trust_config, write

pytest_plugins = ["fake_rerank_server"]  # the `fake_rerank` fixture

PROVIDERS = ("cohere", "voyage", "jina")
QUERY = "which kiwi did the ferret eat"
TEXTS = [
    "The ferret slept all afternoon.",  # fused rank 1
    "Groceries: apples, bread.",  # fused rank 2
    "The ferret ate the golden kiwi on Tuesday.",  # fused rank 3, the reranker's best
    "Kiwi season starts in May.",  # fused rank 4
]


@pytest.fixture(autouse=True)
def fresh_clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No kept client leaks between tests; retries do not wait; no real key from the environment is used."""
    for fmt in WIRE_FORMATS.values():
        monkeypatch.delenv(fmt.env_key, raising=False)
    monkeypatch.setattr(rerank, "RETRY_BASE_DELAY_S", 0.01)
    rerank.close_clients()
    yield
    rerank.close_clients()


def hits(texts: list[str] = TEXTS, paths: list[str] | None = None) -> list[Hit]:
    """Fused hits, best first, scores 0.9, 0.8, ..."""
    out = []
    for i, text in enumerate(texts):
        path = paths[i] if paths else f"memory/n{i}.md"
        row = SearchRow(id=f"c{i}", path=path, source="memory", start_line=1, end_line=1, text=text, score=0.0)
        out.append(Hit(row=row, text_score=0.5, score=0.9 - 0.1 * i))
    return out


def cfg(server: FakeRerankServer | None, provider: str = "cohere", **extra) -> RerankConfig:
    base = server.base(provider) if server is not None else extra.pop("baseUrl")
    data = {"enabled": True, "provider": provider, "baseUrl": base, "apiKey": "rk-test-secret", **extra}
    return RerankConfig.model_validate(data)


# -- wire formats --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_wire_format_sends_its_fields_and_reorders_as_the_server_says(
    fake_rerank: FakeRerankServer, provider: str
) -> None:
    fake_rerank.required_key = "rk-test-secret"
    ranked, notice = rerank_hits(cfg(fake_rerank, provider, weight=1.0), QUERY, hits())
    assert notice is None
    assert [h.row.id for h in ranked] == ["c2", "c0", "c3", "c1"]  # word share 3/6, 2/6, 1/6, 0
    request = fake_rerank.requests[-1]
    assert (
        request.path
        == {"cohere": "/cohere/v2/rerank", "voyage": "/voyage/v1/rerank", "jina": "/jina/v1/rerank"}[provider]
    )
    assert request.headers["authorization"] == "Bearer rk-test-secret"
    count_field = "top_k" if provider == "voyage" else "top_n"
    assert request.json == {
        "model": WIRE_FORMATS[provider].model,
        "query": QUERY,
        "documents": TEXTS,
        count_field: len(TEXTS),
    }


def test_scores_stay_on_the_fused_scale_and_fall_down_the_list(fake_rerank: FakeRerankServer) -> None:
    ranked, _ = rerank_hits(cfg(fake_rerank, weight=1.0), QUERY, hits())
    assert [round(h.score, 6) for h in ranked] == [0.9, 0.8, 0.7, 0.6]
    assert [h.row.id for h in ranked] == ["c2", "c0", "c3", "c1"]


def test_blend_weight_between_fused_and_rerank_order() -> None:
    fused = [1.0, 0.9, 0.2]
    rerank_scores = [0.0, 0.1, 1.0]
    assert blend_order(fused, rerank_scores, 0.0) == [0, 1, 2]
    assert blend_order(fused, rerank_scores, 1.0) == [2, 1, 0]
    # 0.5: fused scaled 1, .875, 0 / rerank scaled 0, .1, 1 -> .5, .4875, .5: tie kept in fused order
    assert blend_order(fused, rerank_scores, 0.5) == [0, 2, 1]


def test_only_the_candidates_are_sent_and_the_rest_follow(fake_rerank: FakeRerankServer) -> None:
    many = hits([*TEXTS, "kiwi ferret kiwi ferret ate which did the eat"])
    ranked, notice = rerank_hits(cfg(fake_rerank, candidates=3, weight=1.0), QUERY, many)
    assert notice is None
    assert len(fake_rerank.requests[-1].json["documents"]) == 3
    assert [h.row.id for h in ranked] == ["c2", "c0", "c1", "c3", "c4"]


def test_dated_logs_are_sent_with_their_date(fake_rerank: FakeRerankServer) -> None:
    rerank_hits(cfg(fake_rerank), QUERY, hits(TEXTS[:2], ["memory/2023-05-08.md", "MEMORY.md"]))
    docs = fake_rerank.requests[-1].json["documents"]
    assert docs[0].startswith("2023-05-08 Monday 8 May 2023\n\n") and docs[0].endswith(TEXTS[0])
    assert docs[1] == TEXTS[1]


def test_exact_identifiers_stay_first(fake_rerank: FakeRerankServer) -> None:
    texts = ["deploy fix a828e60 landed", "the ferret ate the kiwi which did eat"]
    ranked, _ = rerank_hits(cfg(fake_rerank, weight=1.0), QUERY + " a828e60", hits(texts), ["a828e60"])
    assert ranked[0].row.text == texts[0]


def test_nothing_is_sent_for_fewer_than_two_hits(fake_rerank: FakeRerankServer) -> None:
    one = hits(TEXTS[:1])
    assert rerank_hits(cfg(fake_rerank), QUERY, one) == (one, None)
    assert fake_rerank.count() == 0


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"data": []}, "no 'results' list"),
        ({"results": [{"index": 0, "relevance_score": 0.5}]}, "expected 2 results, got 1"),
        ({"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]}, "twice"),
        ({"results": [{"index": 0, "relevance_score": 0.5}, {"index": 2, "relevance_score": 0.4}]}, "index 2"),
        ({"results": [{"index": 0, "relevance_score": 0.5}, {"index": True, "relevance_score": 0.4}]}, "True"),
        ({"results": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.4}]}, "numeric"),
        ({"results": [{"index": 0, "relevance_score": float("nan")}, {"index": 1, "relevance_score": 1}]}, "numeric"),
    ],
)
def test_parse_scores_refuses_what_it_cannot_trust(payload: dict, message: str) -> None:
    with pytest.raises(RerankError, match=message):
        parse_scores(WIRE_FORMATS["cohere"], payload, 2)


def test_parse_scores_puts_scores_in_input_order() -> None:
    payload = {"data": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}
    assert parse_scores(WIRE_FORMATS["voyage"], payload, 2) == [0.1, 0.9]


# -- faults: the fused order is kept, with one line saying why ----------------------------------------------


def assert_fused_kept(ranked: list[Hit], notice: str | None) -> None:
    assert [h.row.id for h in ranked] == ["c0", "c1", "c2", "c3"]
    assert [round(h.score, 6) for h in ranked] == [0.9, 0.8, 0.7, 0.6]
    assert notice is not None and notice.startswith("reranker unavailable: ") and notice.endswith("fused order kept")
    assert "\n" not in notice and "rk-test-secret" not in notice


def test_429_is_retried_then_reranks(fake_rerank: FakeRerankServer) -> None:
    fake_rerank.script(Reply(status=429, json={"message": "rate limit exceeded"}))
    ranked, notice = rerank_hits(cfg(fake_rerank, weight=1.0), QUERY, hits())
    assert notice is None and ranked[0].row.id == "c2"
    assert fake_rerank.count() == 2


def test_429_past_the_retries_keeps_fused_order(fake_rerank: FakeRerankServer) -> None:
    fake_rerank.script(*[Reply(status=429, json={"message": "rate limit exceeded"})] * 3)
    ranked, notice = rerank_hits(cfg(fake_rerank, maxRetries=2), QUERY, hits())
    assert_fused_kept(ranked, notice)
    assert "HTTP 429" in notice and "after 3 attempts" in notice and fake_rerank.count() == 3


@pytest.mark.parametrize(
    "reply, expected",
    [
        (Reply(status=500, json={"message": "boom\ninternal"}), "HTTP 500"),
        (Reply(status=400, json={"message": "bad request"}), "HTTP 400"),
        (Reply(text="<html>{not json"), "malformed JSON"),
        (Reply(mutate=lambda p: {**p, "results": p["results"][:-1]}), "expected 4 results, got 3"),
        (Reply(mutate=lambda p: {"results": [{**r, "index": r["index"] + 1} for r in p["results"]]}), "index 4"),
        (Reply(json={"results": "nope"}), "no 'results' list"),
    ],
)
def test_faults_keep_fused_order_with_a_notice(fake_rerank: FakeRerankServer, reply: Reply, expected: str) -> None:
    fake_rerank.script(reply, reply)  # the retry (5xx) gets the same answer
    ranked, notice = rerank_hits(cfg(fake_rerank), QUERY, hits())
    assert_fused_kept(ranked, notice)
    assert expected in notice


def test_timeout_keeps_fused_order(fake_rerank: FakeRerankServer) -> None:
    fake_rerank.script(Reply(delay=1.0), Reply(delay=1.0))
    ranked, notice = rerank_hits(cfg(fake_rerank, timeoutSeconds=0.2), QUERY, hits())
    assert_fused_kept(ranked, notice)
    assert "timed out after 0.2s" in notice


def test_connection_refused_keeps_fused_order() -> None:
    ranked, notice = rerank_hits(cfg(None, baseUrl=refused_url()), QUERY, hits())
    assert_fused_kept(ranked, notice)
    assert "connection failed" in notice


def test_a_rejected_key_is_never_shown(fake_rerank: FakeRerankServer) -> None:
    fake_rerank.required_key = "the-right-key"  # the 401 body echoes the key that was sent
    ranked, notice = rerank_hits(cfg(fake_rerank), QUERY, hits())
    assert_fused_kept(ranked, notice)
    assert "HTTP 401" in notice and "[redacted]" in notice


def test_key_from_the_environment(fake_rerank: FakeRerankServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_rerank.required_key = "env-key-123"
    monkeypatch.setenv("VOYAGE_API_KEY", "env-key-123")
    config = RerankConfig.model_validate({"enabled": True, "provider": "voyage", "baseUrl": fake_rerank.voyage_base})
    # VOYAGE_API_KEY is for api.voyageai.com: another base URL gets it only when apiKeyEnv names it
    assert "HTTP 401" in (rerank_hits(config, QUERY, hits())[1] or "")
    assert rerank_hits(config.model_copy(update={"api_key_env": "VOYAGE_API_KEY"}), QUERY, hits())[1] is None
    monkeypatch.setenv("MY_RERANK_KEY", "env-key-123")
    monkeypatch.delenv("VOYAGE_API_KEY")
    named = config.model_copy(update={"api_key_env": "MY_RERANK_KEY"})
    assert rerank_hits(named, QUERY, hits())[1] is None


# -- config --------------------------------------------------------------------------------------------------


def test_off_by_default() -> None:
    config = MemoryConfig()
    assert config.query.rerank.enabled is False
    original = hits()
    assert rerank_hits(config.query.rerank, QUERY, original) == (original, None)


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"candidates": 1}, "query.rerank.candidates"),
        ({"weight": 1.5}, "query.rerank.weight"),
        ({"timeoutSeconds": 0}, "query.rerank.timeoutSeconds"),
        ({"maxRetries": 9}, "query.rerank.maxRetries"),
        ({"provider": "openai"}, "query.rerank.provider"),
        ({"baseUrl": "api.cohere.com/v2"}, "query.rerank.baseUrl"),
        ({"apiKeyEnv": "MY KEY"}, "query.rerank.apiKeyEnv"),
        ({"model": " "}, "query.rerank.model"),
        ({"topN": 5}, "query.rerank.topN: unknown key"),
    ],
)
def test_bad_values_give_one_line_errors(bad: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"query": {"rerank": bad}}, "mdrecall.toml")
    assert key in str(err.value) and "\n" not in str(err.value)


def test_the_key_is_not_in_the_config_repr() -> None:
    config = parse_config({"query": {"rerank": {"apiKey": "rk-very-secret"}}})
    assert "rk-very-secret" not in repr(config) and "rk-very-secret" not in str(config.query.rerank)


# -- through the index and the CLI ---------------------------------------------------------------------------

NOTES = {
    "memory/2026-01-05.md": "# 2026-01-05\n\n- The ferret project met about billing and the kiwi budget.\n",
    "memory/2026-01-06.md": "# 2026-01-06\n\n- Kiwi: the ferret finally ate the golden kiwi.\n",
    "MEMORY.md": "# Memory\n\nThe ferret kiwi ferret kiwi ferret kiwi plan ferret kiwi.\n",
}


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in NOTES.items():
        write(ws, rel, text)
    return ws


def test_search_reorders_as_the_server_says(tmp_path: Path, make_index, fake_rerank: FakeRerankServer) -> None:
    ws = _workspace(tmp_path)
    plain = make_index(ws, None, {"query": {"minScore": 0.0}})
    plain.sync()
    fused = [r.path for r in plain.search("ferret kiwi").results]
    fake_rerank.scorer = lambda _q, doc: 1.0 if "golden" in doc else 0.0
    config = {"query": {"minScore": 0.0, "rerank": {"enabled": True, "baseUrl": fake_rerank.cohere_base}}}
    config["query"]["rerank"]["weight"] = 1.0
    index = make_index(ws, None, config, db_path=tmp_path / "reranked.sqlite")
    index.sync()
    response = index.search("ferret kiwi")
    assert fused[0] != "memory/2026-01-06.md"  # the fused order puts another note first ...
    assert [r.path for r in response.results][0] == "memory/2026-01-06.md"  # ... the reranker this one
    assert sorted(r.path for r in response.results) == sorted(fused) and response.notice is None
    scores = [r.score for r in response.results]
    assert scores == sorted(scores, reverse=True)


def test_search_with_rerank_disabled_sends_nothing(tmp_path: Path, make_index, fake_rerank: FakeRerankServer) -> None:
    index = make_index(_workspace(tmp_path), None, {"query": {"rerank": {"baseUrl": fake_rerank.cohere_base}}})
    index.sync()
    assert index.search("ferret kiwi").results and fake_rerank.count() == 0


def test_cli_search_with_the_reranker_down_answers_with_a_note(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    toml = f'provider = "none"\n[query.rerank]\nenabled = true\nbaseUrl = "{refused_url()}"\napiKey = "rk-cli-key"\n'
    (ws / "mdrecall.toml").write_text(toml)
    trust_config(ws, tmp_path / "state")
    runner = CliRunner()
    base = ["--workspace", str(ws), "--state-dir", str(tmp_path / "state")]
    assert runner.invoke(app, [*base, "index"]).exit_code == 0
    result = runner.invoke(app, [*base, "search", "ferret kiwi", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 3
    notes = [line for line in result.stderr.splitlines() if "reranker unavailable" in line]
    assert len(notes) == 1 and "fused order kept" in notes[0] and "rk-cli-key" not in result.stderr


def test_status_shows_the_stage_and_deep_probes_it(tmp_path: Path, fake_rerank: FakeRerankServer) -> None:
    ws = _workspace(tmp_path)
    runner = CliRunner()
    base = ["--workspace", str(ws), "--state-dir", str(tmp_path / "state")]
    (ws / "mdrecall.toml").write_text('provider = "none"\n')
    off = json.loads(runner.invoke(app, [*base, "status", "--json"]).stdout)
    assert off["query"]["rerank"] == {"enabled": False}

    def configure(url: str) -> None:
        toml = f'provider = "none"\n[query.rerank]\nenabled = true\nprovider = "voyage"\nbaseUrl = "{url}"\n'
        (ws / "mdrecall.toml").write_text(toml + 'apiKey = "rk-status-key"\n')
        trust_config(ws, tmp_path / "state")

    configure(fake_rerank.voyage_base)
    shown = runner.invoke(app, [*base, "status"])
    assert shown.exit_code == 0, shown.output
    row = next(line for line in shown.stdout.splitlines() if line.startswith("rerank"))
    assert f"voyage rerank-2.5 at {fake_rerank.voyage_base}/rerank" in row and "key set" in row
    deep = json.loads(runner.invoke(app, [*base, "status", "--deep", "--json"]).stdout)
    assert deep["probe"]["rerank"]["ok"] is True and fake_rerank.count() == 1
    configure(refused_url())
    down = runner.invoke(app, [*base, "status", "--deep"])
    assert down.exit_code == 1 and "rerank: " in down.stderr and "connection failed" in down.stderr
    assert "rk-status-key" not in down.output + down.stderr
