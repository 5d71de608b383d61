"""The console's application, built by :func:`console_app` once :mod:`runtime.console.switch` has
decided the console is on.

The application is FastAPI with no docs routes: one router per page (:mod:`runtime.console.pages`)
behind :class:`~runtime.console.security.ConsoleGuard`, and the pages themselves (HTML, one script
and the shared style and script files) as static files, so nothing needs building.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from runtime.app.runtime import Runtime
from runtime.console.auth import LoginLimiter, Password, Sessions
from runtime.console.feed import LiveFeed
from runtime.console.pages import ROUTERS
from runtime.console.security import ConsoleGuard
from runtime.console.state import ConsoleState
from runtime.logs import add_log_tap
from runtime.ports import ConsoleSite

__all__ = ["STATIC", "console_app"]

STATIC = Path(__file__).resolve().parent / "static"


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
