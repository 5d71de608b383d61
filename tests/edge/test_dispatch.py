"""Per-message work: ordered per chat, bounded, failures contained."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from plugins.greywind.dispatch import Dispatcher, DispatcherClosedError


@pytest.mark.anyio
async def test_one_chats_jobs_run_in_arrival_order_while_chats_overlap() -> None:
    seen: dict[str, list[int]] = {"a": [], "b": []}
    dispatcher = Dispatcher(workers=4, queue_size=8)

    def job(chat: str, n: int):  # type: ignore[no-untyped-def]
        async def run() -> None:
            await anyio.sleep(0.001 * ((n * 7) % 3))  # uneven work must not reorder a chat
            seen[chat].append(n)

        return run

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        for n in range(30):
            await dispatcher.submit("a", job("a", n))
            await dispatcher.submit("b", job("b", n))
        await dispatcher.wait_idle()
        dispatcher.close()
    assert seen == {"a": list(range(30)), "b": list(range(30))}
    stats = dispatcher.statistics()
    assert stats.submitted == stats.done == 60
    assert stats.failed == 0


@pytest.mark.anyio
async def test_a_failing_job_is_counted_and_the_next_one_runs() -> None:
    ran: list[str] = []
    dispatcher = Dispatcher(workers=1, queue_size=4)

    async def bad() -> None:
        raise RuntimeError("runtime bug")

    async def good() -> None:
        ran.append("good")

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        await dispatcher.submit("g", bad)
        await dispatcher.submit("g", good)
        await dispatcher.wait_idle()
        dispatcher.close()
    assert ran == ["good"]
    assert dispatcher.statistics().failed == 1


@pytest.mark.anyio
async def test_a_full_queue_makes_submit_wait_instead_of_dropping() -> None:
    release = anyio.Event()
    done: list[int] = []
    dispatcher = Dispatcher(workers=1, queue_size=2)

    async def blocker() -> None:
        await release.wait()

    def job(n: int):  # type: ignore[no-untyped-def]
        async def run() -> None:
            done.append(n)

        return run

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        await dispatcher.submit("x", blocker)
        await anyio.sleep(0.01)  # the worker takes the blocker
        await dispatcher.submit("x", job(1))
        dispatcher.submit_nowait("x", job(2))
        with pytest.raises(anyio.WouldBlock):
            dispatcher.submit_nowait("x", job(3))
        third_queued = anyio.Event()

        async def submit_third() -> None:
            await dispatcher.submit("x", job(3))
            third_queued.set()

        tg.start_soon(submit_third)
        await anyio.sleep(0.02)
        assert not third_queued.is_set(), "a third job should wait for room"
        assert dispatcher.statistics().queued == 2
        release.set()
        await third_queued.wait()
        await dispatcher.wait_idle()
        dispatcher.close()
    assert done == [1, 2, 3]


@pytest.mark.anyio
async def test_closed_dispatcher_refuses_new_jobs() -> None:
    dispatcher = Dispatcher(workers=1, queue_size=1)

    async def nothing() -> None:
        return None

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        dispatcher.close()
        with pytest.raises(DispatcherClosedError):
            await dispatcher.submit("x", nothing)


@pytest.mark.anyio
async def test_queue_waits_are_measured() -> None:
    release = anyio.Event()
    dispatcher = Dispatcher(workers=1, queue_size=4)

    async def blocker() -> None:
        await release.wait()

    async def quick() -> None:
        return None

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        await dispatcher.submit("x", blocker)
        await dispatcher.submit("x", quick)  # waits behind the blocker
        await anyio.sleep(0.05)
        release.set()
        await dispatcher.wait_idle()
        dispatcher.close()
    stats = dispatcher.statistics()
    assert stats.wait_p95_ms >= 40.0
    assert stats.wait_p50_ms <= stats.wait_p95_ms


@pytest.mark.anyio
async def test_a_flood_in_one_chat_neither_delays_a_quiet_chat_nor_takes_more_than_one_worker() -> None:
    order: list[str] = []
    busy: dict[str, int] = {}
    most: dict[str, int] = {}
    dispatcher = Dispatcher(workers=2, queue_size=500)

    def job(chat: str):  # type: ignore[no-untyped-def]
        async def run() -> None:
            busy[chat] = busy.get(chat, 0) + 1
            most[chat] = max(most.get(chat, 0), busy[chat])
            await anyio.sleep(0.001)
            order.append(chat)
            busy[chat] -= 1

        return run

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        for _ in range(200):
            await dispatcher.submit("flood", job("flood"))
        await dispatcher.submit("quiet", job("quiet"))
        await dispatcher.wait_idle()
        dispatcher.close()
    assert order.index("quiet") < 5, "the quiet chat ran on the other worker, not behind the flood"
    assert most["flood"] == 1, "a chat is on one worker at a time"


@pytest.mark.anyio
async def test_priority_jobs_go_first_and_never_wait_for_room_and_chats_take_turns() -> None:
    order: list[str] = []
    release = anyio.Event()
    dispatcher = Dispatcher(workers=1, queue_size=2)

    async def blocker() -> None:
        await release.wait()

    def job(name: str):  # type: ignore[no-untyped-def]
        async def run() -> None:
            order.append(name)

        return run

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        await dispatcher.submit("x", blocker)
        await anyio.sleep(0.01)
        for n in range(2):
            await dispatcher.submit("a", job(f"a{n}"))
            await dispatcher.submit("b", job(f"b{n}"))
        dispatcher.submit_nowait("c", job("c-at"), priority=True)
        dispatcher.submit_nowait("a", job("a-at"), priority=True)  # a's queue is full: priority waits not
        with pytest.raises(anyio.WouldBlock):
            dispatcher.submit_nowait("a", job("a-chatter"))
        release.set()
        await dispatcher.wait_idle()
        dispatcher.close()
    # c had only its @; a's @ comes after a's earlier messages (a chat keeps its order), and a keeps the
    # front line until its @ is done; b waits its turn.
    assert order == ["c-at", "a0", "a1", "a-at", "b0", "b1"]
    assert dispatcher.statistics().priority_submitted == 2


@pytest.mark.anyio
async def test_the_oldest_queued_job_says_since_when_messages_wait() -> None:
    """Each chat's first job that says ``since`` is its oldest; the one running is no longer waiting."""
    release = anyio.Event()
    dispatcher = Dispatcher(workers=1, queue_size=8)

    async def hold() -> None:
        await release.wait()

    async def nothing() -> None:
        pass

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        await dispatcher.submit("a", hold, since=1.0)
        await anyio.sleep(0.01)  # it runs, holding the one worker
        assert dispatcher.oldest_since() is None
        await dispatcher.submit("a", nothing, since=5.0)
        await dispatcher.submit("b", nothing)  # a notice: says nothing
        await dispatcher.submit("b", nothing, since=3.0)
        await dispatcher.submit("c", nothing, since=4.0)
        assert dispatcher.oldest_since() == 3.0
        release.set()
        await dispatcher.wait_idle()
        assert dispatcher.oldest_since() is None
        dispatcher.close()


