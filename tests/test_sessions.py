"""Session transcripts: parsing, line map, redaction, discovery and delta thresholds."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mdrecall.documents.chunking import chunk_markdown, hash_text
from mdrecall.documents.sessions import (
    SessionDeltaTracker,
    is_archived_session_name,
    list_session_files,
    map_lines,
    parse_transcript,
    read_transcript,
)
from mdrecall.text.redact import redact


def msg(role: str, content: object, kind: str = "message") -> str:
    return json.dumps({"type": kind, "message": {"role": role, "content": content}})


# -- parsing -----------------------------------------------------------------------------------------


def test_string_and_block_content() -> None:
    raw = "\n".join(
        [
            msg("user", "Hello world"),
            msg(
                "assistant",
                [{"type": "text", "text": "Hi"}, {"type": "tool_use", "id": "x"}, {"type": "text", "text": "there"}],
            ),
        ]
    )
    doc = parse_transcript(raw)
    assert doc.text == "User: Hello world\nAssistant: Hi there"
    assert doc.messages == 2
    assert doc.line_map == [1, 2]
    assert doc.malformed == 0
    assert doc.hash == hash_text(doc.text)
    assert doc.size == len(raw.encode())
    assert parse_transcript(raw.encode() + b"\xff").size == len(raw.encode()) + 1


def test_only_user_and_assistant_messages_are_kept() -> None:
    raw = "\n".join(
        [
            msg("system", "you are helpful"),
            msg("tool", "result"),
            msg("user", "question"),
            msg("user", "not a message", kind="custom"),
            json.dumps({"type": "session", "id": "abc"}),
            json.dumps({"type": "message", "message": "just a string"}),
            json.dumps({"type": "message", "message": {"role": 3, "content": "x"}}),
            msg("assistant", "answer"),
        ]
    )
    doc = parse_transcript(raw)
    assert doc.text == "User: question\nAssistant: answer"
    assert doc.line_map == [3, 8]
    assert doc.malformed == 0


def test_whitespace_is_normalised_and_empty_messages_dropped() -> None:
    raw = "\n".join(
        [
            msg("user", "  several\n\nlines\tand   spaces  "),
            msg("assistant", "   \n\t "),
            msg("assistant", [{"type": "image", "data": "..."}]),
            msg("assistant", []),
            msg("user", None),
            msg("assistant", [{"type": "text", "text": " a\nb "}, {"type": "text", "text": 5}]),
        ]
    )
    doc = parse_transcript(raw)
    assert doc.text == "User: several lines and spaces\nAssistant: a b"
    assert doc.line_map == [1, 6]
    assert doc.messages == 2


def test_malformed_lines_are_skipped_and_counted() -> None:
    lines = [
        msg("user", "first"),
        "{not json",
        "[1, 2, 3]",
        '"a string"',
        "",
        "   ",
        "[" * 100_000,  # deep nesting must not crash the parser
        msg("assistant", "second"),
        '{"type": "message", "message": {"role": "user", "content": "trunc',  # partially written last line
    ]
    doc = parse_transcript("\n".join(lines))
    assert doc.text == "User: first\nAssistant: second"
    assert doc.line_map == [1, 8]
    assert doc.malformed == 5


def test_bytes_crlf_bom_and_invalid_utf8() -> None:
    raw = (
        b"\xef\xbb\xbf"
        + msg("user", "caf\u00e9").encode()
        + b"\r\n"
        + b'{"type":"message","message":{"role":"assistant","content":"ok \xff"}}\r\n'
    )
    doc = parse_transcript(raw)
    assert doc.text == "User: caf\u00e9\nAssistant: ok \ufffd"
    assert doc.malformed == 0


def test_unicode_line_separator_inside_json_does_not_shift_lines() -> None:
    raw = '{"type":"message","message":{"role":"user","content":"a\u2028b"}}\n' + msg("assistant", "c")
    doc = parse_transcript(raw)
    assert doc.line_map == [1, 2]
    assert doc.text == "User: a b\nAssistant: c"


def test_line_map_through_chunking(tmp_path: Path) -> None:
    lines = ['{"type":"session"}']
    for i in range(40):
        lines.append(msg("user" if i % 2 == 0 else "assistant", f"message number {i} " + "word " * 30))
        if i % 7 == 0:
            lines.append("garbage")
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    doc = read_transcript(path)
    jsonl = path.read_text().split("\n")
    chunks = chunk_markdown(doc.text, 100, 20)
    assert len(chunks) > 3
    text_lines = doc.text.split("\n")
    for chunk in chunks:
        start, end = map_lines(doc, chunk.start_line, chunk.end_line)
        assert start <= end
        first = text_lines[chunk.start_line - 1]
        number = first.split("message number ")[1].split()[0]
        assert f"message number {number} " in jsonl[start - 1]
        last_number = text_lines[chunk.end_line - 1].split("message number ")[1].split()[0]
        assert f"message number {last_number} " in jsonl[end - 1]


def test_map_lines_clamps_and_rejects_empty() -> None:
    doc = parse_transcript("\n".join(["x", msg("user", "a"), "y", msg("assistant", "b")]))
    assert map_lines(doc, 1, 2) == (2, 4)
    assert map_lines(doc, 0, 99) == (2, 4)
    assert map_lines(doc, 2, 1) == (4, 4)
    with pytest.raises(ValueError):
        map_lines(parse_transcript(""), 1, 1)


def test_parsing_redacts_by_default() -> None:
    secret = "sk-" + "a1B2" * 10
    raw = msg("user", f"my key is {secret}")
    assert secret not in parse_transcript(raw).text
    assert "[REDACTED:openai-key]" in parse_transcript(raw).text
    assert secret in parse_transcript(raw, redact_secrets=False).text


# -- redaction ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-abcdefghijklmnopqrstuvwxyz123 end", "key [REDACTED:openai-key] end"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstu", "OPENAI_API_KEY=[REDACTED:openai-key]"),
        ('ANTHROPIC_API_KEY="sk-ant-api03-abcdefghijklmnopqrstuvwxyz"', 'ANTHROPIC_API_KEY="[REDACTED:anthropic-key]"'),
        ("AIzaSyA1234567890abcdefghijklmnopqrstu", "[REDACTED:google-api-key]"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED:github-token]"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijkl", "[REDACTED:github-token]"),
        ("xoxb-1234567890-0987654321-abcdefghijkl", "[REDACTED:slack-token]"),
        ("id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED:aws-key]."),
        ("https://x.io/cb?api_key=abc123&x=1", "https://x.io/cb?api_key=[REDACTED:api-key]&x=1"),
        ("token=abcdef", "token=[REDACTED:token]"),
        ("csrf_token='abc def'", "csrf_token='[REDACTED:token]'"),
        (
            '{"password": "hunter2 x", "token": "zzz"}',
            '{"password": "[REDACTED:password]", "token": "[REDACTED:token]"}',
        ),
        ("password: correcthorse", "password: [REDACTED:password]"),
        ("X-Api-Key: abcdef123", "X-Api-Key: [REDACTED:api-key]"),
        ("--api-key abcdef --token=xyz", "--api-key [REDACTED:api-key] --token=[REDACTED:token]"),
        ('curl -H "Authorization: Bearer abc.def-ghi" u', 'curl -H "Authorization: Bearer [REDACTED:auth-header]" u'),
        ("use Bearer eyJhbGciOiJIUzI1NiJ9abc now", "use Bearer [REDACTED:auth-header] now"),
        (
            "postgres://admin:s3cr@t!@db.example.com:5432/app",
            "postgres://admin:[REDACTED:url-password]@db.example.com:5432/app",
        ),
        ("redis://:hunter22@localhost", "redis://:[REDACTED:url-password]@localhost"),
        (
            "-----BEGIN RSA PRIVATE KEY----- MIIEabc def= -----END RSA PRIVATE KEY----- after",
            "[REDACTED:private-key] after",
        ),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0", "jwt [REDACTED:jwt]"),
    ],
)
def test_redaction_examples(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096 and tokens: 400",
        "a bearer token is a kind of credential",
        "the token: is the unit; my secret: nothing",
        "see https://user@host/x and http://host:8080/path",
        "task-abcdefghijklmnopqrstuvwxyz is a branch name",
        "KEY_FILE=/etc/key.pem",
    ],
)
def test_redaction_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text


_WORDS = st.sampled_from(
    ["the", "deploy", "key", "is", "note:", "(see", "below)", "-", ",", "ok.", "\u00e9t\u00e9", '"']
)
_CONTEXT = st.lists(_WORDS, max_size=8).map(" ".join)
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _s(alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=lo, max_size=hi)


# Each strategy gives (text containing the secret, the secret substring that must not survive).
_SECRETS: list[st.SearchStrategy[tuple[str, str]]] = [
    _s(_ALNUM + "_-", 20, 60).map(lambda b: ("sk-" + b, "sk-" + b)),
    _s(_ALNUM + "_-", 20, 90).map(lambda b: ("sk-ant-api03-" + b, b)),
    _s(_ALNUM + "_-", 35, 35).map(lambda b: ("AIza" + b, b)),
    _s(_ALNUM, 36, 36).map(lambda b: ("ghp_" + b, b)),
    _s(_ALNUM + "_", 22, 82).map(lambda b: ("github_pat_" + b, b)),
    st.tuples(st.sampled_from("bap"), _s("0123456789", 10, 13), _s(_ALNUM, 24, 24)).map(
        lambda t: (f"xox{t[0]}-{t[1]}-{t[2]}", f"{t[1]}-{t[2]}")
    ),
    _s(_UPPER_DIGITS, 16, 16).map(lambda b: ("AKIA" + b, b)),
    st.tuples(
        st.sampled_from(["api_key", "apiKey", "API-KEY", "token", "access_token", "password"]),
        _s(_ALNUM + "-._~+/!$%*", 8, 40),
    )
    .filter(lambda t: t[1] not in t[0])
    .map(lambda t: (f"{t[0]}={t[1]}", t[1])),
    _s(_ALNUM + "-._~+/", 16, 60).map(lambda b: ("Authorization: Bearer " + b, b)),
    _s(_ALNUM + "-._~+/", 16, 60).map(lambda b: ("Bearer " + b, b)),
    st.tuples(
        st.sampled_from(["https", "postgres", "redis", "mongodb+srv"]),
        _s("abcdefghij", 1, 10),
        _s(_ALNUM + "!$%^*()_+=.~@-", 8, 30),
    )
    .filter(lambda t: t[2] not in f"{t[0]}://{t[1]}:@db.example.com/x")
    .map(lambda t: (f"{t[0]}://{t[1]}:{t[2]}@db.example.com/x", t[2])),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.tuples(_CONTEXT, st.one_of(_SECRETS)), min_size=1, max_size=4),
    tail=_CONTEXT,
)
def test_redaction_property_secrets_never_survive(parts: list[tuple[str, tuple[str, str]]], tail: str) -> None:
    pieces: list[str] = []
    secrets: list[str] = []
    for context, (snippet, secret) in parts:
        pieces += [context, snippet]
        secrets.append(secret)
    text = " ".join(pieces + [tail])
    for secret in secrets:
        assume(text.count(secret) == 1)  # a secret that is also plain context text would "survive" trivially
    out = redact(text)
    for secret in secrets:
        assert secret not in out
    assert "[REDACTED:" in out
    assert redact(out) == out


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redaction_is_total_and_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


# -- discovery ---------------------------------------------------------------------------------------


def test_list_session_files(tmp_path: Path) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "b.jsonl").write_text(msg("user", "hi") + "\n")
    (sessions / "a.jsonl.reset.2026-01-31T10-00-00.000Z").write_text("x")
    (sessions / "sessions.json").write_text("{}")
    (sessions / "c.jsonl.lock").write_text("")
    (sessions / "sub.jsonl").mkdir()
    (sessions / "link.jsonl").symlink_to(sessions / "b.jsonl")
    files = list_session_files(sessions)
    assert [f.path for f in files] == ["sessions/a.jsonl.reset.2026-01-31T10-00-00.000Z", "sessions/b.jsonl"]
    assert [f.archived for f in files] == [True, False]
    live = files[1]
    assert live.abs_path == sessions / "b.jsonl"
    assert live.size == (sessions / "b.jsonl").stat().st_size
    assert live.mtime_ms == (sessions / "b.jsonl").stat().st_mtime_ns // 1_000_000
    assert list_session_files(tmp_path / "missing") == []
    assert is_archived_session_name("x.jsonl.reset.1")
    assert not is_archived_session_name("x.jsonl")


# -- delta tracking ----------------------------------------------------------------------------------


class FakeFile:
    """An in-memory growing transcript with a tail reader that records what it was asked for."""

    def __init__(self) -> None:
        self.data = b""
        self.reads: list[tuple[int, int]] = []

    def append_messages(self, count: int, size: int = 20) -> None:
        for _ in range(count):
            self.data += b"x" * (size - 1) + b"\n"

    def read(self, start: int, end: int) -> bytes:
        self.reads.append((start, end))
        return self.data[start:end]


def test_due_by_messages() -> None:
    tracker = SessionDeltaTracker(delta_bytes=1_000_000, delta_messages=5)
    f = FakeFile()
    f.append_messages(4)
    assert tracker.observe("s.jsonl", len(f.data), f.read) is False
    assert tracker.state("s.jsonl").pending_messages == 4
    f.append_messages(1)
    assert tracker.observe("s.jsonl", len(f.data), f.read) is True
    assert tracker.due("s.jsonl")
    assert f.reads[-1] == (80, 100)  # only the appended range is read
    tracker.mark_synced("s.jsonl", len(f.data))
    assert not tracker.due("s.jsonl")
    f.append_messages(4)
    assert tracker.observe("s.jsonl", len(f.data), f.read) is False


def test_due_by_bytes() -> None:
    tracker = SessionDeltaTracker(delta_bytes=100, delta_messages=1000)
    f = FakeFile()
    f.data = b"y" * 60  # a long message without its newline yet
    assert tracker.observe("s.jsonl", len(f.data), f.read) is False
    f.data += b"y" * 40
    assert tracker.observe("s.jsonl", len(f.data), f.read) is True
    assert tracker.state("s.jsonl").pending_bytes == 100
    assert tracker.due_paths() == [os.path.abspath("s.jsonl")]
    assert tracker.due(Path("s.jsonl")) and tracker.due(os.path.abspath("./x/../s.jsonl"))


def test_unchanged_size_is_not_a_change() -> None:
    tracker = SessionDeltaTracker(delta_bytes=10, delta_messages=1)
    tracker.mark_synced("s.jsonl", 50)
    assert tracker.observe("s.jsonl", 50, lambda a, b: b"") is False


def test_zero_threshold_makes_every_change_due() -> None:
    for tracker in (SessionDeltaTracker(0, 50), SessionDeltaTracker(100_000, 0)):
        tracker.mark_synced("s.jsonl", 10)
        assert not tracker.due("s.jsonl")
        assert tracker.observe("s.jsonl", 11, lambda a, b: b"x") is True


def test_truncation_resets_and_is_due() -> None:
    tracker = SessionDeltaTracker(delta_bytes=10_000, delta_messages=100)
    f = FakeFile()
    f.append_messages(10)
    tracker.observe("s.jsonl", len(f.data), f.read)
    tracker.mark_synced("s.jsonl", len(f.data))
    f.data = b""
    f.append_messages(2)
    assert tracker.observe("s.jsonl", len(f.data), f.read) is True
    state = tracker.state("s.jsonl")
    assert state.last_size == len(f.data) and state.pending_messages == 0 and state.forced
    tracker.mark_synced("s.jsonl", len(f.data))
    assert not tracker.due("s.jsonl")
    f.append_messages(3)
    assert tracker.observe("s.jsonl", len(f.data), f.read) is False
    assert tracker.state("s.jsonl").pending_messages == 3


def test_archived_files_are_due_once_without_thresholds() -> None:
    tracker = SessionDeltaTracker(delta_bytes=1_000_000, delta_messages=1_000)
    name = "a.jsonl.reset.2026-01-31T10-00-00Z"
    assert tracker.observe(name, 10, lambda a, b: pytest.fail("archived files are not read")) is True
    tracker.mark_synced(name, 10)
    assert tracker.observe(name, 10) is False
    assert tracker.observe(name, 12) is True
    tracker.mark_synced(name)
    assert not tracker.due(name)
    assert tracker.observe("other.jsonl", 5, lambda a, b: b"\n" * (b - a), archived=True) is True


def test_observe_reads_real_files_and_forgets_vanished_ones(tmp_path: Path) -> None:
    tracker = SessionDeltaTracker(delta_bytes=1_000_000, delta_messages=3)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(msg("user", str(i)) for i in range(2)) + "\n")
    assert tracker.observe(path) is False
    with path.open("a") as handle:
        handle.write(msg("assistant", "third") + "\n")
    assert tracker.observe(path, path.stat().st_size) is True
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    assert tracker.observe(tmp_path / "x.jsonl", copy.stat().st_size, copy) is True
    path.unlink()
    assert tracker.observe(path) is False
    assert tracker.state(path) is None


def test_unseen_file_counts_whole_content_and_skips_reading_when_bytes_decide() -> None:
    tracker = SessionDeltaTracker(delta_bytes=50, delta_messages=1_000)
    f = FakeFile()
    f.append_messages(5)  # 100 bytes: due by bytes, no need to count lines
    assert tracker.observe("s.jsonl", len(f.data), f.read) is True
    assert f.reads == []


def test_large_first_delta_is_read_in_pieces() -> None:
    tracker = SessionDeltaTracker(delta_bytes=10**9, delta_messages=10**9)
    size = (1 << 20) * 2 + 123
    reads: list[tuple[int, int]] = []

    def reader(start: int, end: int) -> bytes:
        reads.append((start, end))
        return b"\n" * (end - start)

    tracker.observe("s.jsonl", size, reader)
    assert tracker.state("s.jsonl").pending_messages == size
    assert len(reads) == 3 and max(e - s for s, e in reads) <= 1 << 20


def test_tracker_is_thread_safe() -> None:
    tracker = SessionDeltaTracker(delta_bytes=10**9, delta_messages=10**9)
    names = [f"f{i}.jsonl" for i in range(8)]

    def worker(name: str) -> None:
        for step in range(1, 501):
            tracker.observe(name, step * 10, lambda a, b: b"\n" * (b - a))
            tracker.due_paths()

    threads = [threading.Thread(target=worker, args=(name,)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in names:
        state = tracker.state(name)
        assert state.pending_bytes == state.pending_messages == state.last_size == 5_000


def test_invalid_thresholds() -> None:
    with pytest.raises(ValueError):
        SessionDeltaTracker(-1, 5)
