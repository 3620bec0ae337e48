"""Secrets never reach the index: mask them in memory files and session transcripts before chunking.

`redact(text)` replaces each secret with a marker naming its kind, e.g. `[REDACTED:aws-key]`, so snippets
show that something was there and the words around it stay searchable. The file itself is never changed
(`get` shows it as written). Lines are preserved: a replacement never adds or removes a newline, so line
numbers of chunks still point into the file.

What is recognised:
- known key shapes (AWS, GitHub, GitLab, Slack, OpenAI, Anthropic, Stripe, Google, Hugging Face, npm,
  PyPI, SendGrid, DigitalOcean, Twilio, Telegram, age, JWTs), even when split by zero-width or other
  invisible characters;
- PEM private-key blocks (terminated or not);
- credentials named by a key in any spelling (camelCase, snake_case, kebab-case, ENV_STYLE, compounds such
  as `adminPassword`, `DB_PASS`, `PGPASSWORD`, `openaiApiKey`, `githubToken`) in `key=value`,
  `key: value`, `"key": "value"` and `key value` forms;
- CLI flags (`--password X`, `--token=X`, `mysql -pX`, `sshpass -p X`, `curl -u user:X`, `redis-cli -a X`);
- prose ("my password is X", "the api key: X");
- HTTP `Authorization`/`Proxy-Authorization` headers, bare `Bearer` tokens, `Cookie`/`Set-Cookie` values;
- passwords in URLs (`scheme://user:X@host`).

Idempotent: redacting redacted text changes nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

REDACTION_VERSION = 2  # stored in the index meta: a change of rules rebuilds the index
MARK_PREFIX = "[REDACTED"


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# -- invisible characters ------------------------------------------------------------------------------

_INVISIBLE_CLASS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f"
)
# Only between ASCII token characters (or before a separator), so scripts that need ZWJ/ZWNJ keep them.
_INVISIBLE_IN_TOKEN = re.compile(rf"(?<=[A-Za-z0-9_\-.+/=:])[{_INVISIBLE_CLASS}]+(?=[A-Za-z0-9_\-.+/=:\"'])")

# -- known key shapes ----------------------------------------------------------------------------------

_NOT_AFTER_ALNUM = r"(?<![A-Za-z0-9])"
_VENDOR: tuple[tuple[str, str], ...] = (
    ("private-key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai-key", _NOT_AFTER_ALNUM + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
    ("stripe-key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google-api-key", r"AIza[A-Za-z0-9_\-]{30,}"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"),
    ("gitlab-token", r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    ("aws-key", r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ("huggingface-token", _NOT_AFTER_ALNUM + r"hf_[A-Za-z0-9]{30,}"),
    ("groq-key", _NOT_AFTER_ALNUM + r"gsk_[A-Za-z0-9]{20,}"),
    ("perplexity-key", _NOT_AFTER_ALNUM + r"pplx-[A-Za-z0-9]{20,}"),
    ("npm-token", _NOT_AFTER_ALNUM + r"npm_[A-Za-z0-9]{30,}"),
    ("pypi-token", r"pypi-AgE[A-Za-z0-9_\-]{40,}"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("twilio-key", _NOT_AFTER_ALNUM + r"SK[0-9a-f]{32}(?![0-9a-f])"),
    ("telegram-token", _NOT_AFTER_ALNUM + r"\d{8,10}:AA[A-Za-z0-9_\-]{30,}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
)
_VENDOR_RE = re.compile("|".join(f"(?P<v{i}>{body})" for i, (_, body) in enumerate(_VENDOR)))
# Every key shape lies inside one run of these characters: the many-branch pattern only runs inside such runs
# (a character-class scan is cheap; trying twenty branches at every position of a 10 MB file is not).
_TOKEN_RUN_RE = re.compile(r"[A-Za-z0-9_\-.:/+=]{16,}")
_VENDOR_HINTS = (
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "sk-", "sk_", "rk_", "AIza", "ghp_", "gho_",
    "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "xapp-", "hf_", "gsk_", "pplx-", "npm_", "pypi-",
    "SG.", "_v1_", "SK", ":AA", "eyJ", "AGE-SECRET", "hooks.slack",
)  # fmt: skip


def _mask_run(run: re.Match[str]) -> str:
    text = run.group(0)
    if not any(hint in text for hint in _VENDOR_HINTS):
        return text
    return _VENDOR_RE.sub(_mask_vendor, text)


# -- PEM private keys ----------------------------------------------------------------------------------

_PEM_HEAD = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
# The body may not run into another BEGIN: keeps many unterminated headers linear instead of quadratic.
_PEM_BLOCK_RE = re.compile(
    rf"{_PEM_HEAD}(?:(?!-----BEGIN ).)*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", re.DOTALL
)
# Unterminated (a truncated paste): the header and every base64-looking run after it, across lines.
_PEM_OPEN_RE = re.compile(rf"{_PEM_HEAD}(?:(?:[ \t]*(?:\\n|\r?\n|\r)[ \t]*|[ \t]+)[A-Za-z0-9+/=]+)*")

# -- named credentials ---------------------------------------------------------------------------------

_PASSWORD_PARTS = frozenset({"password", "passwd", "passphrase", "passcode", "pwd", "pw", "pass", "passwort"})
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "auth", "signing", "master", "encryption", "client", "app",
     "account", "consumer", "ssh", "deploy", "license", "admin", "service", "subscription", "webhook", "x"}
)  # fmt: skip
_WEAK_SINGLE = frozenset({"token", "secret", "pwd", "pass", "credential", "credentials", "creds", "pw"})
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _parts(ident: str) -> list[str]:
    return [p.lower() for chunk in re.split(r"[_\-.\s]+", ident) for p in _CAMEL.findall(chunk)]


@functools.lru_cache(maxsize=4096)
def name_kind(ident: str) -> str | None:
    """The kind of secret a key name announces (`adminPassword` -> "password"), or None for other names."""
    parts = _parts(ident)
    if not parts:
        return None
    joined = "".join(parts)
    if _PASSWORD_PARTS.intersection(parts) or joined.endswith(("password", "passwd", "passphrase")):
        return "password"
    if "secret" in parts or "secrets" in parts or joined.endswith("secret"):
        return "secret"
    if "token" in parts or joined.endswith("token"):
        return "token"
    if ("key" in parts or "keys" in parts) and _KEY_QUALIFIERS.intersection(parts[:-1]):
        return "api-key"
    if joined.endswith(("apikey", "accesskey", "secretkey", "privatekey", "authkey")):
        return "api-key"
    if parts[-1] in {"credential", "credentials", "creds", "cred"}:
        return "credential"
    if joined in {"authorization", "proxyauthorization", "xauthorization"}:
        return "auth-header"
    if parts[-1] in {"signature", "sig"}:
        return "signature"
    return None


def _is_weak(ident: str) -> bool:
    """A lone common word (`token`, `secret`): a key only with `=` or when quoted, never in prose `token: x`."""
    return "".join(_parts(ident)) in _WEAK_SINGLE


# An unquoted value ends at whitespace, brackets, `;`/`,`, or an `&name=` that starts the next query parameter.
_VALUE = r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|(?![=:>])(?:[^\s\"'`&<>()\[\]{};,]|&(?![A-Za-z0-9_\-]+=))+)"
_ASSIGN_RE = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<q>[\"']?)"
    r"(?=[A-Za-z0-9_.\-]*(?i:pass|pwd|pw|secret|token|key|cred|auth|sig|cookie))"  # cheap pre-filter
    r"(?P<ident>[A-Za-z_][A-Za-z0-9_.\-]*)(?P=q)"
    rf"(?P<sep>[ \t]*(?::=|=>|=|:(?!//))[ \t]*|[ \t]+){_VALUE}"
)
_FLAG_RE = re.compile(rf"(?<![\w\-])--?(?P<ident>[A-Za-z][A-Za-z0-9_\-]*)(?P<sep>=|[ \t]+){_VALUE}")
_COMMON_WORDS = """
    the a an in on at to of is was are be been being it its this that these those my your our their his her
    not now set stored kept saved required missing wrong correct invalid expired changed reset same different
    also still empty blank here there and or but for with from by as if then when which who what where how
    none null true false yes no nothing something same new old secret secure safe hidden unknown rotated
    protected encrypted managed shown printed logged needed used only just please"""
_COMMON = frozenset(_COMMON_WORDS.split())


def _looks_secret(value: str) -> bool:
    """For `key value` and prose forms: a value that is not an ordinary word."""
    bare = value.strip("\"'`.,;:!?")
    if len(bare) < 6 or bare.lower() in _COMMON:
        return False
    has_digit = any(c.isdigit() for c in bare)
    has_symbol = any(not c.isalnum() for c in bare)
    inner_upper = any(c.isupper() for c in bare[1:]) and any(c.islower() for c in bare)
    return has_digit or has_symbol or inner_upper


def _mask(value: str, kind: str) -> str:
    """Replace a value, keeping its quotes."""
    if len(value) >= 2 and value[0] in "\"'`" and value[-1] == value[0]:
        return f"{value[0]}{marker(kind)}{value[0]}"
    return marker(kind)


def _already_masked(value: str) -> bool:
    return value.lstrip("\"'`").startswith(MARK_PREFIX) or not value.strip("\"'`")


def _scan(pattern: re.Pattern[str], text: str, decide: Callable[[re.Match[str]], str | None]) -> str:
    """Like re.sub, but a non-secret match only consumes its key name, so a secret right after it is seen."""
    out: list[str] = []
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        kind = decide(m)
        if kind is None:
            out.append(text[pos : m.end("ident")])
            pos = m.end("ident")
            continue
        out.append(text[pos : m.start("value")])
        out.append(_mask(m.group("value"), kind))
        pos = m.end("value")
    out.append(text[pos:])
    return "".join(out)


def _assignment_kind(m: re.Match[str]) -> str | None:
    value = m.group("value")
    if _already_masked(value):
        return None
    kind = name_kind(m.group("ident"))
    if kind is None or kind == "auth-header":  # headers are handled with their scheme (Bearer, Basic)
        return None
    sep = m.group("sep").strip()
    if not sep:  # `password hunter2`: only a clearly non-word value
        return kind if not _is_weak(m.group("ident")) and _looks_secret(value) else None
    if _is_weak(m.group("ident")) and sep.startswith(":") and not m.group("q"):
        return None  # "the token: is the unit" is prose, not a key
    return kind


# the next flag (`--verbose`, `-v`, `--user=bob`): letters and dashes only up to an optional `=`; a value with
# digits or other signs (`--password -A000000`, found by the property test) is a secret that starts with '-'
_NEXT_FLAG_RE = re.compile(r"--?[A-Za-z][A-Za-z-]*(?:=.*)?$")


def _flag_kind(m: re.Match[str]) -> str | None:
    value = m.group("value")
    if _already_masked(value) or _NEXT_FLAG_RE.match(value):  # `--password --verbose`: no value given
        return None
    return name_kind(m.group("ident"))


# -- prose, headers, CLI commands, URLs ----------------------------------------------------------------

_PROSE_NAMES = (
    r"pass(?:word|phrase|code)|pwd|pin(?: code)?|(?:api|access|secret|private|auth|signing|master|license)[ \-]?key"
    r"|(?:auth|access|api|bearer|refresh|session|bot)[ \-]?token|token|secret|credentials?"
)
_PROSE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?P<ident>{_PROSE_NAMES})(?:\s+(?:for|of|on|at)(?:\s+[\w.\-@]+){{1,3}}?)?"
    r"(?P<sep>\s+(?:is|was|are|=|becomes)\s+(?:now\s+|still\s+|set\s+to\s+)?|\s*:\s+|\s+(?:set\s+)?to\s+)"
    r"(?P<value>[\"'`][^\"'`\n]+[\"'`]|[^\s\"'`]+)"
)
_PROSE_HINT_RE = re.compile(r"pass|pwd|pin|key|token|secret|credential")
_STRONG_PROSE = re.compile(r"(?i)pass|pwd|pin|key")


def _prose_kind(m: re.Match[str]) -> str | None:
    value = m.group("value")
    if _already_masked(value):
        return None
    ident = m.group("ident")
    bare = value.strip("\"'`.,;:!?")
    if value[0] in "\"'`" and len(bare) >= 3:
        return name_kind(ident) or "secret"
    strong = _STRONG_PROSE.search(ident) is not None
    ok = (len(bare) >= 4 and bare.lower() not in _COMMON) if strong else _looks_secret(value)
    return (name_kind(ident) or "secret") if ok else None


_AUTH_HEADER_RE = re.compile(
    r"(?i)(?P<ident>\b(?:proxy-)?authorization)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|bot|digest|negotiate|apikey|sso-key)\s+)?+"  # possessive: never the value
    r"(?P<value>(?!\[REDACTED)[^\s\"',;]+(?:,\s*[A-Za-z]+=\"?[^\s\"',]+\"?)*)"
)
_BEARER_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?P<ident>bearer|basic)\s+(?P<value>(?!\[REDACTED)[A-Za-z0-9._~+/\-]{16,}=*)"
)
_COOKIE_HEADER_RE = re.compile(r"(?i)(?<![A-Za-z0-9\-])(?:set-)?cookies?[\"']?\s*[:=][ \t]*[\"']?(?P<body>[^\n\"']+)")
_COOKIE_PAIR_RE = re.compile(r"(?P<name>[^\s=;,]+)=(?P<value>[^;\s,]*)")
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority"})
_CLI_PASSWORD_RES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    # mysql -pSECRET (attached; a separate word after -p is a prompt-less database name)
    (
        ("mysql", "mariadb"),
        re.compile(
            r"(?i)\b(?:mysql|mysqldump|mariadb|mariadb-dump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mysqlpump)\b"
            r"[^\n|;&]*?\s-p(?P<value>(?!\[REDACTED)[^\s\"']+|\"[^\"\n]*\"|'[^'\n]*')"
        ),
    ),
    (
        ("sshpass",),
        re.compile(r"(?i)\bsshpass\b[^\n|;&]*?\s-p\s*(?P<value>(?!\[REDACTED)[^\s\"']+|\"[^\"\n]*\"|'[^'\n]*')"),
    ),
    (
        ("redis-cli",),
        re.compile(r"(?i)\bredis-cli\b[^\n|;&]*?\s-a\s+(?P<value>(?!\[REDACTED)[^\s\"']+|\"[^\"\n]*\"|'[^'\n]*')"),
    ),
    (
        ("-u", "--user", "--proxy-user"),
        re.compile(r"(?<![\w\-])(?:-u|--user|--proxy-user)\s+[\"']?[^\s:\"']+:(?P<value>(?!\[REDACTED)[^\s\"']+)"),
    ),
)
_URL_CREDENTIALS_RE = re.compile(
    r"(?<![A-Za-z0-9+.\-])(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)(?P<value>(?!\[REDACTED)[^\s/?#]+)(?=@)"
)


def _sub_value(pattern: re.Pattern[str], text: str, kind: str) -> str:
    def replace(m: re.Match[str]) -> str:
        start, end = m.span("value")
        return m.group(0)[: start - m.start()] + _mask(m.group("value"), kind) + m.group(0)[end - m.start() :]

    return pattern.sub(replace, text)


def _mask_cookie_body(m: re.Match[str]) -> str:
    def pair(p: re.Match[str]) -> str:
        if p.group("name").lower() in _COOKIE_ATTRIBUTES or not p.group("value") or _already_masked(p.group("value")):
            return p.group(0)
        return f"{p.group('name')}={marker('cookie')}"

    body = _COOKIE_PAIR_RE.sub(pair, m.group("body"))
    return m.group(0)[: m.start("body") - m.start()] + body


def _mask_pem(m: re.Match[str]) -> str:
    """The whole block becomes one marker; its newlines stay so line numbers keep pointing into the file."""
    return marker("private-key") + "\n" * m.group(0).count("\n")


def _mask_vendor(m: re.Match[str]) -> str:
    index = int(m.lastgroup[1:])  # type: ignore[index]
    return marker(_VENDOR[index][0])


def redact(text: str) -> str:
    """Mask every secret in `text` with `[REDACTED:<kind>]` markers (see the module docstring).

    Each rule runs only when a cheap substring test says it could match (most notes have no secret).
    """
    if not text:
        return text
    if not text.isascii():
        text = _INVISIBLE_IN_TOKEN.sub("", text)
    if "-----BEGIN" in text:
        text = _PEM_BLOCK_RE.sub(_mask_pem, text)
        text = _PEM_OPEN_RE.sub(_mask_pem, text)
    text = _TOKEN_RUN_RE.sub(_mask_run, text)
    if "://" in text:
        text = _sub_value(_URL_CREDENTIALS_RE, text, "url-password")
    lower = text.lower()
    if "authorization" in lower:
        text = _sub_value(_AUTH_HEADER_RE, text, "auth-header")
    if "cookie" in lower:
        text = _COOKIE_HEADER_RE.sub(_mask_cookie_body, text)
    for hint, pattern in _CLI_PASSWORD_RES:
        if any(h in lower for h in hint):
            text = _sub_value(pattern, text, "password")
    if "-" in text:
        text = _scan(_FLAG_RE, text, _flag_kind)
    text = _scan(_ASSIGN_RE, text, _assignment_kind)
    if _PROSE_HINT_RE.search(lower):
        text = _scan(_PROSE_RE, text, _prose_kind)
    if "bearer" in lower or "basic" in lower:
        text = _sub_value(_BEARER_RE, text, "auth-header")
    return text
