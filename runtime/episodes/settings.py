"""The loop's limits in seconds, built from ``[episodes]`` (milliseconds in the file)."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.config.episodes import EpisodesConfig
from runtime.tools.registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class EpisodeSettings:
    max_steps: int = 8
    time_limit: float = 90.0
    max_consecutive_failures: int = 3
    wake_on_thread_message: bool = True
    wake_delay: float = 5.0
    resume_grace: float = 600.0
    min_wait: float = 5.0
    max_wait: float = 86_400.0
    max_waits: int = 3

    @classmethod
    def from_config(cls, config: EpisodesConfig) -> EpisodeSettings:
        return cls(
            max_steps=config.max_steps,
            time_limit=config.deadline_ms / 1000,
            max_consecutive_failures=config.max_consecutive_failures,
            wake_on_thread_message=config.wake_on_thread_message,
            wake_delay=config.wake_delay_ms / 1000,
            resume_grace=config.resume_grace_ms / 1000,
            min_wait=config.min_wait_ms / 1000,
            max_wait=config.max_wait_ms / 1000,
            max_waits=config.max_waits,
        )


def tool_registry_from_config(config: EpisodesConfig) -> ToolRegistry:
    """A ToolRegistry with the configured default timeout and result cap."""
    return ToolRegistry(
        default_timeout=config.tool_timeout_ms / 1000, max_result_chars=config.tool_result_max_chars
    )
