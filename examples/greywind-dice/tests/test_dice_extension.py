"""The dice extension as GreyWind loads it: found through its ``greywind.extensions`` entry point by
the real loader, over real registries and a real SQLite store; then used (tool, command, game) and
unloaded, leaving nothing behind."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from runtime.commands import CommandCall, admin_registry
from runtime.config.extensions import ExtensionsConfig
from runtime.extensions import ExtensionRegistry, Scope
from runtime.extensions.context import ReadOnlyStore
from runtime.extensions.listeners import MessageListeners
from runtime.extensions.loader import ENTRY_POINT_GROUP, ExtensionLoader
from runtime.kernel.clock import ManualClock
from runtime.kernel.lexicon import DynamicLexicon, LexiconSettings
from runtime.store.sqlite.store import SqliteStore
from runtime.tools import ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio


class Words:
    def cut(self, text: str) -> list[str]:
        return text.split()


class Host:
    def __init__(self, loader: ExtensionLoader, tools: ToolRegistry, commands: Any, games: Any) -> None:
        self.loader, self.tools, self.commands, self.games = loader, tools, commands, games


async def hosted(tmp_path: Path, config: dict[str, Any]) -> AsyncIterator[Host]:
    clock = ManualClock(1_767_000_000.0)
    tools = ToolRegistry()
    games = ExtensionRegistry(
        tools, clock=clock, lexicon=DynamicLexicon(LexiconSettings(), segmenter=Words())
    )
    commands = admin_registry()
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    try:
        async with anyio.create_task_group() as tg:
            loader = ExtensionLoader(
                ExtensionsConfig.model_validate({"config": config}),
                scope=Scope("bot"),
                clock=clock,
                tools=tools,
                extensions=games,
                listeners=MessageListeners(),
                commands=commands,
                store=ReadOnlyStore(store),
                task_group=tg,
            )
            yield Host(loader, tools, commands, games)
            tg.cancel_scope.cancel()
    finally:
        await store.close()


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async for made in hosted(tmp_path, {"dice": {"seed": 2026}}):
        report = await made.loader.load_all()
        assert "dice" in report.loaded
        yield made


def context(user: str = "42") -> ToolContext:
    return ToolContext(chat_id="group:500", user_id=user, now=0.0)


def test_the_distribution_declares_the_entry_point() -> None:
    (point,) = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "dice"]
    assert point.value == "greywind_dice:extension"


async def test_the_persona_rolls_through_the_tool(host: Host) -> None:
    result = await host.tools.invoke("dice_roll", {"expression": "2d6+1"}, context())
    assert result.ok
    assert re.fullmatch(r"2d6\+1 = (\d+)（([1-6])\+([1-6])\+1）", str(result.content))
    refused = await host.tools.invoke("dice_roll", {"expression": "99d6"}, context())
    assert "最多掷 20" in str(refused.content)


async def test_a_member_rolls_with_the_command(host: Host) -> None:
    command = host.commands.parse("/roll 3d6", chat_id="group:500", superuser=False)
    call = CommandCall(control=None, now=0.0, by="阿明", origin="group:500")  # type: ignore[arg-type]
    answer = await host.commands.dispatch(command, call)
    assert re.fullmatch(r"阿明 掷出 3d6 = \d+（\d\+\d\+\d）", answer)
    usage = host.commands.parse("/r lots", chat_id="group:500", superuser=False)
    assert "用法：/roll 2d6" in await host.commands.dispatch(usage, call)
    assert "/roll [2d6]" in host.commands.help_text()


async def test_two_members_duel(host: Host) -> None:
    challenge = await host.tools.invoke("dice_duel_challenge", {"opponent": "43"}, context("42"))
    assert challenge.ok
    first = await host.tools.invoke("dice_duel_roll", {}, context("42"))
    outsider = await host.tools.invoke("dice_duel_roll", {}, context("44"))
    second = await host.tools.invoke("dice_duel_roll", {}, context("43"))
    assert "只有对决双方" in str(outsider.content)
    assert "winner" not in str(first.content)
    assert "winner" in str(second.content)


async def test_unloading_leaves_nothing(host: Host) -> None:
    assert host.loader.unload("dice")
    assert not [spec.name for spec in host.tools.list() if spec.name.startswith("dice")]
    assert "roll" not in host.commands
    assert host.games.entries() == []


async def test_a_bad_config_section_refuses_it_naming_the_key(tmp_path: Path) -> None:
    async for made in hosted(tmp_path, {"dice": {"max_dice": 0}}):
        with capture_logs() as logs:
            report = await made.loader.load_all()
        assert "dice" not in report.loaded
        (line,) = [e for e in logs if e["event"] == "extension_refused"]
        assert line["extension"] == "dice"
        assert "extensions.config.dice.max_dice" in line["error"]
        assert "dice_roll" not in made.tools
