"""``[memory_injection]``: design/001 ④'s configuration, with its names and defaults.

::

    [memory_injection]
    enabled = true
    compression_model = "quick_reply"   # a provider name or model id; otherwise the compression role

    [memory_injection.compression_trigger]
    every_n_rounds = 10
    token_threshold = 50000
    force_on_session_start = true

    [memory_injection.injection_strategy]
    system_prompt_max_tokens = 8000
    sliding_window_rounds = 10
    priority = ["confirmed_decisions", "requirements", "open_questions", "user_preferences",
                "emotional_signals"]
"""

from __future__ import annotations

from pydantic import Field, field_validator

from runtime.config._base import Section

# The summary's sections (design/001's compressed.json), the only names ``priority`` may list.
SUMMARY_SECTIONS: tuple[str, ...] = (
    "requirements",
    "confirmed_decisions",
    "user_preferences",
    "open_questions",
    "emotional_signals",
)


class CompressionTriggerConfig(Section):
    every_n_rounds: int = Field(default=10, ge=1)
    token_threshold: int = Field(default=50_000, ge=1)
    force_on_session_start: bool = True


class InjectionStrategyConfig(Section):
    system_prompt_max_tokens: int = Field(default=8_000, ge=0)
    sliding_window_rounds: int = Field(default=10, ge=0)
    # Trimming order for the memory layer: earlier names survive a tight budget.
    priority: tuple[str, ...] = (
        "confirmed_decisions",
        "requirements",
        "open_questions",
        "user_preferences",
        "emotional_signals",
    )

    @field_validator("priority")
    @classmethod
    def _known_sections(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in SUMMARY_SECTIONS]
        if unknown:
            raise ValueError(f"unknown summary section(s) {unknown}; known: {', '.join(SUMMARY_SECTIONS)}")
        if len(set(value)) != len(value):
            raise ValueError("priority lists a section twice")
        return value


class MemoryInjectionConfig(Section):
    enabled: bool = True
    compression_model: str = "quick_reply"
    compression_trigger: CompressionTriggerConfig = CompressionTriggerConfig()
    injection_strategy: InjectionStrategyConfig = InjectionStrategyConfig()
