"""``[threads]``: how the kernel groups a chat's messages into conversation threads."""

from __future__ import annotations

from pydantic import Field

from runtime.config._base import Section


class ThreadsConfig(Section):
    # A message later than this after a thread's last message never joins it by recency alone.
    gap_ms: int = Field(default=300_000, ge=1_000)
