"""Commands declared once, read by the edge's dispatch and by the help text: a gateway that declares
its commands (the runtime does, with the extensions') has them parsed, permitted, answered and listed
by the edge, the built-in admin commands among them unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plugins.greywind.commands import HELP
from plugins.greywind.edge import Edge
from plugins.greywind.gateway import EdgeContext
from runtime.commands import Command, CommandCall, CommandSpec, Usage, admin_registry
from tests.edge.helpers import SELF_ID, FakeBot, as_adapter_delivers
from tests.edge.test_edge import ADMIN, RecordingGateway, build_edge, say, settle
from tests.support import onebot_events as ob


def _roll(rest: list[str], target: str, origin: str) -> Command | Usage:
    if len(rest) != 1 or not rest[0].isdigit():
        return Usage("用法：/roll <面数>")
    return Command("roll", target, (rest[0],))


async def _answer_roll(command: Command, call: CommandCall) -> str:
    return f"{call.by} 掷出了 {command.args[0]}"


def _broken(command: Command, call: CommandCall) -> str:
    raise RuntimeError("the handler fell over")


class DeclaringGateway(RecordingGateway):
    def __init__(self, edge: EdgeContext) -> None:
        super().__init__(edge)
        self.commands = admin_registry()
        self.commands.register(
            CommandSpec(
                "roll", "{prefix}roll <面数>", _answer_roll, _roll, aliases=("r",), permission="member"
            )
        )
        self.commands.register(CommandSpec("grant", "{prefix}grant <人>", lambda c, call: "granted"))
        self.commands.register(CommandSpec("broken", "{prefix}broken", _broken, permission="member"))


@pytest.fixture
async def edge(tmp_path: Path) -> AsyncIterator[tuple[Edge, DeclaringGateway, FakeBot]]:
    edge = build_edge(tmp_path, factory=DeclaringGateway)
    bot = FakeBot()
    edge.bot_connected(str(SELF_ID), bot)
    await edge.start()
    gateway = edge.gateway
    assert isinstance(gateway, DeclaringGateway)
    try:
        yield edge, gateway, bot
    finally:
        await edge.stop()


@pytest.mark.anyio
async def test_a_member_command_is_answered_for_anyone_and_not_passed_on(
    edge: tuple[Edge, DeclaringGateway, FakeBot],
) -> None:
    running, gateway, bot = edge
    await say(running, 42, [ob.text("/roll 6")])
    await say(running, 43, [ob.text("/r 20")])
    await say(running, 44, [ob.text("/roll six")])
    await settle(running)
    assert gateway.messages == []
    assert bot.texts() == ["42 掷出了 6", "43 掷出了 20", "用法：/roll <面数>"]


@pytest.mark.anyio
async def test_a_superuser_command_from_a_member_is_just_a_message(
    edge: tuple[Edge, DeclaringGateway, FakeBot],
) -> None:
    running, gateway, bot = edge
    await say(running, 42, [ob.text("/grant 43")])
    await say(running, 42, [ob.text("/status")])
    await say(running, ADMIN, [ob.text("/grant 43")])
    await settle(running)
    assert [m.text for m in gateway.messages] == ["/grant 43", "/status"]
    assert bot.texts() == ["granted"]


@pytest.mark.anyio
async def test_help_lists_what_the_asker_may_run_from_the_same_declarations(
    edge: tuple[Edge, DeclaringGateway, FakeBot],
) -> None:
    running, _, bot = edge
    await say(running, ADMIN, [ob.text("/help")])
    await say(running, 42, [ob.text("/help")])
    await settle(running)
    *admin_parts, member_help = bot.texts()  # the long help is sent in parts
    admin_help = "".join(admin_parts).replace(" ", "")  # a split drops the space it splits at
    expected = HELP.removesuffix(" · /help") + " · /roll <面数> · /grant <人> · /broken · /help"
    assert admin_help == expected.replace(" ", "")
    assert member_help == "命令：/roll <面数> · /broken · /help"


@pytest.mark.anyio
async def test_a_failing_command_is_answered_with_an_apology_and_the_chat_goes_on(
    edge: tuple[Edge, DeclaringGateway, FakeBot],
) -> None:
    running, gateway, bot = edge
    await say(running, 42, [ob.text("/broken")])
    await say(running, 42, [ob.text("还在吗")])
    await settle(running)
    assert bot.texts() == ["命令执行出错，详情见日志。"]
    assert [m.text for m in gateway.messages] == ["还在吗"]


def test_the_builtin_help_text_is_unchanged() -> None:
    assert HELP == (
        "命令：/status [g群号] · /why [消息id] · /mute [g群号] [30m|2h|1d] · /unmute [g群号] · "
        "/lexicon list|add <词> [权重]|pin <词>|suppress <词> · /persona reload · /bind <主题> [愿景] · "
        "/enable [g群号] · /disable [g群号] · /help"
    )


@pytest.mark.anyio
async def test_an_unknown_or_forbidden_command_to_the_bot_is_answered_plainly(
    edge: tuple[Edge, DeclaringGateway, FakeBot],
) -> None:
    running, gateway, bot = edge
    await say(running, 42, [ob.at(SELF_ID), ob.text(" /foo")])
    await say(running, ADMIN, [ob.at(SELF_ID), ob.text(" /foo bar")])
    await say(running, 42, [ob.at(SELF_ID), ob.text(" /status")])
    await say(running, 42, [ob.at(SELF_ID), ob.text(" /grant 43")])
    await say(running, 42, [ob.at(SELF_ID), ob.text(" /roll 6")])  # a member's command still runs
    await say(running, 42, [ob.at(SELF_ID), ob.text(" 今天/明天")])  # not written as a command
    await settle(running)
    assert bot.texts() == [
        "没有这个命令，/help 看看有哪些",
        "没有这个命令，/help 看看有哪些",
        "这个命令只有管理员能用。",
        "这个命令只有管理员能用。",
        "42 掷出了 6",
    ]
    assert [m.text.endswith("今天/明天") for m in gateway.messages] == [True]


@pytest.mark.anyio
async def test_an_unknown_command_in_a_private_chat_is_answered_plainly(
    edge: tuple[Edge, DeclaringGateway, FakeBot],
) -> None:
    running, gateway, bot = edge
    payload = ob.private_message(self_id=SELF_ID, user_id=42, message=[ob.text("/status")])
    await running.handle_message(await as_adapter_delivers(payload))
    payload = ob.private_message(self_id=SELF_ID, user_id=42, message=[ob.text("/frob")])
    await running.handle_message(await as_adapter_delivers(payload))
    await settle(running)
    assert bot.texts() == ["这个命令只有管理员能用。", "没有这个命令，/help 看看有哪些"]
    assert gateway.messages == []
