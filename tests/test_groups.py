"""The groups the bot lives in: the ``[groups]`` config, the policy, and ``/enable`` / ``/disable``."""

from __future__ import annotations

import pytest

from runtime.app.group_gate import DISABLED, GroupGatedOutbound
from runtime.commands import admin_registry
from runtime.commands.spec import Command, Usage
from runtime.config import ConfigError, parse_config
from runtime.groups import GroupPolicy
from runtime.ports import GateVerdict
from tests.support.fake_edge import FakeOutbound

A = "qq:10001:group:5000"
B = "qq:10002:group:5000"  # the same group, heard through another account
OTHER = "qq:10001:group:6000"
PRIVATE = "qq:10001:private:42"


def test_by_default_the_bot_lives_in_every_group() -> None:
    policy = GroupPolicy()
    assert policy.enabled(A)
    assert policy.enabled(OTHER)
    assert policy.enabled("group:7000")


def test_an_allow_list_means_that_group_for_every_account_and_no_other() -> None:
    policy = GroupPolicy(allow=["5000"])
    assert policy.enabled(A)
    assert policy.enabled(B)
    assert policy.enabled("group:5000")
    assert not policy.enabled(OTHER)
    assert policy.enabled(PRIVATE)  # private chats are always on


def test_a_deny_list_takes_groups_out() -> None:
    policy = GroupPolicy(deny=["6000"])
    assert policy.enabled(A)
    assert not policy.enabled(OTHER)


def test_a_command_overrides_the_config_for_one_chat_only() -> None:
    policy = GroupPolicy(allow=["5000"])
    assert policy.set(OTHER, True) is True
    assert policy.enabled(OTHER)
    assert policy.set(A, False) is True
    assert not policy.enabled(A)
    assert policy.enabled(B)
    assert policy.set(A, False) is False  # nothing changed
    assert policy.overrides() == {OTHER: True, A: False}


def test_the_status_line_names_the_rule_and_the_overrides() -> None:
    policy = GroupPolicy(allow=["5000"], deny=["6000"])
    policy.set(OTHER, True)
    line = policy.describe()
    assert "5000" in line
    assert "6000" in line
    assert f"已启用 {OTHER}" in line


def test_the_config_takes_numbers_as_written_in_toml_or_as_strings() -> None:
    groups = parse_config({"groups": {"allow": [123456, "654321"], "deny": [7]}}).groups
    assert groups.allow == ("123456", "654321")
    assert groups.deny == ("7",)


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"allow": ["abc"]}, "groups.allow"),
        ({"deny": 5}, "groups.deny"),
        ({"allow": [True]}, "groups.allow"),
        ({"allow": [1], "deny": [1]}, "groups"),
        ({"mode": "allow"}, "groups.mode"),
    ],
)
def test_a_bad_groups_config_is_refused_naming_the_key(section: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"groups": section})
    assert key in caught.value.keys
    assert key in str(caught.value)


def _parse(text: str, origin: str) -> Command | Usage | None:
    return admin_registry().parse(text, chat_id=origin)


def test_enable_without_a_group_is_the_chat_it_is_said_in_and_a_group_names_another() -> None:
    assert _parse("/disable", A) == Command("disable", A)
    assert _parse("/enable", A) == Command("enable", A)
    # From a private chat: the group heard through the same account.
    assert _parse("/enable g6000", PRIVATE) == Command("enable", OTHER)
    assert _parse("/disable qq:10002:group:5000", PRIVATE) == Command("disable", B)


def test_enable_in_a_private_chat_without_a_group_or_with_extra_words_says_how_to_write_it() -> None:
    for text in ("/enable", "/disable", "/enable g6000 now"):
        answer = _parse(text, PRIVATE)
        assert isinstance(answer, Usage)
        assert "g群号" in answer.text


def test_enable_and_disable_are_declared_commands_with_help() -> None:
    specs = {spec.name: spec for spec in admin_registry().specs()}
    assert specs["enable"].permission == "superuser"
    assert "enable [g群号]" in specs["enable"].help
    assert specs["disable"].permission == "superuser"
    assert "disable [g群号]" in specs["disable"].help


@pytest.mark.anyio
async def test_the_runtimes_outbound_is_closed_in_a_disabled_group_except_for_answers_to_commands() -> None:
    edge = FakeOutbound()
    policy = GroupPolicy(allow=["5000"])
    outbound = GroupGatedOutbound(edge, policy)
    assert outbound.gate(OTHER) == GateVerdict(False, DISABLED)
    assert outbound.gate(A).open
    refused = await outbound.send(OTHER, "在吗")
    assert (refused.sent, refused.reason) == (False, DISABLED)
    assert (await outbound.send(OTHER, "已启用", admin=True)).sent
    assert (await outbound.send(A, "我在")).sent
    assert edge.texts() == ["已启用", "我在"]
