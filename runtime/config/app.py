"""``[runtime]``: how the running bot drives the kernel, its episodes and its background jobs.

Durations are milliseconds; :mod:`runtime.app` converts them to seconds.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from runtime.config._base import Section


class AppConfig(Section):
    # Episodes running at once across all chats (one chat never runs two at once).
    max_concurrent_episodes: int = Field(default=8, ge=1, le=1_000)
    # More episode slots that only forced episodes (an @, a reply, a private message) may take, so
    # unprompted ones, or a model hanging for some chats, never leave an addressed message waiting.
    forced_episode_reserve: int = Field(default=8, ge=0, le=1_000)
    # Kernel changes (events, lexicon, token counts) are written this often, and once more at stop.
    save_interval_ms: int = Field(default=2_000, ge=100, le=600_000)
    # Kernel prune, session idle sweep, chat-activity prune, store prune.
    maintenance_interval_ms: int = Field(default=60_000, ge=1_000)
    # Lexicon decay/expire is spread over this many maintenance ticks (a slice of the keys each).
    lexicon_decay_slices: int = Field(default=12, ge=1, le=1_000)
    # Ingest results kept per chat for the admin ``why``.
    why_per_chat: int = Field(default=64, ge=1, le=10_000)
    # Said once when a forced reply cannot be produced because the model failed.
    graceful_message: str = Field(default="我这会儿有点卡，稍后再回你", min_length=1, max_length=200)
    # Said when a forced reply cannot be produced because a guard stopped the episode (a repeated tool
    # call, unknown tools or unreadable answers in a row, too many waits, the step limit).
    guard_message: str = Field(default="这个我没弄明白，换个说法再问我一次？", min_length=1, max_length=200)
    # A chat hears the graceful or the guard message at most once in this long.
    graceful_cooldown_ms: int = Field(default=600_000, ge=0)
    # The time zone ``current_time`` answers in.
    timezone: str = "Asia/Shanghai"
    # Reminders (``schedule_message``): how far ahead, and how late one may still be sent.
    reminder_max_ahead_ms: int = Field(default=30 * 86_400_000, ge=60_000)
    reminder_grace_ms: int = Field(default=6 * 3_600_000, ge=1_000)
    # Reminders one chat may have pending at once.
    reminders_per_chat: int = Field(default=20, ge=1, le=1_000)
    # Sampling temperature for chat replies (None: the provider's default).
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    # Cap on the model's answer per step.
    max_reply_tokens: int = Field(default=1_024, ge=16, le=32_768)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value
