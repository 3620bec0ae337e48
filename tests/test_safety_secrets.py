"""No secret reaches the index: a corpus of secret forms, a property test, and the bytes of the index file.

Memory files and session transcripts are redacted before chunking, so chunks, FTS, vectors and the
embedding cache never see a secret; snippets and `get` show `[REDACTED:<kind>]` (line numbers unchanged).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mdrecall.cli.app import app
from mdrecall.text.redact import name_kind, redact

from .conftest import HashingProvider, write

ZW = "\u200b"
# (a line as someone would write it, the secret in it). Every secret is unique, so finding its bytes in
# the index can only mean it leaked.
CORPUS: list[tuple[str, str]] = [
    # known key shapes
    ("aws access key AKIAQX7CORPUS01ABCDE in the runbook", "AKIAQX7CORPUS01ABCDE"),
    ("temp creds ASIAZZ9CORPUS02WXYZQ today", "ASIAZZ9CORPUS02WXYZQ"),
    ("github ghp_Corpus03abcdefghijklmnopqrstuvwxyz0 used", "ghp_Corpus03abcdefghijklmnopqrstuvwxyz0"),
    (
        "fine-grained github_pat_11CORPUS04_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11CORPUS04_abcdefghijklmnopqrstuvwxyz",
    ),
    ("gitlab glpat-Corpus05abcdefghijklmn for CI", "glpat-Corpus05abcdefghijklmn"),
    ("slack bot xoxb-1234567890-Corpus06abcdefgh", "xoxb-1234567890-Corpus06abcdefgh"),
    ("openai sk-proj-Corpus07abcdefghijklmnopqrstuv", "sk-proj-Corpus07abcdefghijklmnopqrstuv"),
    ("anthropic sk-ant-api03-Corpus08abcdefghijklmnop", "sk-ant-api03-Corpus08abcdefghijklmnop"),
    ("stripe sk_live_Corpus09abcdefghijklmnop", "sk_live_Corpus09abcdefghijklmnop"),
    ("maps AIzaSyCorpus10abcdefghijklmnopqrstuvwx", "AIzaSyCorpus10abcdefghijklmnopqrstuvwx"),
    ("hf hf_Corpus11abcdefghijklmnopqrstuvwxyz01", "hf_Corpus11abcdefghijklmnopqrstuvwxyz01"),
    ("npm npm_Corpus12abcdefghijklmnopqrstuvwxyz0123", "npm_Corpus12abcdefghijklmnopqrstuvwxyz0123"),
    ("sendgrid SG.Corpus13abcdefghij.klmnopqrstuvwxyz0123", "SG.Corpus13abcdefghij.klmnopqrstuvwxyz0123"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjb3JwdXMxNCJ9.Corpus14signatureabcdef",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjb3JwdXMxNCJ9.Corpus14signatureabcdef",
    ),
    ("telegram 123456789:AACorpus15abcdefghijklmnopqrstuvwxyz0", "123456789:AACorpus15abcdefghijklmnopqrstuvwxyz0"),
    ("glued camelCase myKeyIsAKIACORPUS16ABCDEFGH here", "AKIACORPUS16ABCDEFGH"),
    # split by invisible characters
    (f"split AKIA{ZW}CORPUS17{ZW}ABCDEFGH key", f"AKIA{ZW}CORPUS17{ZW}ABCDEFGH"),
    (f"split ghp_Corpus18{ZW}abcdefghijklmnopqrstuvwxyz", f"ghp_Corpus18{ZW}abcdefghijklmnopqrstuvwxyz"),
    ("soft hyphen sk-proj-Corpus19\u00adabcdefghijklmnopq", "sk-proj-Corpus19\u00adabcdefghijklmnopq"),
    ("word joiner xoxp-99999\u2060Corpus20abcdefghij", "xoxp-99999\u2060Corpus20abcdefghij"),
    # key names in every casing, key=value / key: value / "key": "value" / key value
    ("adminPassword=Corpus21-pw!", "Corpus21-pw!"),
    ("dbPassword: Corpus22pw", "Corpus22pw"),
    ("DB_PASS=Corpus23pass", "Corpus23pass"),
    ("export PGPASSWORD=Corpus24pg", "Corpus24pg"),
    ("openaiApiKey: Corpus25-openai-key", "Corpus25-openai-key"),
    ("githubToken=Corpus26gh", "Corpus26gh"),
    ("client_secret = 'Corpus27 with space'", "Corpus27 with space"),
    ('{"password": "Corpus28json", "user": "ada"}', "Corpus28json"),
    ("api-key: Corpus29kebab", "Corpus29kebab"),
    ("AWS_SECRET_ACCESS_KEY=Corpus30/wJalrXUtnFEMI/K7MDENG+bPxRfiCY", "Corpus30/wJalrXUtnFEMI/K7MDENG+bPxRfiCY"),
    ("SLACK_SIGNING_SECRET: Corpus31sign", "Corpus31sign"),
    ("password Corpus32bare", "Corpus32bare"),
    ("passphrase := Corpus33go", "Corpus33go"),
    ("redis_auth_token => 'Corpus34ruby'", "Corpus34ruby"),
    ("Server=db;User Id=sa;Password=Corpus35ado;", "Corpus35ado"),
    ("MYSQL_PWD=Corpus36mysql", "Corpus36mysql"),
    ("refresh_token: Corpus37refresh", "Corpus37refresh"),
    ("AccountKey=Corpus38azure==", "Corpus38azure=="),
    # CLI flags
    ("mysql -u root -pCorpus39mysql shop", "Corpus39mysql"),
    ("tool --password Corpus40flag --verbose", "Corpus40flag"),
    ("tool --api-key=Corpus41flag", "Corpus41flag"),
    ("sshpass -p 'Corpus42ssh' ssh deploy@host", "Corpus42ssh"),
    ("curl -u alice:Corpus43curl https://api.example.com", "Corpus43curl"),
    ("redis-cli -a Corpus44redis ping", "Corpus44redis"),
    ("gh auth login --with-token Corpus45gh", "Corpus45gh"),
    # prose
    ("my password is Corpus46prose", "Corpus46prose"),
    ("the api key: Corpus47prose", "Corpus47prose"),
    ("The wifi password for the office is Corpus48wifi", "Corpus48wifi"),
    ("changed the root password to Corpus49root yesterday", "Corpus49root"),
    ("the token is Corpus50tok9", "Corpus50tok9"),
    # HTTP headers and cookies
    ("Authorization: Bearer Corpus51bearer.abcdefghijkl", "Corpus51bearer.abcdefghijkl"),
    ("Authorization: Basic Q29ycHVzNTJiYXNpYzpwYXNz", "Q29ycHVzNTJiYXNpYzpwYXNz"),
    ('curl -H "X-Api-Key: Corpus53hdr" https://x', "Corpus53hdr"),
    ("Cookie: sessionid=Corpus54cookie; theme=dark", "Corpus54cookie"),
    ("Set-Cookie: sid=Corpus55setcookie; Path=/; HttpOnly", "Corpus55setcookie"),
    ("Proxy-Authorization: Basic Q29ycHVzNTZwcm94eQ==", "Q29ycHVzNTZwcm94eQ=="),
    # URLs with credentials
    ("postgres://app:Corpus57url@db.internal:5432/app", "Corpus57url"),
    ("https://deploy:Corpus58p%40ss@git.example.com/repo.git", "Corpus58p%40ss"),
    ("redis://:Corpus59redis@cache:6379/0", "Corpus59redis"),
    ("https://api.example.com/cb?access_token=Corpus60qs&page=2", "Corpus60qs"),
    # PEM blocks
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEACorpus61line1\nCorpus61line2abcdef==\n"
        "-----END RSA PRIVATE KEY-----",
        "Corpus61line1",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktCorpus62\n(truncated)",
        "b3BlbnNzaC1rZXktCorpus62",
    ),
    (
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQCorpus63\\n-----END PRIVATE KEY-----\\n"',
        "MIIEvQCorpus63",
    ),
]

ORDINARY = [
    "max_tokens=4096 and tokens: 400",
    "a bearer token is a kind of credential",
    "the token: is the unit; my secret: nothing",
    "see https://user@host/x and http://host:8080/path",
    "task-abcdefghijklmnopqrstuvwxyz is a branch name",
    "KEY_FILE=/etc/key.pem",
    "password reset flow works",
    "the password is stored in the vault",
    "primary_key=id and sort_key=date",
    "the tokenizer=bert setting",
    "bypass=true, compass: north, passport: renewed",
    "Cookie: a chocolate chip recipe",
    "mkdir -p build && ssh -p 22 host",
]


def test_corpus_has_at_least_fifty_forms() -> None:
    assert len(CORPUS) >= 50 and len({s for _, s in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("line", "secret"), CORPUS, ids=range(len(CORPUS)))
def test_every_corpus_form_is_redacted_with_a_marker(line: str, secret: str) -> None:
    out = redact(line)
    visible = secret.replace(ZW, "").replace("\u00ad", "").replace("\u2060", "")
    assert secret not in out and visible not in out, out
    assert "[REDACTED:" in out
    assert out.count("\n") == line.count("\n"), "line numbers must keep pointing into the file"
    assert redact(out) == out


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


# -- property test -----------------------------------------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"]
_PLAIN = st.sampled_from(["zebra", "meeting", "notes", "deploy", "friday", "garden", "lisbon", "okapi"])


def _s(alphabet: str, lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=lo, max_size=hi)


def _split_by_invisibles(draw: st.DrawFn, token: str) -> str:
    """Insert invisible characters at a few places inside a key (never at its ends)."""
    cuts = sorted(draw(st.sets(st.integers(1, len(token) - 1), max_size=3)))
    out, prev = [], 0
    for cut in cuts:
        out += [token[prev:cut], draw(st.sampled_from(_INVISIBLES))]
        prev = cut
    return "".join(out) + token[prev:]


@st.composite
def vendor_secret(draw: st.DrawFn) -> tuple[str, str]:
    token = draw(
        st.one_of(
            _s(_UPPER_DIGITS, 16, 16).map(lambda b: "AKIA" + b),
            _s(_ALNUM, 36, 36).map(lambda b: "ghp_" + b),
            _s(_ALNUM + "_-", 20, 50).map(lambda b: "sk-proj-" + b),
            _s(_ALNUM + "_-", 20, 50).map(lambda b: "sk-ant-api03-" + b),
            _s(_ALNUM, 20, 40).map(lambda b: "glpat-" + b),
            _s(_ALNUM + "_-", 35, 35).map(lambda b: "AIza" + b),
        )
    )
    written = _split_by_invisibles(draw, token) if draw(st.booleans()) else token
    return written, token


_NAME_WORDS = [
    ["password"],
    ["db", "password"],
    ["admin", "password"],
    ["db", "pass"],
    ["api", "key"],
    ["openai", "api", "key"],
    ["github", "token"],
    ["access", "token"],
    ["client", "secret"],
    ["secret", "access", "key"],
    ["auth", "token"],
    ["passphrase"],
]


def _spell(words: list[str], style: str) -> str:
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "env":
        return "_".join(words).upper()
    if style == "kebab":
        return "-".join(words)
    return "_".join(words)


@st.composite
def named_secret(draw: st.DrawFn) -> tuple[str, str]:
    name = _spell(
        draw(st.sampled_from(_NAME_WORDS)), draw(st.sampled_from(["camel", "pascal", "env", "kebab", "snake"]))
    )
    value = draw(_s(_ALNUM + "-._~+/!$%*@#^", 8, 30).filter(lambda v: any(c.isdigit() for c in v)))
    form = draw(st.sampled_from(["{n}={v}", "{n}: {v}", "{n} = '{v}'", '"{n}": "{v}"', "--{n} {v}", "{n} {v}"]))
    return form.format(n=name, v=value), value


@st.composite
def other_secret(draw: st.DrawFn) -> tuple[str, str]:
    value = draw(_s(_ALNUM, 10, 30).filter(lambda v: any(c.isdigit() for c in v)))
    form = draw(
        st.sampled_from(
            [
                "my password is {v}",
                "the api key: {v}",
                "Authorization: Bearer {v}",
                "Cookie: sid={v}; lang=en",
                "https://bob:{v}@example.com/x",
                "mysql -uroot -p{v} db",
                "-----BEGIN EC PRIVATE KEY-----\n{v}\n-----END EC PRIVATE KEY-----",
            ]
        )
    )
    return form.format(v=value), value


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.tuples(st.lists(_PLAIN, min_size=1, max_size=3), st.one_of(vendor_secret(), named_secret(), other_secret())),
        min_size=1,
        max_size=4,
    ),
    tail=st.lists(_PLAIN, min_size=1, max_size=3),
)
@example(parts=[(["zebra"], ("--password -0000000", "-0000000"))], tail=["zebra"])  # found by hypothesis
def test_property_generated_secrets_never_survive_and_plain_words_do(
    parts: list[tuple[list[str], tuple[str, str]]], tail: list[str]
) -> None:
    pieces: list[str] = []
    secrets: list[str] = []
    words: list[str] = list(tail)
    for context, (written, secret) in parts:
        pieces += [" ".join(context), written + " ."]
        secrets.append(secret)
        words += context
    text = " ".join(pieces + [" ".join(tail)])
    for secret in secrets:
        assume(text.replace("\u200b", "").count(secret) <= 1 and not any(w in secret for w in words))
    out = redact(text)
    for secret in secrets:
        assert secret not in out and secret not in "".join(c for c in out if c.isprintable())
    for word in words:
        assert word in out, "plain words around a secret stay searchable"
    assert redact(out) == out


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redaction_is_total_idempotent_and_keeps_lines(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert once.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("adminPassword", "password"),
        ("DB_PASS", "password"),
        ("PGPASSWORD", "password"),
        ("openaiApiKey", "api-key"),
        ("githubToken", "token"),
        ("X-Api-Key", "api-key"),
        ("max_tokens", None),
        ("tokenizer", None),
        ("secretary", None),
        ("passport", None),
        ("primary_key", None),
    ],
)
def test_key_names_in_any_spelling(name: str, kind: str | None) -> None:
    assert name_kind(name) == kind


# -- through the index ---------------------------------------------------------------------------------

runner = CliRunner()


def _index_bytes(db: Path) -> bytes:
    data = db.read_bytes()
    wal = Path(f"{db}-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def _leaks(blob: bytes) -> list[str]:
    leaked = []
    for _, secret in CORPUS:
        for form in {secret, secret.replace(ZW, "").replace("\u00ad", "").replace("\u2060", "")}:
            if form.encode("utf-8") in blob:
                leaked.append(form)
    return leaked


def _corpus_workspace(ws: Path) -> None:
    body = "".join(
        f"## entry {i}\n\nzebra meeting notes {i}\n{line}\nokapi garden follow-up\n\n"
        for i, (line, _) in enumerate(CORPUS)
    )
    write(ws, "memory/secrets.md", body)


def test_no_corpus_secret_in_index_file_or_wal_via_cli(workspace: Path, tmp_path: Path) -> None:
    (workspace / "mdrecall.toml").write_text('provider = "none"\nsources = ["memory", "sessions"]\n')
    _corpus_workspace(workspace)
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    records = [{"type": "message", "message": {"role": "user", "content": f"lisbon trip {line}"}} for line, _ in CORPUS]
    (sessions / "s1.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    args = ["--workspace", str(workspace), "--state-dir", str(state)]
    result = runner.invoke(app, [*args, "index"])
    assert result.exit_code == 0, result.output
    from mdrecall.config.settings import resolve_settings

    db = resolve_settings(workspace=workspace, state_dir=state).db_path  # keyed by agent and workspace
    assert db.is_file() and _leaks(_index_bytes(db)) == []
    hits = json.loads(runner.invoke(app, [*args, "search", "zebra meeting notes 7", "--json", "-n", "20"]).stdout)
    assert any(h["path"] == "memory/secrets.md" and "[REDACTED:" in h["snippet"] for h in hits)
    trip = json.loads(runner.invoke(app, [*args, "search", "lisbon trip", "--json"]).stdout)
    assert trip and trip[0]["path"] == "sessions/s1.jsonl" and "[REDACTED:" in trip[0]["snippet"]
    shown = runner.invoke(app, [*args, "get", "memory/secrets.md"]).stdout
    assert _leaks(shown.encode()) == [] and "[REDACTED:" in shown, "get masks what it returns"
    written = (workspace / "memory" / "secrets.md").read_text()
    assert len(shown.rstrip("\n").split("\n")) == len(written.rstrip("\n").split("\n"))  # the same lines
    with_key = next(i for i, line in enumerate(written.splitlines(), 1) if "AKIAQX7CORPUS01ABCDE" in line)
    one = runner.invoke(app, [*args, "get", "memory/secrets.md", "--from", str(with_key), "--lines", "1"]).stdout
    assert "AKIAQX7CORPUS01ABCDE" not in one and "[REDACTED:aws-key]" in one
    # while the index is open (WAL not checkpointed) nothing leaks either
    write(workspace, "memory/more.md", "okapi again\nsecond AKIAQX7CORPUS01ABCDE copy\n")
    assert runner.invoke(app, [*args, "index"]).exit_code == 0
    assert _leaks(_index_bytes(db)) == []


class RecordingProvider(HashingProvider):
    """Remembers every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_batch(self, texts: list[str]):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed_batch(texts)


