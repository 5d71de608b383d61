"""``[episodes]``: the ReAct loop's limits and the tools' defaults (design/0002 §9–10)."""

from __future__ import annotations

from pydantic import Field, model_validator

from runtime.config._base import Section


class EpisodesConfig(Section):
    # Reasoner steps per run; a loop that has not decided by then ends with outcome step_limit.
    max_steps: int = Field(default=8, ge=1, le=64)
    # Wall time one run may take, model calls and tools included.
    deadline_ms: int = Field(default=90_000, ge=1_000)
    # One model call (the router's retries and fallbacks included); past it the step fails like an
    # unreachable model, so a hanging provider does not hold the chat and its slot for the whole run.
    model_timeout_ms: int = Field(default=45_000, ge=100)
    # Failed steps in a row (unknown tool, bad arguments, timeouts, unreadable actions) that end it.
    max_consecutive_failures: int = Field(default=3, ge=1)
    # A new message in a waiting episode's thread brings its resumption forward.
    wake_on_thread_message: bool = True
    # ...but not before this much quiet, so a burst of messages wakes it once.
    wake_delay_ms: int = Field(default=5_000, ge=0)
    # How late a resumption may still run after its time before it is dropped as expired.
    resume_grace_ms: int = Field(default=600_000, ge=1_000)
    min_wait_ms: int = Field(default=5_000, ge=0)
    max_wait_ms: int = Field(default=86_400_000, ge=1_000)
    # How many times one episode may wait; a further wait is refused so it must decide.
    max_waits: int = Field(default=3, ge=0)
    # Defaults for tools that do not set their own.
    tool_timeout_ms: int = Field(default=10_000, ge=100)
    tool_result_max_chars: int = Field(default=4_000, ge=100)

    @model_validator(mode="after")
    def _ordered(self) -> EpisodesConfig:
        if self.min_wait_ms > self.max_wait_ms:
            raise ValueError("episodes.min_wait_ms must not exceed episodes.max_wait_ms")
        return self
