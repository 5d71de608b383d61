from pathlib import Path

import pytest

from runtime.config import ConfigError, load_config, parse_config


def test_shipped_config_loads_with_the_persona() -> None:
    config = load_config(Path("config/greywind.toml"))
    assert config.persona.name == "灰风"
    assert config.attention.high == pytest.approx(0.65)
    assert config.attention.medium == pytest.approx(0.35)


def test_a_file_may_set_only_some_keys() -> None:
    config = parse_config({"budget": {"max_per_window": 2}})
    assert config.budget.max_per_window == 2
    assert config.budget.forced.max_per_window >= config.budget.max_per_window
    assert config.persona.name == "灰风"


def test_unknown_key_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"budget": {"min_intervall_ms": 5}})
    assert "budget.min_intervall_ms" in str(info.value)
    assert "unknown key" in str(info.value)


def test_bad_value_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"budget": {"forced": {"max_per_window": 0}}})
    assert "budget.forced.max_per_window" in info.value.keys


def test_missing_file_says_how_to_point_elsewhere(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="GREYWIND_CONFIG"):
        load_config(tmp_path / "nope.toml")


def test_broken_toml_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[budget\nmax_per_window = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid UTF-8 TOML"):
        load_config(bad)
