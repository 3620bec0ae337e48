"""Forget is forgetting: after `facts forget` / memory_forget the text is in no file mdrecall keeps (facts.md,
the LanceDB store, the SQLite index after its next sync); an unreadable line of facts.md is reported and
kept; agents sharing a workspace never lose each other's facts, and one agent's forget reaches the other's
store. Real LanceDB and real SQLite files, searched byte for byte as `grep -r` would."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import HashingProvider
from facts_fixtures import make_settings
from mdrecall.agents.fact_tools import FactTools
from mdrecall.backends.builtin import MemoryIndex
from mdrecall.cli.app import app
from mdrecall.config.settings import parse_config, resolve_settings
from mdrecall.embeddings.factory import ProviderResult
from mdrecall.facts.store import FactStore, store_dir

pytest.importorskip("lancedb")

SECRET_WORD = "zorblaxquintet"


def files_holding(root: Path, needle: str) -> list[str]:
    """Every file under root whose bytes hold `needle` (what `grep -rl` lists), -wal/-shm files included."""
    data = needle.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and data in p.read_bytes())


def _provider() -> ProviderResult:
    return ProviderResult(HashingProvider(), requested="test")  # type: ignore[arg-type]


def _fill(store: FactStore, n: int = 5) -> None:
    for i in range(n):
        assert store.store(f"filler fact {i}: the tomatoes in bed {i} need water on day {i}").stored


def test_memory_forget_leaves_no_byte_in_the_fact_store_or_the_index(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nNothing secret here.\n", encoding="utf-8")
    # uncompressed chunk text: a plain grep must be able to find what the index holds
    settings = resolve_settings(workspace=ws, state_dir=state, config=parse_config({"store": {"compressText": False}}))
    provider = _provider()
    store = FactStore(settings, provider)
    _fill(store)
    stored = store.store(f"The locker code word is {SECRET_WORD}, keep it safe.")
    assert stored.stored and stored.fact is not None
    store.rebuild()  # an older table version too (create_table mode=overwrite keeps the old files)
    with MemoryIndex(settings, provider) as index:
        index.sync()
        holders = files_holding(tmp_path, SECRET_WORD)  # the check can see the text where it is kept
        assert "ws/memory/facts.md" in holders
        assert any(f.startswith("state/facts/") for f in holders) and any(
            f.startswith("state/memory/") for f in holders
        )

        result = FactTools(store).call("memory_forget", {"id": stored.fact.id})
        assert result["deleted"][0]["id"] == stored.fact.id, result
        assert files_holding(ws, SECRET_WORD) == []
        assert files_holding(store_dir(settings), SECRET_WORD) == []

        report = index.sync()
        assert report.files_indexed == 1
        assert files_holding(tmp_path, SECRET_WORD) == []
        assert index.search("tomatoes water").results  # the rest is still there
        assert not index.search(SECRET_WORD).results
    assert len(store.list()) == 5 and all(SECRET_WORD not in f.text for f in store.list())
    store.close()


def test_forget_in_the_cli_with_an_unreadable_line_reports_it_and_keeps_it(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "mdrecall.toml").write_text('provider = "none"\n', encoding="utf-8")

    def cli(*args: str):  # type: ignore[no-untyped-def]
        result = CliRunner().invoke(app, ["--workspace", str(ws), "--state-dir", str(state), *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    assert cli("facts", "store", "Prefers green tea in the morning").exit_code == 0
    assert cli("facts", "store", "Dana's birthday is on March 3").exit_code == 0
    facts_md = ws / "memory" / "facts.md"
    bad_byte = b"- [fbadbyte0001] (fact, 2026-11-20, importance 0.70) caf\xe9 au lait every day\n"
    broken = b"- [fbroken00002] (fact, 2026-11-20\n"
    facts_md.write_bytes(facts_md.read_bytes() + b"\n" + bad_byte + broken)
    lines = facts_md.read_text("utf-8", "replace").splitlines()
    tea_id = next(line.split("]")[0][3:] for line in lines if "tea" in line)

    listed = cli("facts", "list")
    assert listed.exit_code == 0
    warnings = listed.stderr.strip().splitlines()
    assert len(warnings) == 2, warnings  # one line each
    assert "line" in warnings[0] and "not valid UTF-8" in warnings[0] and "kept" in warnings[0]
    assert "does not read as a fact" in warnings[1]

    gone = cli("facts", "forget", tea_id)
    assert gone.exit_code == 0 and f"deleted {tea_id}" in gone.stdout, gone.stderr
    raw = facts_md.read_bytes()
    assert b"green tea" not in raw
    assert bad_byte in raw and broken in raw and b"birthday" in raw  # byte for byte

    other = cli("facts", "forget", "fbadbyte0001")
    assert other.exit_code == 0 and "deleted fbadbyte0001" in other.stdout, other.stderr
    assert bad_byte not in facts_md.read_bytes() and broken in facts_md.read_bytes()


def _agent_loop(ws: str, state: str, agent: str, count: int, forget_own: bool) -> None:
    """One agent process: store `count` facts; when `forget_own`, forget each right after storing it."""
    settings = resolve_settings(
        workspace=ws, agent_id=agent, state_dir=state, config=parse_config({"provider": "none"})
    )
    with FactStore(settings, ProviderResult(None, requested="none")) as store:
        for i in range(count):
            result = store.store(f"agent {agent} remembers item number {i} of the list {agent}{i}x")
            assert result.stored, result.message
            if forget_own:
                assert store.forget(result.fact.id).deleted


def test_agents_sharing_a_workspace_never_lose_each_others_facts(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    context = multiprocessing.get_context("spawn")  # never fork a process whose LanceDB runtime may be running
    keeper = context.Process(target=_agent_loop, args=(str(ws), str(state), "keeper", 25, False))
    forgetter = context.Process(target=_agent_loop, args=(str(ws), str(state), "forgetter", 25, True))
    keeper.start()
    forgetter.start()
    keeper.join(120)
    forgetter.join(120)
    assert keeper.exitcode == 0 and forgetter.exitcode == 0
    text = (ws / "memory" / "facts.md").read_text(encoding="utf-8")
    kept = [i for i in range(25) if f"keeper{i}x" in text]
    assert kept == list(range(25)), f"lost facts of the other agent: {sorted(set(range(25)) - set(kept))}"
    assert "forgetter" not in text


def test_one_lock_per_facts_file_not_per_agent(tmp_path: Path) -> None:
    """While one agent changes facts.md, another agent's forget waits for it (it would otherwise rewrite the
    file from a copy read before the first agent's change, and lose that change)."""
    ws, state = tmp_path / "ws", tmp_path / "state"
    keeper = FactStore(make_settings(ws, state), _provider())
    other = FactStore(resolve_settings(workspace=ws, agent_id="other", state_dir=state), _provider())
    own = other.store("The other agent's note about the blue bicycle.")
    done = threading.Event()
    forgetting = threading.Thread(target=lambda: (other.forget(own.fact.id), done.set()))
    with keeper._locked():  # keeper is between reading facts.md and writing it back
        forgetting.start()
        assert not done.wait(1.0), "the other agent rewrote facts.md while this one held it"
    forgetting.join(30)
    assert done.is_set() and "blue bicycle" not in (ws / "memory" / "facts.md").read_text(encoding="utf-8")
    keeper.close()
    other.close()


def test_one_agents_forget_reaches_the_other_agents_store(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    alice = FactStore(make_settings(ws, state), _provider())
    bob_settings = resolve_settings(workspace=ws, agent_id="bob", state_dir=state)
    bob = FactStore(bob_settings, _provider())
    _fill(alice, 3)
    secret = alice.store(f"The alarm code word is {SECRET_WORD}.")
    assert any(SECRET_WORD in f.text for f in bob.list())  # bob's own store, built from the shared facts.md
    assert files_holding(store_dir(bob_settings), SECRET_WORD)

    assert alice.forget(secret.fact.id).deleted
    assert all(SECRET_WORD not in f.text for f in bob.list())  # bob's next load rebuilds from facts.md
    assert bob.rebuilt_reason and "changed" in bob.rebuilt_reason
    assert files_holding(state, SECRET_WORD) == []  # neither store keeps an old version holding it
    assert len(bob.list()) == 3
    alice.close()
    bob.close()
