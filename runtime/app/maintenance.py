"""Periodic jobs, each its own task in the lifespan's task group; one that fails logs and carries on.

* save — every ``[runtime] save_interval_ms``: kernel events, lexicon changes, token counts;
* learn — every ``[lexicon] learn_interval_ms``: the kernel's next batch of queued texts
  (``take_learning``; the queue holds ``[scheduling] learn_queue_max``) is segmented in a worker
  thread (``prepare_learning``, jieba, no lexicon state) and applied on the loop (``apply_learning``)
  a few chats' keys at a time (``LEARN_SLICE_TEXTS``), the loop free between them;
* housekeeping — every ``[runtime] maintenance_interval_ms``: kernel prune, lexicon decay and expiry
  on one slice of the keys (the whole lexicon every ``lexicon_decay_slices`` ticks), session idle
  sweep (handoffs written for sessions past the idle timeout), chat-activity and ledger pruning, and
  the store's finished events and old speeches;
* life — every ``[life] tick_ms``: the LifeDirector's tick; what it schedules moves the loop's alarm.

Each job is a task of the runtime's :class:`~runtime.lifetime.Lifetime` (:meth:`Maintenance.start`),
cancelled at stop before the store it uses closes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace

import anyio
import anyio.lowlevel
import structlog

from runtime.app.alarm import Alarm
from runtime.config.app import AppConfig
from runtime.config.lexicon import LexiconConfig
from runtime.context.sessions import SessionManager
from runtime.extensions import ChatActivityLog, LifeDirector, LifeSettings
from runtime.kernel.kernel import Kernel
from runtime.kernel.lexicon.learning import LearningBatch, PreparedText
from runtime.kernel.lexicon.terms import LexiconKey
from runtime.lifetime import Lifetime
from runtime.llm.tokens import TokenLedger
from runtime.store.protocol import RestorePolicy
from runtime.store.restore import prune_runtime_state
from runtime.store.roles import EventRows

__all__ = ["LEARN_SLICE_TEXTS", "Maintenance", "MaintenanceStatistics"]

log = structlog.get_logger("greywind.maintenance")

# A learning batch is applied on the loop in slices of whole keys of about this many texts: a full
# batch (``learn_max_texts``, 1,000) over a few hundred chats held the loop tens of ms in one go.
LEARN_SLICE_TEXTS = 100


def learning_slices(batch: LearningBatch, size: int = LEARN_SLICE_TEXTS) -> Iterator[LearningBatch]:
    """``batch`` cut at key boundaries into parts of at least ``size`` texts (the last may be
    smaller), in order; applied one after another they learn what the whole batch learns."""
    part: list[tuple[LexiconKey, tuple[PreparedText, ...]]] = []
    count, first = 0, True
    for item in batch.texts:
        part.append(item)
        count += len(item[1])
        if count >= size:
            yield _part(batch, part, first)
            part, count, first = [], 0, False
    if part or first:
        yield _part(batch, part, first)


def _part(
    batch: LearningBatch, texts: list[tuple[LexiconKey, tuple[PreparedText, ...]]], first: bool
) -> LearningBatch:
    # The batch's own counts go with its first part, so a report summed over the parts is the batch's.
    if first:
        return replace(batch, texts=tuple(texts))
    return replace(batch, texts=tuple(texts), skipped_texts=0, chars_read=0)


@dataclass(frozen=True, slots=True)
class MaintenanceStatistics:
    saves: int
    learned_texts: int
    housekeeping_ticks: int
    life_ticks: int
    failures: int


class Maintenance:
    def __init__(
        self,
        kernel: Kernel,
        store: EventRows,
        *,
        clock: Callable[[], float],
        app: AppConfig,
        lexicon: LexiconConfig,
        restore_policy: RestorePolicy,
        sessions: SessionManager,
        activity: ChatActivityLog,
        ledger: TokenLedger,
        director: LifeDirector,
        life: LifeSettings,
        save: Callable[[], Awaitable[object]],
        alarm: Alarm,
    ) -> None:
        self._kernel = kernel
        self._store = store
        self._clock = clock
        self._app = app
        self._lexicon = lexicon
        self._policy = restore_policy
        self._sessions = sessions
        self._activity = activity
        self._ledger = ledger
        self._director = director
        self._life = life
        self._save = save
        self._alarm = alarm
        self._slice = 0
        self._counts = dict.fromkeys(
            ("saves", "learned_texts", "housekeeping_ticks", "life_ticks", "failures"), 0
        )

    def start(self, lifetime: Lifetime) -> None:
        app = self._app
        lifetime.start("save", self._every, "save", app.save_interval_ms / 1000, self.save)
        lifetime.start("learn", self._every, "learn", self._lexicon.learn_interval_ms / 1000, self._learn_job)
        lifetime.start(
            "housekeeping", self._every, "housekeeping", app.maintenance_interval_ms / 1000, self.housekeeping
        )
        if self._life.enabled:
            lifetime.start("life", self._every, "life", self._life.tick, self.life)

    async def _every(self, name: str, interval: float, job: Callable[[], Awaitable[None]]) -> None:
        while True:
            await anyio.sleep(interval)
            try:
                await job()
            except Exception:
                self._counts["failures"] += 1
                log.exception("job_failed", job=name)

    async def save(self) -> None:
        await self._save()
        self._counts["saves"] += 1

    async def _learn_job(self) -> None:
        await self.learn()

    async def learn(self, max_texts: int | None = None) -> int:
        """One learning batch; how many texts it read."""
        by_key = self._kernel.take_learning(max_texts)
        take = sum(len(texts) for texts in by_key.values())
        if not take:
            return 0
        lexicon = self._kernel.lexicon
        batch = await anyio.to_thread.run_sync(lexicon.prepare_learning, by_key)
        now = self._clock()
        for part in learning_slices(batch):
            lexicon.apply_learning(part, now)
            await anyio.lowlevel.checkpoint()  # the messages that came meanwhile go first
        self._counts["learned_texts"] += take
        return take

    async def housekeeping(self) -> None:
        now = self._clock()
        kernel = self._kernel
        kernel.prune(now)
        keys = kernel.lexicon.list_keys()
        slices = self._app.lexicon_decay_slices
        part = keys[self._slice % slices :: slices]
        self._slice += 1
        if part:
            kernel.lexicon.decay(now, part)
            kernel.lexicon.expire(now, part)
        await self._sessions.sweep(now)
        self._activity.prune(now - 2 * self._life.recent_activity)
        self._ledger.prune(self._ledger.day_of(now))
        if self._slice % slices == 0:
            await prune_runtime_state(self._store, now=now, policy=self._policy)
        self._counts["housekeeping_ticks"] += 1

    async def life(self) -> None:
        report = await self._director.tick(self._clock())
        self._counts["life_ticks"] += 1
        if report.emitted:
            self._alarm.poke()

    def statistics(self) -> MaintenanceStatistics:
        return MaintenanceStatistics(**self._counts)
