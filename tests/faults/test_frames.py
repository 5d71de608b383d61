"""Frames that used to close the connection: each is handled or skipped on its own, the bot stays up.

The real ``bot.py`` in shadow mode (no model: what reaches the runtime is logged as ``addressed``)
with a OneBot peer on its reverse WebSocket.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import StartBot
from tests.e2e.live import connected_peer
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BotProcess]:
    with BotProcess(tmp_path_factory.mktemp("frames")) as process:
        process.wait_for_log("edge_started")
        yield process
    assert process.returncode == 0


def logged(message_id: int):  # type: ignore[no-untyped-def]
    return lambda record: record.get("message_id") == str(message_id)


async def still_serving(bot: BotProcess, peer: OneBotPeer) -> None:
    """The same connection still carries messages to the runtime."""
    after = await peer.say_in_private(44, "还在吗")
    await bot.await_log("addressed", logged(after), within=15)
    assert peer.connected, f"the bot dropped the connection ({peer.close_code} {peer.close_reason})"
    assert bot.alive


async def test_deeply_nested_frames_are_skipped_and_the_connection_stays_up(bot: BotProcess) -> None:
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post_raw("[" * 100_000)
        await peer.post_raw("{" * 50_000)
        # Parseable, but deeper than any event: the adapter would parse it again and print it.
        deep = "[" * 900 + "]" * 900
        await peer.post_raw(
            f'{{"post_type": "message", "message_type": "group", "self_id": {SELF_ID}, "x": {deep}}}'
        )
        await peer.post_raw(f'{{"echo": "1", "status": "ok", "data": {deep}}}')
        await still_serving(bot, peer)
    skipped = bot.wait_for_log("onebot_frame_not_json", count=4)
    assert sum("deep" in str(record.get("reason")) for record in skipped) == 3


async def test_a_frame_over_16_mib_is_read_and_the_connection_stays_up(bot: BotProcess) -> None:
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        event = ob.group_message(
            self_id=SELF_ID, group_id=781_001, user_id=43, message=[ob.at(SELF_ID), ob.text("长" * (7 * MIB))]
        )
        frame = json.dumps(event, ensure_ascii=False)
        assert len(frame.encode("utf-8")) > 20 * MIB
        await peer.post_raw(frame)
        (seen,) = await bot.await_log("addressed", logged(event["message_id"]), within=20)
        assert seen["chars"] < 5_000, "the runtime gets it truncated"
        await still_serving(bot, peer)


async def test_a_frame_over_the_configured_maximum_closes_the_connection_as_the_protocol_says(
    start_bot: StartBot,
) -> None:
    small = start_bot(config="[bot]\nmax_frame_mb = 1\n")
    await small.await_log("edge_started", within=20)
    async with connected_peer(small, self_id=SELF_ID) as peer:
        await peer.post_raw("x" * (2 * MIB))
        assert await peer.wait_closed(within=10) == 1009
    assert small.alive
    async with connected_peer(small, self_id=SELF_ID) as peer:  # the peer reconnects; all is well
        await still_serving(small, peer)


async def test_frames_go_uncompressed_though_the_implementation_offers_deflate(bot: BotProcess) -> None:
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        assert peer.extensions == []
        await still_serving(bot, peer)


async def test_ws_compression_accepts_the_offered_deflate(start_bot: StartBot) -> None:
    compressing = start_bot(config="[bot]\nws_compression = true\n")
    await compressing.await_log("edge_started", within=20)
    async with connected_peer(compressing, self_id=SELF_ID) as peer:
        assert peer.extensions == ["permessage-deflate"]
        await still_serving(compressing, peer)
