"""Sections read by the kernel: ``[budget]``, ``[attention]``, ``[threads]``, ``[lexicon]``,
``[scheduling]``. Durations in the file are milliseconds (``*_ms``); the kernel works in seconds."""

from __future__ import annotations

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
    # Weights of the score's parts (ADR-0002 §8); keywords add, never force.
    weight_direct: float = Field(default=0.45, ge=0.0, le=1.0)
    weight_question: float = Field(default=0.15, ge=0.0, le=1.0)
    weight_thread: float = Field(default=0.25, ge=0.0, le=1.0)
    weight_keyword: float = Field(default=0.35, ge=0.0, le=1.0)
    weight_silence: float = Field(default=0.05, ge=0.0, le=1.0)
    penalty_recently_replied: float = Field(default=0.2, ge=0.0, le=1.0)
    penalty_budget_exhausted: float = Field(default=0.3, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> AttentionConfig:
        if self.medium > self.high:
            raise ValueError("attention.medium must not exceed attention.high")
        return self
