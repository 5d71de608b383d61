"""Where the edge meets the runtime.

The plugin converts OneBot events and hands them to a :class:`RuntimeGateway`; admin commands and mute
words reach its :attr:`RuntimeGateway.control`. The runtime sends through :attr:`EdgeContext.outbound`.

Wiring a runtime is one call, made after the plugin is loaded and before ``nonebot.run()`` (``bot.py``
does it)::

    from plugins.greywind.gateway import use_runtime
    use_runtime(lambda edge: Runtime(edge))       # returns a disposer

Until one is registered, the plugin runs :class:`LoggingGateway`, which records and logs every message
and notice and answers nothing: the bot connects, converts, gates and rate-limits, but has no brain.

Lifecycle, driven by the NoneBot lifespan: ``factory(edge)`` -> ``await gateway.start(task_group)``
(background work goes into that task group, never a bare ``create_task``; a task there that raises
is logged and ends alone, the rest of the edge keeps running) -> ``on_message`` /
``on_notice`` calls (one chat's messages in arrival order; ``on_message`` should return once the
message is ingested and let long work run in the task group) -> ``await gateway.stop()`` (flush, mark
open sessions interrupted, close the store) -> the task group is cancelled.

A gateway that stores messages also serves the edge's inbound journal with two optional methods:
``store_progress() -> (handed, committed)`` (writes handed to its store writer, and how many of them
are committed, in order) and ``async stored_already(messages) -> list[bool]`` (whether the store holds
exactly each one). Without them the journal takes what was handed over as committed, and a replay
skips nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import structlog
from anyio.abc import TaskGroup

from plugins.greywind.commands import RuntimeControl
from plugins.greywind.notices import Notice
from plugins.greywind.outbound import Outbound
from runtime.config import GreyWindConfig
from runtime.kernel.message import ChatMessage
from runtime.urgency import AddressedWork

__all__ = [
    "EdgeContext",
    "EdgeControl",
    "LoggingGateway",
    "LoggingGatewayStatistics",
    "RuntimeFactory",
    "RuntimeGateway",
    "current_factory",
    "use_runtime",
]

log = structlog.get_logger("greywind.gateway")


@dataclass(frozen=True, slots=True)
class EdgeContext:
    """What the edge gives the runtime when it is built."""

    config: GreyWindConfig
    config_path: Path
    data_dir: Path
    outbound: Outbound
    shadow_mode: bool  # bot.shadow_mode, or forced on because no model is configured
    model_configured: bool
    superusers: frozenset[str]
    clock: Callable[[], float] = time.time
    # The edge's own statistics (dispatcher, outbound, gates) for the admin ``status``.
    edge_status: Callable[[], str] = field(default=lambda: "")
    # Tells the edge the persona's names changed (``persona reload``): name-addressing follows at once.
    rename: Callable[[tuple[str, ...]], None] = field(default=lambda names: None)
    # Forced episodes mark themselves here until they reach the model; chatter yields meanwhile.
    addressed: AddressedWork = field(default_factory=AddressedWork)
    # Chats recorded before chat keys named their account: unbound id -> bound id, rebound at start.
    chat_bindings: Callable[[], Mapping[str, str]] = field(default=dict)


class RuntimeGateway(Protocol):
    @property
    def control(self) -> RuntimeControl: ...

    async def start(self, task_group: TaskGroup) -> None: ...
    async def stop(self) -> None: ...
    async def on_message(self, message: ChatMessage) -> None: ...
    async def on_notice(self, notice: Notice) -> None: ...


RuntimeFactory = Callable[[EdgeContext], RuntimeGateway]
_factory: RuntimeFactory | None = None


def use_runtime(factory: RuntimeFactory) -> Callable[[], None]:
    """Make ``factory`` build the gateway at the next start; returns a disposer restoring the default."""
    global _factory
    _factory = factory

    def dispose() -> None:
        global _factory
        if _factory is factory:
            _factory = None

    return dispose


def current_factory() -> RuntimeFactory:
    return _factory or LoggingGateway


class EdgeControl:
    """The admin commands the edge can answer by itself (status of the edge, mute confirmations);
    everything that needs the runtime says so instead of pretending."""

    NOT_WIRED = "运行时尚未接入，这个命令暂不可用。"

    def __init__(self, edge: EdgeContext) -> None:
        self._edge = edge

    async def status(self, chat_id: str | None) -> str:
        head = f"灰风在线（{'影子模式：只看不说' if self._edge.shadow_mode else '正常发言'}）"
        if not self._edge.model_configured:
            head += "；未配置模型"
        return "\n".join(part for part in (head, self._edge.edge_status()) if part)

    async def why(self, chat_id: str, message_id: str | None) -> str:
        return self.NOT_WIRED

    async def mute(self, chat_id: str, until: float | None, *, by: str, reason: str) -> str:
        if reason == "mute_word":
            return ""  # asked to be quiet: the quietest acknowledgement is none
        if until is None:
            return f"好，{chat_id} 里我先不说话，直到 /unmute。"
        minutes = max(1, round((until - self._edge.clock()) / 60))
        return f"好，{chat_id} 里我安静 {minutes} 分钟。"

    async def unmute(self, chat_id: str, *, by: str, reason: str) -> str:
        return "" if reason == "phrase" else f"{chat_id} 已解除安静。"

    async def lexicon_list(self, chat_id: str) -> str:
        return self.NOT_WIRED

    async def lexicon_add(self, chat_id: str, term: str, weight: float | None) -> str:
        return self.NOT_WIRED

    async def lexicon_pin(self, chat_id: str, term: str) -> str:
        return self.NOT_WIRED

    async def lexicon_suppress(self, chat_id: str, term: str) -> str:
        return self.NOT_WIRED

    async def persona_reload(self) -> str:
        return self.NOT_WIRED

    async def bind(self, chat_id: str, thread: str, vision: str | None) -> str:
        return self.NOT_WIRED


@dataclass(frozen=True, slots=True)
class LoggingGatewayStatistics:
    messages: int
    addressed: int
    notices: Mapping[str, int]


class LoggingGateway:
    """The gateway used while no runtime is registered: logs each message and notice, answers nothing."""

    def __init__(self, edge: EdgeContext) -> None:
        self._edge = edge
        self._control = EdgeControl(edge)
        self._messages = 0
        self._addressed = 0
        self._notices: Counter[str] = Counter()

    @property
    def control(self) -> RuntimeControl:
        return self._control

    async def start(self, task_group: TaskGroup) -> None:
        log.warning("no_runtime_wired", detail="messages are logged, nothing is answered")

    async def stop(self) -> None:
        log.info("gateway_stopped", messages=self._messages, addressed=self._addressed)

    async def on_message(self, message: ChatMessage) -> None:
        self._messages += 1
        self._addressed += message.addressed
        log.info(
            "message",
            chat_id=message.chat_id,
            message_id=message.message_id,
            sender_id=message.sender_id,
            addressed=message.addressed,
            chars=len(message.text),
        )

    async def on_notice(self, notice: Notice) -> None:
        self._notices[type(notice).__name__] += 1
        log.info("notice", kind=type(notice).__name__, chat_id=notice.chat_id)

    def statistics(self) -> LoggingGatewayStatistics:
        return LoggingGatewayStatistics(self._messages, self._addressed, dict(self._notices))
