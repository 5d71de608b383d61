"""Where the edge hears events: between the OneBot adapter's checks and NoneBot's handling.

The OneBot v11 ``Bot.handle_event`` first does what the conversion reads (the quoted message fetched,
the @ of the bot and its nickname noted), then hands the event to ``nonebot.message.handle_event``
(preprocessors, matchers, postprocessors). :func:`install` puts the edge's hook at that hand-over:
the name ``handle_event`` in the adapter's bot module becomes a function that awaits the hook, then
NoneBot's ``handle_event`` with the event unchanged. So the edge hears every message and notice
before any matcher runs, and a plugin that blocks or ignores an event does not keep it from the edge.

This used to be a NoneBot event preprocessor, which comes at a price per event: a task group and a
task to run it in, the hook's parameters solved by NoneBot's dependency injection (the event checked
against the parameter's type), and, with any preprocessor registered, the messages of the
preprocessors' error handlers formatted. ``bench/hot_path.py`` times NoneBot's ``handle_event`` of a
group message with a hook that does nothing: 256 µs with the hook as a preprocessor, 11 µs with it
awaited in front. With no preprocessor registered NoneBot skips all of that.
Other plugins' preprocessors still run as NoneBot runs them, after the edge has heard the event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import nonebot.adapters.onebot.v11.bot as v11_bot
from nonebot.adapters import Bot, Event
from nonebot.message import handle_event

__all__ = ["Hook", "install"]

Hook = Callable[[Event], Awaitable[None]]

_hook: Hook | None = None


async def _heard_then_handled(bot: Bot, event: Event) -> None:
    hook = _hook
    if hook is not None:
        await hook(event)  # the hook never raises (the plugin's logs and swallows what the edge raises)
    await handle_event(bot, event)


def install(hook: Hook) -> None:
    """Have ``hook`` hear every event of a OneBot v11 bot, after the adapter's checks and before
    NoneBot handles it (a second call replaces the hook)."""
    global _hook
    _hook = hook
    v11_bot.handle_event = _heard_then_handled  # type: ignore[attr-defined]  # imported there, not exported
