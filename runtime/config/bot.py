"""``[bot]`` and ``[outbound]``: how the edge talks to QQ.

::

    [bot]
    shadow_mode = false          # ingest, decide and log, but send nothing (forced on without a model)
    mute_words = ["闭嘴", "安静", "别说话", "shut up"]
    # unmute_phrase = "灰风说话"   # lifts a quiet period (superusers can always: /unmute);
                                 # unset: the persona's name + 说话
    quiet_minutes = 30
    max_reply_chars = 600        # a reply longer than this is cut (with a marker)
    split_at = 200               # ... and sent as several messages of about this length
    max_message_chars = 4000     # incoming text longer than this reaches the kernel truncated
    command_prefix = "/"         # superuser commands: /status, /why 123, /mute ...
    max_inflight = 64            # messages handed to the runtime at once (one chat's stay in order)
    max_events_in_flight = 256   # events NoneBot handles at once; more wait as raw frames ...
    event_backlog_mb = 64        # ... up to this much, then the oldest chatter is dropped (floods only)
    journal_mb = 256             # inbound journal: message frames on disk until stored (0: off)
    replay_answer_minutes = 10   # journaled messages re-delivered at start are answered if this young
    max_frame_mb = 64            # a bigger WebSocket frame closes the connection (the protocol's rule)
    ws_compression = false       # permessage-deflate when the implementation offers it (off: plain frames)

    [outbound]
    max_per_minute = 20          # all sends of the account together (QQ restricts fast senders)
    burst = 5
    retry_delay_ms = 1500
    send_timeout_ms = 10000
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from runtime.config._base import Section


class BotConfig(Section):
    shadow_mode: bool = False
    # Said to the bot (an @, a reply, its name first, or in private) these open a quiet period.
    mute_words: tuple[str, ...] = ("闭嘴", "安静", "别说话", "别吵", "shut up")
    # Unset (None): the persona's name and 说话 ("灰风说话"), so a renamed persona is not woken by
    # the old name; see :meth:`unmute_phrase_for`.
    unmute_phrase: str | None = None
    quiet_minutes: int = Field(default=30, ge=1, le=7 * 24 * 60)
    max_reply_chars: int = Field(default=600, ge=20, le=20_000)
    split_at: int = Field(default=200, ge=20, le=5_000)
    # The kernel never sees more than this much of one message; the rest becomes a marker.
    max_message_chars: int = Field(default=4_000, ge=100, le=100_000)
    command_prefix: str = Field(default="/", min_length=1, max_length=3)
    # Messages handed to the runtime at once; more wait (per-chat order is kept either way).
    max_inflight: int = Field(default=64, ge=1, le=10_000)
    # Events NoneBot handles at once; more wait as raw frames, up to event_backlog_mb, then the
    # oldest are dropped (only under a flood faster than the bot can handle).
    max_events_in_flight: int = Field(default=256, ge=1, le=100_000)
    event_backlog_mb: int = Field(default=64, ge=1, le=4_096)
    # Every message frame is journaled the moment it is read, until SQLite has it (a kill -9 then
    # loses only what was not yet read); the journal never holds more than this (0 turns it off).
    journal_mb: int = Field(default=256, ge=0, le=65_536)
    # Journaled messages re-delivered at start: addressed ones this young are answered, older
    # ones are only stored.
    replay_answer_minutes: int = Field(default=10, ge=0, le=24 * 60)
    # The largest WebSocket frame the server accepts; a bigger one closes the connection (status
    # 1009, the WebSocket protocol's rule: the server cannot skip a frame it will not read).
    max_frame_mb: int = Field(default=64, ge=1, le=1_024)
    # Whether the OneBot WebSocket accepts permessage-deflate. Implementations offer it by default,
    # and on the loopback or LAN link they use it buys nothing: every frame would be compressed on
    # one side and inflated on the other, on the bot's event loop.
    ws_compression: bool = False

    def unmute_phrase_for(self, persona_name: str) -> str:
        """The phrase that lifts a quiet period members asked for, for a persona called ``persona_name``."""
        return self.unmute_phrase if self.unmute_phrase is not None else f"{persona_name}说话"

    @field_validator("mute_words")
    @classmethod
    def _no_blank_words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        words = tuple(word.strip() for word in value)
        if any(not word for word in words):
            raise ValueError("mute words must not be blank")
        return words

    @model_validator(mode="after")
    def _split_fits(self) -> BotConfig:
        if self.split_at > self.max_reply_chars:
            raise ValueError("bot.split_at must not exceed bot.max_reply_chars")
        return self


class OutboundConfig(Section):
    """All sends of one QQ account, across every group and private chat."""

    max_per_minute: int = Field(default=20, ge=1, le=600)
    # Sends allowed back to back before the per-minute rate applies.
    burst: int = Field(default=5, ge=1, le=100)
    retry_delay_ms: int = Field(default=1_500, ge=0, le=60_000)
    send_timeout_ms: int = Field(default=10_000, ge=100, le=120_000)
    # Restriction-like failures in a row (retcode 1200, timeouts) before the account's sends pause.
    restriction_failures: int = Field(default=3, ge=1, le=100)
    # The first pause; each pause after a failed probe doubles, up to restriction_pause_max_ms.
    restriction_pause_ms: int = Field(default=60_000, ge=100, le=3_600_000)
    restriction_pause_max_ms: int = Field(default=1_800_000, ge=100, le=86_400_000)
