"""The web console, served by NoneBot's own HTTP server at ``/console``.

``bot.py`` hands the console factory over, as it hands the runtime's (the edge never imports the
console)::

    from plugins.greywind.console import use_console
    use_console(build_console)       # returns a disposer

Once the edge and its gateway have started, :func:`mount_console` builds a
:class:`~runtime.ports.ConsoleSite` (the gateway, the edge's context, the listening host, the edge's
figures) and mounts what the factory returns on the driver's FastAPI application. The factory decides
whether the console is on (a password is set) and logs why when it is not; without a factory nothing
is mounted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from runtime.ports import ConsoleFactory, ConsoleSite

__all__ = ["CONSOLE_PATH", "mount_console", "use_console"]

log = structlog.get_logger("greywind.console")

CONSOLE_PATH = "/console"
_factory: ConsoleFactory | None = None


def use_console(factory: ConsoleFactory) -> Callable[[], None]:
    """Make ``factory`` build the console at the next start; returns a disposer."""
    global _factory
    _factory = factory

    def dispose() -> None:
        global _factory
        if _factory is factory:
            _factory = None

    return dispose


def mount_console(app: Callable[[], Any], site: ConsoleSite) -> bool:
    """Build the console for ``site`` and mount it on ``app()`` (the driver's FastAPI application,
    asked for only when a factory is set) at ``/console``; whether it was mounted. A factory that
    fails is logged and the bot runs on."""
    if _factory is None:
        return False
    try:
        console = _factory(site)
    except Exception as exc:  # the console is an extra: its failure must not stop the bot
        log.error("console_failed", error=repr(exc))
        return False
    if console is None:
        return False
    app().mount(CONSOLE_PATH, console, name="greywind-console")
    return True
