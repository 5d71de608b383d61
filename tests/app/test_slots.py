"""Episode slots: a reserve for forced episodes, and forced waiters served first."""

from __future__ import annotations

import anyio
import pytest

from runtime.app.slots import EpisodeSlots, holding, leave_slot


@pytest.mark.anyio
async def test_forced_episodes_take_the_reserve_when_the_shared_slots_are_full() -> None:
    slots = EpisodeSlots(shared=2, reserved=1)
    assert await slots.acquire(forced=False) is False
    assert await slots.acquire(forced=True) is False
    assert await slots.acquire(forced=True) is True, "the reserved slot"
    with anyio.move_on_after(0.05) as scope:
        await slots.acquire(forced=False)
    assert scope.cancelled_caught, "an unprompted episode never takes the reserve"
    stats = slots.statistics()
    assert (stats.in_use_shared, stats.in_use_reserved, stats.waiting_unprompted) == (2, 1, 0)


@pytest.mark.anyio
async def test_a_freed_slot_goes_to_a_waiting_forced_episode_first() -> None:
    slots = EpisodeSlots(shared=1, reserved=0)
    order: list[str] = []
    assert await slots.acquire(forced=False) is False

    async def run(name: str, forced: bool) -> None:
        reserved = await slots.acquire(forced=forced)
        order.append(name)
        slots.release(reserved)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "unprompted", False)
        await anyio.sleep(0.01)
        tg.start_soon(run, "forced", True)
        await anyio.sleep(0.01)
        assert slots.statistics().waiting_forced == 1
        slots.release(False)
    assert order == ["forced", "unprompted"]
    assert slots.statistics().in_use_shared == 0


@pytest.mark.anyio
async def test_a_cancelled_waiter_leaves_the_line_and_the_freed_slot_is_not_lost() -> None:
    slots = EpisodeSlots(shared=1, reserved=0)
    await slots.acquire(forced=False)

    async def wait_forced() -> None:
        await slots.acquire(forced=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_forced)
        await anyio.sleep(0.01)
        assert slots.statistics().waiting_forced == 1
        tg.cancel_scope.cancel()
    assert slots.statistics().waiting_forced == 0
    slots.release(False)
    assert slots.statistics().in_use_shared == 0, "the slot went back, not to the cancelled waiter"
    assert await slots.acquire(forced=False) is False


@pytest.mark.anyio
async def test_the_reserve_is_for_chats_without_a_recent_episode() -> None:
    slots = EpisodeSlots(shared=1, reserved=1)
    assert await slots.acquire(forced=True, fresh=False) is False
    with anyio.move_on_after(0.05) as scope:
        await slots.acquire(forced=True, fresh=False)
    assert scope.cancelled_caught, "a chat asking again and again does not take the reserve"
    assert await slots.acquire(forced=True, fresh=True) is True


@pytest.mark.anyio
async def test_a_freed_slot_goes_to_a_fresh_chat_before_one_asking_again() -> None:
    slots = EpisodeSlots(shared=1, reserved=0)
    order: list[str] = []
    await slots.acquire(forced=False)

    async def run(name: str, fresh: bool) -> None:
        reserved = await slots.acquire(forced=True, fresh=fresh)
        order.append(name)
        slots.release(reserved)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "again", False)
        await anyio.sleep(0.01)
        tg.start_soon(run, "fresh", True)
        await anyio.sleep(0.01)
        slots.release(False)
    assert order == ["fresh", "again"]


@pytest.mark.anyio
async def test_an_episode_about_to_send_gives_its_slot_back_once() -> None:
    slots = EpisodeSlots(shared=1, reserved=0)
    reserved = await slots.acquire(forced=False)
    released: list[bool] = []

    def release() -> None:
        if not released:
            released.append(True)
            slots.release(reserved)

    with holding(release):
        leave_slot()
        assert slots.statistics().in_use_shared == 0, (
            "the next episode may call the model while this one sends"
        )
        leave_slot()
    release()
    assert released == [True]
    leave_slot()  # outside an episode: nothing to give back
    assert slots.statistics().in_use_shared == 0
