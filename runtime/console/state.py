"""What every page of the console reads: the running bot's parts, the feed, the sessions, the
overview's sections. One :class:`ConsoleState` per console, kept on the application's state.

With several accounts (``[[accounts]]``) every account's stack has a view of its own, a
:class:`ConsoleState` over that stack's runtime, site and feed sharing the console's sessions, log
tail and sections: ``?account=<QQ number>`` on any route picks it (:func:`console_state`), and without
the parameter a route works on the default stack (the shared defaults, the accounts not listed), which
with one account is the one runtime. An account this process does not serve is a 404 naming those it
does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from runtime.app.control import Control
from runtime.app.runtime import Runtime
from runtime.config import GreyWindConfig
from runtime.console.auth import LoginLimiter, Password, Session, Sessions
from runtime.console.feed import LiveFeed
from runtime.console.logtail import LogTail
from runtime.ports import ConsoleSite

__all__ = [
    "ConsoleState",
    "Rows",
    "Section",
    "UnknownAccount",
    "console_state",
    "known_account",
    "session_of",
]

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
    # The account this view serves (None: the one runtime, or the default stack) and the config file
    # as written (the layers' bottom, with its [[accounts]] tables); None: the site's config.
    account: str | None = None
    shared_config: GreyWindConfig | None = None
    # Listed account -> its view, the same dict in every view (empty with one account).
    accounts: dict[str, ConsoleState] = field(default_factory=dict)

    @property
    def config_file(self) -> GreyWindConfig:
        return self.shared_config or self.site.edge.config

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


class UnknownAccount(LookupError):
    """``?account=`` named an account this console does not serve (answered 404)."""

    def __init__(self, account: str, served: list[str]) -> None:
        listed = ", ".join(served) if served else "none: this process serves one account"
        super().__init__(f"unknown account {account!r} (accounts served here: {listed})")


def console_state(request: Request) -> ConsoleState:
    """The view the request asks for: ``?account=`` an account's, else the default's."""
    state: ConsoleState = request.app.state.console
    account = request.query_params.get("account")
    if not account:
        return state
    view = state.accounts.get(account)
    if view is None:
        raise UnknownAccount(account, list(state.accounts))
    return view


def known_account(request: Request) -> None:
    """Every route's dependency: an unknown ``?account=`` is refused before the request's body or
    query is looked at (the page's own ``console_state`` call would come after their validation)."""
    console_state(request)


def session_of(request: Request) -> Session:
    """The request's session (the middleware has refused requests without one)."""
    session: Session = request.scope["greywind.session"]
    return session
