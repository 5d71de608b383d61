"""KernelSettings from config: milliseconds become seconds, every section lands where it belongs."""

from __future__ import annotations

import pytest

from runtime.config import ConfigError, parse_config
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.settings import KernelSettings, SchedulingSettings, Supersede


def test_empty_config_gives_the_default_settings() -> None:
    assert KernelSettings.from_config(parse_config({})) == KernelSettings()


def test_durations_are_converted_to_seconds() -> None:
    cfg = parse_config(
        {
            "budget": {"min_interval_ms": 1_500, "window_ms": 60_000, "forced": {"min_interval_ms": 250}},
            "attention": {"silence_full_ms": 30_000, "weight_keyword": 0.2},
            "scheduling": {"high_delay_ms": 500, "medium_deadline_ms": 90_000, "supersede": "chat"},
            "threads": {"gap_ms": 120_000},
            "persona": {"name": "小灰", "aliases": ["灰灰"]},
            "lexicon": {"terms": ["猫粮"]},
        }
    )
    s = KernelSettings.from_config(cfg, self_ids=("10001",))
    assert s.budget.min_interval == 1.5
    assert s.budget.window == 60.0
    assert s.forced_budget.min_interval == 0.25
    assert s.attention.silence_full == 30.0
    assert s.attention.keyword == 0.2
    assert s.scheduling.high_delay == 0.5
    assert s.scheduling.medium_deadline == 90.0
    assert s.scheduling.supersede is Supersede.CHAT
    assert s.threads.gap == 120.0
    assert (s.persona_name, s.persona_aliases, s.lexicon_terms) == ("小灰", ("灰灰",), ("猫粮",))
    assert s.self_ids == ("10001",)


def test_deadline_below_delay_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"scheduling": {"high_delay_ms": 5_000, "high_deadline_ms": 1_000}})
    assert "scheduling.high_deadline_ms" in str(info.value)


def test_unknown_supersede_policy_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"scheduling": {"supersede": "everything"}})
    assert "scheduling.supersede" in info.value.keys


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"high_delay": -1.0}, "scheduling.high_delay"),
        ({"deliberation_timeout": -5.0}, "scheduling.deliberation_timeout"),
        ({"high_delay": 10.0, "high_deadline": 5.0}, "scheduling.high_deadline"),
        ({"medium_delay": 10.0, "medium_deadline": 5.0}, "scheduling.medium_deadline"),
        ({"learn_queue_max": -1}, "scheduling.learn_queue_max"),
    ],
)
def test_bad_scheduling_settings_name_the_setting(kwargs: dict[str, float], key: str) -> None:
    with pytest.raises(InvalidSetting, match=key):
        SchedulingSettings(**kwargs)  # type: ignore[arg-type]


def test_read_max_chars_has_a_floor() -> None:
    with pytest.raises(InvalidSetting, match="read_max_chars"):
        KernelSettings(read_max_chars=3)
