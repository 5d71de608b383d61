"""What survives a restart, and how it is put back.

On start (:meth:`StatePersistence.restore`), in this order:

1. the kernel: lexicon terms, recent speeches (budgets), non-terminal events — so scheduled
   activations, reminders and resumes fire after a restart (``runtime.store.kernel_state``);
2. conversation threads: the stored messages of the restore window are replayed through the kernel's
   ThreadTracker under their stored thread ids (:class:`~runtime.app.ids.RestoringIds`), the bot's own
   through ``note_outgoing``; they also fill the builder's recent buffer and the chat-activity log;
3. waiting episodes: each restored resume activation gets its episode back from the store;
4. sessions left open become ``interrupted`` (process exit), so the next turn resumes them;
5. today's token counts go back into the ledger; quiet periods back into the send gates.

While running, :meth:`StatePersistence.save` writes what changed since the last call: events (by
identity — the kernel replaces a ``BotEvent`` on every change), lexicon changes, token counts. Events
are written only while they can matter after a restart (non-terminal), plus once more when they end,
so the stored copy never resurrects a finished activation. An event whose loss would break a promise
(a reminder the model has just confirmed) is committed at once instead (:meth:`commit_event`).
Quiet periods are a small JSON file in the data directory (chat -> until and kind), written when they
change; so are the ``/enable`` and ``/disable`` overrides of the groups the bot lives in (chat -> on),
put back into the runtime's :class:`~runtime.groups.GroupPolicy` on start, and the per-chat attention
thresholds an operator set in the console (chat -> high/medium), put back into the kernel.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog

from runtime.app.deliveries import RecentDeliveries
from runtime.context.builder import RecentBuffer
from runtime.context.sessions import SessionManager
from runtime.episodes import RESUME_KIND, WaitingRoom, episode_id_of
from runtime.episodes.persist import from_store_record
from runtime.extensions import ChatActivityLog
from runtime.groups import GROUPS_FILE, GroupPolicy
from runtime.kernel.errors import KernelError
from runtime.kernel.events import TERMINAL_STATES, BotEvent
from runtime.kernel.kernel import Kernel
from runtime.llm.tokens import LedgerEntry, TokenLedger
from runtime.memory.injector import MemoryInjector
from runtime.ports import QuietGates
from runtime.quiet import QUIET_FILE, QUIET_IMPOSED, QUIET_KINDS, QuietPeriod
from runtime.quiet_history import QUIET_HISTORY_FILE, append_quiet_changes
from runtime.store.errors import StoreError
from runtime.store.kernel_state import chat_message, event_record, restore_kernel, save_lexicon_changes
from runtime.store.protocol import RestorePolicy
from runtime.store.records import StoredMessage
from runtime.store.roles import SavedStateRows
from runtime.store.writer import StoreWriter

__all__ = [
    "QUIET_FILE",
    "PersistenceStatistics",
    "RestoreReport",
    "SaveReport",
    "StatePersistence",
]

#: Per-chat attention threshold overrides: a JSON object, chat id -> {"high": x, "medium": y}.
THRESHOLDS_FILE = "thresholds.json"

log = structlog.get_logger("greywind.persistence")


@dataclass(frozen=True, slots=True)
class RestoreReport:
    events: int
    lexicon_keys: int
    chats_with_speeches: int
    messages: int
    waiting_episodes: int
    interrupted_sessions: int
    ledger_entries: int
    quiet_chats: int


@dataclass(frozen=True, slots=True)
class PersistenceStatistics:
    saves: int
    events_written: int
    open_events_tracked: int


@dataclass(frozen=True, slots=True)
class SaveReport:
    events: int
    lexicon_rows: int
    ledger_rows: int


class StatePersistence:
    """Restore on start, incremental saves while running, a last save at stop."""

    def __init__(
        self,
        kernel: Kernel,
        store: SavedStateRows,
        writer: StoreWriter,
        *,
        restore_policy: RestorePolicy,
        sessions: SessionManager,
        injector: MemoryInjector | None,
        ledger: TokenLedger,
        room: WaitingRoom,
        activity: ChatActivityLog,
        recent: RecentBuffer,
        deliveries: RecentDeliveries,
        quiet: dict[str, QuietPeriod],
        gates: QuietGates,
        data_dir: Path,
        groups: GroupPolicy | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._kernel = kernel
        self._store = store
        self._writer = writer
        self._policy = restore_policy
        self._sessions = sessions
        self._injector = injector
        self._ledger = ledger
        self._room = room
        self._activity = activity
        self._recent = recent
        self._deliveries = deliveries
        self._quiet = quiet  # the runtime's, shared with its control
        self._gates = gates
        self._data_dir = data_dir
        self._groups = groups
        self._quiet_history: dict[str, QuietPeriod] = {}  # the periods last appended to the history
        self._saved: dict[str, BotEvent] = {}  # event id -> the value last written while open
        self._ledger_saved: dict[tuple[str, str], LedgerEntry] = {}
        self._saves = 0
        self._events_written = 0
        self._lock = anyio.Lock()

    # -- start ------------------------------------------------------------------------------------

    async def restore(self, now: float) -> RestoreReport:
        state = await self._store.load_runtime_state(now=now, policy=self._policy)
        kernel_report = restore_kernel(self._kernel, state, now=now)
        for event in self._kernel.events.list():
            if event.state not in TERMINAL_STATES:
                self._saved[event.id] = event
        messages = self._replay_messages(state.recent_messages)
        waiting = await self._restore_waiting(now)
        interrupted = await self._sessions.mark_open_sessions_interrupted(now)
        ledger = await self._restore_ledger(now)
        quiet = self._load_quiet(now)
        self._load_groups()
        self._load_thresholds()
        if self._injector is not None:
            await self._injector.resume(now)
        report = RestoreReport(
            events=kernel_report.events,
            lexicon_keys=kernel_report.lexicon_keys,
            chats_with_speeches=kernel_report.chats_with_speeches,
            messages=messages,
            waiting_episodes=waiting,
            interrupted_sessions=interrupted,
            ledger_entries=ledger,
            quiet_chats=quiet,
        )
        # What was just loaded is already stored; only later changes need writing.
        self._kernel.lexicon.take_changes()
        self._ledger.take_dirty()
        log.info("state_restored", **{k: getattr(report, k) for k in report.__slots__})
        return report

    def _replay_messages(self, stored: tuple[StoredMessage, ...]) -> int:
        # restore_kernel has put them back into their conversation threads (ids kept).
        for item in sorted(stored, key=lambda m: (m.time, m.message_id)):
            if not item.from_self:
                self._activity.note(chat_message(item))
            self._recent.add(item)
            self._deliveries.note(item)  # a copy re-delivered after the restart is known
        return len(stored)

    async def _restore_waiting(self, now: float) -> int:
        restored = 0
        for event in self._kernel.events.list():
            if event.kind != RESUME_KIND or event.state in TERMINAL_STATES:
                continue
            episode_id = episode_id_of(event.payload)
            record = await self._store.get_episode(episode_id) if episode_id else None
            try:
                if record is None:
                    raise ValueError(f"episode {episode_id} is not stored")
                self._room.restore(
                    from_store_record(record), event.id, forced=event.payload.get("forced") is True
                )
                restored += 1
            except Exception as exc:  # an episode that cannot come back must not keep its activation
                log.warning("waiting_episode_lost", episode_id=episode_id, error=repr(exc))
                self._kernel.cancel(event.id, now, reason="episode not restorable")
        return restored

    async def _restore_ledger(self, now: float) -> int:
        ledger = self._ledger
        today = ledger.day_of(now)
        rows = await self._store.list_token_usage(day=today)
        entries = [LedgerEntry(r.chat_id, r.day, r.prompt_tokens, r.completion_tokens, r.calls) for r in rows]
        ledger.restore(entries)
        for entry in entries:
            self._ledger_saved[(entry.chat_id, entry.day)] = entry
        return len(entries)

    # -- while running ----------------------------------------------------------------------------

    async def save(self) -> SaveReport:
        """Write what changed since the last call (events, lexicon, token counts)."""
        # The periodic save and the last one at stop may overlap; one at a time keeps the books right.
        async with self._lock:
            return await self._save()

    async def _save(self) -> SaveReport:
        events = 0
        saved = self._saved
        store = self._kernel.events
        # First what changed, in one pass that allocates nothing the collector tracks: the kernel
        # keeps up to a hundred thousand events, and a young collection running while a copy of
        # all of them (and a set of their ids) was alive walked every one.
        changed: list[BotEvent] = []
        for event in store.list():
            previous = saved.get(event.id)
            if previous is event:
                continue
            if previous is None and event.state in TERMINAL_STATES:
                continue  # never pending in the store (chatter recorded as skipped): nothing to update
            changed.append(event)
        gone = [event_id for event_id in saved if store.get(event_id) is None]
        for event in changed:
            await self._writer.put(event_record(event))
            events += 1
            if event.state in TERMINAL_STATES:
                saved.pop(event.id, None)
            else:
                saved[event.id] = event
        for event_id in gone:
            saved.pop(event_id, None)
            await self._store.delete_event(event_id)
        lexicon_rows = await save_lexicon_changes(self._store, self._kernel.lexicon.take_changes())
        ledger_rows = 0
        for entry in self._ledger.take_dirty():
            key = (entry.chat_id, entry.day)
            before = self._ledger_saved.get(key) or LedgerEntry(entry.chat_id, entry.day, 0, 0, 0)
            await self._store.add_token_usage(
                entry.chat_id,
                entry.day,
                prompt_tokens=entry.prompt_tokens - before.prompt_tokens,
                completion_tokens=entry.completion_tokens - before.completion_tokens,
                calls=entry.calls - before.calls,
            )
            self._ledger_saved[key] = entry
            ledger_rows += 1
        self._saves += 1
        self._events_written += events
        return SaveReport(events, lexicon_rows, ledger_rows)

    async def commit_event(self, event: BotEvent) -> bool:
        """Commit ``event`` to the store now, not at the next save; whether it was committed (a store
        that refuses is logged, and the caller must not promise what was not kept)."""
        try:
            await self._store.save_event(event_record(event))
        except StoreError as exc:
            log.warning("event_commit_failed", event_id=event.id, kind=event.kind, error=str(exc))
            return False
        self._saved[event.id] = event
        self._events_written += 1
        return True

    # -- quiet periods ----------------------------------------------------------------------------

    @property
    def quiet_path(self) -> Path:
        return self._data_dir / QUIET_FILE

    def save_quiet(self, quiet: Mapping[str, QuietPeriod]) -> None:
        """Write the quiet periods (chat -> until, None: until lifted, and kind); atomic replace."""
        path = self.quiet_path
        temporary = path.with_suffix(".tmp")
        rows = {chat: {"until": period.until, "kind": period.kind} for chat, period in quiet.items()}
        try:
            temporary.write_text(json.dumps(rows, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            os.replace(temporary, path)
            # The history beside it, for a replay of the stored messages (runtime.quiet_history).
            append_quiet_changes(
                self._data_dir / QUIET_HISTORY_FILE, self._quiet_history, quiet, self._clock()
            )
            self._quiet_history = dict(quiet)
        except OSError as exc:
            log.warning("quiet_save_failed", path=str(path), error=repr(exc))

    def _load_quiet(self, now: float) -> int:

        path = self.quiet_path
        if not path.exists():
            return 0
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("quiet_file_unreadable", path=str(path), error=repr(exc))
            return 0
        restored = 0
        for chat_id, row in dict(data).items():
            # An entry written before quiet periods had a kind is a bare ``until``: taken as imposed,
            # so no member can lift what may have been a superuser's mute.
            until, kind = (
                (row.get("until"), row.get("kind")) if isinstance(row, dict) else (row, QUIET_IMPOSED)
            )
            if kind not in QUIET_KINDS:
                kind = QUIET_IMPOSED
            if until is None or (isinstance(until, int | float) and until > now):
                period = QuietPeriod(None if until is None else float(until), kind)
                self._quiet[chat_id] = period
                self._quiet_history[chat_id] = period
                self._gates.quiet(chat_id, period.until, period.kind)
                restored += 1
        return restored

    # -- the groups the bot lives in --------------------------------------------------------------

    @property
    def groups_path(self) -> Path:
        return self._data_dir / GROUPS_FILE

    def save_groups(self, overrides: Mapping[str, bool]) -> bool:
        """Write the ``/enable`` and ``/disable`` overrides (chat -> on); atomic replace. Whether
        it was written (a failure is logged; the running bot keeps the override)."""
        path = self.groups_path
        temporary = path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(dict(overrides), sort_keys=True), encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            log.warning("groups_save_failed", path=str(path), error=repr(exc))
            return False
        return True

    def _load_groups(self) -> int:
        if self._groups is None or not self.groups_path.exists():
            return 0
        try:
            data = json.loads(self.groups_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("groups_file_unreadable", path=str(self.groups_path), error=repr(exc))
            return 0
        if not isinstance(data, dict):
            log.warning("groups_file_unreadable", path=str(self.groups_path), error="not a JSON object")
            return 0
        restored = 0
        for chat_id, on in data.items():
            if isinstance(on, bool):
                self._groups.set(chat_id, on)
                restored += 1
        return restored

    # -- per-chat attention thresholds (set from the console) -------------------------------------

    @property
    def thresholds_path(self) -> Path:
        return self._data_dir / THRESHOLDS_FILE

    def save_thresholds(self, overrides: Mapping[str, Mapping[str, float]]) -> bool:
        """Write the per-chat threshold overrides (chat -> {high?, medium?}); atomic replace. Whether
        it was written (a failure is logged; the running bot keeps the override)."""
        path = self.thresholds_path
        temporary = path.with_suffix(".tmp")
        try:
            temporary.write_text(
                json.dumps({k: dict(v) for k, v in overrides.items()}, sort_keys=True), "utf-8"
            )
            os.replace(temporary, path)
        except OSError as exc:
            log.warning("thresholds_save_failed", path=str(path), error=repr(exc))
            return False
        return True

    def load_threshold_overrides(self) -> dict[str, dict[str, float]]:
        """The saved overrides as written (an unreadable file: none, logged)."""
        path = self.thresholds_path
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("thresholds_file_unreadable", path=str(path), error=repr(exc))
            return {}
        if not isinstance(data, dict):
            log.warning("thresholds_file_unreadable", path=str(path), error="not a JSON object")
            return {}
        return {
            chat: {
                k: float(v)
                for k, v in values.items()
                if k in ("high", "medium") and isinstance(v, int | float)
            }
            for chat, values in data.items()
            if isinstance(values, dict)
        }

    def _load_thresholds(self) -> int:
        restored = 0
        for chat_id, values in self.load_threshold_overrides().items():
            try:
                self._kernel.set_thresholds(chat_id, high=values.get("high"), medium=values.get("medium"))
            except KernelError as exc:
                log.warning("thresholds_refused", chat_id=chat_id, error=str(exc))
                continue
            restored += 1
        return restored

    def statistics(self) -> PersistenceStatistics:
        return PersistenceStatistics(self._saves, self._events_written, len(self._saved))
