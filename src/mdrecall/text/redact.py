"""Secrets never leave mdrecall's hand: one redaction for what it indexes, writes and returns.

`redact(text)` replaces each secret with a marker naming its kind, e.g. `[REDACTED:aws-key]`, so snippets
show that something was there and the words around it stay searchable. Lines are preserved: a replacement
never adds or removes a newline, so line numbers of chunks still point into the file. It runs on every memory
file and transcript before chunking, on session-memory files and fact lines before they are written, and on
transcripts that `memory_get` returns; `sensitive_kind(text)` tells auto-capture to drop a statement.

What is recognised (tests/data/secrets_corpus.jsonl holds an example of each, and look-alikes that stay):
- known key shapes (AWS access keys and secret keys, GitHub, GitLab, Slack, Discord, OpenAI, Anthropic, xAI,
  Stripe, Google API keys and OAuth secrets/tokens, Mailgun, Mailchimp, Shopify, Square, Hugging Face, npm,
  PyPI, SendGrid, DigitalOcean, Twilio, Telegram, Databricks, Vault, Linear, Notion, Postman, Atlassian,
  New Relic, Sentry, Grafana, Supabase, Replicate, Tailscale, Doppler, Pulumi, Dropbox, age, nostr, JWTs),
  even when split by zero-width or other invisible characters;
- private keys: PEM blocks (terminated or not), PuTTY key files, WireGuard `PrivateKey =`;
- credentials named by a key in any spelling (camelCase, snake_case, kebab-case, ENV_STYLE, compounds such
  as `adminPassword`, `DB_PASS`, `PGPASSWORD`, `openaiApiKey`, `githubToken`) in `key=value`, `key: value`
  (YAML too), `"key": "value"`, `key value`, `<password>…</password>`, `name: X` + `value: …` pairs;
- markdown tables: cells under a password/key/token column, or right after such a name;
- CLI flags and commands (`--password X`, `mysql -pX`, `docker login -p X`, `echo X | … --password-stdin`,
  `sshpass -p X`, `curl -u user:X`, `redis-cli -a X`, `openssl … pass:X`, `sqlcmd -P X`, `net use … /user:u X`,
  `htpasswd -b f u X`), `~/.pgpass` lines;
- prose, also with full-width colons and in other languages ("my pw is X", "minha senha é X", "mi contraseña
  es X", "Mein Passwort ist X", "mon mot de passe est X", "我的密码是X", "パスワードはXです", "비밀번호는 X",
  "мой пароль X", ...), tokens typed in spaced groups, passphrases, wallet seed phrases;
- bank PINs, card numbers (Luhn-checked) and CVVs, IBANs (checksum), national identity numbers (US SSN,
  CPF, DNI/NIE, NINO, codice fiscale, Steuer-ID, NIR, Chinese resident ID, My Number, RRN, Aadhaar, SIN,
  passport numbers) by shape or when named;
- HTTP `Authorization`/`Proxy-Authorization` headers, bare `Bearer` tokens, `Cookie`/`Set-Cookie` values;
- passwords in URLs (`scheme://user:X@host`).

Idempotent: redacting redacted text changes nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

REDACTION_VERSION = 3  # stored in the index meta: a change of rules rebuilds the index
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
    ("stripe-key", r"whsec_[A-Za-z0-9]{24,}"),
    ("google-oauth", r"GOCSPX-[A-Za-z0-9_\-]{24,}|ya29\.[A-Za-z0-9_\-]{30,}|1//0[A-Za-z0-9_\-]{40,}"),
    ("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}"),
    ("mailgun-key", _NOT_AFTER_ALNUM + r"key-[0-9a-f]{32}(?![0-9a-f])"),
    ("shopify-token", r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}"),
    ("square-token", r"sq0(?:atp|csp|idp)-[A-Za-z0-9_\-]{22,}"),
    ("access-token", _NOT_AFTER_ALNUM + r"EAA[A-Za-z0-9_\-]{60,}"),
    ("databricks-token", _NOT_AFTER_ALNUM + r"dapi[0-9a-f]{32}"),
    ("vault-token", _NOT_AFTER_ALNUM + r"hv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("linear-key", r"lin_api_[A-Za-z0-9]{32,}"),
    ("notion-token", _NOT_AFTER_ALNUM + r"(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}(?![A-Za-z0-9_]))"),
    ("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("atlassian-token", r"ATATT3[A-Za-z0-9_\-=]{40,}|ATBB[A-Za-z0-9]{32}"),
    ("newrelic-key", r"NRAK-[A-Z0-9]{27}"),
    ("sentry-token", r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("grafana-token", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/=]{32,}"),
    ("supabase-token", _NOT_AFTER_ALNUM + r"sbp_[a-f0-9]{40}"),
    ("replicate-token", _NOT_AFTER_ALNUM + r"r8_[A-Za-z0-9]{37}"),
    ("xai-key", _NOT_AFTER_ALNUM + r"xai-[A-Za-z0-9]{50,}"),
    ("tailscale-key", r"tskey-[A-Za-z0-9\-]{20,}"),
    ("doppler-token", _NOT_AFTER_ALNUM + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("pulumi-token", _NOT_AFTER_ALNUM + r"pul-[a-f0-9]{40}"),
    ("dropbox-token", _NOT_AFTER_ALNUM + r"sl\.[A-Za-z0-9_\-]{60,}"),
    ("private-key", _NOT_AFTER_ALNUM + r"nsec1[02-9ac-hj-np-z]{58}"),
)
_VENDOR_RE = re.compile("|".join(f"(?P<v{i}>{body})" for i, (_, body) in enumerate(_VENDOR)))
# Every key shape lies inside one run of these characters: the many-branch pattern only runs inside such runs
# (a character-class scan is cheap; trying twenty branches at every position of a 10 MB file is not).
_TOKEN_RUN_RE = re.compile(r"[A-Za-z0-9_\-.:/+=]{16,}")
_VENDOR_HINTS = (
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "sk-", "sk_", "rk_", "AIza", "ghp_", "gho_",
    "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "xapp-", "hf_", "gsk_", "pplx-", "npm_", "pypi-",
    "SG.", "_v1_", "SK", ":AA", "eyJ", "AGE-SECRET", "hooks.slack", "whsec_", "GOCSPX-", "ya29.", "1//0", "discord",
    "key-", "shp", "sq0", "EAA", "dapi", "hvs.", "hvb.", "lin_api_", "ntn_", "secret_", "PMAK-", "ATATT3", "ATBB",
    "NRAK-", "sntry", "glsa_", "glc_", "sbp_", "r8_", "xai-", "tskey-", "dp.", "pul-", "sl.", "nsec1",
)  # fmt: skip
# Shapes without a fixed prefix, checked on long runs only: Discord bot tokens (three dot-separated base64 parts),
# Mailgun/Mailchimp keys (32 hex digits and a fixed suffix) and AWS secret access keys (40 base64 characters
# with both cases and a digit, never a path: no lowercase run longer than 7).
_DISCORD_RE = re.compile(
    r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![A-Za-z0-9_\-])"
)
_HEX_KEY_RE = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{32}(?:-[0-9a-f]{8}-[0-9a-f]{8}|-us\d{1,2})(?![0-9A-Za-z])")
_AWS_SECRET_RE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_LOWER_RUN_RE = re.compile(r"[a-z]{8}")


def _aws_secret(m: re.Match[str]) -> str:
    s = m.group(0)
    mixed = any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)
    if not mixed or _LOWER_RUN_RE.search(s) or sum(c.isupper() for c in s) < 4:
        return s
    return marker("aws-secret")


def _mask_run(run: re.Match[str]) -> str:
    text = run.group(0)
    if any(hint in text for hint in _VENDOR_HINTS):
        text = _VENDOR_RE.sub(_mask_vendor, text)
    if len(text) >= 32:
        if text.count(".") >= 2:
            text = _DISCORD_RE.sub(marker("discord-token"), text)
        if "-" in text:
            text = _HEX_KEY_RE.sub(marker("mailgun-key"), text)
        if len(text) >= 40:
            text = _AWS_SECRET_RE.sub(_aws_secret, text)
    return text


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
_NOT_A_VALUE = frozenset({"stdin", "file", "path", "policy", "length", "prompt", "reset", "env", "hint", "cmd"})
# Words for "password" (and PIN) in other languages, as a key name or a table column.
_FOREIGN_PASSWORD_NAMES = frozenset(
    {"senha", "contraseña", "contrasena", "clave", "passwort", "kennwort", "mot de passe", "mdp", "wachtwoord",
     "hasło", "haslo", "şifre", "sifre", "lösenord", "losenord", "adgangskode", "salasana", "пароль", "密码", "密碼",
     "口令", "パスワード", "비밀번호", "비번", "암호", "pin", "暗証番号", "geheimzahl", "cvv", "cvc"}
)  # fmt: skip
_WEAK_SINGLE = frozenset({"token", "secret", "pwd", "pass", "credential", "credentials", "creds", "pw"})
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _parts(ident: str) -> list[str]:
    return [p.lower() for chunk in re.split(r"[_\-.\s]+", ident) for p in _CAMEL.findall(chunk)]


@functools.lru_cache(maxsize=4096)
def name_kind(ident: str) -> str | None:
    """The kind of secret a key name announces (`adminPassword` -> "password"), or None for other names."""
    if ident.lower() in _FOREIGN_PASSWORD_NAMES:
        return "password"
    parts = _parts(ident)
    if not parts or parts[-1] in _NOT_A_VALUE:  # `--password-stdin`, `password_file`: the value is elsewhere
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


Decision = str | tuple[str, int] | None  # a kind, or a kind and where the masked value ends


def _scan(pattern: re.Pattern[str], text: str, decide: Callable[[re.Match[str]], Decision]) -> str:
    """Like re.sub, but a non-secret match only consumes its key name, so a secret right after it is seen."""
    out: list[str] = []
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        decision = decide(m)
        if decision is None:
            out.append(text[pos : m.end("ident")])
            pos = m.end("ident")
            continue
        kind, end = decision if isinstance(decision, tuple) else (decision, m.end("value"))
        out.append(text[pos : m.start("value")])
        out.append(_mask(text[m.start("value") : end], kind))
        pos = end
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
        if _WORD_ASSIGN_RE.match(value):  # `key="ApiKey" value="…"`: the next attribute, not a value
            return None
        return kind if not _is_weak(m.group("ident")) and _looks_secret(value) else None
    if _is_weak(m.group("ident")) and sep.startswith(":") and not m.group("q"):
        # "the token: is the unit" is prose, not a key; `  pass: x7Yq2` alone on a YAML line is one
        line_head = m.string[m.string.rfind("\n", 0, m.start()) + 1 : m.start()]
        return kind if line_head.strip() in ("", "-") and _looks_secret(value) else None
    return kind


_WORD_ASSIGN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*[=:]")


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
    r"pass(?:word|phrase|code)|passwd|pwd|pw|pin(?: code)?"
    r"|(?:api|access|secret|private|auth|signing|master|license)[ \-]?key"
    r"|(?:auth|access|api|bearer|refresh|session|bot)[ \-]?token|token|secret|credentials?|key"
)
_PROSE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?P<ident>{_PROSE_NAMES})(?:\s+(?:for|of|on|at)(?:\s+[\w.\-@]+){{1,3}}?)?"
    r"(?P<sep>\s+(?:is|was|are|=|becomes|è|é|es|ist|est|är)\s+(?:now\s+|still\s+|set\s+to\s+)?|\s*:\s+|\s*：\s*"
    r"|\s+(?:(?:changed|updated|reset|rotated|set)\s+)?to\s+|[ \t]+(?=[A-Za-z0-9_\-+/=]{16}))"
    r"(?P<value>[\"'`][^\"'`\n]+[\"'`]|[^\s\"'`]+)"
)
_PROSE_HINTS = ("pass", "pw", "pin", "key", "token", "secret", "credential")
_STRONG_PROSE = re.compile(r"(?i)pass|pwd|pw|pin|key")
# A token typed in groups ("4f9a 22c1 8be0 77d3"): groups of letters and digits after the first part of a value.
_SPACED_TAIL_RE = re.compile(r"(?:[ \t]+[A-Za-z0-9_\-+/=]{2,12}(?![^\s.,;:!?)])){1,16}")


def _tokenish(group: str) -> bool:
    return any(c.isdigit() for c in group) or (any(c.isupper() for c in group[1:]) and any(c.islower() for c in group))


def _spaced_end(m: re.Match[str]) -> int | None:
    """Where a value typed in spaced groups ends, when at least two token-like groups follow its first part."""
    tail = _SPACED_TAIL_RE.match(m.string, m.end("value"))
    if tail is None:
        return None
    end, count = m.end("value"), 0
    for group in re.finditer(r"\S+", tail.group(0)):
        if not _tokenish(group.group(0)):
            break
        end, count = tail.start() + group.end(), count + 1
    return end if count >= 2 and _tokenish(m.group("value").rstrip("_-")) or count >= 3 else None


def _keylike(value: str) -> bool:
    """A value that can only be a key: 16+ key characters with letters and digits."""
    return len(value) >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _prose_kind(m: re.Match[str]) -> str | tuple[str, int] | None:
    value = m.group("value")
    if _already_masked(value):
        return None
    ident = m.group("ident")
    kind = name_kind(ident) or "secret"
    bare = value.strip("\"'`.,;:!?")
    if value[0] in "\"'`" and len(bare) >= 3:
        return kind
    if not m.group("sep").strip() and not _keylike(bare):  # `api key 47ee…`: only a value that is a key
        return None
    spaced = _spaced_end(m)
    if spaced is not None:
        return kind, spaced
    strong = _STRONG_PROSE.search(ident) is not None and ident.lower() != "key"
    ok = (len(bare) >= 4 and bare.lower() not in _COMMON) if strong else _looks_secret(value)
    return kind if ok else None


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
_VALUE_WORD = r"(?P<value>(?!\[REDACTED)[^\s\"']+|\"[^\"\n]*\"|'[^'\n]*')"
_CLI_MORE_RES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    # docker/podman/helm registry login -p X
    (("login",), re.compile(rf"(?i)\blogin\b[^\n|;&]*?\s-p(?:\s+|=){_VALUE_WORD}")),
    # echo X | docker login --password-stdin
    (("-stdin",), re.compile(rf"\b(?:echo|printf)\s+{_VALUE_WORD}\s*\|[^\n]*?--password-stdin")),
    # openssl -passin pass:X / -passout pass:X / -pass pass:X
    (("pass:",), re.compile(r"-pass(?:in|out)?\s+pass:(?P<value>(?!\[REDACTED)[^\s\"']+)")),
    (("sqlcmd", "bcp"), re.compile(rf"\b(?:sqlcmd|bcp)\b[^\n|;&]*?\s-P\s*{_VALUE_WORD}")),
    (("net use",), re.compile(rf"(?i)\bnet\s+use\b[^\n]*?/user:\S+\s+{_VALUE_WORD}")),
    (
        ("htpasswd",),
        re.compile(rf"\bhtpasswd(?=[^\n]*\s-[A-Za-z]*b)(?:\s+-[A-Za-z]+)+\s+[^\s-]\S*\s+\S+\s+{_VALUE_WORD}"),
    ),
)
# ~/.pgpass lines: host:port:database:user:password (the host has a letter or is `*`, the port is digits or `*`)
_PGPASS_RE = re.compile(
    r"(?m)^[ \t]*(?:\*|[A-Za-z0-9_.\-]*[A-Za-z][A-Za-z0-9_.\-]*|\d+\.\d+\.\d+\.\d+):(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:"
    r"(?P<value>(?!\[REDACTED)[^\s]+)[ \t]*$"
)
# `- name: DB_PASSWORD` / `value: "…"` (Kubernetes env), `<add key="ApiKey" value="…"/>` (.NET config)
_NAME_VALUE_RE = re.compile(
    r"(?i)\b(?:name|key)[\"']?\s*[:=]\s*[\"']?(?P<ident>[A-Za-z_][\w.\-]*)[\"']?[ \t,;]*(?:\n[ \t]*)?"
    rf"[\"']?value[\"']?\s*[:=]\s*{_VALUE}"
)
# <password>…</password>
_XML_ELEMENT_RE = re.compile(r"<(?P<ident>[A-Za-z_][\w\-.]*)>(?P<value>(?!\[REDACTED)[^<\n]{1,200})</(?P=ident)>")


def _named_value_kind(m: re.Match[str]) -> str | None:
    if _already_masked(m.group("value")):
        return None
    kind = name_kind(m.group("ident"))
    return None if kind == "auth-header" else kind


# -- markdown tables -----------------------------------------------------------------------------------

_TABLE_RULE_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)+\|?[ \t]*$")


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return body.split("|")


def _is_secret_column(cell: str) -> bool:
    name = cell.strip().strip("*_`").strip()
    return bool(name) and (name.lower() in _FOREIGN_PASSWORD_NAMES or name_kind(name) not in (None, "auth-header"))


def _mask_cell(cell: str, kind: str) -> str:
    value = cell.strip()
    if not value or _already_masked(value) or value in ("-", "—", "n/a", "N/A"):
        return cell
    return cell.replace(value, marker(kind), 1)


def _mask_tables(text: str) -> str:
    """Markdown tables: cells under a credential column, and the cell after a credential name in a row."""
    lines = text.split("\n")
    columns: set[int] = set()
    for i, line in enumerate(lines):
        if "|" not in line:
            columns = set()
            continue
        if _TABLE_RULE_RE.match(line):
            columns = {j for j, cell in enumerate(_cells(lines[i - 1])) if _is_secret_column(cell)} if i else set()
            continue
        cells = _cells(line)
        header = i + 1 < len(lines) and _TABLE_RULE_RE.match(lines[i + 1]) is not None
        if header or len(cells) < 2:
            continue
        changed = False
        for j, cell in enumerate(cells):
            if j in columns or (j and _is_secret_column(cells[j - 1]) and not _is_secret_column(cell)):
                masked = _mask_cell(cell, "password")
                changed = changed or masked != cell
                cells[j] = masked
        if changed:
            lead = line[: len(line) - len(line.lstrip())]
            pipe_start, pipe_end = line.strip().startswith("|"), line.strip().endswith("|")
            lines[i] = lead + ("|" if pipe_start else "") + "|".join(cells) + ("|" if pipe_end else "")
    return "\n".join(lines)


# -- other languages -----------------------------------------------------------------------------------

_FOREIGN_NAMES = (
    r"(?<![^\W\d_])(?:senhas?|palavras?[ \-]passe|contrase[ñn]as?|claves?|\w*(?:passwort|kennwort)|mots? de passe|mdp"
    r"|wachtwoord|parola d'ordine|has[łl]o|[şs]ifre(?:m|n|si)?|l[öo]senord(?:et)?|adgangskode(?:n)?|salasana|пароль"
    r"|парол[яюе])|密码|密碼|口令|パスワード|비밀번호|비번|암호"
)
_FOREIGN_PREP = (
    r"do|da|dos|das|de|del|de la|de los|du|des|de l'|für|fürs|vom|von|van|voor|het|della|dello|di|per|для|от|för"
)
_FOREIGN_PROSE_RE = re.compile(
    rf"(?i)(?P<ident>{_FOREIGN_NAMES})(?:\s+(?:{_FOREIGN_PREP})(?:\s+[\w.\-@]+){{1,2}}?)?"
    r"(?P<sep>\s*[:：=]\s*|\s+(?:é|e|è|es|era|foi|fue|ist|lautet|war|est|c'est|is|är|er|on|to|jest|это|—|-)\s+"
    r"|(?<=[\u3040-\u30ff\u3400-\u9fff])\s*(?:是|为|為|は|が)\s*|(?<=[\uac00-\ud7af])(?:는|은|이|가)?\s+|\s+)"
    r"(?P<value>[\"'「『“][^\"'」』”\n]{1,80}[\"'」』”]|[^\s\"'「『“,，。、\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+)"
)
_FOREIGN_HINTS = (
    "senha", "palavra", "contrase", "clave", "passwort", "kennwort", "passe", "mdp", "wachtwoord", "parola", "hasło",
    "haslo", "ifre", "senord", "adgangskode", "salasana", "парол", "密码", "密碼", "口令", "パスワード", "비밀번호",
    "비번", "암호",
)  # fmt: skip
_FOREIGN_COMMON_WORDS = """
    segura seguro fuerte débil debil incorrecta correcta nueva vieja obligatoria necesaria válida valida inválida
    larga corta igual diferente distinta falsa errada errónea forte fraca obrigatória obrigatoria necessária
    nova antiga curta longa correta incorreta expirada falsch richtig neu alt sicher unsicher stark schwach
    abgelaufen ungültig gültig erforderlich leer geändert faible fort correct incorrect nouveau ancien trop
    obligatoire expiré invalide valide vide sbagliata giusta nuova vecchia sicura debole obbligatoria scaduta
    fout sterk zwak nieuw oud verplicht verlopen ongeldig geldig leeg juist onjuist неверный верный новый
    старый слабый надежный надёжный неправильный нужен нужно изменен изменён sterkt svagt fel rätt nytt
    gammalt yanlış doğru yeni eski
