"""``[episodes]`` in the file becomes the loop's limits in seconds; bad values name their key."""

from __future__ import annotations

import pytest

from runtime.config import ConfigError, parse_config
from runtime.episodes import EpisodeSettings, tool_registry_from_config
from runtime.tools import ToolContext, ToolSpec


def test_defaults_and_conversion() -> None:
    config = parse_config(
        {
            "episodes": {
                "max_steps": 4,
                "deadline_ms": 30_000,
                "wake_delay_ms": 2_500,
                "tool_timeout_ms": 1_500,
                "tool_result_max_chars": 500,
            }
        }
    )
    settings = EpisodeSettings.from_config(config.episodes)
    assert (settings.max_steps, settings.time_limit, settings.wake_delay) == (4, 30.0, 2.5)
    assert EpisodeSettings.from_config(parse_config({}).episodes) == EpisodeSettings()


@pytest.mark.asyncio
async def test_tool_registry_takes_the_configured_cap() -> None:
    config = parse_config({"episodes": {"tool_result_max_chars": 500}})
    tools = tool_registry_from_config(config.episodes)
    tools.register(ToolSpec(name="long", description="Long.", execute=lambda a, c: "字" * 1_000))
    result = await tools.invoke("long", {}, ToolContext(chat_id="group:1"))
    assert result.truncated
    assert result.content.startswith("字" * 500 + "\n[truncated: showing 500 of 1000")


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"max_steps": 0}, "episodes.max_steps"),
        ({"min_wait_ms": 10_000, "max_wait_ms": 5_000}, "episodes"),
        ({"retries": 3}, "episodes.retries"),
    ],
)
def test_bad_values_are_refused_naming_the_key(section: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"episodes": section})
    assert any(k.startswith(key) for k in info.value.keys)


@pytest.mark.parametrize("hours", ["23-08", "24:00-08:00", "23:00 - 08:00"])
def test_bad_quiet_hours_are_refused(hours: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"life": {"quiet_hours": hours}})
    assert info.value.keys == ("life.quiet_hours",)
