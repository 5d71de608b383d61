"""InjectorSettings: ``[memory_injection]`` as the injector uses it, plus the knobs design/001 leaves open."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.config.memory_injection import SUMMARY_SECTIONS
from runtime.memory.triggers import TriggerSettings

__all__ = ["InjectorSettings"]


@dataclass(frozen=True, slots=True)
class InjectorSettings:
    """Durations in seconds.

    ``transcript_max_tokens`` caps the new messages one compression sends (the newest are kept);
    ``transcript_fetch_max`` how many stored messages are read for it. A failed compression is retried
    after ``retry_base`` seconds, doubling per consecutive failure up to ``retry_cap``.
    """

    enabled: bool = True
    triggers: TriggerSettings = field(default_factory=TriggerSettings)
    system_prompt_max_tokens: int = 8_000
    sliding_window_rounds: int = 10
    priority: tuple[str, ...] = (
        "confirmed_decisions",
        "requirements",
        "open_questions",
        "user_preferences",
        "emotional_signals",
    )
    transcript_max_tokens: int = 12_000
    transcript_fetch_max: int = 2_000
    answer_max_tokens: int = 2_048
    retry_base: float = 30.0
    retry_cap: float = 900.0
    log_max: int = 100
    buffer_max: int = 400
    utc_offset_hours: float = 8.0

    def __post_init__(self) -> None:
        unknown = [name for name in self.priority if name not in SUMMARY_SECTIONS]
        if unknown:
            raise ValueError(f"unknown summary sections in priority: {unknown}")
        if self.retry_base <= 0 or self.retry_cap < self.retry_base:
            raise ValueError("need 0 < retry_base <= retry_cap")
        if self.transcript_max_tokens < 1 or self.transcript_fetch_max < 1:
            raise ValueError("transcript_max_tokens and transcript_fetch_max must be positive")

    @classmethod
    def from_config(cls, config: Any, **overrides: Any) -> InjectorSettings:
        """From the ``[memory_injection]`` section (a ``MemoryInjectionConfig``); ``overrides`` replace
        the fields the config file does not name."""
        strategy = config.injection_strategy
        return cls(
            enabled=config.enabled,
            triggers=TriggerSettings.from_config(config.compression_trigger),
            system_prompt_max_tokens=strategy.system_prompt_max_tokens,
            sliding_window_rounds=strategy.sliding_window_rounds,
            priority=tuple(strategy.priority),
            **overrides,
        )

    def dialogue_turns(self, needs_memory_compensation: bool, default: int) -> int:
        """Raw turns for the session slot: ``sliding_window_rounds`` rounds (a round is the user's turn
        and the reply) when no model reaches the context target; otherwise the Context Runtime's own."""
        return 2 * self.sliding_window_rounds if needs_memory_compensation else default
