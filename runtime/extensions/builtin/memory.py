"""``memory_search`` and ``remember``: long-term memory, as two built-in extensions.

* ``memory_search(query)`` — long-term memories this chat may see (the chat's own, the persona's,
  the user's in their private chat) and this chat's own past messages. Never another chat's.
* ``remember(content, scope, message_id)`` — keep a fact taken from one message the episode has seen
  (``message_id``; by default the newest, which in a resumed episode may be another member's): ``chat``
  (this chat only) or ``user`` (seen only in a private chat with the bot). Every memory records its
  source message and that message's speaker, and a ``user`` memory is filed under that speaker — never
  under whoever the episode began for: what one member says cannot become another member's memory.
  A memory that names one day ("他12月5日考试") is marked as a hook for that day, resolved against its
  source message's time; the ``memory_hooks`` life source registered with it brings it up then (see
  :mod:`runtime.extensions.memory_hooks`; a host without the memory shelf and ``[life]`` settings
  keeps no hooks).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Literal

from pydantic import BaseModel, Field

from runtime.context.retrieval import memory_scopes
from runtime.extensions.builtin.clock import local_time
from runtime.extensions.builtin.services import Ids, MemoryShelf, MemoryWriter, TimeZone
from runtime.extensions.context import ExtensionContext
from runtime.extensions.director import LifeSettings
from runtime.extensions.errors import ExtensionError
from runtime.extensions.manifest import Extension
from runtime.extensions.memory_hooks import MemoryHooks, hook_mark
from runtime.extensions.spec import LifeSourceSpec
from runtime.store.errors import StoreError
from runtime.store.records import Memory, ScopeType
from runtime.tools import ToolContext, ToolSpec

__all__ = ["memory_search", "remember"]

SEARCH_LIMIT = 5


class SearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=200, description="要找的内容，几个关键词")


class RememberArgs(BaseModel):
    content: str = Field(min_length=1, max_length=500, description="要记住的事实，一句话")
    scope: Literal["chat", "user"] = Field(
        default="chat", description="chat：记在这个聊天里；user：记在说这条消息的人身上（只在私聊可见）"
    )
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    message_id: str | None = Field(
        default=None,
        max_length=64,
        description="这条事实出自哪条消息（消息后面 # 号的编号）；不填就是你看到的最新一条。"
        "user 记在这条消息的发言人身上",
    )


def _setup_search(ctx: ExtensionContext) -> None:
    store = ctx.store
    zone = ctx.service(TimeZone).name

    async def search(args: SearchArgs, tool: ToolContext) -> str:
        scopes = memory_scopes(tool.chat_id, topic_thread_id=None, sender_id=tool.user_id)
        hits = await store.search_memories(args.query, scopes=scopes, limit=SEARCH_LIMIT)
        lines = [f"[记忆] {hit.memory.content}" for hit in hits]
        if len(lines) < SEARCH_LIMIT:
            found = await store.search_messages(args.query, chat_ids=(tool.chat_id,), limit=SEARCH_LIMIT)
            for hit in found[: SEARCH_LIMIT - len(lines)]:
                message = hit.message
                stamp = local_time(message.time, zone).split("（")[0]
                lines.append(f"[{stamp}] {message.sender_name or message.sender_id}: {message.text[:200]}")
        return "\n".join(lines) if lines else "没有找到相关的记忆或消息。"

    ctx.tool(
        ToolSpec(
            "memory_search",
            "在本聊天可见的长期记忆和本聊天的历史消息里搜索。",
            search,
            args_model=SearchArgs,
        )
    )


def _setup_remember(ctx: ExtensionContext) -> None:
    writer = ctx.service(MemoryWriter)
    ids = ctx.service(Ids)
    hooks: MemoryHooks | None = None
    try:
        life = ctx.service(LifeSettings)
        hooks = MemoryHooks(ctx.service(MemoryShelf), zone=life.timezone)
    except LookupError:
        pass
    else:
        ctx.life_source(LifeSourceSpec("memory_hooks", hooks.poll, life.tick))
        with suppress(ExtensionError):  # a host without a task group: the ticks read inline
            ctx.spawn("hook_reads", hooks.reads.run)

    async def written_at(chat_id: str, message_id: str | None, now: float) -> float:
        """When the memory's source message was said (now, if it is not stored yet)."""
        if message_id is None:
            return now
        try:
            found = await ctx.store.get_messages(chat_id, [message_id])
        except (ExtensionError, StoreError):  # no store open, or it failed: the episode's time
            return now
        return found[0].time if found else now

    async def remember_fact(args: RememberArgs, tool: ToolContext) -> str:
        heard = dict(tool.heard)
        source: str | None
        if args.message_id is not None:
            source = args.message_id.strip().lstrip("#")
            if source not in heard:
                return f"没见过编号为 {source} 的消息：只能记这次对话里看到的消息说的事。"
        else:
            source = tool.heard[-1][0] if tool.heard else None
        speaker = heard.get(source) if source is not None else None
        if args.scope == "user":
            if speaker is None:
                return "不知道这是谁说的，记在这个聊天里更合适。"
            scope_type, scope_id = ScopeType.USER, speaker
        else:
            scope_type, scope_id = ScopeType.CHAT, tool.chat_id
        memory = Memory(
            id=ids("mem"),
            scope_type=scope_type,
            scope_id=scope_id,
            memory_type="note",
            content=args.content.strip(),
            importance=args.importance,
            created_at=tool.now,
            updated_at=tool.now,
            extra={"source_chat": tool.chat_id, "episode_id": tool.episode_id},
            source_message_id=source,
            source_speaker_id=speaker,
        )
        if hooks is not None:
            said = await written_at(tool.chat_id, source, tool.now)
            memory = hook_mark(memory, said, life.timezone)
        await writer.upsert_memory(memory)
        if hooks is not None:
            hooks.note(memory)
        whom = "这个聊天" if args.scope == "chat" else f"关于 {speaker}（消息 {source} 的发言人）"
        return f"记住了（{whom}）：{memory.content}"

    ctx.tool(
        ToolSpec(
            "remember",
            "记住某条消息里以后有用的事实（记在本聊天，或记在说这条消息的人身上）。",
            remember_fact,
            args_model=RememberArgs,
            side_effect=True,
        )
    )


memory_search = Extension("memory_search", _setup_search, description="搜索长期记忆和本聊天的历史消息")
remember = Extension("remember", _setup_remember, description="记住消息里的事实")