def test_embedded_texts_and_cache_hold_no_secret(workspace: Path, make_index) -> None:
    _corpus_workspace(workspace)
    provider = RecordingProvider()
    index = make_index(workspace, provider)
    index.sync()
    assert provider.seen and _leaks("\n".join(provider.seen).encode()) == []
    index.close()
    assert _leaks(_index_bytes(index.db_path)) == []


def test_redact_memory_can_be_turned_off_and_back_on_purges(workspace: Path, make_index, tmp_path: Path) -> None:
    write(workspace, "memory/key.md", "deploy key AKIAQX7CORPUS01ABCDE for the zebra bucket\n")
    db = tmp_path / "idx.sqlite"
    off = make_index(workspace, None, config={"redactMemory": False}, db_path=db)
    off.sync()
    off.close()
    assert b"AKIAQX7CORPUS01ABCDE" in _index_bytes(db)  # the setting really turns it off
    on = make_index(workspace, None, db_path=db)
    report = on.sync()
    assert report.full_reindex and "redaction" in (report.full_reason or "")
    on.close()
    assert b"AKIAQX7CORPUS01ABCDE" not in _index_bytes(db)


def test_get_masks_a_key_written_over_several_lines_whatever_range_is_asked(tmp_path: Path) -> None:
    """A private key block is masked whole even when the range asked starts inside it; `redactMemory = false`
    returns the file as written (the user's explicit choice)."""
    workspace, state = tmp_path / "ws", tmp_path / "state"
    body = "MIIEpAIBAAKCAQEAx7Jq4Zr9bT2LmN8vQpRsTuVwXyZa\n" * 3
    text = f"# keys\n-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\nafter\n"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "keys.md").write_text(text)
    args = ["--workspace", str(workspace), "--state-dir", str(state)]
    inside = runner.invoke(app, [*args, "get", "memory/keys.md", "--from", "4", "--lines", "3"])
    assert inside.exit_code == 0 and "MIIEpAIB" not in inside.stdout
    whole = runner.invoke(app, [*args, "get", "memory/keys.md"]).stdout
    assert "MIIEpAIB" not in whole and "[REDACTED:private-key]" in whole and whole.rstrip().endswith("after")
    assert len(whole.rstrip("\n").split("\n")) == len(text.rstrip("\n").split("\n"))
    (workspace / "mdrecall.toml").write_text("redactMemory = false\n")
    assert "MIIEpAIB" not in runner.invoke(app, [*args, "get", "memory/keys.md"]).stdout  # a folder's say: no
    assert runner.invoke(app, [*args, "trust"]).exit_code == 0
    assert "MIIEpAIB" in runner.invoke(app, [*args, "get", "memory/keys.md"]).stdout
