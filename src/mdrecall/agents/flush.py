"""The pre-compaction memory flush: when to give the agent a silent turn to write durable memories.

A session near auto-compaction is about to lose detail. Before that happens, the agent gets one extra turn
(system prompt + user prompt, both mentioning `NO_REPLY` so an agent with nothing to save stays silent) to
write notes to `memory/YYYY-MM-DD.md` or `MEMORY.md`.

`should_flush(...)` is a pure function: the caller keeps the session counters and records
`last_flush_count = compaction_count` after running a flush. The rules:

- threshold = context_window - reserve_floor - soft_threshold (tokens); flush when total >= threshold;
- once per compaction cycle: skip when a flush already ran for this `compaction_count` (an exact equality
  test: no `+ 1`, no parity, and `None`/0 counters are values, not "false");
- skipped when the workspace is not writable, memory flush is disabled, or the turn is a heartbeat.

Windows too small for the configured headroom are clamped instead of never firing (see `flush_threshold`).
When the token count is unknown it is estimated from the transcript size at `BYTES_PER_TOKEN` bytes per
token: ~4 bytes per token holds for English text in UTF-8, and a JSONL transcript's JSON overhead makes the
estimate high, which errs towards flushing early (cheap) rather than late (memories lost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

DEFAULT_RESERVE_TOKENS_FLOOR = 20_000
DEFAULT_SOFT_THRESHOLD_TOKENS = 4_000
BYTES_PER_TOKEN = 4
SILENT_REPLY_TOKEN = "NO_REPLY"

DEFAULT_FLUSH_SYSTEM_PROMPT = (
    "Pre-compaction memory flush turn. "
    "The session is near auto-compaction; capture durable memories to disk. "
    f"You may reply, but usually {SILENT_REPLY_TOKEN} is correct."
)
DEFAULT_FLUSH_PROMPT = (
    "Pre-compaction memory flush. "
    "Store durable memories now (use memory/YYYY-MM-DD.md; create memory/ if needed). "
    f"If nothing to store, reply with {SILENT_REPLY_TOKEN}."
)


@dataclass(frozen=True)
class FlushDecision:
    """Whether to run the flush turn now, and why (the reason is for logs and tests)."""

    flush: bool
    reason: str
    threshold: int
    total_tokens: int | None = None
    estimated: bool = False
    clamped: bool = False

    def __bool__(self) -> bool:
        return self.flush


@dataclass(frozen=True)
class FlushPrompts:
    system_prompt: str
    prompt: str


@dataclass(frozen=True)
class FlushSettings:
    """`agents.defaults.compaction` as far as the flush is concerned (OpenClaw's keys and defaults)."""

    enabled: bool = True
    reserve_tokens_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR
    soft_threshold_tokens: int = DEFAULT_SOFT_THRESHOLD_TOKENS
    system_prompt: str = DEFAULT_FLUSH_SYSTEM_PROMPT
    prompt: str = DEFAULT_FLUSH_PROMPT

    @classmethod
    def from_compaction_config(cls, compaction: Mapping[str, Any] | None) -> FlushSettings:
        """Read `{reserveTokensFloor, memoryFlush: {enabled, softThresholdTokens, systemPrompt, prompt}}`."""
        compaction = compaction or {}
        flush = compaction.get("memoryFlush") or {}
        return cls(
            enabled=bool(flush.get("enabled", True)),
            reserve_tokens_floor=_non_negative_int(compaction.get("reserveTokensFloor"), DEFAULT_RESERVE_TOKENS_FLOOR),
            soft_threshold_tokens=_non_negative_int(flush.get("softThresholdTokens"), DEFAULT_SOFT_THRESHOLD_TOKENS),
            system_prompt=_prompt(flush.get("systemPrompt"), DEFAULT_FLUSH_SYSTEM_PROMPT),
            prompt=_prompt(flush.get("prompt"), DEFAULT_FLUSH_PROMPT),
        )

    def prompts(self, when: date | datetime | None = None) -> FlushPrompts:
        return flush_prompts(self.system_prompt, self.prompt, when)


def _prompt(value: Any, default: str) -> str:
    text = value.strip() if isinstance(value, str) else ""
    return ensure_no_reply_hint(text or default)


def _non_negative_int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return max(0, int(value))


def ensure_no_reply_hint(text: str) -> str:
    """Custom prompts keep the silent-reply escape hatch, or every flush would show up in the chat."""
    if SILENT_REPLY_TOKEN in text:
        return text
    return f"{text}\n\nIf no user-visible reply is needed, start with {SILENT_REPLY_TOKEN}."


def flush_prompts(
    system_prompt: str | None = None, prompt: str | None = None, when: date | datetime | None = None
) -> FlushPrompts:
    """The two prompts of the flush turn; with `when`, `YYYY-MM-DD` becomes that date (the daily file)."""
    system = _prompt(system_prompt, DEFAULT_FLUSH_SYSTEM_PROMPT)
    user = _prompt(prompt, DEFAULT_FLUSH_PROMPT)
    if when is not None:
        day = (when.date() if isinstance(when, datetime) else when).isoformat()
        system, user = system.replace("YYYY-MM-DD", day), user.replace("YYYY-MM-DD", day)
    return FlushPrompts(system_prompt=system, prompt=user)


def estimate_tokens(transcript_bytes: int) -> int:
    """Tokens from a transcript size: ceil(bytes / BYTES_PER_TOKEN)."""
    return math.ceil(max(0, transcript_bytes) / BYTES_PER_TOKEN)


def flush_threshold(
    context_window: int,
    reserve_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR,
    soft_threshold: int = DEFAULT_SOFT_THRESHOLD_TOKENS,
) -> tuple[int, bool]:
    """(threshold, clamped): where the flush fires, always in 1..context_window-1 for a window >= 2.

    Normally `window - reserve - soft`. If the reserve alone eats the window, compaction is assumed at
    half the window; if the soft margin does not fit before that point, it shrinks to half the room left.
    So a small window flushes earlier than usual instead of never (or on every turn).
    """
    window = max(1, int(context_window))
    reserve = max(0, int(reserve_floor))
    soft = max(0, int(soft_threshold))
    clamped = False
    room = window - reserve  # tokens before compaction starts
    if room <= 0:
        room, clamped = window // 2, True
    if soft >= room:
        soft, clamped = room // 2, True
    return max(1, room - soft), clamped


def should_flush(
    total_tokens: int | None,
    context_window: int | None,
    reserve_floor: int = DEFAULT_RESERVE_TOKENS_FLOOR,
    soft_threshold: int = DEFAULT_SOFT_THRESHOLD_TOKENS,
    compaction_count: int | None = 0,
    last_flush_count: int | None = None,
    transcript_bytes: int | None = None,
    workspace_writable: bool = True,
    enabled: bool = True,
    is_heartbeat: bool = False,
) -> FlushDecision:
    """Decide whether to run the pre-compaction flush turn now (see the module docstring for the rules)."""
    if not context_window or context_window <= 0:
        return FlushDecision(False, "unknown context window", 0, total_tokens)
    threshold, clamped = flush_threshold(context_window, reserve_floor, soft_threshold)

    def decide(flush: bool, reason: str, tokens: int | None = None, estimated: bool = False) -> FlushDecision:
        return FlushDecision(flush, reason, threshold, tokens, estimated, clamped)

    if not enabled:
        return decide(False, "memory flush disabled")
    if not workspace_writable:
        return decide(False, "workspace is read-only")
    if is_heartbeat:
        return decide(False, "heartbeat turn")

    tokens, estimated = total_tokens, False
    if tokens is None or tokens <= 0:
        if transcript_bytes is None or transcript_bytes <= 0:
            return decide(False, "token count unknown")
        tokens, estimated = estimate_tokens(transcript_bytes), True
    if tokens < threshold:
        return decide(False, "below threshold", tokens, estimated)

    cycle = compaction_count if compaction_count is not None else 0
    if last_flush_count is not None and last_flush_count == cycle:
        return decide(False, "already flushed this compaction cycle", tokens, estimated)
    return decide(True, "over threshold", tokens, estimated)


def flush_settings_from_openclaw(raw: Mapping[str, Any], agent_id: str | None = None) -> FlushSettings:
    """Pre-compaction flush settings from an OpenClaw config (defaults merged with the agent's own)."""
    from mdrecall.config.openclaw import openclaw_compaction

    return FlushSettings.from_compaction_config(openclaw_compaction(raw, agent_id))
