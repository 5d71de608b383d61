"""The activation loop: sleep until the kernel's next activation, hand out what is due, repeat.

:meth:`ActivationLoop.wait_next_due` sleeps on the bot's one :class:`~runtime.app.alarm.Alarm` (the
scheduler's ``next_at()``, or earlier when poked). No busy loop, no sleeping task per activation.
Then ``kernel.due(now)``: ready activations become episodes; the rest (expired, superseded, dropped by
the budget) are settled by the driver.

Episodes run in the lifespan's task group, one at a time per chat (a per-chat lock, so a forced reply
waits for the episode already speaking there rather than talking over it), each in a slot
(:mod:`runtime.app.slots`): ``[runtime] max_concurrent_episodes`` shared ones, and
``forced_episode_reserve`` more only forced episodes of chats without an episode in the last
:data:`FRESH_AFTER` seconds may take. An episode takes its chat's lock before a slot, so a chat holds
at most one slot however many of its episodes wait: a flood of @s in some chats, or a model that
hangs for them, cannot take the slots the other chats need. An unprompted episode waiting for a slot
under its chat's lock steps back behind a forced episode of its chat, and one that has its slot but has
not asked the model yet gives way to it (:class:`~runtime.app.slots.GiveWay`: cancelled, its
activation skipped; the forced episode's context has the same messages): the @ waits only for an
episode already talking with the model or speaking. A fresh chat's forced episode, once it
has its slot, is *addressed work* (:mod:`runtime.urgency`) until it calls the model: chatter yields
the process to it meanwhile.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from runtime import stages
from runtime.app.alarm import MAX_SLEEP, STALL_RETRY, Alarm
from runtime.app.slots import EpisodeSlots, GiveWay, SlotStatistics, holding
from runtime.kernel.kernel import Kernel
from runtime.kernel.outcomes import Activation
from runtime.urgency import AddressedWork, addressed, before_the_model

__all__ = ["MAX_SLEEP", "STALL_RETRY", "ActivationLoop", "EpisodeRunner", "LoopStatistics"]

log = structlog.get_logger("greywind.loop")
# The activations an unprompted episode runs for that give way to a forced one before the model call.
GIVES_WAY = frozenset({"message"})
# A chat whose last episode began longer ago than this is *fresh*: its forced episodes may take the
# reserved slots (runtime.app.slots). Chats remembered for that, at most.
FRESH_AFTER = 60.0
RECENT_CHATS_KEPT = 4_096


@dataclass(frozen=True, slots=True)
class LoopStatistics:
    wakeups: int
    activations: int
    episodes_started: int
    running: int
    waiting_for_chat: int
    next_at: float | None
    slots: SlotStatistics | None = None


class EpisodeRunner(Protocol):
    """What the loop hands activations to (the :class:`~runtime.app.episodes.EpisodeDriver`)."""

    async def run(self, activation: Activation) -> None: ...
    def settle(self, activation: Activation) -> None: ...
    def settle_unrun(self, activation: Activation, reason: str) -> None: ...


class ActivationLoop:
    def __init__(
        self,
        kernel: Kernel,
        alarm: Alarm,
        runner: EpisodeRunner,
        slots: EpisodeSlots,
        *,
        clock: Callable[[], float],
        addressed_work: AddressedWork,
    ) -> None:
        self._kernel = kernel
        self._alarm = alarm
        self._runner = runner
        self._clock = clock
        self._addressed = addressed_work
        self.slots = slots
        self._chat_locks: weakref.WeakValueDictionary[str, anyio.Lock] = weakref.WeakValueDictionary()
        self._last_episode: dict[str, float] = {}  # chat -> when its last episode got a slot
        self._forced_waiting: dict[str, int] = {}  # chat -> forced episodes not yet under its lock
        self._slot_waits: dict[str, anyio.CancelScope] = {}  # chat -> its unprompted one's slot wait
        self._preparing: dict[str, GiveWay] = {}  # chat -> its unprompted one before the model call
        self._task_group: TaskGroup | None = None
        self._idle = anyio.Event()
        self._idle.set()
        self._closed = False
        self._stalled = False
        self._running = self._queued = 0
        self._scopes: set[anyio.CancelScope] = set()  # one per episode, for a stop that cannot wait
        self._activations = self._started = 0

    def start(self, task_group: TaskGroup) -> None:
        """Episodes run in ``task_group`` from now on; the caller runs :meth:`run` (its own task)."""
        self._task_group = task_group

    def close(self) -> None:
        """No new episodes; running ones finish (the caller waits with :meth:`wait_idle`)."""
        self._closed = True
        self.wake()

    async def stop(self, within: float | None = None) -> None:
        """Close and wait until the running episodes have finished; those still running after
        ``within`` seconds are cancelled (each leaves its event to the next start) and awaited."""
        self.close()
        if within is None:
            await self.wait_idle()
            return
        with anyio.move_on_after(within):
            await self.wait_idle()
        for scope in tuple(self._scopes):
            scope.cancel()
        await self.wait_idle()

    # -- the alarm --------------------------------------------------------------------------------

    def wake(self) -> None:
        """Re-read the schedule now (the clock moved, or something was scheduled)."""
        self._alarm.wake()

    def poke(self, *, force: bool = False) -> None:
        """Wake the loop if the next activation is now earlier than the alarm (or ``force``)."""
        self._alarm.poke(force=force)

    async def wait_next_due(self) -> None:
        """Return when the kernel's next activation is due, or when woken (:meth:`Alarm.wait`)."""
        await self._alarm.wait(stalled=self._stalled)

    async def run(self) -> None:
        while not self._closed:
            try:
                await self.wait_next_due()
                if self._closed:
                    break
                ready = self.run_due()
                next_at = self._kernel.scheduler.next_at()
                self._stalled = not ready and next_at is not None and next_at <= self._clock()
            except Exception:
                # A bug in one batch must not stop every later activation; pause so it cannot spin.
                log.exception("due_failed")
                await anyio.sleep(1.0)

    def run_due(self) -> int:
        """Hand out every activation due now; how many were ready."""
        ready = 0
        for activation in self._kernel.due(self._clock()):
            self._activations += 1
            if activation.ready:
                ready += 1
                self.start_episode(activation)
            else:
                self._runner.settle(activation)
        return ready

    # -- episodes ---------------------------------------------------------------------------------

    def start_episode(self, activation: Activation) -> None:
        if self._closed or self._task_group is None:
            self._runner.settle_unrun(activation, "runtime stopping")
            return
        self._started += 1
        self._running += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        self._task_group.start_soon(self._run_one, activation)

    async def _run_one(self, activation: Activation) -> None:
        if not stages.ENABLED:
            await self._run_one_traced(activation)
            return
        ids = activation.event.evidence_message_ids
        with stages.following(ids[0] if ids and activation.reason == "forced" else None):
            await self._run_one_traced(activation)

    async def _run_one_traced(self, activation: Activation) -> None:
        stages.stamp_current("loop.task")
        chat_id = activation.event.chat_id
        lock = self._chat_locks.get(chat_id)
        if lock is None:
            lock = self._chat_locks[chat_id] = anyio.Lock()
        forced = activation.event.payload.get("forced") is True or activation.reason == "forced"
        if forced:
            self._forced_waiting[chat_id] = self._forced_waiting.get(chat_id, 0) + 1
            if (waiting := self._slot_waits.get(chat_id)) is not None:
                waiting.cancel()  # the chat's unprompted episode waiting for a slot lets this one first
            if (preparing := self._preparing.get(chat_id)) is not None:
                preparing.ask()  # and one that has not asked the model yet gives way
        counted = forced  # among the chat's forced episodes waiting for its lock
        self._queued += 1
        entered = False
        scope = anyio.CancelScope()
        self._scopes.add(scope)
        try:
            with scope:
                while True:
                    async with lock:
                        stages.stamp_current("loop.lock")
                        if counted:
                            counted = False
                            self._forced_done_waiting(chat_id)
                        taken = await self._slot(chat_id, forced)
                        if taken is None:
                            continue  # it gave its place to a forced episode of its chat: in line again
                        self._queued -= 1
                        entered = True
                        stages.stamp_current("loop.slot")
                        await self._run_in_slot(activation, chat_id, *taken)
                    break
        except Exception:
            log.exception("episode_crashed", chat_id=chat_id, event_id=activation.event.id)
        finally:
            self._scopes.discard(scope)
            if counted:
                self._forced_done_waiting(chat_id)
            if not entered:
                self._queued -= 1
            self._running -= 1
            if self._running == 0:
                self._idle.set()
            self.poke(force=self._stalled)

    def _forced_done_waiting(self, chat_id: str) -> None:
        left = self._forced_waiting.pop(chat_id, 1) - 1
        if left:
            self._forced_waiting[chat_id] = left

    async def _slot(self, chat_id: str, forced: bool) -> tuple[bool, bool, bool] | None:
        """This episode's slot: (forced, fresh, reserved). None when it is unprompted and a forced
        episode of its chat waits for the lock it holds: it goes back in line behind that one."""
        fresh = self._fresh(chat_id)
        if forced:
            reserved = await self.slots.acquire(forced=True, fresh=fresh)
        else:
            if self._forced_waiting.get(chat_id):
                return None
            with anyio.CancelScope() as scope:
                self._slot_waits[chat_id] = scope
                try:
                    reserved = await self.slots.acquire(forced=False)
                finally:
                    del self._slot_waits[chat_id]
            if scope.cancelled_caught:
                return None
        self._note_episode(chat_id)
        return forced, fresh, reserved

    async def _run_in_slot(
        self, activation: Activation, chat_id: str, forced: bool, fresh: bool, reserved: bool
    ) -> None:
        release = self._releaser(reserved)
        # A fresh chat's forced episode is addressed work until it calls the model: chatter yields
        # to it. (Not a chat asking again and again: @-spam must not slow all chatter.)
        work = self._addressed if forced and fresh else None
        gives_way = not forced and activation.event.kind in GIVES_WAY
        try:
            with holding(release), addressed(work), self._giving_way(chat_id, gives_way):
                await self._runner.run(activation)
        finally:
            release()

    @contextlib.contextmanager
    def _giving_way(self, chat_id: str, gives_way: bool) -> Iterator[None]:
        """Inside, until it calls the model, a forced episode of the chat cancels this one."""
        if not gives_way:
            yield
            return
        give_way = self._preparing[chat_id] = GiveWay()

        def reached() -> None:
            if self._preparing.get(chat_id) is give_way:
                del self._preparing[chat_id]

        try:
            with give_way.running(), before_the_model(reached):
                yield
        finally:
            reached()
        if give_way.scope.cancelled_caught:
            log.info("episode_gave_way", chat_id=chat_id)

    def _fresh(self, chat_id: str) -> bool:
        """No episode of this chat lately."""
        last = self._last_episode.get(chat_id)
        return last is None or time.monotonic() - last >= FRESH_AFTER

    def _note_episode(self, chat_id: str) -> None:
        self._last_episode.pop(chat_id, None)
        self._last_episode[chat_id] = time.monotonic()
        if len(self._last_episode) > RECENT_CHATS_KEPT:
            del self._last_episode[next(iter(self._last_episode))]  # the one heard from longest ago

    def _releaser(self, reserved: bool) -> Callable[[], None]:
        """Gives this episode's slot back once, early (``leave_slot``) or at its end."""
        held = [True]

        def release() -> None:
            if held[0]:
                held[0] = False
                self.slots.release(reserved)

        return release

    async def wait_idle(self) -> None:
        """Until no episode is running or queued."""
        await self._idle.wait()

    def statistics(self) -> LoopStatistics:
        return LoopStatistics(
            wakeups=self._alarm.wakeups,
            activations=self._activations,
            episodes_started=self._started,
            running=self._running,
            waiting_for_chat=self._queued,
            next_at=self._kernel.scheduler.next_at(),
            slots=self.slots.statistics(),
        )
