"""Follow-ups: what the bot itself said it would come back to, the grounds of a proactive word.

"我查一下，晚点告诉你", "后天问问你面试怎么样": a promise the model makes with the ``follow_up`` tool
(:mod:`runtime.extensions.builtin.follow_up`) — what about, and when — in the chat it is in. It is not
a ``schedule_message`` reminder: a reminder is a text a user asked for, sent as it was written; a
follow-up is the bot's own, and when it is due this life source proposes one proactive activation
with :attr:`~runtime.extensions.spec.Grounds.FOLLOW_UP` whose cue says what it was to come back to
and when it said so. The model decides then what to say, or to let it go.

Each follow-up is a chat memory of type ``follow_up`` in the store (so the bot can also recall its
promise while talking), written before the tool confirms: a restart keeps it. The book reads a chat's
follow-ups from the store when it first meets the chat (:mod:`runtime.extensions.chat_reads`), and
deletes each one when it is proposed (once) or when ``[life] follow_up_grace_ms`` passed after its
time without it being proposed (the quiet hours hold it back until they end). A chat holds at most
``follow_ups_per_chat``; at most one is proposed per chat and tick.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from runtime.extensions.builtin.clock import local_time
from runtime.extensions.builtin.services import MemoryShelf
from runtime.extensions.chat_reads import ChatReads
from runtime.extensions.spec import Grounds, LifeContext, Proposal
from runtime.store.errors import StoreError
from runtime.store.records import Memory, ScopeType

__all__ = ["FOLLOW_UP_MEMORY", "FollowUp", "FollowUps"]

log = structlog.get_logger("greywind.life")

#: The memory type a follow-up is stored under.
FOLLOW_UP_MEMORY = "follow_up"


@dataclass(frozen=True, slots=True)
class FollowUp:
    id: str  # the memory's id
    chat_id: str
    about: str
    due: float
    promised_at: float
    thread_id: str | None


class FollowUps:
    """See the module docstring. :meth:`add` is the tool's, :meth:`poll` the life source's."""

    def __init__(
        self,
        shelf: MemoryShelf,
        *,
        zone: str,
        per_chat: int,
        grace: float,
        max_chats: int = 4_096,
    ) -> None:
        self._shelf = shelf
        self._zone = zone
        self.per_chat = per_chat
        self._grace = grace
        self._pending: dict[str, dict[str, FollowUp]] = {}
        self.reads = ChatReads(self._load, self._drop_chat, max_chats=max_chats)

    def pending(self, chat_id: str) -> int:
        return len(self._pending.get(chat_id, ()))

    async def count(self, chat_id: str) -> int:
        """Follow-ups waiting in ``chat_id``, the stored ones included."""
        await self.reads.ensure(chat_id)
        return self.pending(chat_id)

    async def add(
        self, memory_id: str, chat_id: str, about: str, *, now: float, due: float, thread_id: str | None
    ) -> FollowUp | None:
        """Keep a new follow-up (stored first); None if the store could not take it."""
        await self.reads.ensure(chat_id)
        item = FollowUp(memory_id, chat_id, about, due, now, thread_id)
        memory = Memory(
            id=memory_id,
            scope_type=ScopeType.CHAT,
            scope_id=chat_id,
            memory_type=FOLLOW_UP_MEMORY,
            content=f"我答应过 {local_time(due, self._zone)} 回来跟进：{about}",
            importance=0.6,
            created_at=now,
            updated_at=now,
            tags=(FOLLOW_UP_MEMORY,),
            extra={"due": due, "about": about, "thread_id": thread_id},
        )
        try:
            await self._shelf.upsert_memory(memory)
        except StoreError as exc:
            log.warning("follow_up_not_saved", chat_id=chat_id, error=str(exc))
            return None
        self._pending.setdefault(chat_id, {})[memory_id] = item
        return item

    async def poll(self, context: LifeContext) -> list[Proposal]:
        await self.reads.poll(context.known_chats)
        now = context.now
        proposals: list[Proposal] = []
        for chat_id, items in list(self._pending.items()):
            for item in sorted(items.values(), key=lambda f: f.due):
                if now - item.due > self._grace:
                    log.info("follow_up_dropped", chat_id=chat_id, about=item.about, due=item.due)
                    await self._forget(item)
                    continue
                if item.due > now or context.quiet:
                    break  # the quiet hours keep it for the morning, within the grace
                await self._forget(item)  # proposed once
                proposals.append(self._proposal(item))
                break  # one per chat per tick: the next one waits for the next tick
        return proposals

    def _proposal(self, item: FollowUp) -> Proposal:
        said = local_time(item.promised_at, self._zone).split("（")[0]
        return Proposal(
            item.chat_id,
            f"你说过会回来跟进：{item.about}",
            thread_id=item.thread_id,
            grounds=Grounds.FOLLOW_UP,
            payload={
                "cue": (
                    f"（{said} 你在这里说过会回来跟进：“{item.about}”。现在到时间了，"
                    "接着说一句；已经不需要的话就保持沉默。）"
                ),
                "follow_up": item.id,
            },
        )

    async def _forget(self, item: FollowUp) -> None:
        items = self._pending.get(item.chat_id)
        if items is not None:
            items.pop(item.id, None)
            if not items:
                del self._pending[item.chat_id]
        try:
            await self._shelf.delete_memory(item.id)
        except StoreError as exc:  # kept in the store: a restart may bring it back once more
            log.warning("follow_up_not_deleted", chat_id=item.chat_id, error=str(exc))

    def _drop_chat(self, chat_id: str) -> None:
        self._pending.pop(chat_id, None)

    async def _load(self, chat_id: str) -> bool:
        try:
            stored = await self._shelf.list_memories(
                scopes=[(ScopeType.CHAT, chat_id)], memory_types=[FOLLOW_UP_MEMORY]
            )
        except StoreError as exc:  # read again at the next tick
            log.warning("follow_ups_not_loaded", chat_id=chat_id, error=str(exc))
            return False
        items = self._pending.setdefault(chat_id, {})
        for memory in stored:
            extra = memory.extra
            due, about, thread = extra.get("due"), extra.get("about"), extra.get("thread_id")
            if not isinstance(due, int | float) or not isinstance(about, str):
                log.warning("follow_up_unreadable", chat_id=chat_id, memory_id=memory.id)
                continue
            thread_id = thread if isinstance(thread, str) else None
            items.setdefault(
                memory.id, FollowUp(memory.id, chat_id, about, float(due), memory.created_at, thread_id)
            )
        if not items:
            del self._pending[chat_id]
        return True
