"""``schedule_message(text, delay_minutes)`` — a reminder for the chat that asked, and only that chat.

The tool takes no chat argument. The reminder is a kernel activation of kind ``reminder`` carrying
the text, committed to the store before the tool says yes (so a kill -9 right after the confirmation
still fires it after the restart; a store that cannot take it withdraws it and the model is told so);
when due, the text is sent as it is.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from runtime.extensions.builtin.clock import local_time
from runtime.extensions.builtin.services import ReminderBook, ReminderLimits, TimeZone
from runtime.extensions.context import ExtensionContext
from runtime.extensions.manifest import Extension
from runtime.tools import ToolContext, ToolSpec

__all__ = ["extension"]


class ScheduleArgs(BaseModel):
    text: str = Field(min_length=1, max_length=300, description="到时要发的提醒内容")
    delay_minutes: float = Field(gt=0, description="多少分钟后提醒")


def _setup(ctx: ExtensionContext) -> None:
    book = ctx.service(ReminderBook)
    limits = ctx.service(ReminderLimits)
    zone = ctx.service(TimeZone).name

    async def schedule_message(args: ScheduleArgs, tool: ToolContext) -> str:
        seconds = args.delay_minutes * 60
        if seconds * 1000 > limits.max_ahead_ms:
            days = limits.max_ahead_ms / 86_400_000
            return f"太远了：最多只能提前 {days:g} 天安排提醒。"
        pending = book.pending(tool.chat_id)
        if pending >= limits.per_chat:
            return f"这个聊天已经有 {pending} 个待发的提醒了，先等它们发完。"
        at = tool.now + seconds
        event_id = await book.schedule(
            tool.chat_id,
            args.text.strip(),
            now=tool.now,
            at=at,
            deadline=at + limits.grace_ms / 1000,
            thread_id=tool.thread_id,
            requested_by=tool.user_id,
        )
        if event_id is None:
            return "提醒没能保存（存储暂时出错），这次没有安排上，请稍后再试。"
        return f"好，{local_time(at, zone)} 提醒（{event_id}）。"

    ctx.tool(
        ToolSpec(
            "schedule_message",
            "过一段时间后在本聊天发一条提醒（例如“十分钟后提醒我”）。",
            schedule_message,
            args_model=ScheduleArgs,
            side_effect=True,
        )
    )


extension = Extension("schedule_message", _setup, description="过一段时间后在本聊天发提醒")
