"""The tools every episode may call, registered once at start (one disposer owned by the runtime scope).

* ``memory_search(query)`` — long-term memories this chat may see (the chat's own, the persona's,
  the user's in their private chat) and this chat's own past messages. Never another chat's.
* ``remember(content, scope, message_id)`` — keep a fact taken from one message the episode has seen
  (``message_id``; by default the newest, which in a resumed episode may be another member's): ``chat``
  (this chat only) or ``user`` (seen only in a private chat with the bot). Every memory records its
  source message and that message's speaker, and a ``user`` memory is filed under that speaker — never
  under whoever the episode began for: what one member says cannot become another member's memory.
* ``schedule_message(text, delay_minutes)`` — a reminder for the chat that asked, and only that chat
  (the tool takes no chat argument). It is a kernel activation of kind ``reminder`` carrying the text,
  committed to the store before the tool says yes (so a kill -9 right after the confirmation still
  fires it after the restart; a store that cannot take it withdraws it and the model is told so);
  when due, the text is sent as it is.
* ``current_time()`` — now, in ``[runtime] timezone``.

Also registered: the context's task tools and the guess-number game (through the extension registry).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from runtime.app.alarm import Alarm
from runtime.app.episodes import REMINDER_KIND
from runtime.app.persistence import StatePersistence
from runtime.config.app import AppConfig
from runtime.context.retrieval import memory_scopes
from runtime.context.setup import ContextRuntime
from runtime.context.tools import register_task_tools
from runtime.extensions import ExtensionRegistry, Scope
from runtime.extensions.games.guess_number import GuessNumberGame
from runtime.kernel.events import EventState
from runtime.kernel.ids import IdFactory
from runtime.kernel.kernel import Kernel
from runtime.store.protocol import Store
from runtime.store.records import Memory, ScopeType
from runtime.tools import ToolContext, ToolRegistry, ToolSpec

__all__ = ["BuiltinToolParts", "register_builtin_tools"]

SEARCH_LIMIT = 5
_WEEKDAYS = "一二三四五六日"


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


class ScheduleArgs(BaseModel):
    text: str = Field(min_length=1, max_length=300, description="到时要发的提醒内容")
    delay_minutes: float = Field(gt=0, description="多少分钟后提醒")


class NoArgs(BaseModel):
    pass


def local_time(now: float, zone: str) -> str:
    moment = datetime.fromtimestamp(now, ZoneInfo(zone))
    return f"{moment:%Y-%m-%d %H:%M}（星期{_WEEKDAYS[moment.weekday()]}，{zone}）"


@dataclass(frozen=True, slots=True)
class BuiltinToolParts:
    """What the built-in tools use, given by the composition root."""

    app: AppConfig
    ids: IdFactory
    kernel: Kernel
    store: Store
    context: ContextRuntime
    persistence: StatePersistence
    alarm: Alarm
    tools: ToolRegistry
    extensions: ExtensionRegistry
    scope: Scope


def register_builtin_tools(rt: BuiltinToolParts) -> None:
    """Register the built-in tools; their disposers go to ``rt.scope``."""
    store = rt.store
    app = rt.app

    async def memory_search(args: SearchArgs, ctx: ToolContext) -> str:
        scopes = memory_scopes(ctx.chat_id, topic_thread_id=None, sender_id=ctx.user_id)
        hits = await store.search_memories(args.query, scopes=scopes, limit=SEARCH_LIMIT)
        lines = [f"[记忆] {hit.memory.content}" for hit in hits]
        if len(lines) < SEARCH_LIMIT:
            found = await store.search_messages(args.query, chat_ids=(ctx.chat_id,), limit=SEARCH_LIMIT)
            for hit in found[: SEARCH_LIMIT - len(lines)]:
                message = hit.message
                stamp = local_time(message.time, app.timezone).split("（")[0]
                lines.append(f"[{stamp}] {message.sender_name or message.sender_id}: {message.text[:200]}")
        return "\n".join(lines) if lines else "没有找到相关的记忆或消息。"

    async def remember(args: RememberArgs, ctx: ToolContext) -> str:
        heard = dict(ctx.heard)
        source: str | None
        if args.message_id is not None:
            source = args.message_id.strip().lstrip("#")
            if source not in heard:
                return f"没见过编号为 {source} 的消息：只能记这次对话里看到的消息说的事。"
        else:
            source = ctx.heard[-1][0] if ctx.heard else None
        speaker = heard.get(source) if source is not None else None
        if args.scope == "user":
            if speaker is None:
                return "不知道这是谁说的，记在这个聊天里更合适。"
            scope_type, scope_id = ScopeType.USER, speaker
        else:
            scope_type, scope_id = ScopeType.CHAT, ctx.chat_id
        memory = Memory(
            id=rt.ids("mem"),
            scope_type=scope_type,
            scope_id=scope_id,
            memory_type="note",
            content=args.content.strip(),
            importance=args.importance,
            created_at=ctx.now,
            updated_at=ctx.now,
            extra={"source_chat": ctx.chat_id, "episode_id": ctx.episode_id},
            source_message_id=source,
            source_speaker_id=speaker,
        )
        await store.upsert_memory(memory)
        whom = "这个聊天" if args.scope == "chat" else f"关于 {speaker}（消息 {source} 的发言人）"
        return f"记住了（{whom}）：{memory.content}"

    async def schedule_message(args: ScheduleArgs, ctx: ToolContext) -> str:
        seconds = args.delay_minutes * 60
        if seconds * 1000 > app.reminder_max_ahead_ms:
            days = app.reminder_max_ahead_ms / 86_400_000
            return f"太远了：最多只能提前 {days:g} 天安排提醒。"
        pending = [
            e
            for e in rt.kernel.events.list(
                chat_id=ctx.chat_id, states=(EventState.SCHEDULED, EventState.SNOOZED)
            )
            if e.kind == REMINDER_KIND
        ]
        if len(pending) >= app.reminders_per_chat:
            return f"这个聊天已经有 {len(pending)} 个待发的提醒了，先等它们发完。"
        at = ctx.now + seconds
        event = rt.kernel.schedule_activation(
            REMINDER_KIND,
            ctx.chat_id,
            now=ctx.now,
            not_before=at,
            deadline=at + app.reminder_grace_ms / 1000,
            priority=0.9,
            thread_id=ctx.thread_id,
            # A user asked for it: it is charged to the forced budget, like an answer to them.
            payload={"text": args.text.strip(), "forced": True, "requested_by": ctx.user_id},
        )
        if not await rt.persistence.commit_event(event):
            rt.kernel.cancel(event.id, ctx.now, reason="not saved")
            return "提醒没能保存（存储暂时出错），这次没有安排上，请稍后再试。"
        rt.alarm.poke()
        return f"好，{local_time(at, app.timezone)} 提醒（{event.id}）。"

    def current_time(args: NoArgs, ctx: ToolContext) -> str:
        return local_time(ctx.now, app.timezone)

    specs = (
        ToolSpec(
            "memory_search",
            "在本聊天可见的长期记忆和本聊天的历史消息里搜索。",
            memory_search,
            args_model=SearchArgs,
        ),
        ToolSpec(
            "remember",
            "记住某条消息里以后有用的事实（记在本聊天，或记在说这条消息的人身上）。",
            remember,
            args_model=RememberArgs,
            side_effect=True,
        ),
        ToolSpec(
            "schedule_message",
            "过一段时间后在本聊天发一条提醒（例如“十分钟后提醒我”）。",
            schedule_message,
            args_model=ScheduleArgs,
            side_effect=True,
        ),
        ToolSpec("current_time", "现在的日期和时间。", current_time, args_model=NoArgs),
    )
    for spec in specs:
        rt.scope.add(rt.tools.register(spec))
    rt.scope.add(
        register_task_tools(rt.tools, tasks=rt.context.tasks, resolver=rt.context.resolver, store=store)
    )
    rt.extensions.register_game(rt.scope.child("game"), GuessNumberGame().spec())
