"""Sections read by the kernel: ``[budget]``, ``[attention]``, ``[threads]``, ``[lexicon]``,
``[scheduling]``. Durations in the file are milliseconds (``*_ms``); the kernel works in seconds."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from runtime.config._base import Section


class BudgetWindowConfig(Section):
    min_interval_ms: int = Field(default=3_000, ge=0)
    max_per_window: int = Field(default=20, ge=1)
    window_ms: int = Field(default=600_000, ge=1)


class BudgetConfig(Section):
    """Non-forced speech per group; ``forced`` is the separate, larger budget for @ / reply / private."""

    min_interval_ms: int = Field(default=90_000, ge=0)
    max_per_window: int = Field(default=4, ge=1)
    window_ms: int = Field(default=1_800_000, ge=1)
    forced: BudgetWindowConfig = BudgetWindowConfig()


class AttentionConfig(Section):
    high: float = Field(default=0.65, ge=0.0, le=1.0)
    medium: float = Field(default=0.35, ge=0.0, le=1.0)
    # Weights of the score's parts (design/0002 §8); keywords add, never force.
    weight_direct: float = Field(default=0.45, ge=0.0, le=1.0)
    weight_question: float = Field(default=0.15, ge=0.0, le=1.0)
    weight_thread: float = Field(default=0.25, ge=0.0, le=1.0)
    # Below ``medium``: a message with keywords and nothing else stays quiet; a keyword question speaks.
    weight_keyword: float = Field(default=0.3, ge=0.0, le=1.0)
    weight_silence: float = Field(default=0.05, ge=0.0, le=1.0)
    # Silence before a message this long earns the whole weight_silence (shorter earns a share).
    silence_full_ms: int = Field(default=600_000, ge=1_000)
    # Characters of a message the keyword match and the question check read: a 200,000-character
    # paste costs what its head costs, and its tail would not change the decision.
    read_max_chars: int = Field(default=4_000, ge=16)
    penalty_recently_replied: float = Field(default=0.2, ge=0.0, le=1.0)
    penalty_budget_exhausted: float = Field(default=0.3, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> AttentionConfig:
        if self.medium > self.high:
            raise ValueError("attention.medium must not exceed attention.high")
        return self


class SupersedePolicy(StrEnum):
    THREAD = "thread"  # a newer scheduled message in the same conversation thread cancels the older
    CHAT = "chat"  # ... anywhere in the same chat
    NONE = "none"  # every scheduled message keeps its activation


class SchedulingConfig(Section):
    """When scheduled activations fire. Delays count from the message; deadlines too."""

    # HIGH waits a moment so the speaker can finish and a newer message can supersede it.
    high_delay_ms: int = Field(default=2_000, ge=0)
    high_deadline_ms: int = Field(default=60_000, ge=1)
    medium_delay_ms: int = Field(default=10_000, ge=0)
    medium_deadline_ms: int = Field(default=120_000, ge=1)
    # A forced reply refused by its budget is retried until this long after the message, then dropped.
    forced_deadline_ms: int = Field(default=120_000, ge=0)
    supersede: SupersedePolicy = SupersedePolicy.THREAD
    # The bot spoke in the chat this recently (outside the message's thread): attention penalty.
    recently_replied_ms: int = Field(default=120_000, ge=0)
    # Texts waiting for lexicon learning (``[lexicon]`` caps what a batch reads); beyond this the
    # oldest are dropped, since learning is best effort.
    learn_queue_max: int = Field(default=5_000, ge=0)
    # A deliberation not finished after this long (its episode died) no longer holds its chat back.
    deliberation_timeout_ms: int = Field(default=300_000, ge=1_000)

    @model_validator(mode="after")
    def _deadlines_after_delays(self) -> SchedulingConfig:
        if self.high_deadline_ms < self.high_delay_ms:
            raise ValueError("scheduling.high_deadline_ms must not be below scheduling.high_delay_ms")
        if self.medium_deadline_ms < self.medium_delay_ms:
            raise ValueError("scheduling.medium_deadline_ms must not be below scheduling.medium_delay_ms")
        return self
