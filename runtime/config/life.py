"""``[life]``: the LifeDirector's tick, quiet hours and what counts as a live chat."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from runtime.config._base import Section

_HOURS = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")


class LifeConfig(Section):
    enabled: bool = True
    tick_ms: int = Field(default=30_000, ge=1_000)
    # No proactive message starts inside these local hours ("" for none); may wrap midnight.
    quiet_hours: str = "23:00-08:00"
    timezone: str = "Asia/Shanghai"
    # A chat is live only if a real (non-bot) message arrived this recently; silence is not activity.
    recent_activity_ms: int = Field(default=3_600_000, ge=60_000)
    # Proactive activations emitted per tick, across all sources.
    max_proposals_per_tick: int = Field(default=3, ge=0)
    # An activity or life source that takes longer than this in one tick is abandoned for that tick.
    source_timeout_ms: int = Field(default=5_000, ge=10)
    # Deadline of a proposal that does not set one, counted from its not_before.
    default_deadline_ms: int = Field(default=600_000, ge=1_000)
    # A question put to the bot that it never answered is followed up this long after (if still open),
    follow_up_after_ms: int = Field(default=1_800_000, ge=60_000)
    # and no longer once this long has passed since; a silent chat hears a proactive message only
    # with grounds (an open question, a due follow-up, a memory hook) and someone spoke this recently.
    follow_up_within_ms: int = Field(default=86_400_000, ge=60_000)
    # A due follow-up the bot promised, or a memory hook (a remembered day), may speak into a silent
    # chat if someone spoke there this recently.
    dated_within_ms: int = Field(default=604_800_000, ge=60_000)
    # The follow_up tool: how far ahead the bot may promise to come back, how many promises a chat
    # may hold at once, and how long after its time a follow-up not yet proposed (quiet hours) is kept.
    follow_up_max_ahead_ms: int = Field(default=604_800_000, ge=60_000)
    follow_ups_per_chat: int = Field(default=5, ge=1, le=100)
    follow_up_grace_ms: int = Field(default=43_200_000, ge=60_000)

    @field_validator("quiet_hours")
    @classmethod
    def _hours(cls, value: str) -> str:
        if value and not _HOURS.match(value):
            raise ValueError('quiet_hours must look like "23:00-08:00" (or be empty)')
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown timezone {value!r} (use an IANA name like Asia/Shanghai)") from None
        return value