"""
_FOREIGN_COMMON = frozenset(_FOREIGN_COMMON_WORDS.split())


def _foreign_kind(m: re.Match[str]) -> str | tuple[str, int] | None:
    value = m.group("value")
    if _already_masked(value):
        return None
    bare = value.strip("\"'`.,;:!?「」『』“”")
    if value[0] in "\"'「『“" and len(bare) >= 3:
        return "password"
    if not m.group("sep").strip() and not _looks_secret(value):  # `мой пароль X`: only a value that is no word
        return None
    spaced = _spaced_end(m)
    if spaced is not None:
        return "password", spaced
    return "password" if len(bare) >= 4 and bare.lower() not in _FOREIGN_COMMON | _COMMON else None


# -- PINs, cards, identity numbers, seed phrases, passphrases ------------------------------------------

_PIN_RE = re.compile(
    r"(?i)(?<![A-Za-z])(?P<ident>pin(?:[ \-]?(?:code|number|nummer|número|numero|码|碼|번호))?|geheimzahl|nip"
    r"|暗証番号|ПИН(?:-код)?|(?:door|gate|alarm|access|entry|safe|locker|lock|garage|keypad)[ \-]?code)(?![A-Za-z])"
    r"[^\n\d.!?;]{0,24}?(?<![\d.])(?P<value>\d{4,8})(?![\d.,]\d|\d)"
)
_PIN_HINT_RE = re.compile(r"pin\b")  # a literal prefix: fast; not "mapping", "opinion"
_PIN_HINTS = (
    "pin码", "pin碼", "pin번호", "geheimzahl", "nip", "暗証番号", "пин", "door", "gate", "alarm", "access code",
    "entry code", "safe code", "lock", "garage", "keypad",
)  # fmt: skip
_CVV_RE = re.compile(
    r"(?i)(?<![A-Za-z])(?P<ident>cvv2?|cvc2?|csc|security code|código de segurança|código de seguridad"
    r"|card verification (?:code|value)|prüfnummer|cryptogramme)(?![A-Za-z])[^\n\d]{0,12}?(?P<value>\d{3,4})(?!\d)"
)
_CVV_HINTS = ("cvv", "cvc", "csc", "security code", "código", "verification", "prüfnummer", "cryptogramme")
_CARD_RE = re.compile(r"(?<![\d\-.])(?:\d[ \-]?){12,18}\d(?![\d\-]|\.\d)")
_CARD_HINT_RE = re.compile(r"\d\d\d\d[ \-]?\d\d\d\d")  # spelled out: faster than \d{4}
_CARD_PREFIX_RE = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|6011|6[245]")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> str:
    written = m.group(0)
    digits = written.replace(" ", "").replace("-", "")
    separators = {c for c in written if c in " -"}
    if not 13 <= len(digits) <= 19 or len(separators) > 1 or not _CARD_PREFIX_RE.match(digits) or not _luhn(digits):
        return written
    return marker("card")


# Identity numbers with an unmistakable shape: US SSN, Brazilian CPF, Korean RRN, Italian codice fiscale.
_ID_SHAPES_RE = re.compile(
    r"(?<![\w\-.])(?:(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}|\d{3}\.\d{3}\.\d{3}-\d{2}"
    r"|\d{6}-[1-4]\d{6}|[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z])(?![\w\-])"
)
_ID_NAMES = (
    r"(?i:ssn|social security(?: number| no\.?)?|social insurance(?: number)?|sozialversicherungsnummer|steuer-?id"
    r"|steuernummer|steuer-identifikationsnummer|num[ée]ro de s[ée]curit[ée] sociale|codice fiscale|aadhaar"
    r"|national insurance(?: number)?|passport(?: number| no\.?)?|passaporte|pasaporte|reisepass(?:nummer)?"
    r"|personnummer|tax id|id number|número de identidad|documento de identidad|carteira de identidade"
    r"|身份证(?:号码?)?|身份證(?:號碼?)?|マイナンバー|個人番号|주민등록번호|여권번호)"
    r"|\b(?:SSN|SIN|TIN|CPF|RG|DNI|NIE|NIF|NIR|BSN|PESEL|NINO|CURP|RUT|NSS)\b"
)
_ID_NAMED_RE = re.compile(
    rf"(?P<ident>{_ID_NAMES})(?:[ \t]*(?:[:：#=]|is|es|é|ist|est|lautet|è|是|为|は|는|은|number|no\.?|n[º°]|nr\.?)"
    r"[ \t]*|[ \t]+)*(?P<value>(?!\[REDACTED)[A-Z0-9](?:[ .\-/]?[A-Z0-9]){5,23})(?![A-Za-z0-9])"
)
_ID_HINTS = (
    "ssn", "social", "sozial", "steuer", "sécurité", "securite", "fiscale", "aadhaar", "insurance", "passport",
    "passaporte", "pasaporte", "reisepass", "personnummer", "tax id", "id number", "identidad", "identidade", "身份",
    "マイナンバー", "個人番号", "주민등록번호", "여권번호",
)  # fmt: skip
_ID_ACRONYMS = ("SIN", "TIN", "CPF", "RG", "DNI", "NIE", "NIF", "NIR", "BSN", "PESEL", "NINO", "CURP", "RUT", "NSS")
_ID_SHAPES_HINT_RE = re.compile(r"\d[\-.]\d")
_FISCAL_CODE_HINT_RE = re.compile(r"\d\d[A-Z]\d\d")
_IBAN_HINT_RE = re.compile(r"[A-Z][A-Z]\d\d")
_IBAN_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])")


def _named_id_kind(m: re.Match[str]) -> str | None:
    return "national-id" if sum(c.isdigit() for c in m.group("value")) >= 5 else None


def _iban(m: re.Match[str]) -> str:
    compact = m.group(0).replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return m.group(0)
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return marker("bank-account") if int(number) % 97 == 1 else m.group(0)


_SEED_NAMES = (
    r"(?:seed|recovery|mnemonic|backup|secret|wallet)[ \-]?(?:phrase|words?)|mnemonic|wallet backup|metamask words?"
    r"|frase (?:semente|semilla|secreta|de recupera[çc][ãa]o|de recuperaci[óo]n)|palavras de recupera[çc][ãa]o"
    r"|phrase (?:de récupération|secrète)|wiederherstellungsphrase|seed-?phrase"
    r"|助记词|助記詞|シードフレーズ|복구 구문|시드 구문"
)
_SEED_RE = re.compile(
    rf"(?i)(?<![\w])(?P<ident>{_SEED_NAMES})(?:[ \t]*(?:[:：=]|is|are|é|es|ist|est|是|は)[ \t]*|[ \t]+)*\n?"
    r"(?P<value>(?:[ \t]*(?:\d{1,2}[.)][ \t]*)?[^\W\d_]{2,12}[ \t,]*(?:\n(?=[ \t]*\d{1,2}[.)]))?){12,24})"
)
_SEED_HINTS = (
    "phrase", "seed", "wallet", "metamask", "mnemonic", "recovery word", "backup word", "secret word", "frase",
    "palavras de", "wiederherstellung", "助记词", "助記詞", "シードフレーズ", "구문",
)  # fmt: skip
# 12 or more numbered lines of one word each ("1. zoo", "2. vessel", ...): a written-down wallet seed
_SEED_LIST_RE = re.compile(
    r"(?m)^[ \t]*1[.)][ \t]*[a-z]{3,8}[ \t]*\n(?:[ \t]*\d{1,2}[.)][ \t]*[a-z]{3,8}[ \t]*(?:\n|$)){11,23}"
)
_PASSPHRASE_RE = re.compile(
    r"(?i)(?<![A-Za-z])(?P<ident>pass[ \-]?phrase|senha[ \-]frase|frase[ \-]senha|frase de paso|phrase secrète)"
    r"(?:\s+(?:for|of|on)(?:\s+[\w.\-@]+){1,3}?)?(?P<sep>\s+(?:is|was|é|es|est|ist)\s+|\s*[:：=]\s*)"
    r"(?P<value>(?!\[REDACTED)[^\s\"'`][^\n.;,!?()\"'`]{2,120})"
)


_PUTTY_RE = re.compile(r"Private-Lines:[ \t]*\d+[ \t]*\n(?P<value>(?:[A-Za-z0-9+/=]{8,}[ \t]*(?:\n|$))+)")


def _mask_lines_kept(m: re.Match[str], kind: str) -> str:
    """Mask a value that may span lines: one marker, and the value's newlines kept."""
    start, end = m.span("value") if "value" in m.re.groupindex else m.span()
    body = m.string[start:end]
    trailing = body[len(body.rstrip("\n")) :]
    masked = marker(kind) + "\n" * body.rstrip("\n").count("\n") + trailing
    return m.string[m.start() : start] + masked + m.string[end : m.end()]


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


