"""``[context]``: the Context Runtime — prompt budget, sessions, topic threads, retrieval limits.

Durations are milliseconds (``*_ms``); :mod:`runtime.context` converts them to seconds.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from runtime.config._base import Section


class ContextConfig(Section):
    # Tokens kept free for the model's answer; the prompt gets the window minus this.
    reply_reserve_tokens: int = Field(default=2_048, ge=64)
    # Used when the serving model's window is unknown; the router passes the real one when it knows.
    context_window_tokens: int = Field(default=32_000, ge=1_024)
    # A cap on the prompt whatever the window: a 200k window does not mean every turn should cost 200k.
    max_prompt_tokens: int = Field(default=24_000, ge=512)
    # Raw turns of the conversation thread in the session slot (design/001's sliding window).
    recent_dialogue_max: int = Field(default=20, ge=0, le=200)
    recent_actions_max: int = Field(default=8, ge=0, le=100)
    # A session with no turn for this long is marked idle (the next turn wakes it).
    session_idle_after_ms: int = Field(default=300_000, ge=1_000)
    # A session with no turn for this long is closed (transcript archived, handoff written).
    session_idle_timeout_ms: int = Field(default=1_800_000, ge=10_000)
    # design/000 §10.4: at most this many retrieved items (2..5) per packet.
    retrieved_max: int = Field(default=5, ge=2, le=5)
    # Retrieved items scoring below this are left out rather than padded in.
    retrieved_min_confidence: float = Field(default=0.15, ge=0.0, le=1.0)
    # An input continues the chat's most recent topic thread if that thread was active this recently.
    thread_continuation_ms: int = Field(default=900_000, ge=0)
    # Lexical overlap (0..1) an input needs with a thread's title, tags or goals to be matched to it.
    thread_match_threshold: float = Field(default=0.34, ge=0.0, le=1.0)
    # How long the handoff writer waits for the model before using the deterministic digest.
    handoff_timeout_ms: int = Field(default=20_000, ge=100)

    @model_validator(mode="after")
    def _reserve_fits(self) -> ContextConfig:
        if self.reply_reserve_tokens >= self.context_window_tokens:
            raise ValueError("reply_reserve_tokens must be smaller than context_window_tokens")
        return self

    def prompt_budget(self, context_window: int | None = None) -> int:
        """Tokens a prompt may use: the window (given or configured) minus the reserve, capped."""
        window = context_window or self.context_window_tokens
        return max(0, min(window - self.reply_reserve_tokens, self.max_prompt_tokens))
