"""GreyWind's NoneBot plugin: OneBot v11 events in, the runtime's words out.

The plugin is thin: one hook hands every message and notice to an
:class:`~plugins.greywind.edge.Edge`, and the driver's lifespan starts and stops it. It implements the
contract the runtime defines in :mod:`runtime.ports` (gateway, outbound, notices, control). Module map:

* ``convert``  — OneBot message events -> ``ChatMessage`` (placeholders, mentions, addressing)
* ``notices``  — recall / ban / removal notices read into the runtime's values; bans close the gate
* ``outbound`` — the account-wide rate limiter, send gates, reply splitting, one retry, shadow mode
* ``accounts`` — which account owns which chat (sends leave through it), kept in the data directory
* ``commands`` — superuser commands and mute words, dispatched to a ``RuntimeControl``
* ``dispatch`` — bounded, per-chat-ordered workers in the lifespan's task group
* ``gateway``  — ``use_runtime(factory)``, the logging stand-in for a ``RuntimeGateway``
* ``onebot_guard`` — the adapter with a bounded event backlog in front of its receive loop
* ``hearing``  — where the edge hears events: after the adapter's checks, before NoneBot's handling
* ``edge``     — the state of one run, tying the above together
* ``console``  — ``use_console(factory)``: the web console mounted at ``/console`` once the edge runs

The edge hears events through :mod:`plugins.greywind.hearing`, neither through a matcher nor through
an event preprocessor: it takes every message and notice anyway, and a matcher costs a rule and
permission check, a handler with its dependencies solved and NoneBot's per-run log lines (one of them
formats the whole event) for each one; a preprocessor, a task group, a task and its dependencies
solved. At a few hundred group messages a second either is much of the process's CPU. The hook runs
after the adapter's own checks (the reply resolved, the @ of the bot and its nickname noted, which the
conversion reads), before NoneBot handles the event; it never raises and never ignores an event, so
other plugins' preprocessors and matchers see every event as before, and one that blocks an event does
not keep it from the edge.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog
from nonebot import get_adapters, get_app, get_driver
from nonebot.adapters import Event
from nonebot.adapters.onebot.v11 import Bot, MessageEvent, NoticeEvent
from nonebot.plugin import PluginMetadata

from plugins.greywind.console import mount_console
from plugins.greywind.edge import Edge
from plugins.greywind.gateway import EdgeContext, RuntimeGateway, use_runtime
from plugins.greywind.hearing import install as hear_events
from plugins.greywind.onebot_guard import GuardedAdapter
from plugins.greywind.own_messages import hear_sent_messages
from runtime.config import config_path, load_config
from runtime.logs import note_shutdown
from runtime.ports import ConsoleSite

__all__ = ["EdgeContext", "RuntimeGateway", "current_edge", "use_runtime"]

__plugin_meta__ = PluginMetadata(
    name="greywind",
    description="灰风：在 QQ 群里生活的人格运行时（OneBot v11）",
    usage="超级用户命令：/status /why /mute /unmute /lexicon /persona reload /bind /help",
    type="application",
)

DEFAULT_DATA_DIR = Path("data")

log = structlog.get_logger("greywind.plugin")

driver = get_driver()
_edge: Edge | None = None
hear_sent_messages()  # the bot's own messages reported back (``message_sent``) reach the edge


def current_edge() -> Edge | None:
    """The running edge (None before start-up and after shutdown)."""
    return _edge


@driver.on_startup
async def _start() -> None:
    global _edge
    path = config_path()
    # bot.py has already validated the file; a ConfigError here (plugin loaded some other way) stops start-up.
    config = load_config(path)
    data_dir = Path(os.environ.get("GREYWIND_DATA_DIR") or DEFAULT_DATA_DIR)
    guarded = [a for a in get_adapters().values() if isinstance(a, GuardedAdapter)]
    edge = Edge(
        config,
        config_path=path,
        data_dir=data_dir,
        superusers=driver.config.superusers,
        frames=type(guarded[0]).statistics if guarded else None,
        frames_renamed=type(guarded[0]).address_by if guarded else None,
    )
    for adapter in guarded:
        type(adapter).addressed = edge.addressed  # chatter yields while an @ is on its way to the model
        type(adapter).know_own_messages(edge.outbound.is_own_message)  # a reply to the bot asks for it
    await edge.start()
    _edge = edge
    _hear_stop_signals(edge)
    mount_console(
        get_app,
        ConsoleSite(edge.gateway, edge.context, str(driver.config.host), edge_statistics=edge.statistics),
    )
    edge.announce_ready(f"ws://{driver.config.host}:{driver.config.port}/onebot/v11/ws")


def _hear_stop_signals(edge: Edge) -> None:
    """Chain the server's SIGTERM/SIGINT handlers (installed by now): before it starts closing the
    connections, the edge and the log know the process is stopping, so those closes are not faults."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        if not callable(previous):
            continue

        def heard(number: int, frame: FrameType | None, previous: Callable[..., object] = previous) -> None:
            edge.note_shutdown()
            note_shutdown()
            previous(number, frame)

        signal.signal(signum, heard)


@driver.on_shutdown
async def _stop() -> None:
    global _edge
    edge, _edge = _edge, None
    if edge is not None:
        await edge.stop()


@driver.on_bot_connect
async def _connected(bot: Bot) -> None:
    if _edge is not None:
        _edge.bot_connected(bot.self_id, bot)


@driver.on_bot_disconnect
async def _disconnected(bot: Bot) -> None:
    if _edge is not None:
        _edge.bot_disconnected(bot.self_id)


async def _hear(event: Event) -> None:
    """Every event, before NoneBot handles it: messages and notices to the edge, the rest passed by."""
    edge = _edge
    if edge is None:
        return
    try:
        if isinstance(event, MessageEvent):
            await edge.handle_message(event)
        elif isinstance(event, NoticeEvent):
            await edge.handle_notice(event)
    except Exception:
        # Raised from here, the event would never reach NoneBot: no other plugin would see it.
        log.exception("event_failed", event=event.get_event_name())


hear_events(_hear)
