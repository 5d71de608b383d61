"""The activation loop's slots with a scripted driver: a chat holds one slot, an @ never waits behind
its own chat's unprompted episode (waiting for a slot, or not yet talking with the model), nor behind a
model hanging elsewhere."""

from __future__ import annotations

import time
from types import SimpleNamespace

import anyio
import pytest

from runtime.app.alarm import Alarm
from runtime.app.loop import ActivationLoop
from runtime.app.slots import EpisodeSlots
from runtime.urgency import AddressedWork, reaching_the_model

pytestmark = pytest.mark.anyio


class Driver:
    """Runs an activation until the test opens its gate; notes the order they started in."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.asking: set[str] = set()  # these call the model before they wait for their gate
        self.gates: dict[str, anyio.Event] = {}

    def gate(self, name: str) -> anyio.Event:
        return self.gates.setdefault(name, anyio.Event())

    async def run(self, activation: SimpleNamespace) -> None:
        name = activation.event.id
        self.started.append(name)
        if name in self.asking:
            reaching_the_model()
        try:
            await self.gate(name).wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(name)
            raise

    def settle_unrun(self, activation: SimpleNamespace, reason: str) -> None:
        raise AssertionError("not expected")


def runtime(shared: int, reserved: int) -> SimpleNamespace:
    scheduler = SimpleNamespace(next_at=lambda: None)
    return SimpleNamespace(
        slots=EpisodeSlots(shared, reserved),
        driver=Driver(),
        kernel=SimpleNamespace(scheduler=scheduler, due=lambda now: []),
    )


def loop_of(rt: SimpleNamespace) -> ActivationLoop:
    return ActivationLoop(
        rt.kernel,
        Alarm(rt.kernel.scheduler, time.time),
        rt.driver,
        rt.slots,
        clock=time.time,
        addressed_work=AddressedWork(),
    )


def activation(name: str, chat: str, *, forced: bool) -> SimpleNamespace:
    event = SimpleNamespace(id=name, chat_id=chat, payload={"forced": forced}, kind="message")
    return SimpleNamespace(event=event, reason="forced" if forced else "scheduled")


async def until(condition, within: float = 2.0) -> None:  # type: ignore[no-untyped-def]
    with anyio.fail_after(within):
        while not condition():  # noqa: ASYNC110 - a plain condition on the fakes
            await anyio.sleep(0.005)


async def test_at_spam_in_one_chat_holds_one_slot_and_a_quiet_chat_gets_the_next() -> None:
    rt = runtime(shared=2, reserved=0)
    loop = loop_of(rt)
    async with anyio.create_task_group() as tg:
        loop.start(tg)
        for n in range(20):
            loop.start_episode(activation(f"spam{n}", "group:1", forced=True))  # type: ignore[arg-type]
        loop.start_episode(activation("other", "group:2", forced=True))  # type: ignore[arg-type]
        await until(lambda: rt.driver.started == ["spam0", "other"])
        assert loop.slots.statistics().in_use_shared == 2
        loop.start_episode(activation("quiet", "group:3", forced=True))  # type: ignore[arg-type]
        await anyio.sleep(0.05)
        rt.driver.gate("other").set()
        await until(lambda: "quiet" in rt.driver.started)
        assert "spam1" not in rt.driver.started, "the spamming chat runs one episode at a time"
        for gate in ("spam0", "quiet", *(f"spam{n}" for n in range(1, 20))):
            rt.driver.gate(gate).set()
        await until(lambda: len(rt.driver.started) == 22)
        loop.close()
        tg.cancel_scope.cancel()


async def test_an_at_goes_before_its_chats_unprompted_episode_waiting_for_a_slot() -> None:
    rt = runtime(shared=1, reserved=1)
    loop = loop_of(rt)
    async with anyio.create_task_group() as tg:
        loop.start(tg)
        loop.start_episode(activation("hung", "group:9", forced=False))  # type: ignore[arg-type]
        await until(lambda: rt.driver.started == ["hung"])
        loop.start_episode(activation("unprompted", "group:1", forced=False))  # type: ignore[arg-type]
        await anyio.sleep(0.05)  # it holds group:1's lock, waiting for the one shared slot
        loop.start_episode(activation("at", "group:1", forced=True))  # type: ignore[arg-type]
        await until(lambda: rt.driver.started == ["hung", "at"])
        rt.driver.gate("at").set()
        rt.driver.gate("hung").set()
        await until(lambda: rt.driver.started == ["hung", "at", "unprompted"])
        rt.driver.gate("unprompted").set()
        with anyio.fail_after(2):
            await loop.wait_idle()
        stats = loop.statistics()
        assert (stats.running, stats.waiting_for_chat) == (0, 0)
        assert (stats.slots.in_use_shared, stats.slots.in_use_reserved) == (0, 0)  # type: ignore[union-attr]
        loop.close()
        tg.cancel_scope.cancel()


async def test_an_at_does_not_wait_for_its_chats_unprompted_episode_that_has_not_asked_the_model() -> None:
    rt = runtime(shared=2, reserved=1)
    loop = loop_of(rt)
    async with anyio.create_task_group() as tg:
        loop.start(tg)
        loop.start_episode(activation("building", "group:1", forced=False))  # type: ignore[arg-type]
        await until(lambda: rt.driver.started == ["building"])  # building its context: no model yet
        loop.start_episode(activation("at", "group:1", forced=True))  # type: ignore[arg-type]
        await until(lambda: rt.driver.started == ["building", "at"])
        assert rt.driver.cancelled == ["building"], "it gave way: the @ answers the chat"
        rt.driver.gate("at").set()
        with anyio.fail_after(2):
            await loop.wait_idle()
        assert loop.statistics().slots.in_use_shared == 0  # type: ignore[union-attr]
        loop.close()
        tg.cancel_scope.cancel()


async def test_an_at_waits_for_its_chats_unprompted_episode_already_talking_with_the_model() -> None:
    rt = runtime(shared=2, reserved=1)
    loop = loop_of(rt)
    rt.driver.asking.add("talking")
    async with anyio.create_task_group() as tg:
        loop.start(tg)
        loop.start_episode(activation("talking", "group:1", forced=False))  # type: ignore[arg-type]
        await until(lambda: rt.driver.started == ["talking"])
        loop.start_episode(activation("at", "group:1", forced=True))  # type: ignore[arg-type]
        await anyio.sleep(0.05)
        assert rt.driver.started == ["talking"], "one episode speaks in a chat at a time"
        rt.driver.gate("talking").set()
        await until(lambda: rt.driver.started == ["talking", "at"])
        assert rt.driver.cancelled == []
        rt.driver.gate("at").set()
        with anyio.fail_after(2):
            await loop.wait_idle()
        loop.close()
        tg.cancel_scope.cancel()
