"""Fixtures for episode tests: a manual clock, default settings and a small tool registry."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from runtime.episodes import Episode, EpisodeSettings
from runtime.kernel.clock import ManualClock
from runtime.tools import ToolContext, ToolRegistry, ToolSpec

START = 1_700_000_000.0


class LookupArgs(BaseModel):
    word: str


def _lookup(args: LookupArgs, ctx: ToolContext) -> str:
    return {"灰风": "a grey wolf", "月亮": "the moon"}.get(args.word, "not found")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def settings() -> EpisodeSettings:
    return EpisodeSettings(
        max_steps=6,
        time_limit=60.0,
        max_consecutive_failures=3,
        min_wait=5.0,
        max_wait=3_600.0,
        max_waits=2,
        wake_delay=5.0,
        resume_grace=300.0,
    )


@pytest.fixture
def tools() -> ToolRegistry:
    registry = ToolRegistry(default_timeout=0.2)
    registry.register(
        ToolSpec(name="lookup", description="Look a word up.", args_model=LookupArgs, execute=_lookup)
    )
    return registry


def new_episode(clock: ManualClock, settings: EpisodeSettings, **fields: object) -> Episode:
    return Episode.start(
        id="ep-1",
        chat_id="group:1",
        now=clock.now(),
        max_steps=settings.max_steps,
        time_limit=settings.time_limit,
        event_id="ev-1",
        thread_id="th-1",
        user_id="42",
        **fields,
    )  # type: ignore[arg-type]
