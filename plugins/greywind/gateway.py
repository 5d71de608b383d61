"""Where the edge meets the runtime.

The plugin converts OneBot events and hands them to a :class:`~runtime.ports.RuntimeGateway`; admin
commands and mute words reach its ``control``. The runtime sends through ``EdgeContext.outbound``. The
contract itself (gateway, context, outbound, notices, control) is the runtime's: :mod:`runtime.ports`.

Wiring a runtime is one call, made after the plugin is loaded and before ``nonebot.run()`` (``bot.py``
does it)::

    from plugins.greywind.gateway import use_runtime
    use_runtime(lambda edge: Runtime(edge))       # returns a disposer

Until one is registered, the plugin runs :class:`LoggingGateway`, which records and logs every message
and notice and answers nothing: the bot connects, converts, gates and rate-limits, but has no brain.

Lifecycle, driven by the NoneBot lifespan, as :mod:`runtime.ports.gateway` describes it; a task in the
lifespan's task group that raises is logged and ends alone, the rest of the edge keeps running.

A gateway may also declare the commands the edge answers: ``commands``, a
:class:`~runtime.commands.CommandRegistry` (the runtime's holds the built-in admin commands and the
extensions'). Without it the edge answers the built-in admin commands (:func:`commands_of`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import structlog
from anyio.abc import TaskGroup

from plugins.greywind.commands import ADMIN
from runtime.commands import CommandRegistry
from runtime.kernel.message import ChatMessage
from runtime.ports import EdgeContext, Notice, RuntimeControl, RuntimeFactory, RuntimeGateway

__all__ = [
    "EdgeContext",
    "EdgeControl",
    "LoggingGateway",
    "LoggingGatewayStatistics",
    "RuntimeFactory",
    "RuntimeGateway",
    "ServesAccounts",
    "commands_of",
    "control_of",
    "current_factory",
    "use_runtime",
]

log = structlog.get_logger("greywind.gateway")


@runtime_checkable
class ServesAccounts(Protocol):
    """A gateway with one runtime stack per account (``[[accounts]]``): a command heard in chat
    ``origin`` is parsed by the commands of that chat's account (``commands_for``) and answered by a
    control that reaches the stack of the chat it names (``control_for``)."""

    def commands_for(self, origin: str) -> CommandRegistry: ...
    def control_for(self, origin: str) -> RuntimeControl: ...


def commands_of(gateway: RuntimeGateway, origin: str | None = None) -> CommandRegistry:
    """The commands ``gateway`` declares (for a command heard in ``origin``, when it serves several
    accounts), else the built-in admin commands."""
    if origin is not None and isinstance(gateway, ServesAccounts):
        return gateway.commands_for(origin)
    declared = getattr(gateway, "commands", None)
    return declared if isinstance(declared, CommandRegistry) else ADMIN


def control_of(gateway: RuntimeGateway, origin: str) -> RuntimeControl:
    """The control that answers a command (or a mute word) heard in ``origin``."""
    return gateway.control_for(origin) if isinstance(gateway, ServesAccounts) else gateway.control


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

    async def status(self, chat_id: str | None, *, full: bool = False) -> str:
        mode = "影子模式：只看不说" if self._edge.shadow_mode else "正常发言"
        head = f"{self._edge.config.persona.name}在线（{mode}）"
        if not self._edge.model_configured:
            head += "；未配置模型"
        edge = self._edge.edge_status() if full else self._edge.edge_summary()
        more = "" if full else f"详情：{self._edge.config.bot.command_prefix}status full"
        return "\n".join(part for part in (head, edge, more) if part)

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

    async def set_group(self, chat_id: str, on: bool, *, by: str) -> str:
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
