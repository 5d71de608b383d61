"""Superuser command parsing and dispatch; mute words."""

from __future__ import annotations

import pytest

from plugins.greywind.commands import (
    HELP,
    Command,
    Usage,
    dispatch,
    is_mute_request,
    is_unmute_request,
    parse_command,
    parse_duration,
)

GROUP = "group:123456"
MUTE_WORDS = ("闭嘴", "安静", "别说话", "shut up")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/status", Command("status", GROUP)),
        ("/status g987654", Command("status", "group:987654")),
        ("/why", Command("why", GROUP)),
        ("/why 4242", Command("why", GROUP, ("4242",))),
        ("/mute", Command("mute", GROUP)),
        ("/mute 30m", Command("mute", GROUP, seconds=1800.0)),
        ("/mute group:987654 2h", Command("mute", "group:987654", seconds=7200.0)),
        ("/unmute", Command("unmute", GROUP)),
        ("/lexicon list", Command("lexicon_list", GROUP)),
        ("/lexicon add 原神", Command("lexicon_add", GROUP, ("原神",))),
        ("/lexicon add 原神 0.8", Command("lexicon_add", GROUP, ("原神",), weight=0.8)),
        ("/lexicon add machine learning", Command("lexicon_add", GROUP, ("machine learning",))),
        ("/lexicon pin 灰风", Command("lexicon_pin", GROUP, ("灰风",))),
        ("/lexicon suppress 哈哈", Command("lexicon_suppress", GROUP, ("哈哈",))),
        ("/persona reload", Command("persona_reload", GROUP)),
        ("/bind 陪我看视频", Command("bind", GROUP, ("陪我看视频", ""))),
        ("/bind 陪我看视频 一起把番看完", Command("bind", GROUP, ("陪我看视频", "一起把番看完"))),
        ("  /STATUS  ", Command("status", GROUP)),
    ],
)
def test_commands_parse(text: str, expected: Command) -> None:
    assert parse_command(text, chat_id=GROUP) == expected


@pytest.mark.parametrize(
    "text", ["/mute forever", "/lexicon", "/lexicon add", "/lexicon frob x", "/persona", "/bind"]
)
def test_malformed_commands_get_usage(text: str) -> None:
    assert isinstance(parse_command(text, chat_id=GROUP), Usage)


def test_out_of_range_weight_is_refused() -> None:
    result = parse_command("/lexicon add 原神 3", chat_id=GROUP)
    assert isinstance(result, Usage)
    assert "权重" in result.text


@pytest.mark.parametrize("text", ["hello", "/", "/unknowncommand", "今天/明天", "", "   "])
def test_non_commands_are_none(text: str) -> None:
    assert parse_command(text, chat_id=GROUP) is None


def test_help_lists_the_commands() -> None:
    result = parse_command("/help", chat_id=GROUP)
    assert result == Usage(HELP)


def test_status_from_private_chat_is_about_the_whole_bot() -> None:
    assert parse_command("/status", chat_id="private:42") == Command("status", "")
    assert parse_command("/status g123456", chat_id="private:42") == Command("status", GROUP)


def test_a_target_group_is_heard_through_the_commands_own_account() -> None:
    here = "qq:10001:private:42"
    assert parse_command("/status g123456", chat_id=here) == Command("status", "qq:10001:group:123456")
    assert parse_command("/mute group:123456 2h", chat_id="qq:10001:group:7") == Command(
        "mute", "qq:10001:group:123456", seconds=7200.0
    )
    # Another account's chat is named by its whole key.
    assert parse_command("/unmute qq:10000:group:123456", chat_id=here) == Command(
        "unmute", "qq:10000:group:123456"
    )
    assert parse_command("/status", chat_id=here) == Command("status", "")


def test_other_prefixes() -> None:
    assert parse_command("#status", chat_id=GROUP, prefix="#") == Command("status", GROUP)
    assert parse_command("/status", chat_id=GROUP, prefix="#") is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800.0),
        ("30m", 1800.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("45s", 45.0),
        ("10分钟", 600.0),
        ("0", None),
    ],
)
def test_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("闭嘴", True),
        ("你闭嘴吧！！", True),
        ("安静点", True),
        ("别说话了", True),
        ("SHUT UP", True),
        ("他上次让我闭嘴，我觉得这样说话不太礼貌你怎么看", False),
        ("今天天气不错", False),
        ("", False),
    ],
)
def test_mute_requests(body: str, expected: bool) -> None:
    assert is_mute_request(body, MUTE_WORDS) is expected


def test_unmute_phrase() -> None:
    assert is_unmute_request("灰风说话！", "灰风说话")
    assert is_unmute_request("好了 灰风 说话", "灰风说话")
    assert not is_unmute_request("灰风", "灰风说话")
    assert not is_unmute_request("x", "")


