"""Where an edge meets the runtime: what the edge gives (:class:`EdgeContext`), what the runtime offers
(:class:`RuntimeGateway`).

An edge builds the gateway with a :data:`RuntimeFactory` and drives its lifecycle:
``factory(edge)`` -> ``await gateway.start(task_group)`` (background work goes into that task group,
never a bare ``create_task``) -> ``on_message`` / ``on_notice`` calls (one chat's messages in arrival
order; ``on_message`` returns once the message is ingested and lets long work run in the task group)
-> ``await gateway.stop()`` (flush, mark open sessions interrupted, close the store) -> the task group
is cancelled.

A gateway that stores messages also serves an edge's inbound journal: :class:`StoresInbound`
(``store_progress() -> (handed, committed)``, writes handed to its store writer and how many of them
are committed, in order; ``async stored_already(messages) -> list[bool]``, whether the store holds
exactly each one). An edge checks for it with ``isinstance``; without it the journal takes what was
handed over as committed, and a replay skips nothing. A gateway serving several accounts, each with
its own stack, answers commands per account (the edge's ``ServesAccounts``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from anyio.abc import TaskGroup

from runtime.config import GreyWindConfig
from runtime.kernel.message import ChatMessage
from runtime.ports.control import RuntimeControl
from runtime.ports.notices import Notice
from runtime.ports.outbound import Outbound
from runtime.urgency import AddressedWork

__all__ = ["EdgeContext", "NotTakenError", "RuntimeFactory", "RuntimeGateway", "StoresInbound"]


class NotTakenError(Exception):
    """``on_message``: the runtime is not running (not started yet, or stopping) and did not take the
    message. The edge keeps it: not settled in its inbound journal, so the next start delivers it."""


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
    # How far ``clock`` now runs behind the wall, in seconds (0: it keeps pace): an edge whose clock
    # is how far it has heard runs behind while a backlog waits, and the alarm re-reads it often then.
    clock_lag: Callable[[], float] = field(default=lambda: 0.0)
    # The edge's own statistics (dispatcher, outbound, gates) for the admin ``status``.
    edge_status: Callable[[], str] = field(default=lambda: "")
    # The short form of it (accounts, groups, closed chats) for the whole-bot ``status``.
    edge_summary: Callable[[], str] = field(default=lambda: "")
    # Tells the edge the persona's names changed (``persona reload``): name-addressing follows at once.
    rename: Callable[[tuple[str, ...]], None] = field(default=lambda names: None)
    # Forced episodes mark themselves here until they reach the model; chatter yields meanwhile.
    addressed: AddressedWork = field(default_factory=AddressedWork)
    # Chats recorded before chat keys named their account: unbound id -> bound id, rebound at start.
    chat_bindings: Callable[[], Mapping[str, str]] = field(default=dict)
    # Several accounts in one process ([[accounts]]): the account one stack serves (None: the
    # default stack), the whole file's config its own ``config`` is layered from, and how a stack
    # tells the edge its account's persona names changed.
    account: str | None = None
    shared_config: GreyWindConfig | None = None
    rename_account: Callable[[str, tuple[str, ...]], None] = field(default=lambda account, names: None)


class RuntimeGateway(Protocol):
    @property
    def control(self) -> RuntimeControl: ...

    async def start(self, task_group: TaskGroup) -> None: ...
    async def stop(self) -> None: ...
    async def on_message(self, message: ChatMessage) -> None:
        """Take one message (raises :class:`NotTakenError` when the runtime is not running)."""
        ...

    async def on_notice(self, notice: Notice) -> None: ...


@runtime_checkable
class StoresInbound(Protocol):
    """A gateway that stores what it is handed, as an inbound journal needs to know."""

    def store_progress(self) -> tuple[int, int]: ...
    async def stored_already(self, messages: Sequence[ChatMessage]) -> list[bool]: ...


RuntimeFactory = Callable[[EdgeContext], RuntimeGateway]
