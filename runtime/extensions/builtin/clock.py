"""``current_time()`` — now, in the persona's time zone (``[runtime] timezone``)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from runtime.extensions.builtin.services import TimeZone
from runtime.extensions.context import ExtensionContext
from runtime.extensions.manifest import Extension
from runtime.tools import ToolContext, ToolSpec

__all__ = ["extension", "local_time"]

_WEEKDAYS = "一二三四五六日"


class NoArgs(BaseModel):
    pass


def local_time(now: float, zone: str) -> str:
    moment = datetime.fromtimestamp(now, ZoneInfo(zone))
    return f"{moment:%Y-%m-%d %H:%M}（星期{_WEEKDAYS[moment.weekday()]}，{zone}）"


def _setup(ctx: ExtensionContext) -> None:
    zone = ctx.service(TimeZone).name

    def current_time(args: NoArgs, tool: ToolContext) -> str:
        return local_time(tool.now, zone)

    ctx.tool(ToolSpec("current_time", "现在的日期和时间。", current_time, args_model=NoArgs))


extension = Extension("current_time", _setup, description="现在的日期和时间")
