"""NoneBot's line per event received: written when debugging, never built otherwise.

At every level but DEBUG the bot's log drops that line, so ``bot.py`` has the events skip it
(``plugins.greywind.event_lines``). At DEBUG it is still there: what NoneBot received, one line each.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.live import connected_peer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 880_011


def nonebot_received(record: dict[str, object]) -> bool:
    return record.get("source") == "nonebot" and "[message.group.normal]" in str(record.get("event"))


@pytest.mark.parametrize(("level", "lines"), [("DEBUG", 1), ("INFO", 0)])
async def test_nonebot_writes_its_event_line_only_when_debugging(
    start_bot: StartBot, level: str, lines: int
) -> None:
    bot = start_bot(env={"LOG_LEVEL": level})
    await bot.await_log("edge_started", within=20)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        said = await peer.say_in_group(GROUP, 501, "今天的会几点开始")
        await peer.say_in_private(502, "在吗")
        await bot.await_log("addressed", within=15)  # the private message after it was handled
    received = [record for record in bot.records() if nonebot_received(record)]
    assert len(received) == lines
    assert all(str(said) in str(record["event"]) for record in received)