def _has(text: str, hints: tuple[str, ...]) -> bool:
    return any(hint in text for hint in hints)


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
    for hint, pattern in _CLI_MORE_RES:
        if any(h in lower for h in hint):
            text = _sub_value(pattern, text, "password")
    if text.count(":") >= 4:
        text = _sub_value(_PGPASS_RE, text, "password")
    if "value" in lower:
        text = _scan(_NAME_VALUE_RE, text, _named_value_kind)
    if "Private-Lines" in text:
        text = _PUTTY_RE.sub(lambda m: _mask_lines_kept(m, "private-key"), text)
    if "</" in text:
        text = _scan(_XML_ELEMENT_RE, text, _named_value_kind)
    if _has(lower, _SEED_HINTS):
        text = _SEED_RE.sub(lambda m: _mask_lines_kept(m, "seed-phrase"), text)
    if "\n2." in text or "\n2)" in text:
        text = _SEED_LIST_RE.sub(lambda m: _mask_lines_kept(m, "seed-phrase"), text)
    if "phrase" in lower or "senha" in lower or "frase" in lower:
        text = _PASSPHRASE_RE.sub(lambda m: _mask_lines_kept(m, "passphrase"), text)
    if "-" in text:
        text = _scan(_FLAG_RE, text, _flag_kind)
    text = _scan(_ASSIGN_RE, text, _assignment_kind)
    hinted = _has(lower, _PROSE_HINTS)
    if hinted:
        text = _scan(_PROSE_RE, text, _prose_kind)
    foreign = _has(lower, _FOREIGN_HINTS)
    if foreign:
        text = _scan(_FOREIGN_PROSE_RE, text, _foreign_kind)
    if "|" in text and (hinted or foreign):
        text = _mask_tables(text)
    if "bearer" in lower or "basic" in lower:
        text = _sub_value(_BEARER_RE, text, "auth-header")
    if _PIN_HINT_RE.search(lower) or _has(lower, _PIN_HINTS):
        text = _sub_value(_PIN_RE, text, "pin")
    if _has(lower, _CVV_HINTS):
        text = _sub_value(_CVV_RE, text, "card")
    if _CARD_HINT_RE.search(text):
        text = _CARD_RE.sub(_card, text)
    if _has(lower, _ID_HINTS) or _has(text, _ID_ACRONYMS):
        text = _scan(_ID_NAMED_RE, text, _named_id_kind)
    if _ID_SHAPES_HINT_RE.search(text) or _FISCAL_CODE_HINT_RE.search(text):
        text = _ID_SHAPES_RE.sub(marker("national-id"), text)
    if _IBAN_HINT_RE.search(text):
        text = _IBAN_RE.sub(_iban, text)
    return text


