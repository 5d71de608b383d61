"""Memory hooks: a remembered day that is today, the grounds of a proactive word.

A memory that names one day — "他12月5日考试", "下周三面试", "明天出发" — is resolved to that day when it
is written (:func:`hook_mark`, by :func:`runtime.extensions.dates.hook_day` against the time of the
message it was taken from, in ``[life] timezone``) and tagged as a hook. On that day, outside the
quiet hours (the first tick after they end), this life source proposes one proactive activation
with :attr:`~runtime.extensions.spec.Grounds.MEMORY_HOOK` whose cue quotes the memory. Not before
the day, not after it (a day the bot was down for is let go), and once per memory: the memory is
marked fired in the store *before* it is proposed (a store that cannot take the mark means no
proposal), so a restart does not bring it up again.

A hook is heard where the memory may be seen: a chat memory in its chat; a memory about a user only
in the private chat with them (one written in a group is never brought up there). The source reads a
chat's hooks from the store when it first meets the chat (:mod:`runtime.extensions.chat_reads`), and
hears of new ones from the ``remember`` tool at once (:meth:`MemoryHooks.note`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from zoneinfo import ZoneInfo

import structlog

from runtime.extensions.builtin.services import MemoryShelf
from runtime.extensions.chat_reads import ChatReads
from runtime.extensions.dates import hook_day
from runtime.extensions.spec import Grounds, LifeContext, Proposal
from runtime.kernel.message import ChatKey
from runtime.store.errors import StoreError
from runtime.store.protocol import MemoryScope
from runtime.store.records import Memory, ScopeType

__all__ = ["HOOK_TAG", "MemoryHooks", "hook_mark"]

log = structlog.get_logger("greywind.life")

#: The tag of a memory that ties to a day; its ``extra`` holds ``hook_day`` and ``hook_chat``.
HOOK_TAG = "memory_hook"
_SHOWN = 120  # characters of the memory quoted in the cue


def hook_mark(memory: Memory, written_at: float, zone: str) -> Memory:
    """``memory`` tagged with the day it ties to and the chat it may be brought up in (unchanged if
    it names no one day, or if it may be seen in no chat: a user memory written outside their
    private chat)."""
    day = hook_day(memory.content, written_at, zone)
    if day is None:
        return memory
    chat = memory.extra.get("source_chat")
    if not isinstance(chat, str):
        return memory
    if memory.scope_type is ScopeType.USER:
        if _private_ident(chat) != memory.scope_id:
            return memory
    elif memory.scope_type is not ScopeType.CHAT or memory.scope_id != chat:
        return memory
    return replace(
        memory,
        tags=(*memory.tags, HOOK_TAG),
        extra={**memory.extra, "hook_day": day.isoformat(), "hook_chat": chat},
    )


@dataclass(frozen=True, slots=True)
class _Hook:
    memory_id: str
    chat_id: str
    day: date
    content: str
    written_at: float


class MemoryHooks:
    """See the module docstring. :meth:`note` takes a memory just written, :meth:`poll` is the life
    source's ``poll``."""

    def __init__(self, shelf: MemoryShelf, *, zone: str, max_chats: int = 4_096) -> None:
        self._shelf = shelf
        self._zone = ZoneInfo(zone)
        self._hooks: dict[str, dict[str, _Hook]] = {}
        self.reads = ChatReads(self._load, self._drop_chat, max_chats=max_chats)

    def pending(self, chat_id: str) -> int:
        return len(self._hooks.get(chat_id, ()))

    def note(self, memory: Memory) -> None:
        """A memory was written: if it is a hook not yet fired, it waits for its day."""
        hook = _hook_of(memory)
        if hook is not None:
            self._hooks.setdefault(hook.chat_id, {})[hook.memory_id] = hook

    async def poll(self, context: LifeContext) -> list[Proposal]:
        await self.reads.poll(context.known_chats)
        if context.quiet:
            return []  # kept for the end of the quiet hours, if that is still the day
        today = datetime.fromtimestamp(context.now, self._zone).date()
        proposals: list[Proposal] = []
        for chat_id, hooks in list(self._hooks.items()):
            for hook in sorted(hooks.values(), key=lambda h: h.day):
                if hook.day > today:
                    break
                self._drop(hook)
                if hook.day < today:
                    log.info("memory_hook_missed", chat_id=chat_id, memory_id=hook.memory_id)
                    continue
                if await self._mark_fired(hook, context.now):
                    proposals.append(self._proposal(hook))
                    break  # one per chat per tick
        return proposals

    def _proposal(self, hook: _Hook) -> Proposal:
        shown = hook.content[:_SHOWN]
        written = datetime.fromtimestamp(hook.written_at, self._zone)
        return Proposal(
            hook.chat_id,
            f"记忆里今天的事：{shown}",
            grounds=Grounds.MEMORY_HOOK,
            payload={
                "cue": (
                    f"（你在 {written.month}月{written.day}日 记下过：“{shown}”——"
                    f"说的就是今天（{hook.day.month}月{hook.day.day}日）。"
                    "想说点什么就自然地提一句；不合适的话就保持沉默。）"
                ),
                "memory": hook.memory_id,
            },
        )

    async def _mark_fired(self, hook: _Hook, now: float) -> bool:
        try:
            memory = await self._shelf.get_memory(hook.memory_id)
            if memory is None or memory.extra.get("hook_fired"):
                return False  # forgotten, or brought up already
            await self._shelf.upsert_memory(replace(memory, extra={**memory.extra, "hook_fired": now}))
        except StoreError as exc:  # no mark, no proposal: never twice
            log.warning("memory_hook_not_marked", chat_id=hook.chat_id, error=str(exc))
            return False
        return True

    def _drop(self, hook: _Hook) -> None:
        hooks = self._hooks.get(hook.chat_id)
        if hooks is not None:
            hooks.pop(hook.memory_id, None)
            if not hooks:
                del self._hooks[hook.chat_id]

    def _drop_chat(self, chat_id: str) -> None:
        self._hooks.pop(chat_id, None)

    async def _load(self, chat_id: str) -> bool:
        scopes: list[MemoryScope] = [(ScopeType.CHAT, chat_id)]
        ident = _private_ident(chat_id)
        if ident is not None:
            scopes.append((ScopeType.USER, ident))
        try:
            stored = await self._shelf.list_memories(scopes=scopes, tags=[HOOK_TAG])
        except StoreError as exc:  # read again at the next tick
            log.warning("memory_hooks_not_loaded", chat_id=chat_id, error=str(exc))
            return False
        for memory in stored:
            hook = _hook_of(memory)
            if hook is not None and hook.chat_id == chat_id:
                self._hooks.setdefault(chat_id, {}).setdefault(hook.memory_id, hook)
        return True


def _hook_of(memory: Memory) -> _Hook | None:
    extra = memory.extra
    day, chat = extra.get("hook_day"), extra.get("hook_chat")
    if HOOK_TAG not in memory.tags or extra.get("hook_fired") or not isinstance(chat, str):
        return None
    try:
        parsed = date.fromisoformat(day) if isinstance(day, str) else None
    except ValueError:
        parsed = None
    if parsed is None:
        log.warning("memory_hook_unreadable", memory_id=memory.id)
        return None
    return _Hook(memory.id, chat, parsed, memory.content, memory.created_at)


def _private_ident(chat_id: str) -> str | None:
    try:
        key = ChatKey.parse(chat_id)
    except ValueError:
        return None
    return key.ident if key.is_private else None
