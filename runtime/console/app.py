"""The console's application: :func:`build_console` makes it from a :class:`~runtime.ports.ConsoleSite`
(the edge mounts it at ``/console``), or returns None and logs why it stays off.

On only with a password (:mod:`runtime.console.auth`). With none, the console is off and the start-up
log says how to turn it on (``console_off``); when the server listens off loopback and there is no
password, that line is an error (``console_refused``): the console would be a way into the bot for
anyone who reaches the port. A password file that cannot be read is an error line too, and the bot
runs on without the console.

The application is FastAPI with no docs routes: one router per page (:mod:`runtime.console.pages`)
behind :class:`~runtime.console.security.ConsoleGuard`, and the pages themselves (HTML, one script
and the shared style and script files) as static files, so nothing needs building.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path

import structlog
from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from runtime.app.runtime import Runtime
from runtime.console.auth import PASSWORD_ENV, LoginLimiter, Password, Sessions, load_password
from runtime.console.feed import LiveFeed
from runtime.console.pages import ROUTERS
from runtime.console.security import ConsoleGuard
from runtime.console.state import ConsoleState
from runtime.logs import add_log_tap
from runtime.ports import ConsoleSite

__all__ = ["STATIC", "build_console", "console_app", "is_loopback"]

log = structlog.get_logger("greywind.console")
STATIC = Path(__file__).resolve().parent / "static"
HOW_TO = f"set {PASSWORD_ENV}, or run: python -m runtime.console set-password"


def is_loopback(host: str) -> bool:
    text = host.strip().strip("[]")
    if text == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def build_console(site: ConsoleSite, environ: Mapping[str, str] = os.environ) -> FastAPI | None:
    """The console for ``site``, or None (off; logged)."""
    runtime = site.gateway
    if not isinstance(runtime, Runtime) or not runtime.running:
        log.warning("console_off", reason="no running runtime behind the edge")
        return None
    try:
        password = load_password(site.edge.data_dir, environ)
    except (OSError, ValueError) as exc:
        log.error("console_off", reason=str(exc))
        return None
    if password is None:
        if is_loopback(site.host):
            log.info("console_off", reason="no console password", how=HOW_TO)
        else:
            log.error(
                "console_refused",
                reason=f"HOST={site.host} is not loopback and no console password is set",
                how=HOW_TO,
            )
        return None
    app = console_app(site, runtime, password)
    log.info("console_on", path="/console/", password=password.origin)
    return app


def console_app(site: ConsoleSite, runtime: Runtime, password: Password) -> FastAPI:
    """The application itself (the tests build it directly)."""
    clock = site.edge.clock
    sessions = Sessions(clock)
    feed = LiveFeed(runtime.kernel, clock)
    state = ConsoleState(
        site=site,
        runtime=runtime,
        password=password,
        sessions=sessions,
        limiter=LoginLimiter(clock),
        feed=feed,
        clock=clock,
    )
    scope = runtime.bot.core.scope
    scope.add(runtime.bot.core.why.subscribe(feed.on_result))
    scope.add(site.edge.outbound.on_sent(feed.on_sent))
    scope.add(add_log_tap(state.logs))
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.console = state
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/", StaticFiles(directory=STATIC, html=True), name="static")
    app.add_middleware(ConsoleGuard, sessions=sessions)
    return app