class RecordingControl:
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    async def status(self, chat_id: str | None) -> str:
        self.calls.append(("status", chat_id))
        return "ok"

    async def why(self, chat_id: str, message_id: str | None) -> str:
        self.calls.append(("why", chat_id, message_id))
        return "because"

    async def mute(self, chat_id: str, until: float | None, *, by: str, reason: str) -> str:
        self.calls.append(("mute", chat_id, until, by, reason))
        return "muted"

    async def unmute(self, chat_id: str, *, by: str, reason: str) -> str:
        self.calls.append(("unmute", chat_id, by, reason))
        return "unmuted"

    async def lexicon_list(self, chat_id: str) -> str:
        self.calls.append(("lexicon_list", chat_id))
        return "terms"

    async def lexicon_add(self, chat_id: str, term: str, weight: float | None) -> str:
        self.calls.append(("lexicon_add", chat_id, term, weight))
        return "added"

    async def lexicon_pin(self, chat_id: str, term: str) -> str:
        self.calls.append(("lexicon_pin", chat_id, term))
        return "pinned"

    async def lexicon_suppress(self, chat_id: str, term: str) -> str:
        self.calls.append(("lexicon_suppress", chat_id, term))
        return "suppressed"

    async def persona_reload(self) -> str:
        self.calls.append(("persona_reload",))
        return "reloaded"

    async def bind(self, chat_id: str, thread: str, vision: str | None) -> str:
        self.calls.append(("bind", chat_id, thread, vision))
        return "bound"

    async def set_group(self, chat_id: str, on: bool, *, by: str) -> str:
        self.calls.append(("set_group", chat_id, on, by))
        return "enabled" if on else "disabled"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "call", "answer"),
    [
        ("/status", ("status", GROUP), "ok"),
        ("/why 9", ("why", GROUP, "9"), "because"),
        ("/why", ("why", GROUP, None), "because"),
        ("/mute 10m", ("mute", GROUP, 1600.0, "7", "command"), "muted"),
        ("/mute", ("mute", GROUP, None, "7", "command"), "muted"),
        ("/unmute", ("unmute", GROUP, "7", "command"), "unmuted"),
        ("/lexicon list", ("lexicon_list", GROUP), "terms"),
        ("/lexicon add 原神 0.5", ("lexicon_add", GROUP, "原神", 0.5), "added"),
        ("/lexicon pin 原神", ("lexicon_pin", GROUP, "原神"), "pinned"),
        ("/lexicon suppress 原神", ("lexicon_suppress", GROUP, "原神"), "suppressed"),
        ("/persona reload", ("persona_reload",), "reloaded"),
        ("/bind 看番 一起看完", ("bind", GROUP, "看番", "一起看完"), "bound"),
        ("/bind 看番", ("bind", GROUP, "看番", None), "bound"),
        ("/enable", ("set_group", GROUP, True, "7"), "enabled"),
        ("/disable", ("set_group", GROUP, False, "7"), "disabled"),
        ("/disable g2002", ("set_group", "group:2002", False, "7"), "disabled"),
    ],
)
async def test_dispatch_reaches_the_control(text: str, call: tuple[object, ...], answer: str) -> None:
    control = RecordingControl()
    command = parse_command(text, chat_id=GROUP)
    assert command is not None
    assert await dispatch(command, control, now=1000.0, by="7") == answer
    assert control.calls == [call]


@pytest.mark.anyio
async def test_usage_is_answered_without_touching_the_control() -> None:
    control = RecordingControl()
    assert "用法" in await dispatch(Usage("用法：x"), control, now=0.0, by="7")
    assert control.calls == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/lexicon add g1001 原神 0.8", Command("lexicon_add", "qq:10001:group:1001", ("原神",), weight=0.8)),
        ("/lexicon add 原神 g1001", Command("lexicon_add", "qq:10001:group:1001", ("原神",))),
        ("/lexicon list group:1001", Command("lexicon_list", "qq:10001:group:1001")),
        ("/mute 2h g1001", Command("mute", "qq:10001:group:1001", seconds=7200.0)),
        ("/bind 看番 g1001 一起看完", Command("bind", "qq:10001:group:1001", ("看番", "一起看完"))),
        ("/why 4242 g1001", Command("why", "qq:10001:group:1001", ("4242",))),
    ],
)
def test_a_target_group_may_stand_anywhere_in_the_arguments(text: str, expected: Command) -> None:
    # Said in a private chat: the term must land in group 1001's lexicon, never in "g1001 原神".
    assert parse_command(text, chat_id="qq:10001:private:42") == expected


def test_two_target_groups_are_refused() -> None:
    result = parse_command("/lexicon add g1001 原神 g2002", chat_id="qq:10001:private:42")
    assert isinstance(result, Usage)
    assert "g1001" in result.text
    assert "g2002" in result.text
