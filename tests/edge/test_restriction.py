"""The per-account restriction circuit, alone and inside the outbound, on a fake clock."""

from __future__ import annotations

from typing import Any

import pytest
from nonebot.adapters.onebot.v11.exception import ActionFailed, NetworkError

from plugins.greywind.outbound import Account, ChatGates, Outbound, TokenBucket
from plugins.greywind.restriction import Outcome, RestrictionCircuits, Ticket, is_restriction_like
from tests.edge.helpers import FakeTime


def test_what_looks_like_a_restriction() -> None:
    assert is_restriction_like(ActionFailed(status="failed", retcode=1200, data=None))
    assert is_restriction_like(TimeoutError())
    assert is_restriction_like(NetworkError("WebSocket call api send_group_msg timeout"))
    assert not is_restriction_like(ActionFailed(status="failed", retcode=100, data=None))
    assert not is_restriction_like(RuntimeError("ActionFailed(retcode=1200)"))


def test_the_pause_opens_after_n_failures_doubles_on_a_failed_probe_and_closes_on_success() -> None:
    time = FakeTime()
    circuits = RestrictionCircuits(after_failures=3, pause=60, max_pause=200, clock=time)

    def fail(account: str = "a") -> None:
        ticket = circuits.admit(account)
        assert ticket is not None
        circuits.report(account, ticket, Outcome.RESTRICTED)

    fail()
    fail()
    circuits.report("a", Ticket.NORMAL, Outcome.OTHER)  # another failure: neither counts nor resets
    assert not circuits.paused("a")
    fail()
    assert circuits.paused("a")
    assert circuits.admit("a") is None
    assert circuits.admit("b") is Ticket.NORMAL  # another account keeps sending
    time.now += 59
    assert circuits.admit("a") is None
    time.now += 1
    probe = circuits.admit("a")
    assert probe is Ticket.PROBE
    assert circuits.admit("a") is None  # one probe at a time
    circuits.report("a", probe, Outcome.RESTRICTED)
    (stats,) = [s for s in circuits.statistics() if s.account == "a"]
    assert (stats.state, stats.pause_seconds, stats.pauses, stats.refused) == ("paused", 120, 2, 3)
    time.now += 120
    probe = circuits.admit("a")
    assert probe is Ticket.PROBE
    circuits.report("a", probe, Outcome.RESTRICTED)
    assert [s.pause_seconds for s in circuits.statistics() if s.account == "a"] == [200]  # capped
    time.now += 200
    probe = circuits.admit("a")
    assert probe is Ticket.PROBE
    circuits.report("a", probe, Outcome.SENT)
    assert not circuits.paused("a")
    assert circuits.admit("a") is Ticket.NORMAL
    # Closed again from scratch: the next pause is the first one's length.
    circuits.report("a", Ticket.NORMAL, Outcome.RESTRICTED)
    fail()
    fail()
    assert [s.pause_seconds for s in circuits.statistics() if s.account == "a"] == [60]


def test_a_probe_that_is_cancelled_or_fails_otherwise_lets_the_next_send_probe() -> None:
    time = FakeTime()
    circuits = RestrictionCircuits(after_failures=1, pause=10, clock=time)
    circuits.report("a", Ticket.NORMAL, Outcome.RESTRICTED)
    time.now += 10
    probe = circuits.admit("a")
    assert probe is Ticket.PROBE
    circuits.report("a", probe, Outcome.OTHER)
    assert circuits.admit("a") is Ticket.PROBE


class RestrictedBot:
    """Answers every send like a restricted account (retcode 1200) while ``restricted``."""

    def __init__(self) -> None:
        self.calls = 0
        self.restricted = True

    async def call_api(self, api: str, **data: Any) -> Any:
        self.calls += 1
        if self.restricted:
            raise ActionFailed(status="failed", retcode=1200, data=None, message="restricted")
        return {"message_id": self.calls}


@pytest.mark.anyio
async def test_a_restricted_account_is_paused_without_a_retry_storm_and_the_other_keeps_sending() -> None:
    time = FakeTime()
    restricted, healthy = RestrictedBot(), RestrictedBot()
    healthy.restricted = False
    bots = {"group:1": Account("a", restricted), "group:2": Account("b", healthy)}
    outbound = Outbound(
        bot=bots.get,
        bucket=TokenBucket(600, 100, clock=time, sleep=time.sleep),
        gates=ChatGates(),
        clock=time,
        sleep=time.sleep,
        retry_delay=1.5,
        circuits=RestrictionCircuits(after_failures=3, pause=60, max_pause=1800, clock=time),
    )
    first = await outbound.send("group:1", "一")
    second = await outbound.send("group:1", "二")
    assert (first.reason, second.reason) == ("failed", "restricted")
    assert restricted.calls == 3  # the second reply's retry never reached the account
    for n in range(50):
        assert (await outbound.send("group:1", f"第{n}条")).reason == "restricted"
    assert restricted.calls == 3
    assert (await outbound.send("group:2", "我还能说")).sent
    gate = outbound.gate("group:1")  # the runtime asks before any model work
    assert (gate.open, gate.reason) == (False, "restricted")
    assert gate.until is not None
    assert time.now < gate.until <= time.now + 60
    assert outbound.gate("group:2").open
    stats = outbound.statistics()
    assert stats.refused["restricted"] == 51
    assert [(a.account, a.state) for a in stats.accounts] == [("a", "paused"), ("b", "closed")]

    time.now += 60
    restricted.restricted = False
    assert (await outbound.send("group:1", "恢复了")).sent
    assert restricted.calls == 4
    assert [a.state for a in outbound.statistics().accounts] == ["closed", "closed"]