@pytest.mark.anyio
async def test_a_worker_lets_the_event_loop_run_between_jobs_that_never_wait() -> None:
    """A message's job may run to its end without suspending (the runtime's message path does):
    a worker with many such jobs queued still hands the loop back after each one, so the rest of
    the bot (the connection's reader, an @'s episode, the timers) is not held until they are all done."""
    dispatcher = Dispatcher(workers=1, queue_size=256)
    order: list[str] = []

    def job(n: int):  # type: ignore[no-untyped-def]
        async def run() -> None:
            order.append(f"job{n}")

        return run

    async def other_work() -> None:
        for n in range(3):
            order.append(f"other{n}")
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        for n in range(100):  # queued before the worker first runs
            dispatcher.submit_nowait(f"chat{n % 10}", job(n))
        tg.start_soon(other_work)
        await dispatcher.wait_idle()
        dispatcher.close()
    assert order.index("other2") < order.index("job10"), "the other work ran between the jobs"


@pytest.mark.anyio
async def test_an_addressed_job_runs_while_every_worker_is_held_by_chatter() -> None:
    """Chatter may hold its worker a long time (waiting for the store's room under a flood); one
    worker is kept for the first line, so an @ does not wait for any of them."""
    release = anyio.Event()
    dispatcher = Dispatcher(workers=2, queue_size=8)
    ran: list[str] = []

    def chatter(name: str):  # type: ignore[no-untyped-def]
        async def run() -> None:
            await release.wait()
            ran.append(name)

        return run

    async def addressed() -> None:
        ran.append("@")

    async with anyio.create_task_group() as tg:
        dispatcher.start(tg)
        for n in range(4):
            await dispatcher.submit(f"chat{n}", chatter(f"chatter{n}"))
        await anyio.sleep(0.01)  # both workers hold chatter; two more chats wait their turn
        await dispatcher.submit("quiet", addressed, priority=True)
        with anyio.fail_after(1):
            while "@" not in ran:  # noqa: ASYNC110 - a plain list the job appends to
                await anyio.sleep(0.005)
        assert ran == ["@"], "it ran while the chatter still held both workers"
        await dispatcher.submit("chat9", chatter("chatter9"))
        await anyio.sleep(0.01)
        assert ran == ["@"], "the kept worker takes no chatter"
        release.set()
        await dispatcher.wait_idle()
        dispatcher.close()
    assert sorted(ran) == ["@", "chatter0", "chatter1", "chatter2", "chatter3", "chatter9"]
