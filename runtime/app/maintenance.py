"""Periodic jobs, each its own task in the lifespan's task group; one that fails logs and carries on.

* save — every ``[runtime] save_interval_ms``: kernel events, lexicon changes, token counts;
* learn — every ``[lexicon] learn_interval_ms``: the kernel's next batch of queued texts
  (``take_learning``; the queue holds ``[scheduling] learn_queue_max``) is segmented in a worker
  thread (``prepare_learning``, jieba, no lexicon state) and applied on the loop (``apply_learning``);
* housekeeping — every ``[runtime] maintenance_interval_ms``: kernel prune, lexicon decay and expiry
  on one slice of the keys (the whole lexicon every ``lexicon_decay_slices`` ticks), session idle
  sweep (handoffs written for sessions past the idle timeout), chat-activity and ledger pruning, and
  the store's finished events and old speeches;
* life — every ``[life] tick_ms``: the LifeDirector's tick; what it schedules moves the loop's alarm.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.abc import TaskGroup

from runtime.store.protocol import RestorePolicy
from runtime.store.restore import prune_runtime_state

if TYPE_CHECKING:
    from runtime.app.runtime import Runtime

__all__ = ["Maintenance", "MaintenanceStatistics"]

log = structlog.get_logger("greywind.maintenance")


@dataclass(frozen=True, slots=True)
class MaintenanceStatistics:
    saves: int
    learned_texts: int
    housekeeping_ticks: int
    life_ticks: int
    failures: int


class Maintenance:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._slice = 0
        self._counts = dict.fromkeys(
            ("saves", "learned_texts", "housekeeping_ticks", "life_ticks", "failures"), 0
        )

    def start(self, task_group: TaskGroup) -> None:
        rt = self._rt
        app = rt.app
        task_group.start_soon(self._every, "save", app.save_interval_ms / 1000, self.save)
        task_group.start_soon(
            self._every, "learn", rt.config.lexicon.learn_interval_ms / 1000, self._learn_job
        )
        task_group.start_soon(
            self._every, "housekeeping", app.maintenance_interval_ms / 1000, self.housekeeping
        )
        if rt.life_settings.enabled:
            task_group.start_soon(self._every, "life", rt.life_settings.tick, self.life)

    async def _every(self, name: str, interval: float, job: Callable[[], Awaitable[None]]) -> None:
        while True:
            await anyio.sleep(interval)
            try:
                await job()
            except Exception:
                self._counts["failures"] += 1
                log.exception("job_failed", job=name)

    async def save(self) -> None:
        await self._rt.persistence.save()
        self._counts["saves"] += 1

    async def _learn_job(self) -> None:
        await self.learn()

    async def learn(self, max_texts: int | None = None) -> int:
        """One learning batch; how many texts it read."""
        rt = self._rt
        by_key = rt.kernel.take_learning(max_texts)
        take = sum(len(texts) for texts in by_key.values())
        if not take:
            return 0
        lexicon = rt.kernel.lexicon
        batch = await anyio.to_thread.run_sync(lexicon.prepare_learning, by_key)
        lexicon.apply_learning(batch, rt.clock())
        self._counts["learned_texts"] += take
        return take

    async def housekeeping(self) -> None:
        rt = self._rt
        now = rt.clock()
        rt.kernel.prune(now)
        keys = rt.kernel.lexicon.list_keys()
        slices = rt.app.lexicon_decay_slices
        part = keys[self._slice % slices :: slices]
        self._slice += 1
        if part:
            rt.kernel.lexicon.decay(now, part)
            rt.kernel.lexicon.expire(now, part)
        await rt.context.sessions.sweep(now)
        rt.activity.prune(now - 2 * rt.life_settings.recent_activity)
        rt.router.ledger.prune(rt.router.ledger.day_of(now))
        if self._slice % slices == 0:
            await prune_runtime_state(rt.store, now=now, policy=RestorePolicy.from_config(rt.config.store))
        self._counts["housekeeping_ticks"] += 1

    async def life(self) -> None:
        report = await self._rt.director.tick(self._rt.clock())
        self._counts["life_ticks"] += 1
        if report.emitted:
            self._rt.loop.poke()

    def statistics(self) -> MaintenanceStatistics:
        return MaintenanceStatistics(**self._counts)
