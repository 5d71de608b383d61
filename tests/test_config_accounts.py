"""``[[accounts]]``: per-account tables layered over the shared defaults, strictly validated, and the
one function that says where each value came from (default < account < group)."""

from __future__ import annotations

import tomllib

import pytest

from runtime.config import ConfigError, GreyWindConfig, parse_config
from runtime.config.accounts import ACCOUNT_SECTIONS, account_config, persona_names, resolved_values

LAYERED = """
[budget]
window_ms = 900000

[persona]
name = "灰风"

[[accounts]]
id = 10001
[accounts.persona]
name = "小灰"
aliases = ["xiaohui"]
[accounts.budget]
max_per_window = 2
[accounts.budget.forced]
min_interval_ms = 500
[accounts.outbound]
max_per_minute = 6

[[accounts]]
id = "10002"
"""


def load(text: str) -> GreyWindConfig:
    return parse_config(tomllib.loads(text), source="test.toml")


def refused(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(text)
    return caught.value


def test_an_account_sets_its_keys_and_takes_every_other_from_the_shared_tables() -> None:
    config = load(LAYERED)
    assert config.account_ids() == ("10001", "10002")
    mine = account_config(config, "10001")
    assert mine.persona.name == "小灰"
    assert mine.persona.aliases == ("xiaohui",)
    assert mine.persona.role == config.persona.role  # not set by the account: the shared one
    assert mine.budget.max_per_window == 2
    assert mine.budget.window_ms == 900_000  # the shared table's, not the built-in default
    assert mine.budget.forced.min_interval_ms == 500
    assert mine.budget.forced.max_per_window == config.budget.forced.max_per_window
    assert mine.outbound.max_per_minute == 6
    assert mine.accounts == ()
    # An account without keys, and one without a table, run with the shared defaults.
    assert account_config(config, "10002").model_dump() == account_config(config, "99999").model_dump()
    assert account_config(config, None).persona.name == "灰风"
    # The names the process answers to (the frame guard's priority lane): the shared and each account's.
    assert persona_names(config) == ("灰风", "greywind", "小灰", "xiaohui")


def test_without_accounts_the_config_is_what_it_was() -> None:
    config = load("[persona]\nname = '灰风'\n")
    assert config.accounts == ()
    assert account_config(config, None) is config
    assert account_config(config, "10001") is config


def test_resolved_values_say_where_each_value_came_from() -> None:
    config = load(LAYERED)
    values = {v.key: v for v in resolved_values(config, "10001", group={"groups.enabled": False})}
    assert (values["persona.name"].value, values["persona.name"].origin) == ("小灰", "account")
    assert values["budget.forced.min_interval_ms"].origin == "account"
    assert (values["budget.window_ms"].value, values["budget.window_ms"].origin) == (900_000, "default")
    assert values["persona.role"].origin == "default"
    assert (values["groups.enabled"].value, values["groups.enabled"].origin) == (False, "group")
    # Every key of every section an account may set is listed, once.
    listed = [v.key for v in resolved_values(config, "10002")]
    assert len(listed) == len(set(listed))
    assert {key.split(".")[0] for key in listed} == set(ACCOUNT_SECTIONS)
    assert all(v.origin == "default" for v in resolved_values(config, "10002"))


def test_an_unknown_key_under_an_account_is_refused_naming_it() -> None:
    error = refused("[[accounts]]\nid = 10001\n[accounts.budget]\nmax_per_windw = 2\n")
    assert "accounts.10001.budget.max_per_windw: unknown key" in str(error)
    assert error.keys == ("accounts.10001.budget.max_per_windw",)


def test_a_bad_value_under_an_account_is_refused_as_the_section_it_becomes() -> None:
    error = refused("[[accounts]]\nid = 10001\n[accounts.attention]\nhigh = 3\n")
    assert "accounts.10001.attention.high" in str(error)
    # Checked over the shared table: the shared medium above the account's high breaks the section's rule.
    error = refused("[attention]\nmedium = 0.5\n[[accounts]]\nid = 10001\n[accounts.attention]\nhigh = 0.4\n")
    assert "accounts.10001.attention" in str(error)


def test_a_section_that_cannot_differ_per_account_is_refused_with_the_list_of_those_that_can() -> None:
    error = refused("[[accounts]]\nid = 10001\n[accounts.store]\nbackend = 'memory'\n")
    assert "[store] cannot be set per account" in str(error)
    assert "persona, budget" in str(error)
    error = refused("[[accounts]]\nid = 10001\n[accounts.outbound]\nretry_delay_ms = 5\n")
    assert "accounts.10001.outbound.retry_delay_ms: shared by every account" in str(error)


def test_an_account_listed_twice_or_not_a_qq_number_is_refused() -> None:
    error = refused("[[accounts]]\nid = 10001\n[[accounts]]\nid = '10001'\n")
    assert "account 10001 is listed twice" in str(error)
    assert "QQ number" in str(refused("[[accounts]]\nid = 'abc'\n"))
    assert "leading zero" in str(refused("[[accounts]]\nid = '010001'\n"))
    assert "accounts.0.id: Field required" in str(refused("[[accounts]]\n[accounts.persona]\nname = 'x'\n"))


def test_the_shipped_accounts_example_uncommented_is_valid() -> None:
    from tests.test_shipped_config import SHIPPED

    text = SHIPPED.read_text(encoding="utf-8")
    start = text.index("# [[accounts]]")
    end = text.index("# ----", start)  # the next section of the file
    example = "\n".join(
        line.removeprefix("#").strip() for line in text[start:end].splitlines() if line.startswith("#")
    )
    config = load(example)
    assert config.account_ids() == ("10001", "10002")
    assert account_config(config, "10001").persona.name == "小灰"
