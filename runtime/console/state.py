"""What every page of the console reads: the running bot's parts, the feed, the sessions, the
overview's sections. One :class:`ConsoleState` per console, kept on the application's state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from runtime.app.control import Control
from runtime.app.runtime import Runtime
from runtime.console.auth import LoginLimiter, Password, Session, Sessions
from runtime.console.feed import LiveFeed
from runtime.console.logtail import LogTail
from runtime.ports import ConsoleSite

__all__ = ["ConsoleState", "Rows", "Section", "console_state", "session_of"]

# A section of the overview: a title and a provider of rows (label, value) given the console's state,
# asked at each refresh. The built-in sections come first; others (accounts, MCP servers, ...) add
# theirs with ``ConsoleState.add_section``.
Rows = Callable[["ConsoleState"], list[tuple[str, Any]]]
Section = tuple[str, Rows]


@dataclass
class ConsoleState:
    site: ConsoleSite
    runtime: Runtime
    password: Password
    sessions: Sessions
    limiter: LoginLimiter
    feed: LiveFeed
    clock: Callable[[], float]
    logs: LogTail = field(default_factory=LogTail)
    sections: list[Section] = field(default_factory=list)

    @property
    def control(self) -> Control:
        """The runtime's admin control (the same methods the chat commands reach)."""
        return self.runtime.bot.control

    def add_section(self, title: str, rows: Rows) -> Callable[[], None]:
        """Show ``rows(state)`` under ``title`` on the overview; returns the disposer."""
        section: Section = (title, rows)
        self.sections.append(section)

        def dispose() -> None:
            if section in self.sections:
                self.sections.remove(section)

        return dispose


def console_state(request: Request) -> ConsoleState:
    state: ConsoleState = request.app.state.console
    return state


def session_of(request: Request) -> Session:
    """The request's session (the middleware has refused requests without one)."""
    session: Session = request.scope["greywind.session"]
    return session