# -- statements that must not be kept ----------------------------------------------------------------------

_MARKER_RE = re.compile(r"\[REDACTED:([a-z0-9\-]+)\]")
_SENSITIVE_CUE_RE = re.compile(
    r"(?i)(?:pass(?:word|phrase|code)|(?<![A-Za-z])(?:pw|pwd|pin|cvv|cvc|ssn|iban|mdp)(?![A-Za-z])|senha|contrase[ñn]a"
    r"|clave|passwort|kennwort|geheimzahl|mot de passe|wachtwoord|has[łl]o|[şs]ifre|l[öo]senord|пароль|пин|密码|密碼"
    r"|暗証番号|パスワード|비밀번호|비번|seed phrase|recovery phrase|mnemonic|frase semente|social security"
    r"|card number|n[úu]mero d[eo] (?:cart[ãa]o|tarjeta)|kartennummer|(?:door|gate|alarm|access|safe) code"
    r"|api[ \-]?key|secret key|access token|api token)"
    r"(?:\s+(?:for|of|on|at|do|da|de|del|du|für|des|van|di)(?:\s+[\w.\-@']+){1,3}?)?"
    r"(?:\s+(?:is|es|é|ist|est|è|lautet|är|was|are|era|foi)\s+|\s*[:：=]\s*|是|は|는\s*|은\s*)"
    r"(?P<value>[^\s.,;!?。]+)"
)
_NO_VALUE_WORDS = "in on at under behind inside written taped somewhere noted sent attached elsewhere ok okay fine"
_NO_VALUE = _COMMON | _FOREIGN_COMMON | frozenset(_NO_VALUE_WORDS.split())


def sensitive_kind(text: str) -> str | None:
    """Why a statement must not be kept as a memory: it carries a credential, PIN, card, identity number or seed
    phrase (what `redact` masks, and values it cannot tell from words: "my PIN is four four two one"), else None.
    Auto-capture drops such a statement instead of storing a redacted copy of it."""
    if not text:
        return None
    masked = redact(text)
    if masked != text:
        found = _MARKER_RE.search(masked)
        return found.group(1) if found else "secret"
    for cue in _SENSITIVE_CUE_RE.finditer(text):
        if cue.group("value").strip("\"'`«»“”").lower() not in _NO_VALUE:
            return "credential"
    return None
