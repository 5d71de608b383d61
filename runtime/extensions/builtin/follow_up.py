"""``follow_up(about, delay_minutes | at)`` — the bot promises to come back to something, in this chat.

The model calls it when it says it will come back ("我查一下，晚点告诉你", "后天问问你面试怎么样"): what
about, and when — minutes from now, or a local time (``YYYY-MM-DD HH:MM`` in ``[life] timezone``), at
most ``[life] follow_up_max_ahead_ms`` ahead, at most ``follow_ups_per_chat`` waiting per chat. The
tool takes no chat argument: a follow-up belongs to the chat it was promised in. It is stored before
the tool says yes; when due, the ``follow_ups`` life source registered here proposes it to the
LifeDirector with follow-up grounds (see :mod:`runtime.extensions.follow_ups`).
"""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field, model_validator

from runtime.extensions.builtin.clock import local_time
from runtime.extensions.builtin.services import Ids, MemoryShelf
from runtime.extensions.context import ExtensionContext
from runtime.extensions.director import LifeSettings
from runtime.extensions.errors import ExtensionError
from runtime.extensions.follow_ups import FollowUps
from runtime.extensions.manifest import Extension
from runtime.extensions.spec import LifeSourceSpec
from runtime.tools import ToolContext, ToolSpec

__all__ = ["extension"]


class FollowUpArgs(BaseModel):
    about: str = Field(min_length=1, max_length=200, description="到时要接着说的事，一句话")
    delay_minutes: float | None = Field(default=None, gt=0, description="多少分钟后回来跟进")
    at: str | None = Field(
        default=None,
        pattern=r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$",
        description="或者在哪个本地时间回来跟进，格式 YYYY-MM-DD HH:MM",
    )

    @model_validator(mode="after")
    def _one_time(self) -> FollowUpArgs:
        if (self.delay_minutes is None) == (self.at is None):
            raise ValueError("give exactly one of delay_minutes and at")
        return self


def _setup(ctx: ExtensionContext) -> None:
    settings = ctx.service(LifeSettings)
    ids = ctx.service(Ids)
    zone = settings.timezone
    book = FollowUps(
        ctx.service(MemoryShelf),
        zone=zone,
        per_chat=settings.follow_ups_per_chat,
        grace=settings.follow_up_grace,
    )

    async def follow_up(args: FollowUpArgs, tool: ToolContext) -> str:
        if args.at is not None:
            try:
                moment = datetime.strptime(args.at, "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(zone))
            except ValueError:
                return f"看不懂这个时间：{args.at}（要 YYYY-MM-DD HH:MM）。"
            due = moment.timestamp()
        else:
            due = tool.now + (args.delay_minutes or 0) * 60
        if due <= tool.now:
            return f"{args.at} 已经过去了，换一个以后的时间。"
        if due - tool.now > settings.follow_up_max_ahead:
            return f"太远了：最多只能约 {settings.follow_up_max_ahead / 86_400:g} 天以内回来跟进。"
        pending = await book.count(tool.chat_id)
        if pending >= book.per_chat:
            return f"这个聊天已经有 {pending} 件说好要回来跟进的事了，先等它们到时间。"
        item = await book.add(
            ids("fu"), tool.chat_id, args.about.strip(), now=tool.now, due=due, thread_id=tool.thread_id
        )
        if item is None:
            return "没能记下（存储暂时出错），这次没有约上。"
        return f"好，{local_time(due, zone)} 回来跟进：{item.about}（到时我会想起这件事，再决定说什么）。"

    ctx.tool(
        ToolSpec(
            "follow_up",
            "你答应过回头再说的事（“我查一下晚点告诉你”“后天问问你面试怎么样”）："
            "到时间你会被提醒，在本聊天接着说。",
            follow_up,
            args_model=FollowUpArgs,
            side_effect=True,
        )
    )
    ctx.life_source(LifeSourceSpec("follow_ups", book.poll, settings.tick))
    with suppress(ExtensionError):  # a host without a task group: the ticks read inline
        ctx.spawn("reads", book.reads.run)


extension = Extension("follow_up", _setup, description="答应过回头再说的事，到时主动跟进")
