"""The pre-compaction flush decision: threshold, once per compaction cycle, guards, and the upstream bugs."""

from __future__ import annotations

from datetime import date

import pytest

from mdrecall.agents.flush import (
    BYTES_PER_TOKEN,
    DEFAULT_FLUSH_PROMPT,
    DEFAULT_FLUSH_SYSTEM_PROMPT,
    SILENT_REPLY_TOKEN,
    FlushSettings,
    estimate_tokens,
    flush_prompts,
    flush_threshold,
    should_flush,
)

WINDOW = 200_000
THRESHOLD = WINDOW - 20_000 - 4_000  # 176 000


@pytest.mark.parametrize(
    ("total", "compaction", "last_flush", "expected", "reason"),
    [
        (THRESHOLD - 1, 0, None, False, "below threshold"),
        (THRESHOLD, 0, None, True, "over threshold"),  # fresh session: counters 0 / None must not block
        (THRESHOLD + 5_000, None, None, True, "over threshold"),  # compaction count unknown = cycle 0
        (THRESHOLD, 0, 0, False, "already flushed this compaction cycle"),
        (THRESHOLD, None, 0, False, "already flushed this compaction cycle"),
        (THRESHOLD, 1, 0, True, "over threshold"),  # next cycle fires again
        (THRESHOLD, 2, 1, True, "over threshold"),  # ... and the one after (no every-other-cycle)
        (THRESHOLD, 2, 2, False, "already flushed this compaction cycle"),
        (THRESHOLD, 3, 1, True, "over threshold"),  # a missed cycle does not block later ones
        (THRESHOLD, 0, 5, True, "over threshold"),  # counter reset (new session): fires
        (WINDOW, 7, 6, True, "over threshold"),
    ],
)
def test_decision_table(
    total: int, compaction: int | None, last_flush: int | None, expected: bool, reason: str
) -> None:
    decision = should_flush(total, WINDOW, compaction_count=compaction, last_flush_count=last_flush)
    assert decision.flush is expected and bool(decision) is expected
    assert decision.reason == reason
    assert decision.threshold == THRESHOLD


def test_fires_once_in_every_cycle() -> None:
    """A session hovering over the threshold across compactions: one flush per cycle, every cycle."""
    last_flush: int | None = None
    fired = []
    for cycle in range(6):
        for _turn in range(3):
            if should_flush(THRESHOLD + 100, WINDOW, compaction_count=cycle, last_flush_count=last_flush):
                fired.append(cycle)
                last_flush = cycle
    assert fired == [0, 1, 2, 3, 4, 5]


def test_guards() -> None:
    assert should_flush(WINDOW, WINDOW, workspace_writable=False).reason == "workspace is read-only"
    assert should_flush(WINDOW, WINDOW, enabled=False).reason == "memory flush disabled"
    assert should_flush(WINDOW, WINDOW, is_heartbeat=True).reason == "heartbeat turn"
    for window in (None, 0, -5):
        assert not should_flush(WINDOW, window)
    assert should_flush(None, WINDOW).reason == "token count unknown"
    assert should_flush(0, WINDOW).reason == "token count unknown"


def test_custom_reserve_and_soft_threshold() -> None:
    assert should_flush(95_000, 128_000, reserve_floor=30_000, soft_threshold=3_000).flush
    assert not should_flush(94_999, 128_000, reserve_floor=30_000, soft_threshold=3_000).flush


@pytest.mark.parametrize(
    ("window", "expected", "clamped"),
    [
        (200_000, 176_000, False),
        (24_001, 1, False),  # tiny but positive room: the formula still holds
        (24_000, 2_000, True),  # soft margin does not fit before compaction: halved room
        (22_000, 1_000, True),
        (20_000, 6_000, True),  # reserve eats the window: compaction assumed at half of it
        (8_000, 2_000, True),
        (2, 1, True),
        (1, 1, True),
    ],
)
def test_small_windows_clamp(window: int, expected: int, clamped: bool) -> None:
    threshold, was_clamped = flush_threshold(window)
    assert (threshold, was_clamped) == (expected, clamped)
    assert 1 <= threshold <= window


def test_small_window_fires_and_respects_cycles() -> None:
    # 16k window with the default 24k headroom: compaction assumed at 8k, the flush 4k before it.
    decision = should_flush(7_000, 16_000)
    assert decision.flush and decision.clamped and decision.threshold == 4_000
    assert not should_flush(3_999, 16_000)
    assert not should_flush(7_000, 16_000, compaction_count=0, last_flush_count=0)


def test_estimate_from_transcript_bytes() -> None:
    assert BYTES_PER_TOKEN == 4
    assert estimate_tokens(0) == 0 and estimate_tokens(1) == 1 and estimate_tokens(8) == 2
    decision = should_flush(None, WINDOW, transcript_bytes=THRESHOLD * BYTES_PER_TOKEN)
    assert decision.flush and decision.estimated and decision.total_tokens == THRESHOLD
    below = should_flush(None, WINDOW, transcript_bytes=THRESHOLD * BYTES_PER_TOKEN - BYTES_PER_TOKEN)
    assert not below.flush and below.estimated
    known = should_flush(1_000, WINDOW, transcript_bytes=10**9)  # a known count wins over the estimate
    assert not known.flush and not known.estimated


def test_default_prompts_are_silent() -> None:
    prompts = flush_prompts()
    assert prompts.system_prompt == DEFAULT_FLUSH_SYSTEM_PROMPT and prompts.prompt == DEFAULT_FLUSH_PROMPT
    assert SILENT_REPLY_TOKEN in prompts.system_prompt and SILENT_REPLY_TOKEN in prompts.prompt
    assert "memory/YYYY-MM-DD.md" in prompts.prompt
    dated = flush_prompts(when=date(2026, 11, 2))
    assert "memory/2026-11-02.md" in dated.prompt


def test_custom_prompts_keep_the_no_reply_hint() -> None:
    prompts = flush_prompts("Session nearing compaction. Store durable memories now.", "Write notes.")
    assert prompts.system_prompt.startswith("Session nearing compaction.")
    assert SILENT_REPLY_TOKEN in prompts.system_prompt and SILENT_REPLY_TOKEN in prompts.prompt
    kept = "Write lasting notes to memory/YYYY-MM-DD.md; reply with NO_REPLY if nothing to store."
    assert flush_prompts(prompt=kept).prompt == kept


def test_settings_from_openclaw_compaction_block() -> None:
    settings = FlushSettings.from_compaction_config(
        {
            "reserveTokensFloor": 30_000,
            "memoryFlush": {"enabled": False, "softThresholdTokens": 2_000, "prompt": "Save notes. NO_REPLY"},
        }
    )
    assert (settings.enabled, settings.reserve_tokens_floor, settings.soft_threshold_tokens) == (False, 30_000, 2_000)
    assert settings.prompts().prompt == "Save notes. NO_REPLY"
    defaults = FlushSettings.from_compaction_config(None)
    assert defaults == FlushSettings()
    assert FlushSettings.from_compaction_config({"reserveTokensFloor": "lots"}).reserve_tokens_floor == 20_000
