"""The edge with ``[[accounts]]``: each account answers to its own persona's names and sends at its own
rate; accounts without a table keep the shared names and the shared rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.greywind.edge import Edge
from plugins.greywind.outbound import Account, ChatGates, Outbound, TokenBucket
from runtime.config import parse_config
from tests.edge.helpers import FakeBot, FakeTime, as_adapter_delivers
from tests.edge.test_edge import MODEL_ENV, RecordingGateway
from tests.support import onebot_events as ob

pytestmark = pytest.mark.anyio

A, B = 10001, 10002


def accounts_edge(tmp_path: Path) -> Edge:
    config = parse_config(
        {
            "outbound": {"max_per_minute": 600, "burst": 50},
            "accounts": [
                {"id": A, "persona": {"name": "小灰", "aliases": []}, "outbound": {"max_per_minute": 2}}
            ],
        }
    )
    return Edge(
        config,
        config_path=tmp_path / "greywind.toml",
        data_dir=tmp_path / "data",
        env=MODEL_ENV,
        factory=RecordingGateway,
    )


async def test_each_account_is_addressed_by_its_own_persona_name(tmp_path: Path) -> None:
    edge = accounts_edge(tmp_path)
    edge.bot_connected(str(A), FakeBot())
    edge.bot_connected(str(B), FakeBot())
    await edge.start()
    try:
        for self_id in (A, B):
            for text in ("小灰 在吗", "灰风 在吗"):
                payload = ob.group_message(self_id=self_id, group_id=500, user_id=42, message=[ob.text(text)])
                await edge.handle_message(await as_adapter_delivers(payload))
        await edge.dispatcher.wait_idle()
    finally:
        await edge.stop()
    gateway = edge.gateway
    assert isinstance(gateway, RecordingGateway)
    addressed = {(m.account, m.text): m.addressed for m in gateway.messages}
    assert addressed == {
        (str(A), "小灰 在吗"): True,  # A's own name
        (str(A), "灰风 在吗"): False,  # the shared persona's name is not A's
        (str(B), "小灰 在吗"): False,  # B has no table: the shared persona
        (str(B), "灰风 在吗"): True,
    }


async def test_an_account_with_its_own_rate_is_paced_alone(tmp_path: Path) -> None:
    edge = accounts_edge(tmp_path)
    assert edge.outbound.buckets[str(A)].statistics().rate_per_minute == pytest.approx(2)
    assert str(B) not in edge.outbound.buckets  # the shared bucket

    time = FakeTime()
    bots = {str(A): FakeBot(time), str(B): FakeBot(time)}
    outbound = Outbound(
        bot=lambda chat: Account(chat.split(":")[1], bots[chat.split(":")[1]]),
        bucket=TokenBucket(600, 50, clock=time, sleep=time.sleep),
        buckets={str(A): TokenBucket(2, 1, clock=time, sleep=time.sleep)},
        gates=ChatGates(),
        clock=time,
        sleep=time.sleep,
    )
    start = time.now
    for index in range(3):
        await outbound.send(f"qq:{B}:group:500", f"b{index}")
    assert time.now == start  # B's sends never waited on A's rate
    await outbound.send(f"qq:{A}:group:500", "a0")
    await outbound.send(f"qq:{A}:group:500", "a1")
    assert time.now == pytest.approx(start + 30.0)  # A's second send waited for A's bucket
    await outbound.send(f"qq:{B}:group:500", "b3")
    assert len(bots[str(B)].calls) == 4
