"""The [models] and [memory_injection] sections: design/001's names and defaults, refusals by key."""

from __future__ import annotations

import pytest

from runtime.config import ConfigError, parse_config


def test_defaults_are_the_seeds() -> None:
    config = parse_config({})
    assert config.models.context_window_target == 200_000
    assert config.models.providers == ()
    assert config.models.daily_token_cap_per_chat == 0
    memory = config.memory_injection
    assert memory.enabled is True
    assert memory.compression_model == "quick_reply"
    assert memory.compression_trigger.every_n_rounds == 10
    assert memory.compression_trigger.token_threshold == 50_000
    assert memory.compression_trigger.force_on_session_start is True
    assert memory.injection_strategy.system_prompt_max_tokens == 8_000
    assert memory.injection_strategy.sliding_window_rounds == 10
    assert memory.injection_strategy.priority == (
        "confirmed_decisions",
        "requirements",
        "open_questions",
        "user_preferences",
        "emotional_signals",
    )


def test_a_provider_table_as_toml_gives_it() -> None:
    config = parse_config(
        {
            "models": {
                "providers": [
                    {
                        "name": "main",
                        "base_url": "https://api.example.com/v1/",
                        "api_key_env": "EXAMPLE_KEY",
                        "model": "example-200k",
                        "context_window": 200_000,
                        "roles": ["chat", "compression", "chat"],
                        "price_per_1k_input": 0.002,
                        "timeout_ms": 30_000,
                    }
                ]
            }
        }
    )
    (main,) = config.models.providers
    assert main.base_url == "https://api.example.com/v1"
    assert main.roles == ("chat", "compression")
    assert main.price_per_1k_output is None
    assert main.max_retries == 2


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"models": {"providers": [{"name": "a", "base_url": "ftp://x", "model": "m"}]}},
         "models.providers.0.base_url"),
        ({"models": {"providers": [{"name": "a", "base_url": "http://x", "model": "m", "roles": ["talk"]}]}},
         "models.providers.0.roles.0"),
        ({"models": {"providers": [{"name": "a", "base_url": "http://x", "model": "m", "api_key": "sk-x"}]}},
         "models.providers.0.api_key"),
        ({"models": {"providers": [{"name": "a", "base_url": "http://x"}]}}, "models.providers.0.model"),
        ({"memory_injection": {"compression_trigger": {"every_n_rounds": 0}}},
         "memory_injection.compression_trigger.every_n_rounds"),
        ({"memory_injection": {"injection_strategy": {"priority": ["requirements", "gossip"]}}},
         "memory_injection.injection_strategy.priority"),
        ({"memory_injection": {"enable": True}}, "memory_injection.enable"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_by_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert key in info.value.keys


def test_provider_names_must_be_unique() -> None:
    provider = {"name": "same", "base_url": "http://x", "model": "m"}
    with pytest.raises(ConfigError, match="repeated: same"):
        parse_config({"models": {"providers": [provider, provider]}})


def test_a_key_pasted_into_the_file_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"models": {"providers": [{"name": "a", "base_url": "http://x", "api_key": "sk-LEAK"}]}})
    assert "models.providers.0.api_key" in info.value.keys
    assert "sk-LEAK" not in str(info.value)
    assert "api_key_env" in str(info.value)
